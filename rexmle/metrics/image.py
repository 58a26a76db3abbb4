"""Full-reference image similarity: PSNR, SSIM and local normalised cross-correlation (LNCC).

Images are 2-D arrays of shape (H, W) (8-bit grayscale in USenhance); every function converts
both images to float64 before computing.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from scipy.ndimage import uniform_filter

UINT8_DATA_RANGE = 255.0
"""Data range of 8-bit images, used by PSNR and SSIM (not estimated from the images)."""
PSNR_CAP_DB = 100.0
"""PSNR value of identical images and upper bound of every PSNR value, in dB."""
SSIM_WINDOW_PX = 7
"""Side of the uniform SSIM window (scikit-image default)."""
LNCC_WINDOW_PX = 11
"""Side of the box window of LNCC."""


def _as_float_pair(
    pred: npt.ArrayLike, truth: npt.ArrayLike
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    a = np.asarray(pred)
    b = np.asarray(truth)
    if a.shape != b.shape:
        msg = f"pred has shape {a.shape} but truth has {b.shape}"
        raise ValueError(msg)
    if a.ndim != 2:
        msg = f"images must be 2-D (H, W), got shape {a.shape}"
        raise ValueError(msg)
    for image, name in ((a, "pred"), (b, "truth")):
        if image.dtype == np.bool_ or not (
            np.issubdtype(image.dtype, np.integer) or np.issubdtype(image.dtype, np.floating)
        ):
            msg = f"{name} must have an integer or floating dtype, got {image.dtype}"
            raise TypeError(msg)
    a = a.astype(np.float64, copy=False)
    b = b.astype(np.float64, copy=False)
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        msg = "images must not contain NaN or infinite values"
        raise ValueError(msg)
    return a, b


def psnr(
    pred: npt.ArrayLike,
    truth: npt.ArrayLike,
    *,
    data_range: float = UINT8_DATA_RANGE,
    cap_db: float = PSNR_CAP_DB,
) -> float:
    """Peak signal-to-noise ratio of a prediction against its reference, capped.

    Definition: PSNR = 10 log10(data_range² / MSE), MSE = mean over all pixels of
        (pred - truth)² in float64; the result is min(PSNR, cap_db).
    Units: dB; higher is better.
    Empty: identical images (MSE = 0) -> ``cap_db`` (100 dB), never +inf.
    Follows: USenhance 2023 as specified for ReX-MLE (no official evaluation code): fixed data
        range 255 for 8-bit images. Equals ``skimage.metrics.peak_signal_noise_ratio(truth,
        pred, data_range=255)`` whenever that is below the cap.
    Differs: the cap (scikit-image returns inf for identical images); the fixed data range (the
        ReX reference used max(both) - min(both)).

    Args:
        pred: predicted image of shape (H, W).
        truth: reference image, same shape.
        data_range: peak value range of the images.
        cap_db: upper bound of the result.

    Returns:
        PSNR in dB.

    Raises:
        TypeError: an image is not numeric.
        ValueError: shapes differ, images are not 2-D, contain NaN/inf, or data_range <= 0.
    """
    if not (math.isfinite(data_range) and data_range > 0):
        msg = f"data_range must be finite and > 0, got {data_range}"
        raise ValueError(msg)
    a, b = _as_float_pair(pred, truth)
    mse = float(np.mean((b - a) ** 2, dtype=np.float64))
    if mse == 0.0:
        return float(cap_db)
    return float(min(10 * np.log10((data_range**2) / mse), cap_db))


def ssim(
    pred: npt.ArrayLike,
    truth: npt.ArrayLike,
    *,
    data_range: float = UINT8_DATA_RANGE,
    window_px: int = SSIM_WINDOW_PX,
    k1: float = 0.01,
    k2: float = 0.03,
) -> float:
    """Mean structural similarity (SSIM) with a uniform window, as scikit-image computes it.

    Definition: with local means u, variances v and covariance v_xy over a ``window_px`` x
        ``window_px`` uniform window (scipy ``uniform_filter``, ``reflect`` border), sample
        covariance (factor N / (N - 1), N = window_px²), C1 = (k1 L)², C2 = (k2 L)², L =
        ``data_range``: S = (2 u_x u_y + C1)(2 v_xy + C2) / ((u_x² + u_y² + C1)(v_x + v_y + C2));
        SSIM = mean of S over the image without a (window_px - 1) / 2 pixel border.
    Units: dimensionless, at most 1 (identical images); higher is better.
    Empty: constant images are defined through C1, C2 (two equal constant images give 1.0).
    Follows: USenhance 2023 as specified for ReX-MLE: ``skimage.metrics.structural_similarity(
        truth, pred, data_range=255)`` with its defaults (no Gaussian weighting, K1 = 0.01,
        K2 = 0.03, 7 x 7 window); same operations, so the same floating-point result.
    Differs: the fixed data range 255 (the ReX reference used max(both) - min(both)).

    Args:
        pred: predicted image of shape (H, W).
        truth: reference image, same shape.
        data_range: dynamic range L of the images.
        window_px: odd window side, at most the smaller image side.
        k1: SSIM constant K1.
        k2: SSIM constant K2.

    Returns:
        The mean SSIM.

    Raises:
        TypeError: an image is not numeric.
        ValueError: shapes differ, images are not 2-D or contain NaN/inf, or a parameter is out
            of range.
    """
    if not (math.isfinite(data_range) and data_range > 0):
        msg = f"data_range must be finite and > 0, got {data_range}"
        raise ValueError(msg)
    im1, im2 = _as_float_pair(truth, pred)
    if window_px < 2 or window_px % 2 == 0 or window_px > min(im1.shape):
        msg = (
            f"window_px must be odd, >= 3 and <= the smaller image side {min(im1.shape)}, "
            f"got {window_px}"
        )
        raise ValueError(msg)
    n_window = window_px**2
    cov_norm = n_window / (n_window - 1)
    ux = uniform_filter(im1, size=window_px)
    uy = uniform_filter(im2, size=window_px)
    uxx = uniform_filter(im1 * im1, size=window_px)
    uyy = uniform_filter(im2 * im2, size=window_px)
    uxy = uniform_filter(im1 * im2, size=window_px)
    vx = cov_norm * (uxx - ux * ux)
    vy = cov_norm * (uyy - uy * uy)
    vxy = cov_norm * (uxy - ux * uy)
    c1 = (k1 * data_range) ** 2
    c2 = (k2 * data_range) ** 2
    a1 = 2 * ux * uy + c1
    a2 = 2 * vxy + c2
    b1 = ux**2 + uy**2 + c1
    b2 = vx + vy + c2
    s = (a1 * a2) / (b1 * b2)
    pad = (window_px - 1) // 2
    return float(s[pad : s.shape[0] - pad, pad : s.shape[1] - pad].mean(dtype=np.float64))


def lncc(
    pred: npt.ArrayLike,
    truth: npt.ArrayLike,
    *,
    window_px: int = LNCC_WINDOW_PX,
    normalisation_eps: float = 1e-8,
    variance_floor: float = 1e-10,
    equal_tolerance: float = 1e-8,
) -> float:
    """Local normalised cross-correlation, averaged over pixels with local contrast.

    Definition: each image is rescaled to [0, 1] by (I - min) / (max - min + ``normalisation_eps``);
        local means over a ``window_px`` x ``window_px`` box window (``mirror`` border =
        OpenCV's reflect-101): mu_x, mu_y, E[x²], E[y²], E[xy]; s_x² = E[x²] - mu_x²,
        s_y² = E[y²] - mu_y², s_xy = E[xy] - mu_x mu_y; valid pixels have s_x² > ``variance_floor``
        and s_y² > ``variance_floor``; LNCC = mean over valid pixels of s_xy / sqrt(s_x² s_y²).
    Units: dimensionless in [-1, 1] (up to rounding); 1 for identical images; higher is better.
    Empty: no valid pixel (e.g. a constant image) -> 1.0 if the two rescaled images are equal
        within ``equal_tolerance`` everywhere, else 0.0.
    Follows: USenhance 2023 as specified for ReX-MLE (LNCC variant of the ReX reference study;
        no official evaluation code); the reference used ``cv2.filter2D`` with a normalised box
        kernel, reproduced here with scipy ``uniform_filter(mode="mirror")``.
    Differs: box filtering with scipy instead of OpenCV (differences in the last bits only).

    Args:
        pred: predicted image of shape (H, W).
        truth: reference image, same shape.
        window_px: odd window side.
        normalisation_eps: added to max - min when rescaling.
        variance_floor: local variances must exceed this for a pixel to count.
        equal_tolerance: tolerance of the no-valid-pixel equality test.

    Returns:
        The mean LNCC.

    Raises:
        TypeError: an image is not numeric.
        ValueError: shapes differ, images are not 2-D or contain NaN/inf, or window_px is not
            odd and >= 1.
    """
    if window_px < 1 or window_px % 2 == 0:
        msg = f"window_px must be odd and >= 1, got {window_px}"
        raise ValueError(msg)
    a, b = _as_float_pair(pred, truth)
    x = (a - a.min()) / (a.max() - a.min() + normalisation_eps)
    y = (b - b.min()) / (b.max() - b.min() + normalisation_eps)
    mu_x = uniform_filter(x, size=window_px, mode="mirror")
    mu_y = uniform_filter(y, size=window_px, mode="mirror")
    exx = uniform_filter(x * x, size=window_px, mode="mirror")
    eyy = uniform_filter(y * y, size=window_px, mode="mirror")
    exy = uniform_filter(x * y, size=window_px, mode="mirror")
    var_x = exx - mu_x * mu_x
    var_y = eyy - mu_y * mu_y
    cov = exy - mu_x * mu_y
    valid = (var_x > variance_floor) & (var_y > variance_floor)
    if not np.any(valid):
        return 1.0 if bool(np.all(np.abs(x - y) <= equal_tolerance)) else 0.0
    ratio = cov[valid] / np.sqrt(var_x[valid] * var_y[valid])
    return float(np.mean(ratio))
