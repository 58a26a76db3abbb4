"""TopCoW raw -> public/private for one task (topcow.md, "Split", "Public/Private layout").

The three tasks of a track (``params.scan``: ``ct`` or ``mr``) read the same raw cases and compute
the same split (sorted pids, the declared seed and test fraction); each task kind's function
writes the common part (train and test images) and its own labels, sample submission and gold:
:func:`prepare_segmentation` (task 1), :func:`prepare_boxes` (task 2), :func:`prepare_edges`
(task 3).
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np

from rexmle.io import read_geometry, read_image, write_image
from rexmle.metrics.classification import balanced_accuracy
from rexmle.split import Split
from rexmle.tasks.jobs import PrepareJob

from .graph import LabelMapGraph, is_flipped, variant_strings
from .labels import GROUP2_LABELS
from .raw import EdgeLists, RawCase, check_case, discover_cases
from .roi import Box

log = logging.getLogger(__name__)

REGIONS = ("anterior", "posterior")
SAMPLE_BOX = Box(size=(1, 1, 1), location=(0, 0, 0))
"""The sample submission's box: one voxel in the corner (valid, scores about 0)."""
SAMPLE_EDGES: EdgeLists = {
    "anterior": {"L-A1": 0, "Acom": 0, "3rd-A2": 0, "R-A1": 0},
    "posterior": {"L-Pcom": 0, "L-P1": 0, "R-P1": 0, "R-Pcom": 0},
}
"""The sample submission's edge lists: no edge at all (valid, a rare variant)."""


def prediction_name(modality: str, pid: str, suffix: str) -> str:
    """Relative path of a case's prediction in the sample submission and gold.

    ``suffix`` is the task kind's file ending: ``_0000.nii.gz`` (label map, the image's name),
    ``_bbox.json`` or ``_edges.json``.
    """
    return f"predictions/topcow_{modality}_{pid}{suffix}"


def write_json(path: Path, payload: object) -> None:
    """Write ``payload`` as JSON (parents created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")


def split_cases(job: PrepareJob, cases: dict[str, RawCase]) -> Split:
    """The track's split: sorted pids, the declared test fraction and seed, the declared rule."""
    by_pid = job.shuffle_split(list(cases))
    (source,) = job.task.sources
    return Split(
        train=by_pid.train,
        test=by_pid.test,
        rule=by_pid.rule,
        found={f"imagesTr (topcow_{job.params['scan']}_*)": len(cases)},
        source={
            "dataset": source.files[0].name.removesuffix(".zip"),
            "zenodo_record": source.record,
            "modality": job.params["scan"],
        },
    )


EXPECTED_GOLD = "expected_gold.json"
"""Written into ``private/``: the scores gold must obtain (topcow.md, "Gold")."""


def _gold_facts(case: RawCase, box: Box) -> tuple[set[int], dict[str, str], list[str]]:
    """Group-2 labels present in the cropped GT, its variant strings, regions it is flipped in."""
    labels = np.asarray(read_image(case.seg).array)
    labels = labels[box.crop(labels.shape)].astype(np.uint8)
    graph = LabelMapGraph(labels)
    flipped = [r for r in REGIONS if is_flipped(graph.labels, r, graph.present)]
    if flipped:
        log.warning(
            "%s: the GT is left-right flipped by the topology rule in %s; gold cannot reach "
            "topology accuracy 1 there",
            case.seg.name,
            flipped,
        )
    return graph.present & set(GROUP2_LABELS), variant_strings(graph.bits), flipped


def expected_gold_segmentation(
    facts: list[tuple[set[int], dict[str, str], list[str]]],
) -> dict[str, float]:
    """Task-1 values of gold: 1 / 0 everywhere except where the official rules cap them.

    ``f1_grp2`` = (group-2 labels present in at least one test GT inside the ROI) / 4 (a label
    absent everywhere has F1 0); a topology accuracy is below 1 only if a GT is flipped.
    """
    present = set().union(*(p for p, _, _ in facts))
    expected = {"dice": 1.0, "cldice": 1.0, "b0_error": 0.0, "hd95": 0.0}
    expected["f1_grp2"] = len(present) / len(GROUP2_LABELS)
    for region in REGIONS:
        truth = [v[region] for _, v, _ in facts]
        topology = [v[region] if region not in f else "FAIL" for _, v, f in facts]
        expected[f"{region}_graph_acc"] = 1.0
        expected[f"{region}_topology"] = balanced_accuracy(topology, truth)
    return expected


Checked = dict[str, tuple[Box, EdgeLists]]
"""Per pid: the case's ROI box and edge lists, read and checked."""


def _prepare_common(job: PrepareJob) -> tuple[dict[str, RawCase], Checked, Split]:
    """Check every raw case of the track, split, and copy the train and test images.

    Raises:
        DataError: the raw data breaks a per-case rule (see :func:`raw.check_case`).
    """
    cases = discover_cases(job.raw, job.params["scan"])
    checked = {pid: check_case(case) for pid, case in cases.items()}
    split = split_cases(job, cases)
    for folder, pids in (("train", split.train), ("test", split.test)):
        images = job.public / folder / "images"
        images.mkdir(parents=True, exist_ok=True)
        for pid in pids:
            shutil.copyfile(cases[pid].image, images / cases[pid].image.name)
    (job.public / "train" / "labels").mkdir(parents=True)
    return cases, checked, split


def _finish(job: PrepareJob, rows: list[tuple[str, str]], expected: dict[str, float]) -> None:
    """Write gold's and the sample's CSV (one row per test case) and ``expected_gold.json``."""
    job.write_answer_csvs(rows, rows)
    write_json(job.private / EXPECTED_GOLD, expected)
    log.info("%s: expected gold scores %s", job.task.id, expected)


def prepare_segmentation(job: PrepareJob) -> Split:
    """Task 1: training label maps and ROIs; empty sample maps; gold maps and test ROIs."""
    cases, checked, split = _prepare_common(job)
    modality, public_dir = job.params["scan"], job.public
    (public_dir / "train" / "roi").mkdir()
    for pid in split.train:
        case = cases[pid]
        shutil.copyfile(case.seg, public_dir / "train" / "labels" / case.seg.name)
        shutil.copyfile(case.roi, public_dir / "train" / "roi" / case.roi.name)
    (job.gold / "predictions").mkdir(parents=True)
    (job.private / "roi").mkdir()
    rows = []
    gold_facts: list[tuple[set[int], dict[str, str], list[str]]] = []
    for pid in sorted(split.test):
        case, (box, _) = cases[pid], checked[pid]
        relative = prediction_name(modality, pid, "_0000.nii.gz")
        geometry = read_geometry(case.image)
        write_image(public_dir / relative, np.zeros(geometry.shape, np.uint8), like=geometry)
        shutil.copyfile(case.seg, job.gold / relative)
        shutil.copyfile(case.roi, job.private / "roi" / case.roi.name)
        gold_facts.append(_gold_facts(case, box))
        rows.append((pid, relative))
    _finish(job, rows, expected_gold_segmentation(gold_facts))
    return split


def _prepare_json_task(
    job: PrepareJob,
    *,
    raw_file: Callable[[RawCase], Path],
    answer: Callable[[tuple[Box, EdgeLists]], object],
    folder: str,
    suffix: str,
    sample: object,
    expected: dict[str, float],
) -> Split:
    """Tasks 2 and 3: each training case's raw answer file (``train/labels/``) and its JSON form
    (``train/<folder>/``); the sample's and gold's JSON files, named ``..._<pid><suffix>``.
    """
    cases, checked, split = _prepare_common(job)
    modality, public_dir = job.params["scan"], job.public
    for pid in split.train:
        raw = raw_file(cases[pid])
        shutil.copyfile(raw, public_dir / "train" / "labels" / raw.name)
        train_file = public_dir / "train" / folder / f"topcow_{modality}_{pid}{suffix}"
        write_json(train_file, answer(checked[pid]))
    rows = []
    for pid in sorted(split.test):
        relative = prediction_name(modality, pid, suffix)
        write_json(public_dir / relative, sample)
        write_json(job.gold / relative, answer(checked[pid]))
        rows.append((pid, relative))
    _finish(job, rows, expected)
    return split


def prepare_boxes(job: PrepareJob) -> Split:
    """Task 2: training ROIs (raw text and JSON); one-voxel sample boxes; gold boxes."""
    return _prepare_json_task(
        job,
        raw_file=lambda case: case.roi,
        answer=lambda facts: facts[0].to_json(),
        folder="boxes",
        suffix="_bbox.json",
        sample=SAMPLE_BOX.to_json(),
        expected={"boundary_iou": 1.0, "iou": 1.0},
    )


def prepare_edges(job: PrepareJob) -> Split:
    """Task 3: training edge lists (raw YAML and JSON); edgeless sample lists; gold lists."""
    return _prepare_json_task(
        job,
        raw_file=lambda case: case.edges,
        answer=lambda facts: facts[1],
        folder="edges",
        suffix="_edges.json",
        sample=SAMPLE_EDGES,
        expected={"anterior_acc": 1.0, "posterior_acc": 1.0},
    )
