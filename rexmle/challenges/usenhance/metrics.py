"""USenhance metrics per image (spec usenhance.md): LNCC, SSIM, PSNR on 8-bit images.

The YAML declares each averaged over the test images.
"""

from __future__ import annotations

import numpy as np

from rexmle.metrics.image import lncc, psnr, ssim
from rexmle.tasks.jobs import ScoreCase
from rexmle.tasks.rows import CaseRow, CaseValue

from .submission import read_gray_png


def score_case(case: ScoreCase) -> CaseRow:
    """LNCC, SSIM and PSNR of one enhanced image against its high-quality reference."""
    pred_path, gold_path = case.file_pair()
    pred = read_gray_png(pred_path).astype(np.float64)
    truth = read_gray_png(gold_path).astype(np.float64)
    data_range = float(case.params["data_range"])
    values: dict[str, CaseValue] = {
        "lncc": lncc(pred, truth),
        "ssim": ssim(pred, truth, data_range=data_range),
        "psnr": psnr(pred, truth, data_range=data_range),
    }
    return CaseRow(case_id=case.case_id, values=values)
