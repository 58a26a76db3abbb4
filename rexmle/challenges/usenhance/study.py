"""USenhance under the published study's definitions (``--definitions study``).

Re-implemented from the description in ``docs/study-errata.md`` (entry usenhance): SSIM and PSNR
take the data range of the image pair, L = max(max P, max G) - min(min P, min G), instead of the
8-bit range 255. LNCC is the official one. The study's PSNR of identical images is +inf (its mean
then too); here it stays capped at 100 dB like the official one, because a ranked value must be
finite, and a pair of identical constant images (L = 0) gets SSIM 1 and the cap.
"""

from __future__ import annotations

import numpy as np

from rexmle.metrics.image import PSNR_CAP_DB, lncc, psnr, ssim
from rexmle.tasks.jobs import ScoreCase
from rexmle.tasks.rows import CaseRow, CaseValue

from .submission import read_gray_png


def pair_data_range(pred: np.ndarray, truth: np.ndarray) -> float:
    """The study's data range: max over both images minus min over both images."""
    return float(max(pred.max(), truth.max()) - min(pred.min(), truth.min()))


def score_case(case: ScoreCase) -> CaseRow:
    """LNCC, and SSIM and PSNR with the pair's own data range, of one image."""
    pred_path, gold_path = case.file_pair()
    pred = read_gray_png(pred_path).astype(np.float64)
    truth = read_gray_png(gold_path).astype(np.float64)
    data_range = pair_data_range(pred, truth)
    values: dict[str, CaseValue] = {"lncc": lncc(pred, truth)}
    if data_range == 0.0:
        values.update({"ssim": 1.0, "psnr": PSNR_CAP_DB})
    else:
        values["ssim"] = ssim(pred, truth, data_range=data_range)
        values["psnr"] = psnr(pred, truth, data_range=data_range)
    return CaseRow(case_id=case.case_id, values=values)
