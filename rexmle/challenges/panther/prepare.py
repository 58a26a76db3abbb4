"""PANTHER raw -> public/private (spec panther.md, "Source", "Split", "Public/Private layout").

Both tasks read the shared raw folder; each finds its own cases by strict file-name patterns
(recursive search, folder nesting not relied on). A file belongs to a task (``params.task`` of its
YAML) when its parent folder is named as in the table below and its name matches the pattern
exactly:

=====  ======================  ============================  ====================
task   image (``ImagesTr/``)   label (``LabelsTr/``)         id
=====  ======================  ============================  ====================
1      ``DDDDD_0001_0000.mha`` ``DDDDD_0001.mha``            ``DDDDD_0001``
2      ``DDDDD_0000.mha``      ``DDDDD.mha``                 ``DDDDD``
=====  ======================  ============================  ====================
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rexmle.errors import DataError, SpecError
from rexmle.io import Geometry, read_image, write_image
from rexmle.split import Split
from rexmle.tasks.files import check_image_label_grid
from rexmle.tasks.jobs import PrepareJob
from rexmle.tasks.masks import copy_file, write_empty_mask

log = logging.getLogger(__name__)

SPACING_TOLERANCE_MM = 1e-4
TUMOUR = 1
KNOWN_LABEL_VALUES = frozenset({0, 1, 2})
"""0 background, 1 tumour, 2 pancreas; any other value stops preparation."""


@dataclass(frozen=True)
class TaskLayout:
    """How one PANTHER task names its files."""

    number: int
    image_pattern: re.Pattern[str]
    label_pattern: re.Pattern[str]
    has_unlabelled: bool

    def image_name(self, case_id: str) -> str:
        """File name of a case's image (public train/test folders keep the raw names)."""
        return f"{case_id}_0000.mha"

    def label_name(self, case_id: str) -> str:
        """File name of a case's label."""
        return f"{case_id}.mha"


LAYOUTS = {
    1: TaskLayout(
        1, re.compile(r"^(\d{5}_0001)_0000\.mha$"), re.compile(r"^(\d{5}_0001)\.mha$"), True
    ),
    2: TaskLayout(2, re.compile(r"^(\d{5})_0000\.mha$"), re.compile(r"^(\d{5})\.mha$"), False),
}


@dataclass(frozen=True)
class RawCase:
    """One labelled PANTHER case."""

    case_id: str
    image: Path
    label: Path


def task_layout(params: dict[str, object]) -> TaskLayout:
    """The file layout of the task that ``params.task`` (1 or 2) names.

    Raises:
        SpecError: ``params.task`` names no PANTHER task.
    """
    number = params.get("task")
    if number not in LAYOUTS:
        msg = f"PANTHER: params.task must be one of {sorted(LAYOUTS)}, got {number!r}"
        raise SpecError(msg)
    return LAYOUTS[number]  # type: ignore[index]


def prediction_name(case_id: str) -> str:
    """Relative path of a case's mask in the sample submission and in gold."""
    return f"predictions/{case_id}.mha"


def _matches(raw_dir: Path, folder: str, pattern: re.Pattern[str]) -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = defaultdict(list)
    for path in sorted(raw_dir.rglob("*.mha")):
        match = pattern.match(path.name)
        if match is not None and path.parent.name == folder:
            found[match.group(1)].append(path)
    return found


def discover_cases(raw_dir: Path, layout: TaskLayout) -> dict[str, RawCase]:
    """Every case of one task; each id must have exactly one image and exactly one label.

    Raises:
        DataError: no case, an id with several images or labels, or an image without a label
            (or the reverse).
    """
    images = _matches(raw_dir, "ImagesTr", layout.image_pattern)
    labels = _matches(raw_dir, "LabelsTr", layout.label_pattern)
    problems = []
    for case_id in sorted(set(images) | set(labels)):
        n_images, n_labels = len(images.get(case_id, [])), len(labels.get(case_id, []))
        if (n_images, n_labels) != (1, 1):
            problems.append(f"{case_id}: {n_images} image(s), {n_labels} label(s)")
    if problems:
        msg = (
            f"PANTHER task {layout.number}: every case needs exactly one image and one label "
            f"under {raw_dir}; found " + "; ".join(problems[:10])
        )
        raise DataError(msg)
    if not images:
        msg = f"no PANTHER task {layout.number} cases found under {raw_dir}"
        raise DataError(msg)
    return {
        case_id: RawCase(case_id, images[case_id][0], labels[case_id][0])
        for case_id in sorted(images)
    }


def unlabelled_images(raw_dir: Path) -> list[Path]:
    """Task-1 unlabelled images (``**/ImagesTr_unlabeled/*.mha``), sorted."""
    return sorted(p for p in raw_dir.rglob("*.mha") if p.parent.name == "ImagesTr_unlabeled")


def check_case(case: RawCase) -> tuple[Geometry, Geometry, set[int], int]:
    """Read one case and check that image and label share a 3-D grid.

    Returns:
        Image geometry, label geometry, the label values present and the tumour voxel count.

    Raises:
        DataError: unreadable file, not 3-D, grids differ, or unknown label values.
    """
    image, label = check_image_label_grid(
        "PANTHER", case.case_id, case.image, case.label, spacing_tol_mm=SPACING_TOLERANCE_MM
    )
    grid = label.geometry
    array = np.asarray(label.array)
    values = {int(v) for v in np.unique(array)}
    if not values <= KNOWN_LABEL_VALUES:
        msg = (
            f"PANTHER case {case.case_id}: label values {sorted(values)} are outside "
            f"{sorted(KNOWN_LABEL_VALUES)} (0 background, 1 tumour, 2 pancreas)"
        )
        raise DataError(msg)
    return image, grid, values, int(np.count_nonzero(array == TUMOUR))


def prepare(job: PrepareJob) -> Split:
    """Copy one task's raw files into the public/private layout; write gold and the sample."""
    layout = task_layout(job.params)
    task = layout.number
    raw_dir, public_dir = job.raw, job.public
    cases = discover_cases(raw_dir, layout)
    checked = {case_id: check_case(case) for case_id, case in cases.items()}
    label_values = sorted(set().union(*(values for _, _, values, _ in checked.values())))
    log.info("PANTHER task %d: label values found %s", task, label_values)
    by_id = job.shuffle_split(list(cases))
    (zenodo,) = job.task.sources
    empty_test = [i for i in by_id.test if checked[i][3] == 0]
    if empty_test:
        msg = f"PANTHER task {task}: test case(s) {empty_test} have no tumour voxel (label 1)"
        raise DataError(msg)
    split = Split(
        train=by_id.train,
        test=by_id.test,
        rule=by_id.rule + f"; task-{task} ids from the strict file-name patterns",
        found={f"LabelsTr (task {task})": len(cases)},
        source={
            "dataset": f"PANTHER 2025 task {task}",
            "zenodo_record": zenodo.record,
            "label_values": label_values,
        },
    )
    for case_id in split.train:
        case = cases[case_id]
        copy_file(case.image, public_dir / "train" / "images" / case.image.name)
        copy_file(case.label, public_dir / "train" / "labels" / case.label.name)
    if layout.has_unlabelled:
        for path in unlabelled_images(raw_dir):
            copy_file(path, public_dir / "train_unlabeled" / "images" / path.name)
    gold_dir = job.gold
    rows: list[tuple[str, str]] = []
    for case_id in sorted(split.test):
        case = cases[case_id]
        image_geometry, label_geometry, _, _ = checked[case_id]
        copy_file(case.image, public_dir / "test" / "images" / case.image.name)
        relative = prediction_name(case_id)
        tumour = np.asarray(read_image(case.label).array) == TUMOUR
        write_image(gold_dir / relative, tumour.astype(np.uint8), like=label_geometry)
        write_empty_mask(public_dir / relative, image_geometry)
        rows.append((case_id, relative))
    job.write_answer_csvs(rows, rows)
    return split
