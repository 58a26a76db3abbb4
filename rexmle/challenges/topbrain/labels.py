"""TopBrain label sets, side-road labels and the valid-neighbour tables (spec topbrain.md).

The valid-neighbour tables ``valid_neighbors_{ct,mr}.json`` beside this module are byte copies of
``valid_neighbors_{ct,mr}_all.json`` published by the organisers (CoWBenchmark/
TopBrain_Eval_Metrics @ba4252a): ``{"<label>": [labels it may touch], ...}``, 40 keys (CT) and 42
keys (MR), symmetric. Their SHA-256 values are pinned in `TABLE_SHA256` and tested.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from rexmle.errors import SpecError

TABLE_SHA256 = {
    "ct": "915af7a76ef95dbb9028fac0edde435932223108f0d46c6aac5d641a4fc4b9c0",
    "mr": "0f6102bfaab4e3b8955f04e4e24b3930a7f277124faa5482ae0417ddec3077ff",
}
COMMON_NAMES = [
    "BA",
    "R-P1P2",
    "L-P1P2",
    "R-ICA",
    "R-M1",
    "L-ICA",
    "L-M1",
    "R-Pcom",
    "L-Pcom",
    "Acom",
    "R-A1A2",
    "L-A1A2",
    "R-A3",
    "L-A3",
    "3rd-A2",
    "3rd-A3",
    "R-M2",
    "R-M3",
    "L-M2",
    "L-M3",
    "R-P3P4",
    "L-P3P4",
    "R-VA",
    "L-VA",
    "R-SCA",
    "L-SCA",
    "R-AICA",
    "L-AICA",
    "R-PICA",
    "L-PICA",
    "R-AChA",
    "L-AChA",
    "R-OA",
    "L-OA",
]
CT_NAMES = ["VoG", "StS", "ICVs", "R-BVR", "L-BVR", "SSS"]
MR_NAMES = ["R-ECA", "L-ECA", "R-STA", "L-STA", "R-MaxA", "L-MaxA", "R-MMA", "L-MMA"]
COMMON_SIDE_ROAD = (8, 9, 10, 15, 16, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34)


@dataclass(frozen=True)
class Track:
    """What differs between the CTA and the MRA track."""

    modality: str
    """``ct`` or ``mr``: the token in the raw file and folder names."""
    n_labels: int
    side_road: tuple[int, ...]

    @property
    def labels(self) -> tuple[int, ...]:
        """Allowed label values, background 0 included."""
        return tuple(range(self.n_labels + 1))

    @property
    def names(self) -> dict[int, str]:
        """Label value -> anatomical abbreviation."""
        extra = CT_NAMES if self.modality == "ct" else MR_NAMES
        return dict(enumerate(COMMON_NAMES + extra, start=1))


TRACKS = {
    "ct": Track("ct", 40, (*COMMON_SIDE_ROAD, 37, 38, 39)),
    "mr": Track("mr", 42, (*COMMON_SIDE_ROAD, 41, 42)),
}


def table_bytes(modality: str) -> bytes:
    """The raw bytes of a vendored valid-neighbour table."""
    name = f"valid_neighbors_{modality}.json"
    return Path(__file__).with_name(name).read_bytes()


@functools.cache
def valid_neighbors(modality: str) -> dict[int, frozenset[int]]:
    """The valid-neighbour table of a track, keys and values as int.

    Raises:
        SpecError: the vendored file does not match its pinned SHA-256 or its label count.
    """
    raw = table_bytes(modality)
    digest = hashlib.sha256(raw).hexdigest()
    if digest != TABLE_SHA256[modality]:
        msg = (
            f"valid_neighbors_{modality}.json has SHA-256 {digest}, expected "
            f"{TABLE_SHA256[modality]} (the vendored table was modified)"
        )
        raise SpecError(msg)
    table = {int(k): frozenset(int(v) for v in values) for k, values in json.loads(raw).items()}
    if sorted(table) != list(range(1, TRACKS[modality].n_labels + 1)):
        msg = f"valid_neighbors_{modality}.json must have keys 1..{TRACKS[modality].n_labels}"
        raise SpecError(msg)
    return table
