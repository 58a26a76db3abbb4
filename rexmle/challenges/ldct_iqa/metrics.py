"""LDCT-IQA scoring: |PLCC| + |SROCC| + |KROCC| once over all test images (spec ldct-iqa.md)."""

from __future__ import annotations

import numpy as np

from rexmle.metrics.correlation import ldct_iqa_score


def score(predicted: dict[str, float], reference: dict[str, float]) -> dict[str, float]:
    """``score`` (ranked) and ``plcc``, ``srocc``, ``krocc`` (reported), aligned by id."""
    ids = sorted(reference)
    x = np.array([predicted[i] for i in ids], dtype=float)
    y = np.array([reference[i] for i in ids], dtype=float)
    result = ldct_iqa_score(x, y, constant_value=0.0)
    return {
        "score": result.score,
        "plcc": result.plcc,
        "srocc": result.srocc,
        "krocc": result.krocc,
    }
