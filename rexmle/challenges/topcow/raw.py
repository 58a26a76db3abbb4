"""The raw TopCoW release: find the cases of one modality and check every file (spec "Source").

Layout after extraction (a top folder ``TopCoW2024_Data_Release/`` may be present)::

    imagesTr/topcow_{ct|mr}_<pid>_0000.nii.gz       image
    cow_seg_labelsTr/topcow_{ct|mr}_<pid>.nii.gz    task-1 label map
    roi_loc_labelsTr/topcow_{ct|mr}_<pid>.txt       task-2 ROI box
    antpos_edges_labelsTr/topcow_{ct|mr}_<pid>.yml  task-3 edge lists
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from rexmle.errors import DataError
from rexmle.tasks.files import check_image_label_grid

from .labels import ALLOWED_VALUES, REGION_EDGES
from .roi import Box, read_roi

TOP_FOLDER = "TopCoW2024_Data_Release"
IMAGES = "imagesTr"
SEG_LABELS = "cow_seg_labelsTr"
ROI_LABELS = "roi_loc_labelsTr"
EDGE_LABELS = "antpos_edges_labelsTr"
SPACING_TOLERANCE_MM = 1e-4

EdgeLists = dict[str, dict[str, int]]
"""``{"anterior": {edge: 0|1, ...}, "posterior": {...}}`` with the four edges of each region."""


@dataclass(frozen=True)
class RawCase:
    """The four raw files of one case."""

    pid: str
    image: Path
    seg: Path
    roi: Path
    edges: Path


def release_root(raw_dir: Path) -> Path:
    """The folder holding ``imagesTr/`` (the top folder when present, else ``raw_dir``).

    Raises:
        DataError: no ``imagesTr/`` in either place.
    """
    for candidate in (raw_dir / TOP_FOLDER, raw_dir):
        if (candidate / IMAGES).is_dir():
            return candidate
    msg = f"TopCoW raw data not found: no {IMAGES}/ in {raw_dir} or {raw_dir / TOP_FOLDER}"
    raise DataError(msg)


def discover_cases(raw_dir: Path, modality: str) -> dict[str, RawCase]:
    """Every case of ``modality`` (``ct`` or ``mr``), by pid; every image needs all three labels.

    Raises:
        DataError: no images, or an image lacks one of its label files.
    """
    root = release_root(raw_dir)
    pattern = re.compile(rf"^topcow_{modality}_([^_]+)_0000\.nii\.gz$")
    cases: dict[str, RawCase] = {}
    problems: list[str] = []
    for image in sorted((root / IMAGES).iterdir()):
        match = pattern.match(image.name)
        if match is None:
            continue
        pid = match.group(1)
        stem = f"topcow_{modality}_{pid}"
        case = RawCase(
            pid=pid,
            image=image,
            seg=root / SEG_LABELS / f"{stem}.nii.gz",
            roi=root / ROI_LABELS / f"{stem}.txt",
            edges=root / EDGE_LABELS / f"{stem}.yml",
        )
        missing = [
            str(p.relative_to(root)) for p in (case.seg, case.roi, case.edges) if not p.is_file()
        ]
        if missing:
            problems.append(f"case {stem}: missing {missing}")
        cases[pid] = case
    if problems:
        msg = "TopCoW raw data is incomplete: " + "; ".join(problems)
        raise DataError(msg)
    if not cases:
        msg = (
            f"no TopCoW {modality} images (topcow_{modality}_<pid>_0000.nii.gz) in {root / IMAGES}"
        )
        raise DataError(msg)
    return cases


def parse_edge_lists(payload: object, *, where: str) -> EdgeLists:
    """Check a parsed edge file: exactly the 8 edge keys, values 0 or 1 (integers).

    Raises:
        DataError: a region or edge is missing or extra, or a value is not 0/1.
    """
    if not isinstance(payload, dict) or set(payload) != set(REGION_EDGES):
        found = sorted(payload) if isinstance(payload, dict) else type(payload).__name__
        msg = f"{where}: expected the keys {sorted(REGION_EDGES)}, found {found}"
        raise DataError(msg)
    result: EdgeLists = {}
    for region, edges in REGION_EDGES.items():
        values = payload[region]
        if not isinstance(values, dict) or set(values) != set(edges):
            found = sorted(values) if isinstance(values, dict) else type(values).__name__
            msg = f"{where}: {region} must hold exactly {list(edges)}, found {found}"
            raise DataError(msg)
        bad = {k: v for k, v in values.items() if type(v) is not int or v not in (0, 1)}
        if bad:
            msg = f"{where}: {region} values must be 0 or 1, found {bad}"
            raise DataError(msg)
        result[region] = {edge: int(values[edge]) for edge in edges}
    return result


def read_edge_lists(path: Path) -> EdgeLists:
    """Read a raw ``.yml`` edge file (see :func:`parse_edge_lists`).

    Raises:
        DataError: the file is not YAML or breaks the edge-file rules.
    """
    try:
        payload = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        msg = f"{path}: not a YAML file ({err})"
        raise DataError(msg) from err
    return parse_edge_lists(payload, where=str(path))


def check_case(case: RawCase) -> tuple[Box, EdgeLists]:
    """Assert the spec's per-case facts; return the parsed ROI box and edge lists.

    Checks: image and label map are 3-D single-component volumes of one size and spacing
    (|Δ| ≤ 1e-4 mm); label values within the CoW label set with at least one foreground voxel
    inside the ROI; the ROI parses; the edge file holds exactly the 8 keys with values 0/1.

    Raises:
        DataError: any check fails (the message names the case or the file).
    """
    _, seg = check_image_label_grid(
        "TopCoW", case.pid, case.image, case.seg, spacing_tol_mm=SPACING_TOLERANCE_MM
    )
    labels = np.asarray(seg.array)
    values = set(np.unique(labels).tolist())
    extra = sorted(values - set(ALLOWED_VALUES))
    if extra:
        msg = f"{case.seg.name}: values {extra} are not CoW labels {list(ALLOWED_VALUES)}"
        raise DataError(msg)
    box = read_roi(case.roi)
    try:
        window = labels[box.crop(labels.shape)]
    except ValueError as err:
        msg = f"{case.roi.name}: {err}"
        raise DataError(msg) from err
    if not np.any(window):
        msg = f"{case.seg.name}: no foreground voxel inside the ROI {box}"
        raise DataError(msg)
    return box, read_edge_lists(case.edges)
