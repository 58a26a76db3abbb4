"""SEG.A under the published study's definitions (``--definitions study``).

Re-implemented from the description in ``docs/study-errata.md`` (entry seg_a): the study read the
spacing from a key that does not exist and fell back to 1, so its Hausdorff distance is in voxels,
and it took one direction only, prediction to gold: ``hd`` = max over the prediction's surface
voxels of the distance (in voxel units) to the nearest gold surface voxel; an empty prediction
gets the volume diagonal in voxels. Dice is the official one.
"""

from __future__ import annotations

from rexmle.tasks.jobs import ScoreCase
from rexmle.tasks.rows import CaseRow

from .metrics import case_values, read_case


def score_case(case: ScoreCase) -> CaseRow:
    """``dsc`` and the study's ``hd`` (voxel units, prediction to gold) of one case."""
    pred, truth, spacing = read_case(case)
    voxels = tuple(1.0 for _ in spacing)
    return CaseRow(case_id=case.case_id, values=case_values(pred, truth, voxels, directed=True))
