"""PUMA metrics per case and their aggregation (spec puma.md, "Metrics").

Tissue (``dice``): micro Dice per class 1..5 pooled over all test cases with ε = 1e-5 and
dice_c = 0 when the pooled intersection is 0, then the mean over the five classes
(:class:`rexmle.metrics.overlap.MicroDiceAccumulator`). Per case only the pixel counts are
reported (the challenge computes no per-image Dice). Extra keys ``dice_<class>``.

Nuclei (``f1``): greedy same-class centroid matching within a strict 15 px radius per case, F1
per (class, case), then each class's F1 summed over the cases where it occurs and divided by
the number of test cases, averaged over the classes seen (:mod:`rexmle.metrics.points`). Extra
keys ``f1_<class>`` for every class of the track (0 for a class seen nowhere).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rexmle.challenges.puma.classes import TISSUE_CLASSES
from rexmle.challenges.puma.submission import read_nuclei_file
from rexmle.errors import HarnessError
from rexmle.io import read_image
from rexmle.metrics.overlap import MicroDiceAccumulator
from rexmle.metrics.points import ClassCounts, nuclei_class_counts, puma_macro_f1

TISSUE_EPSILON = 1e-5


def _tissue_accumulator() -> MicroDiceAccumulator:
    return MicroDiceAccumulator(TISSUE_CLASSES, epsilon=TISSUE_EPSILON)


def score_tissue_case(case: tuple[str, Path, Path]) -> dict[str, object]:
    """Pixel counts of one case; ``case`` = (case id, predicted map path, gold map path).

    Row keys: ``intersection_<class>`` = |{G = c} ∩ {P = c}|, ``total_<class>`` =
    |{G = c}| + |{P = c}| for the five scored classes.
    """
    case_id, pred_path, gold_path = case
    pred = np.asarray(read_image(pred_path).array)
    truth = np.asarray(read_image(gold_path).array)
    accumulator = _tissue_accumulator()
    accumulator.add(pred, truth)
    row: dict[str, object] = {"case_id": case_id}
    for value, name in TISSUE_CLASSES.items():
        row[f"intersection_{name}"] = float(accumulator.intersections[value])
        row[f"total_{name}"] = float(accumulator.sums[value])
    return row


def aggregate_tissue(cases: list[dict[str, object]]) -> dict[str, float]:
    """PUMA tissue ``dice`` and the per-class ``dice_<class>``, pooled over the test cases.

    Definition: for c in 1..5, I_c and S_c summed over the case rows; dice_c = (2·I_c + ε) /
        (S_c + ε) with ε = 1e-5, and 0 when I_c = 0; ``dice`` = mean of the five dice_c.
    Units: none, in [0, 1]; higher is better. Background (0) is not scored.
    Empty: a class absent from every map (GT and prediction) gives dice_c = 0, for gold too.
    Follows: ``calculate_micro_dice_score_with_masks`` in tueimage/PUMA-challenge-eval-track1
        (@2650261) / -track2 (@cb847d1) ``evaluate_tissue.py``.
    Differs: none (maps of another size are invalid instead of resized, spec deviation 3).

    Args:
        cases: rows of :func:`score_tissue_case`.

    Returns:
        ``dice`` and ``dice_<class>`` for the five scored classes.
    """
    accumulator = _tissue_accumulator()
    for row in cases:
        for value, name in TISSUE_CLASSES.items():
            accumulator.intersections[value] += int(float(row[f"intersection_{name}"]))  # type: ignore[arg-type]
            accumulator.sums[value] += int(float(row[f"total_{name}"]))  # type: ignore[arg-type]
    per_class = accumulator.per_class()
    metrics = {"dice": accumulator.mean()}
    for value, name in TISSUE_CLASSES.items():
        metrics[f"dice_{name}"] = per_class[value]
    return metrics


def score_nuclei_case(case: tuple[str, Path, Path, tuple[str, ...]]) -> dict[str, object]:
    """Per-class TP/FP/FN of one case; ``case`` = (id, prediction path, gold path, classes).

    Row keys: ``n_truth``, ``n_pred``, ``n_matched`` and ``tp_<class>``, ``fp_<class>``,
    ``fn_<class>`` for every class of the track (0 when the class does not occur in the case).

    Raises:
        HarnessError: a file that passed validation no longer parses.
    """
    case_id, pred_path, gold_path, classes = case
    parsed = {}
    for role, path in (("prediction", pred_path), ("gold", gold_path)):
        nuclei, reasons = read_nuclei_file(path, classes)
        if nuclei is None:
            msg = f"PUMA case {case_id}: the {role} file does not parse after validation: {reasons}"
            raise HarnessError(msg)
        parsed[role] = nuclei
    truth, pred = parsed["gold"], parsed["prediction"]
    counts = nuclei_class_counts(truth.xy, truth.classes, pred.xy, pred.classes, pred.scores)
    row: dict[str, object] = {
        "case_id": case_id,
        "n_truth": float(len(truth.classes)),
        "n_pred": float(len(pred.classes)),
        "n_matched": float(sum(c.true_positives for c in counts.values())),
    }
    for name in classes:
        found = counts.get(name, ClassCounts(0, 0, 0))
        row[f"tp_{name}"] = float(found.true_positives)
        row[f"fp_{name}"] = float(found.false_positives)
        row[f"fn_{name}"] = float(found.false_negatives)
    return row


def _case_counts(row: dict[str, object], classes: tuple[str, ...]) -> dict[str, ClassCounts]:
    counts = {}
    for name in classes:
        tp, fp, fn = (int(float(row[f"{k}_{name}"])) for k in ("tp", "fp", "fn"))  # type: ignore[arg-type]
        if tp + fp + fn > 0:  # the class occurs in the case (GT or prediction)
            counts[name] = ClassCounts(true_positives=tp, false_positives=fp, false_negatives=fn)
    return counts


def aggregate_nuclei(cases: list[dict[str, object]], classes: tuple[str, ...]) -> dict[str, float]:
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
        cases: rows of :func:`score_nuclei_case`.
        classes: the canonical class names of the track.

    Returns:
        ``f1`` and ``f1_<class>`` per class.
    """
    result = puma_macro_f1([_case_counts(row, classes) for row in cases])
    metrics = {"f1": result.f1}
    for name in classes:
        metrics[f"f1_{name}"] = float(result.per_class.get(name, 0.0))
    return metrics
