"""Class names of the PUMA release and the canonical names the submissions use (spec puma.md).

Raw GeoJSON class names are singular and prefixed (``tissue_stroma``, ``nuclei_plasma_cell``);
any other name in a raw file is a preparation error.
"""

from __future__ import annotations

from typing import Literal

Track = Literal[1, 2]

TISSUE_VALUES: dict[str, int] = {
    "tissue_white_background": 0,
    "tissue_stroma": 1,
    "tissue_blood_vessel": 2,
    "tissue_tumor": 3,
    "tissue_epidermis": 4,
    "tissue_necrosis": 5,
}
"""Raw tissue class name -> value in the tissue map (0 = background, never scored)."""

TISSUE_CLASSES: dict[int, str] = {
    1: "stroma",
    2: "blood_vessel",
    3: "tumor",
    4: "epidermis",
    5: "necrosis",
}
"""Scored tissue values -> short name (used in the ``dice_<name>`` report keys)."""

TISSUE_ALLOWED_VALUES: tuple[int, ...] = (0, 1, 2, 3, 4, 5)

NUCLEI_NAMES: dict[str, tuple[str, str]] = {
    "nuclei_tumor": ("tumor", "tumor"),
    "nuclei_lymphocyte": ("TILs", "lymphocytes"),
    "nuclei_plasma_cell": ("TILs", "plasma_cells"),
    "nuclei_histiocyte": ("other", "histiocytes"),
    "nuclei_melanophage": ("other", "melanophages"),
    "nuclei_neutrophil": ("other", "neutrophils"),
    "nuclei_stroma": ("other", "stromal_cells"),
    "nuclei_epithelium": ("other", "epithelium"),
    "nuclei_endothelium": ("other", "endothelium"),
    "nuclei_apoptosis": ("other", "apoptotic_cells"),
}
"""Raw nuclei class name -> (track-1 name, track-2 name)."""


def nuclei_name(raw_name: str, track: Track) -> str:
    """The canonical class name of a raw nuclei class in ``track``.

    Raises:
        KeyError: ``raw_name`` is not a nuclei class of the release.
    """
    return NUCLEI_NAMES[raw_name][track - 1]


def nuclei_classes(track: Track) -> tuple[str, ...]:
    """The canonical class names of ``track``, in table order without repeats."""
    return tuple(dict.fromkeys(names[track - 1] for names in NUCLEI_NAMES.values()))
