"""PANTHER under the published study's definitions (``--definitions study``).

Re-implemented from the description in ``docs/study-errata.md`` (entries panther-task1/2): the
study read the spacing from the prediction's header and paired SimpleITK's [s_z, s_x, s_y] with the
(z, y, x) array: axis z gets s_z, axis y gets s_x, axis x gets s_y. On this package's (x, y, z)
arrays that is the spacing (s_y, s_x, s_z). It applies to the ranked surface keys ``msd``,
``hd95`` and ``masd`` (and the uniform-prediction diagonal); with s_x = s_y it equals the physical
pairing, the extra ``*_physical`` keys. Dice, volumes and the RMSE are the official ones.
"""

from __future__ import annotations

from rexmle.tasks.jobs import ScoreCase
from rexmle.tasks.rows import CaseRow

from .metrics import Spacing, read_case, score_arrays


def study_spacing(spacing_xyz: Spacing) -> Spacing:
    """The study's pairing on (x, y, z) arrays: (s_y, s_x, s_z)."""
    s_x, s_y, s_z = spacing_xyz
    return (s_y, s_x, s_z)


def score_case(case: ScoreCase) -> CaseRow:
    """Metrics of one case; the ranked surface keys with the prediction's spacing, study-paired."""
    pred, truth, gold_spacing, pred_spacing = read_case(case)
    values = score_arrays(pred, truth, gold_spacing, ranked_spacing=study_spacing(pred_spacing))
    return CaseRow(case_id=case.case_id, values=values)
