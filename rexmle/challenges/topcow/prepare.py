"""TopCoW raw -> public/private for one task (topcow.md, "Split", "Public/Private layout").

The three tasks of a track read the same raw cases and compute the same split (sorted pids,
``train_test_split(test_size=0.2, random_state=42, shuffle=True)``); each writes the common part
(train and test images) and its own labels, sample submission and gold.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import numpy as np

from rexmle.challenges.topcow.graph import LabelMapGraph, is_flipped, variant_strings
from rexmle.challenges.topcow.labels import GROUP2_LABELS
from rexmle.challenges.topcow.raw import EdgeLists, RawCase, check_case, discover_cases
from rexmle.challenges.topcow.roi import Box
from rexmle.io import read_geometry, read_image, write_image
from rexmle.metrics.classification import balanced_accuracy
from rexmle.split import Split, shuffle_split
from rexmle.tasks.files import write_csv

log = logging.getLogger(__name__)

REGIONS = ("anterior", "posterior")
ID_COLUMN = "image_id"
PATH_COLUMNS = {1: "predicted_mask_path", 2: "predicted_bbox_path", 3: "predicted_edges_path"}
SAMPLE_BOX = Box(size=(1, 1, 1), location=(0, 0, 0))
"""The sample submission's box: one voxel in the corner (valid, scores about 0)."""
SAMPLE_EDGES: EdgeLists = {
    "anterior": {"L-A1": 0, "Acom": 0, "3rd-A2": 0, "R-A1": 0},
    "posterior": {"L-Pcom": 0, "L-P1": 0, "R-P1": 0, "R-Pcom": 0},
}
"""The sample submission's edge lists: no edge at all (valid, a rare variant)."""


def prediction_name(modality: str, pid: str, task: int) -> str:
    """File name of a case's prediction in the sample submission and gold."""
    stem = f"topcow_{modality}_{pid}"
    return {1: f"{stem}_0000.nii.gz", 2: f"{stem}_bbox.json", 3: f"{stem}_edges.json"}[task]


def write_json(path: Path, payload: object) -> None:
    """Write ``payload`` as JSON (parents created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")


def split_cases(cases: dict[str, RawCase], modality: str, *, seed: int) -> Split:
    """The track's split: sorted pids, 20 % test, ``random_state=seed``."""
    by_pid = shuffle_split(list(cases), test_fraction=0.2, seed=seed)
    return Split(
        train=by_pid.train,
        test=by_pid.test,
        rule=by_pid.rule + f"; ids = pids of topcow_{modality}_<pid>_0000.nii.gz",
        source={
            "dataset": "TopCoW2024_Data_Release",
            "zenodo_record": "15692630",
            "modality": modality,
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


def prepare(
    raw_dir: Path, public_dir: Path, private_dir: Path, *, modality: str, task: int, seed: int
) -> Split:
    """Check every raw case of ``modality``, split, and write one task's public and private trees.

    Raises:
        DataError: the raw data breaks a per-case rule (see :func:`raw.check_case`).
    """
    cases = discover_cases(raw_dir, modality)
    checked = {pid: check_case(case) for pid, case in cases.items()}
    split = split_cases(cases, modality, seed=seed)
    for folder, pids in (("train", split.train), ("test", split.test)):
        images = public_dir / folder / "images"
        images.mkdir(parents=True, exist_ok=True)
        for pid in pids:
            shutil.copyfile(cases[pid].image, images / cases[pid].image.name)
    labels_dir = public_dir / "train" / "labels"
    labels_dir.mkdir(parents=True)
    gold_dir = private_dir / "gold"
    column = PATH_COLUMNS[task]
    rows = []
    gold_facts: list[tuple[set[int], dict[str, str], list[str]]] = []
    for pid in split.train:
        case, (box, edges) = cases[pid], checked[pid]
        stem = f"topcow_{modality}_{pid}"
        if task == 1:
            shutil.copyfile(case.seg, labels_dir / case.seg.name)
            (public_dir / "train" / "roi").mkdir(exist_ok=True)
            shutil.copyfile(case.roi, public_dir / "train" / "roi" / case.roi.name)
        elif task == 2:
            shutil.copyfile(case.roi, labels_dir / case.roi.name)
            write_json(public_dir / "train" / "boxes" / f"{stem}_bbox.json", box.to_json())
        else:
            shutil.copyfile(case.edges, labels_dir / case.edges.name)
            write_json(public_dir / "train" / "edges" / f"{stem}_edges.json", edges)
    for pid in sorted(split.test):
        case, (box, edges) = cases[pid], checked[pid]
        relative = f"predictions/{prediction_name(modality, pid, task)}"
        if task == 1:
            geometry = read_geometry(case.image)
            write_image(public_dir / relative, np.zeros(geometry.shape, np.uint8), like=geometry)
            (gold_dir / "predictions").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(case.seg, gold_dir / relative)
            (private_dir / "roi").mkdir(exist_ok=True)
            shutil.copyfile(case.roi, private_dir / "roi" / case.roi.name)
            gold_facts.append(_gold_facts(case, box))
        elif task == 2:
            write_json(public_dir / relative, SAMPLE_BOX.to_json())
            write_json(gold_dir / relative, box.to_json())
        else:
            write_json(public_dir / relative, SAMPLE_EDGES)
            write_json(gold_dir / relative, edges)
        rows.append((pid, relative))
    write_csv(public_dir / "sample_submission.csv", (ID_COLUMN, column), rows)
    write_csv(gold_dir / "submission.csv", (ID_COLUMN, column), rows)
    if task == 1:
        expected = expected_gold_segmentation(gold_facts)
    else:
        expected = (
            {"boundary_iou": 1.0, "iou": 1.0}
            if task == 2
            else {"anterior_acc": 1.0, "posterior_acc": 1.0}
        )
    write_json(private_dir / EXPECTED_GOLD, expected)
    log.info("topcow %s task %d: expected gold scores %s", modality, task, expected)
    return split
