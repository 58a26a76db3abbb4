"""DENTEX under the published study's definitions (``--definitions study``).

Re-implemented from the description in ``docs/study-errata.md`` (entry dentex): the study's
grader declared the COCO categories of every level with ids from 1, while the data's ids start
at 0, so category 0 of each level (quadrant 1, tooth 1 and the diagnosis "Impacted") is never
scored: its reference boxes and its detections are left out of COCO's evaluation. Everything
else is the official evaluation. (The study's grader crashed on a submission without any
detection; here that stays a valid submission scoring 0, the official value.)
"""

from __future__ import annotations

from rexmle.tasks.rows import CaseRow
from rexmle.tasks.spec import TaskSpec

from .metrics import aggregate_from

STUDY_FIRST_CATEGORY_ID = 1


def aggregate(rows: list[CaseRow], _task: TaskSpec) -> dict[str, float]:
    """The 16 COCO values with category 0 of every level left out."""
    return aggregate_from(rows, first_category_id=STUDY_FIRST_CATEGORY_ID)
