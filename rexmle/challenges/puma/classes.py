"""Class names of the PUMA release and the canonical names the submissions use (spec puma.md).

Raw GeoJSON class names are singular and prefixed (``tissue_stroma``, ``nuclei_plasma_cell``);
any other name in a raw file is a preparation error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from rexmle.errors import SpecError

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

TISSUE_ALLOWED_VALUES: tuple[int, ...] = tuple(sorted(TISSUE_VALUES.values()))
"""Values a tissue map may hold: background and the five scored classes."""

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


def track_of(params: Mapping[str, Any]) -> Track:
    """The nuclei track declared in a task's ``params`` (``track: 1`` or ``track: 2``).

    Raises:
        SpecError: ``track`` is missing or not 1 or 2.
    """
    track = params.get("track")
    if track not in (1, 2) or isinstance(track, bool):
        msg = f"PUMA nuclei tasks declare params.track as 1 or 2, got {track!r}"
        raise SpecError(msg)
    return track  # type: ignore[return-value]


def track_classes(params: Mapping[str, Any]) -> tuple[str, ...]:
    """The canonical nuclei class names of the track declared in ``params``."""
    return nuclei_classes(track_of(params))
