"""DENTEX metrics: COCO box AP/AR per hierarchy level and their means (spec dentex.md, "Metrics").

For each level k (1 quadrant, 2 enumeration, 3 diagnosis) the reference boxes of
``private/gt_coco.json`` and every submitted detection take ``category_id_k`` as their category,
and COCO's bounding-box evaluation with default parameters runs over all test images at once
(images in COCO id order, each image's detections in their submitted order). ``ap_<level>``,
``ap50_<level>``, ``ap75_<level>`` and ``ar_<level>`` are ``stats[0]``, ``[1]``, ``[2]`` and
``[8]``; the ``*_mean`` keys average the three levels. COCO is dataset-level: each case row
carries its image's boxes in ``detail``, and the YAML declares every key a ``dataset`` metric of
:func:`aggregate`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rexmle.errors import HarnessError
from rexmle.metrics.detection import ScoredBoxes, TruthBoxes, coco_box_stats
from rexmle.tasks.jobs import ScoreJob
from rexmle.tasks.rows import CaseRow
from rexmle.tasks.spec import TaskSpec

from .prepare import GT_FILE

LEVELS: tuple[tuple[str, str], ...] = (
    ("quadrant", "category_id_1"),
    ("enumeration", "category_id_2"),
    ("diagnosis", "category_id_3"),
)
STATS: tuple[tuple[str, int], ...] = (("ap", 0), ("ap50", 1), ("ap75", 2), ("ar", 8))
"""(statistic name, index in COCO's ``stats``): the key of a value is ``<stat>_<level>``."""


@dataclass(frozen=True)
class ImageBoxes:
    """One test image's reference annotations and submitted detections (a row's ``detail``)."""

    truth: list[dict[str, Any]]
    detections: list[dict[str, Any]]


def load_truth(gt_path: Path) -> tuple[list[str], list[dict[str, Any]], list[list[dict[str, Any]]]]:
    """Images of ``gt_coco.json`` in COCO id order: (public ids, image entries, annotations)."""
    gt = json.loads(gt_path.read_text(encoding="utf-8"))
    images = sorted(gt["images"], key=lambda image: int(image["id"]))
    position = {int(image["id"]): i for i, image in enumerate(images)}
    annotations: list[list[dict[str, Any]]] = [[] for _ in images]
    for annotation in gt["annotations"]:
        annotations[position[int(annotation["image_id"])]].append(annotation)
    ids = [Path(str(image["file_name"])).stem for image in images]
    return ids, images, annotations


def _truth_boxes(annotations: list[dict[str, Any]], key: str) -> TruthBoxes:
    return TruthBoxes(
        boxes_xywh=np.asarray([a["bbox"] for a in annotations], dtype=np.float64).reshape(-1, 4),
        category_ids=np.asarray([int(a[key]) for a in annotations], dtype=np.int64),
        areas=np.asarray([float(a["area"]) for a in annotations], dtype=np.float64),
        is_crowd=np.asarray([bool(a["iscrowd"]) for a in annotations], dtype=bool),
    )


def _scored_boxes(detections: list[dict[str, Any]], key: str) -> ScoredBoxes:
    return ScoredBoxes(
        boxes_xywh=np.asarray([d["bbox"] for d in detections], dtype=np.float64).reshape(-1, 4),
        scores=np.asarray([float(d["score"]) for d in detections], dtype=np.float64),
        category_ids=np.asarray([int(d[key]) for d in detections], dtype=np.int64),
    )


def dentex_scores(
    truth: Sequence[list[dict[str, Any]]],
    detections: Sequence[list[dict[str, Any]]],
    *,
    first_category_id: int = 0,
) -> dict[str, float]:
    """The 16 DENTEX leaderboard values from per-image annotations and detections.

    Definition: per level, COCO ``stats[0]`` (AP@[.50:.95]), ``stats[1]`` (AP@.50),
        ``stats[2]`` (AP@.75) and ``stats[8]`` (AR@100) of `coco_box_stats` with the level's
        category id; ``*_mean`` = arithmetic mean of the three levels.
    Units: fractions in [0, 1]; higher is better.
    Empty: no detection in any image -> every key 0.0 (valid submission).
    Follows: ``DentexChallenge`` in ibrahimethemhamamci/DENTEX
        (``DentexChallenge-AlgorithmPhases-Evaluation-Docker/evaluation.py``, @5483fcf), which
        runs pycocotools ``COCOeval`` per level with default parameters.
    Differs: pycocotools ``loadRes`` crashes on an empty detection list; here that gives 0.0,
        the value COCO's formulas assign when nothing is detected.

    Args:
        truth: per image (COCO id order), its annotations with ``bbox``, ``area``, ``iscrowd``
            and ``category_id_1/2/3``.
        detections: per image, aligned with ``truth``, the detections in submitted order.
        first_category_id: categories below it are not scored at any level (their reference
            boxes and detections are left out); 0, the data's first id, scores all. The
            published study's grader scored from 1 (``study.py``).

    Returns:
        ``<stat>_<level>`` for every statistic of `STATS` and level of `LEVELS`, ``*_mean``
        first.

    Raises:
        HarnessError: the lengths differ, or COCO leaves a statistic undefined (-1) because a
            level has no reference box (prepare rules that out).
    """
    if len(truth) != len(detections):
        msg = f"{len(truth)} reference images but {len(detections)} detection lists"
        raise HarnessError(msg)
    keys = [f"{stat}_{level}" for level in ("mean", *(n for n, _ in LEVELS)) for stat, _ in STATS]
    if not any(detections):
        return dict.fromkeys(keys, 0.0)
    values: dict[str, float] = {}
    for level, key in LEVELS:
        level_truth, level_detections = truth, detections
        if first_category_id > 0:
            level_truth = [[a for a in t if int(a[key]) >= first_category_id] for t in truth]
            level_detections = [
                [d for d in image if int(d[key]) >= first_category_id] for image in detections
            ]
        stats = coco_box_stats(
            [_truth_boxes(a, key) for a in level_truth],
            [_scored_boxes(d, key) for d in level_detections],
            no_truth="minus_one",
        ).stats
        for stat, index in STATS:
            value = float(stats[index])
            if value < 0:
                msg = (
                    f"DENTEX {stat}_{level}: COCO returned {value} (no reference box at this level)"
                )
                raise HarnessError(msg)
            values[f"{stat}_{level}"] = value
    for stat, _ in STATS:
        values[f"{stat}_mean"] = float(np.mean([values[f"{stat}_{level}"] for level, _ in LEVELS]))
    return {key: values[key] for key in keys}


def score_dataset(job: ScoreJob) -> list[CaseRow]:
    """One row per test image in COCO id order: GT box and detection counts, boxes as detail.

    Raises:
        HarnessError: the images of ``private/gt_coco.json`` are not the submission's test ids.
    """
    ids, _, truth = load_truth(job.private / GT_FILE)
    if sorted(ids) != job.submission.ids():
        msg = f"dentex: {GT_FILE} images differ from the submission's test ids"
        raise HarnessError(msg)
    rows = []
    for case_id, image_truth in zip(ids, truth, strict=True):
        (path,) = job.submission.cases[case_id].paths.values()
        detections = json.loads(path.read_text(encoding="utf-8-sig"))
        rows.append(
            CaseRow(
                case_id=case_id,
                values={"n_truth": len(image_truth), "n_detections": len(detections)},
                detail=ImageBoxes(truth=image_truth, detections=detections),
            )
        )
    return rows


def aggregate(rows: list[CaseRow], _task: TaskSpec) -> dict[str, float]:
    """The 16 COCO values of :func:`dentex_scores` over every row's image at once."""
    return aggregate_from(rows, first_category_id=0)


def aggregate_from(rows: list[CaseRow], *, first_category_id: int) -> dict[str, float]:
    """:func:`aggregate` scoring only the categories from ``first_category_id`` on."""
    boxes = [row.detail for row in rows]
    return dentex_scores(
        [b.truth for b in boxes],
        [b.detections for b in boxes],
        first_category_id=first_category_id,
    )
