"""PUMA metrics per case and their aggregation (spec puma.md, "Metrics").

Tissue (``dice``): micro Dice per class 1..5 pooled over all test cases with ε = 1e-5 and
dice_c = 0 when the pooled intersection is 0, then the mean over the five classes
(:class:`rexmle.metrics.overlap.MicroDiceAccumulator`). Per case only the pixel counts are
reported (the challenge computes no per-image Dice). Unranked keys ``dice_<class>``.

Nuclei (``f1``): greedy same-class centroid matching within a strict 15 px radius per case, F1
per (class, case), then each class's F1 summed over the cases where it occurs and divided by
the number of test cases, averaged over the classes seen (:mod:`rexmle.metrics.points`). Unranked
keys ``f1_<class>`` for every class of the track (0 for a class seen nowhere).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rexmle.errors import HarnessError
from rexmle.io import read_image
from rexmle.metrics.overlap import MicroDiceAccumulator
from rexmle.metrics.points import ClassCounts, nuclei_class_counts, puma_macro_f1
from rexmle.tasks.jobs import ScoreCase
from rexmle.tasks.rows import CaseRow, CaseValue
from rexmle.tasks.spec import TaskSpec

from .classes import TISSUE_CLASSES, track_classes
from .submission import Nuclei, read_nuclei_file

TISSUE_EPSILON = 1e-5


def _tissue_accumulator() -> MicroDiceAccumulator:
    return MicroDiceAccumulator(TISSUE_CLASSES, epsilon=TISSUE_EPSILON)


def score_tissue_case(case: ScoreCase) -> CaseRow:
    """Pixel counts of one case (predicted map against the gold map).

    Row keys: ``intersection_<class>`` = |{G = c} ∩ {P = c}|, ``total_<class>`` =
    |{G = c}| + |{P = c}| for the five scored classes.
    """
    pred_path, gold_path = case.file_pair()
    pred = np.asarray(read_image(pred_path).array)
    truth = np.asarray(read_image(gold_path).array)
    accumulator = _tissue_accumulator()
    accumulator.add(pred, truth)
    values: dict[str, CaseValue] = {}
    for value, name in TISSUE_CLASSES.items():
        values[f"intersection_{name}"] = float(accumulator.intersections[value])
        values[f"total_{name}"] = float(accumulator.sums[value])
    return CaseRow(case_id=case.case_id, values=values)


def aggregate_tissue(rows: Sequence[CaseRow], _task: TaskSpec) -> dict[str, float]:
    """PUMA tissue ``dice`` and the per-class ``dice_<class>``, pooled over the test cases.

    Definition: for c in 1..5, I_c and S_c summed over the case rows; dice_c = (2·I_c + ε) /
        (S_c + ε) with ε = 1e-5, and 0 when I_c = 0; ``dice`` = mean of the five dice_c.
    Units: none, in [0, 1]; higher is better. Background (0) is not scored.
    Empty: a class absent from every map (GT and prediction) gives dice_c = 0, for gold too.
    Follows: ``calculate_micro_dice_score_with_masks`` in tueimage/PUMA-challenge-eval-track1
        (@2650261) / -track2 (@cb847d1) ``evaluate_tissue.py``.
    Differs: none (maps of another size are invalid instead of resized, spec deviation 3).

    Args:
        rows: rows of :func:`score_tissue_case`.
        task: the task's declarations (the tissue classes are the same in both tracks).

    Returns:
        ``dice`` and ``dice_<class>`` for the five scored classes.
    """
    accumulator = _tissue_accumulator()
    for row in rows:
        for value, name in TISSUE_CLASSES.items():
            accumulator.intersections[value] += int(row.number(f"intersection_{name}"))
            accumulator.sums[value] += int(row.number(f"total_{name}"))
    per_class = accumulator.per_class()
    metrics = {"dice": accumulator.mean()}
    for value, name in TISSUE_CLASSES.items():
        metrics[f"dice_{name}"] = per_class[value]
    return metrics


def read_case_nuclei(case: ScoreCase) -> tuple[Nuclei, Nuclei]:
    """The (gold, prediction) nuclei of one case, with the classes of ``params.track``.

    Raises:
        HarnessError: a file that passed validation no longer parses.
    """
    classes = track_classes(case.params)
    pred_path, gold_path = case.file_pair()
    parsed = {}
    for role, path in (("prediction", pred_path), ("gold", gold_path)):
        nuclei, reasons = read_nuclei_file(path, classes)
        if nuclei is None:
            msg = f"PUMA case {case.case_id}: the {role} file does not parse after validation: {reasons}"
            raise HarnessError(msg)
        parsed[role] = nuclei
    return parsed["gold"], parsed["prediction"]


def nuclei_row(counts: dict[str, ClassCounts], classes: tuple[str, ...]) -> dict[str, CaseValue]:
    """Row values ``n_matched`` and ``tp_/fp_/fn_<class>`` for every class (0 when absent)."""
    values: dict[str, CaseValue] = {
        "n_matched": float(sum(c.true_positives for c in counts.values())),
    }
    for name in classes:
        found = counts.get(name, ClassCounts(0, 0, 0))
        values[f"tp_{name}"] = float(found.true_positives)
        values[f"fp_{name}"] = float(found.false_positives)
        values[f"fn_{name}"] = float(found.false_negatives)
    return values


def score_nuclei_case(case: ScoreCase) -> CaseRow:
    """Per-class TP/FP/FN of one case, for the classes of the task's ``params.track``.

    Row keys: ``n_truth``, ``n_pred``, ``n_matched`` and ``tp_<class>``, ``fp_<class>``,
    ``fn_<class>`` for every class of the track (0 when the class does not occur in the case).

    Raises:
        HarnessError: a file that passed validation no longer parses.
    """
    truth, pred = read_case_nuclei(case)
    counts = nuclei_class_counts(truth.xy, truth.classes, pred.xy, pred.classes, pred.scores)
    values: dict[str, CaseValue] = {
        "n_truth": float(len(truth.classes)),
        "n_pred": float(len(pred.classes)),
        **nuclei_row(counts, track_classes(case.params)),
    }
    return CaseRow(case_id=case.case_id, values=values)


def case_counts(row: CaseRow, classes: tuple[str, ...]) -> dict[str, ClassCounts]:
    """The counts of the classes occurring in one case row (TP + FP + FN > 0)."""
    counts = {}
    for name in classes:
        tp, fp, fn = (int(row.number(f"{k}_{name}")) for k in ("tp", "fp", "fn"))
        if tp + fp + fn > 0:  # the class occurs in the case (GT or prediction)
            counts[name] = ClassCounts(true_positives=tp, false_positives=fp, false_negatives=fn)
    return counts


def aggregate_nuclei(rows: Sequence[CaseRow], task: TaskSpec) -> dict[str, float]:
    """PUMA nuclei ``f1`` and the per-class ``f1_<class>`` for every class of the track.

    Definition: per case, F1_{c,i} from the TP/FP/FN of the row for every class occurring in
        it (TP + FP + FN > 0); F1_c = (sum of F1_{c,i} over the cases) / (number of cases);
        ``f1`` = mean of F1_c over the classes occurring in at least one case.
    Units: none, in [0, 1]; higher is better.
    Empty: a class occurring nowhere is left out of ``f1`` and reported as ``f1_<class>`` = 0;
        no class anywhere gives ``f1`` = 0.
    Follows: ``evaluate.py main()`` of tueimage/PUMA-challenge-eval-track1 (@2650261) /
        -track2 (@cb847d1) via :func:`rexmle.metrics.points.puma_macro_f1`.
    Differs: the matched prediction is removed by identity, not by equal centroid (spec
        deviation 1; differs only for duplicated centroids).

    Args:
        rows: rows of :func:`score_nuclei_case`.
        task: the task's declarations; ``params.track`` names the classes.

    Returns:
        ``f1`` and ``f1_<class>`` per class.
    """
    classes = track_classes(task.params)
    result = puma_macro_f1([case_counts(row, classes) for row in rows])
    metrics = {"f1": result.f1}
    for name in classes:
        metrics[f"f1_{name}"] = float(result.per_class.get(name, 0.0))
    return metrics
