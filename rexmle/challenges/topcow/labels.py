"""TopCoW 2024 vocabulary: label values, label groups and edge names."""

from __future__ import annotations

from typing import Final

LABEL_NAMES: Final[dict[int, str]] = {
    1: "BA",
    2: "R-PCA",
    3: "L-PCA",
    4: "R-ICA",
    5: "R-MCA",
    6: "L-ICA",
    7: "L-MCA",
    8: "R-Pcom",
    9: "L-Pcom",
    10: "Acom",
    11: "R-ACA",
    12: "L-ACA",
    15: "3rd-A2",
}
"""CoW vessel classes; 0 is background, 13 and 14 are unused."""

ALLOWED_VALUES: Final[tuple[int, ...]] = (0, *LABEL_NAMES)
"""Every value a TopCoW label map may hold."""

GROUP2_LABELS: Final[tuple[int, ...]] = (8, 9, 10, 15)
"""Labels of the group-2 detection score ``f1_grp2`` (R-Pcom, L-Pcom, Acom, 3rd-A2)."""

ANTERIOR_LABELS: Final[tuple[int, ...]] = (10, 11, 12, 15)
"""Labels checked by the anterior topology match."""

POSTERIOR_LABELS: Final[tuple[int, ...]] = (2, 3, 8, 9)
"""Labels checked by the posterior topology match."""

ANTERIOR_EDGES: Final[tuple[str, ...]] = ("L-A1", "Acom", "3rd-A2", "R-A1")
"""Anterior edge names, in the order of the variant string."""

POSTERIOR_EDGES: Final[tuple[str, ...]] = ("L-Pcom", "L-P1", "R-P1", "R-Pcom")
"""Posterior edge names, in the order of the variant string."""

REGION_EDGES: Final[dict[str, tuple[str, ...]]] = {
    "anterior": ANTERIOR_EDGES,
    "posterior": POSTERIOR_EDGES,
}


def variant_string(region: str, bits: tuple[int, ...] | list[int]) -> str:
    """``Var_Ant_a_b_c_d`` or ``Var_Pos_e_f_g_h`` from a region's four edge bits."""
    prefix = {"anterior": "Var_Ant", "posterior": "Var_Pos"}[region]
    return "_".join([prefix, *(str(int(b)) for b in bits)])
