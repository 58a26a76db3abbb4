"""TopBrain raw -> public/private (spec topbrain.md, "Source", "Split", "Public/Private layout").

Both tracks read the shared raw folder; each takes the cases of its ``params.scan`` (ct, mr):
``**/imagesTr_topbrain_<mod>/topcow_<mod>_<pid>_0000.nii.gz`` with the label
``**/labelsTr_topbrain_<mod>/topcow_<mod>_<pid>.nii.gz`` (label names have no ``_0000``). The
id is the pid string (``001``), leading zeros kept.

Besides gold, prepare writes ``private/expected_gold.json``: the values gold must obtain, two of
which are not ideal by definition (spec "Gold"): ``neighbor_error`` = the mean over the test cases
of the GT's own invalid-neighbour error, and ``f1_side_road`` = the fraction of the track's
side-road labels present in at least one test GT.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rexmle.errors import DataError
from rexmle.io import read_geometry
from rexmle.metrics.topology import invalid_neighbor_error
from rexmle.split import Split
from rexmle.tasks.files import check_image_label_grid
from rexmle.tasks.jobs import PrepareJob
from rexmle.tasks.masks import copy_file, write_empty_mask

from .labels import TRACKS, Track, valid_neighbors

log = logging.getLogger(__name__)

SPACING_TOLERANCE_MM = 1e-4
EXPECTED_GOLD = "expected_gold.json"


@dataclass(frozen=True)
class RawCase:
    """One TopBrain case of one modality."""

    pid: str
    image: Path
    label: Path


def image_name(modality: str, pid: str) -> str:
    """File name of a case's image (public folders and predictions keep it)."""
    return f"topcow_{modality}_{pid}_0000.nii.gz"


def label_name(modality: str, pid: str) -> str:
    """File name of a case's label."""
    return f"topcow_{modality}_{pid}.nii.gz"


def prediction_name(modality: str, pid: str) -> str:
    """Relative path of a case's label map in the sample submission and in gold."""
    return f"predictions/{image_name(modality, pid)}"


def discover_cases(raw_dir: Path, track: Track) -> dict[str, RawCase]:
    """Every case of one modality; each image needs exactly one label and the reverse.

    Raises:
        DataError: no case, a pid found twice, or an image without a label (or the reverse).
    """
    mod = track.modality
    image_re = re.compile(rf"^topcow_{mod}_([^_]+)_0000\.nii\.gz$")
    label_re = re.compile(rf"^topcow_{mod}_([^_]+)\.nii\.gz$")
    images: dict[str, list[Path]] = {}
    labels: dict[str, list[Path]] = {}
    for path in sorted(raw_dir.rglob(f"topcow_{mod}_*.nii.gz")):
        for folder, pattern, found in (
            (f"imagesTr_topbrain_{mod}", image_re, images),
            (f"labelsTr_topbrain_{mod}", label_re, labels),
        ):
            match = pattern.match(path.name)
            if match is not None and path.parent.name == folder:
                found.setdefault(match.group(1), []).append(path)
    problems = [
        f"{pid}: {len(images.get(pid, []))} image(s), {len(labels.get(pid, []))} label(s)"
        for pid in sorted(set(images) | set(labels))
        if (len(images.get(pid, [])), len(labels.get(pid, []))) != (1, 1)
    ]
    if problems:
        msg = (
            f"TopBrain {mod}: every case needs exactly one image and one label under {raw_dir}; "
            f"found " + "; ".join(problems[:10])
        )
        raise DataError(msg)
    if not images:
        msg = f"no TopBrain {mod} cases (imagesTr_topbrain_{mod}/...) found under {raw_dir}"
        raise DataError(msg)
    return {pid: RawCase(pid, images[pid][0], labels[pid][0]) for pid in sorted(images)}


def cases_per_folder(raw_dir: Path) -> dict[str, int]:
    """Images found per modality folder, ``imagesTr_topbrain_<mod>`` (both tracks' counts)."""
    return {
        f"imagesTr_topbrain_{mod}": sum(
            1
            for p in raw_dir.rglob(f"topcow_{mod}_*_0000.nii.gz")
            if p.parent.name == f"imagesTr_topbrain_{mod}"
        )
        for mod in sorted(TRACKS)
    }


def check_case(case: RawCase, track: Track) -> np.ndarray:
    """Read a case's label and check it against its image and the track's label set.

    Returns:
        The label map as uint8, (x, y, z).

    Raises:
        DataError: unreadable file, not 3-D, grids differ, labels outside the set, or no vessel.
    """
    family = f"TopBrain {track.modality}"
    _, label = check_image_label_grid(
        family, case.pid, case.image, case.label, spacing_tol_mm=SPACING_TOLERANCE_MM
    )
    where = f"{family} case {case.pid}"
    array = np.asarray(label.array)
    values = {int(v) for v in np.unique(array)}
    outside = sorted(values - set(track.labels))
    if outside:
        msg = f"{where}: label values {outside} are outside 0..{track.n_labels}"
        raise DataError(msg)
    if values <= {0}:
        msg = f"{where}: the label map has no foreground voxel"
        raise DataError(msg)
    return array.astype(np.uint8)


def prepare(job: PrepareJob) -> Split:
    """Copy the track's raw files (``params.scan``) into the public/private layout; write gold
    and the sample submission.
    """
    modality = job.params["scan"]
    track = TRACKS[modality]
    cases = discover_cases(job.raw, track)
    by_id = job.shuffle_split(list(cases))
    (source,) = job.task.sources
    split = Split(
        train=by_id.train,
        test=by_id.test,
        rule=by_id.rule,
        source={
            "dataset": f"TopBrain 2025 ({modality.upper()})",
            "zenodo_record": source.record,
            "file": source.files[0].name,
        },
        found=cases_per_folder(job.raw),
    )
    table = valid_neighbors(modality)
    public_dir = job.public
    for pid in split.train:
        case = cases[pid]
        check_case(case, track)
        copy_file(case.image, public_dir / "train" / "images" / image_name(modality, pid))
        copy_file(case.label, public_dir / "train" / "labels" / label_name(modality, pid))
    rows: list[tuple[str, str]] = []
    neighbor_errors: list[float] = []
    side_roads_present: set[int] = set()
    for pid in sorted(split.test):
        case = cases[pid]
        truth = check_case(case, track)
        neighbor_errors.append(invalid_neighbor_error(truth, table))
        side_roads_present |= {c for c in track.side_road if np.any(truth == c)}
        copy_file(case.image, public_dir / "test" / "images" / image_name(modality, pid))
        relative = prediction_name(modality, pid)
        copy_file(case.label, job.gold / relative)
        geometry = read_geometry(case.image)
        write_empty_mask(public_dir / relative, geometry)
        rows.append((pid, relative))
    job.write_answer_csvs(rows, rows)
    expected = {
        "dice": 1.0,
        "cldice": 1.0,
        "b0_error": 0.0,
        "hd95": 0.0,
        "neighbor_error": float(np.mean(neighbor_errors)),
        "f1_side_road": len(side_roads_present) / len(track.side_road),
        "side_road_labels_in_test_gt": sorted(side_roads_present),
    }
    log.info("TopBrain %s: expected gold values %s", modality, expected)
    (job.private / EXPECTED_GOLD).write_text(
        json.dumps(expected, indent=2) + "\n", encoding="utf-8"
    )
    return split
