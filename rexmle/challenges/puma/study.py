"""PUMA nuclei under the published study's definitions (``--definitions study``).

Re-implemented from the description in ``docs/study-errata.md`` (entries puma-track1-task2 and
puma-track2-task2); the matching and the per-case counts are the official ones
(:func:`rexmle.challenges.puma.metrics.score_nuclei_case`), only the ground truth's classes and
the aggregation differ:

- Ground truth as the study prepared it (from ``private/nuclei_sources``): nuclei that are parts
  of a MultiPolygon are dropped; in track 1 a raw class name is mapped with the study's table,
  whose keys are plural (``nuclei_lymphocytes``, ...), so only ``nuclei_tumor``,
  ``nuclei_epithelium`` and ``nuclei_endothelium`` find their class and every other nucleus keeps
  its raw name, which no prediction can match (the ground truth has no TILs).
- Aggregation: track 1 averages each of its three classes over all cases (a class absent from a
  case counts 0) and always over the three classes; track 2 averages each class only over the
  cases where it occurs (reference or prediction) and then over all ten classes (0 for a class
  that occurs nowhere).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from rexmle.errors import HarnessError
from rexmle.metrics.points import nuclei_class_counts, puma_macro_f1
from rexmle.tasks.jobs import ScoreCase
from rexmle.tasks.rows import CaseRow, CaseValue
from rexmle.tasks.spec import TaskSpec

from .classes import NUCLEI_NAMES, nuclei_name, track_classes, track_of
from .metrics import case_counts, nuclei_row, read_case_nuclei
from .prepare import NUCLEI_SOURCES

STUDY_TRACK1_NAMES: dict[str, str] = {
    "nuclei_tumor": "tumor",
    "nuclei_lymphocytes": "TILs",
    "nuclei_plasma_cells": "TILs",
    "nuclei_histiocytes": "other",
    "nuclei_melanophages": "other",
    "nuclei_neutrophils": "other",
    "nuclei_stromal_cells": "other",
    "nuclei_epithelium": "other",
    "nuclei_endothelium": "other",
}
"""The study's track-1 class table: plural keys, while the release's names are singular."""


def study_class(raw_class: str, track: int) -> str:
    """The class the study's preparation gave a raw class name (raw, lower-cased, if unmapped)."""
    if track == 1:
        lowered = raw_class.lower()
        return STUDY_TRACK1_NAMES.get(lowered, lowered)
    return nuclei_name(raw_class, 2)


def score_nuclei_case(case: ScoreCase) -> CaseRow:
    """Per-class TP/FP/FN of one case against the ground truth as the study prepared it.

    Raises:
        HarnessError: the sources file is missing or does not match the gold file.
    """
    track = track_of(case.params)
    truth, pred = read_case_nuclei(case)
    sources_path = case.private / NUCLEI_SOURCES / f"{case.case_id}.json"
    try:
        sources = json.loads(sources_path.read_text(encoding="utf-8"))["polygons"]
    except (OSError, ValueError, KeyError) as err:
        msg = f"PUMA case {case.case_id}: cannot read {sources_path} ({err}); prepare again"
        raise HarnessError(msg) from err
    if len(sources) != len(truth.classes) or any(
        s["raw_class"] not in NUCLEI_NAMES for s in sources
    ):
        msg = f"PUMA case {case.case_id}: {sources_path} does not match the gold file"
        raise HarnessError(msg)
    kept = [i for i, s in enumerate(sources) if s["geometry"] == "Polygon"]
    truth_classes = [study_class(sources[i]["raw_class"], track) for i in kept]
    counts = nuclei_class_counts(truth.xy[kept], truth_classes, pred.xy, pred.classes, pred.scores)
    values: dict[str, CaseValue] = nuclei_row(counts, track_classes(case.params))
    values["n_truth"] = float(len(kept))
    values["n_pred"] = float(len(pred.classes))
    return CaseRow(case_id=case.case_id, values=values)


def aggregate_nuclei(rows: Sequence[CaseRow], task: TaskSpec) -> dict[str, float]:
    """The study's ``f1`` and ``f1_<class>`` (module docstring), from the rows' counts."""
    classes = track_classes(task.params)
    per_occurrence = track_of(task.params) == 2
    result = puma_macro_f1(
        [case_counts(row, classes) for row in rows],
        per_occurrence=per_occurrence,
        classes=classes,
    )
    metrics = {"f1": result.f1}
    for name in classes:
        metrics[f"f1_{name}"] = float(result.per_class[name])
    return metrics
