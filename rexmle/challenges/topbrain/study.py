"""TopBrain under the published study's definitions (``--definitions study``).

Re-implemented from the description in ``docs/study-errata.md`` (entries topbrain-track1/2): per
label, HD95 is taken in one direction only, d95(P→G) (the official is the maximum of both
directions); the invalid-neighbour error is averaged over the labels present in G or P (a label
absent from P counts 0) instead of over the labels present in P, as the official code does by
passing the prediction as both maps. Every other metric is the official one.
"""

from __future__ import annotations

from rexmle.tasks.jobs import ScoreCase
from rexmle.tasks.rows import CaseRow

from .metrics import score_case_with


def score_case(case: ScoreCase) -> CaseRow:
    """Metrics of one case with the study's HD95 and neighbour error."""
    return score_case_with(case, directed_hd95=True, neighbors_over_union=True)
