"""PSNR, SSIM and LNCC: hand cases, scikit-image agreement, a brute-force LNCC, properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis.extra.numpy import arrays
from numpy.lib.stride_tricks import sliding_window_view
from skimage.metrics import peak_signal_noise_ratio, structural_similarity

from rexmle.metrics.image import lncc, psnr, ssim

# ---------------------------------------------------------------- PSNR


def test_psnr_hand_value():
    truth = np.zeros((2, 2), dtype=np.uint8)
    pred = truth.copy()
    pred[1, 1] = 255
    # MSE = 255² / 4 -> PSNR = 10 log10(255² / (255² / 4)) = 10 log10(4) = 6.0206 dB
    assert psnr(pred, truth) == pytest.approx(10 * math.log10(4), abs=1e-12)


def test_psnr_identical_and_capped():
    image = np.arange(64, dtype=np.uint8).reshape(8, 8)
    assert psnr(image, image) == 100.0
    big = np.zeros((1000, 1000), dtype=np.uint8)
    nearly = big.copy()
    nearly[0, 0] = 1
    # MSE = 1e-6 -> 10 log10(65025 / 1e-6) = 108.13 dB -> capped at 100
    assert psnr(nearly, big) == 100.0
    assert psnr(nearly, big, cap_db=200.0) == pytest.approx(10 * math.log10(65025e6), abs=1e-9)


@pytest.mark.parametrize("seed", range(5))
def test_psnr_equals_skimage(seed):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 256, (40, 50), dtype=np.uint8)
    pred = np.clip(truth + rng.normal(0, 20, truth.shape), 0, 255).astype(np.uint8)
    expected = peak_signal_noise_ratio(truth, pred, data_range=255)
    assert psnr(pred, truth) == pytest.approx(expected, rel=1e-14)


# ---------------------------------------------------------------- SSIM


def test_ssim_of_two_constant_images_hand_value():
    black = np.zeros((7, 7), dtype=np.uint8)
    white = np.full((7, 7), 255, dtype=np.uint8)
    # means 0 and 255, variances 0: S = (2*0*255 + C1) * C2 / ((0 + 255² + C1) * C2)
    # with C1 = (0.01 * 255)² = 6.5025 -> 6.5025 / 65031.5025; only the centre pixel survives
    # the 3-px crop of a 7 x 7 image
    assert ssim(black, white) == pytest.approx(6.5025 / 65031.5025, rel=1e-12)


def test_ssim_of_identical_images_is_exactly_one():
    image = np.random.default_rng(0).integers(0, 256, (30, 30), dtype=np.uint8)
    assert ssim(image, image) == 1.0


@pytest.mark.parametrize("seed", range(5))
def test_ssim_equals_skimage(seed):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 256, (64, 48), dtype=np.uint8)
    pred = np.clip(truth * 0.7 + rng.normal(20, 25, truth.shape), 0, 255).astype(np.uint8)
    expected = structural_similarity(truth, pred, data_range=255)
    assert ssim(pred, truth) == expected


def test_ssim_rejects_a_window_larger_than_the_image():
    with pytest.raises(ValueError, match="window_px"):
        ssim(np.zeros((5, 5)), np.zeros((5, 5)))


# ---------------------------------------------------------------- LNCC


def _lncc_brute_force(pred: np.ndarray, truth: np.ndarray, window: int = 11) -> float:
    """Window by window with reflect-101 padding (numpy 'reflect'), population moments."""
    pad = window // 2
    x = pred.astype(float)
    y = truth.astype(float)
    x = (x - x.min()) / (x.max() - x.min() + 1e-8)
    y = (y - y.min()) / (y.max() - y.min() + 1e-8)
    wx = sliding_window_view(np.pad(x, pad, mode="reflect"), (window, window))
    wy = sliding_window_view(np.pad(y, pad, mode="reflect"), (window, window))
    values = []
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            a, b = wx[i, j].ravel(), wy[i, j].ravel()
            va, vb = a.var(), b.var()
            if va > 1e-10 and vb > 1e-10:
                values.append(np.mean((a - a.mean()) * (b - b.mean())) / np.sqrt(va * vb))
    return float(np.mean(values))


@pytest.mark.parametrize("seed", range(3))
def test_lncc_equals_a_window_by_window_computation(seed):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 256, (24, 19), dtype=np.uint8)
    pred = np.clip(truth * 0.5 + rng.normal(60, 30, truth.shape), 0, 255).astype(np.uint8)
    assert lncc(pred, truth) == pytest.approx(_lncc_brute_force(pred, truth), abs=1e-9)


def test_lncc_affine_copies_and_inversions():
    image = np.random.default_rng(1).integers(0, 200, (32, 32)).astype(np.uint8)
    # an affine brightening is undone by the min-max rescaling -> 1; an inversion -> -1
    assert lncc(image, image) == pytest.approx(1.0, abs=1e-9)
    assert lncc(image.astype(np.int64) * 3 + 10, image) == pytest.approx(1.0, abs=1e-6)
    assert lncc(255 - image, image) == pytest.approx(-1.0, abs=1e-6)


def test_lncc_without_local_contrast():
    flat = np.full((20, 20), 7, dtype=np.uint8)
    other_flat = np.full((20, 20), 200, dtype=np.uint8)
    textured = np.random.default_rng(2).integers(0, 256, (20, 20), dtype=np.uint8)
    # both rescale to all zeros -> equal -> 1.0; a constant against texture -> no valid pixel,
    # images differ -> 0.0
    assert lncc(flat, other_flat) == 1.0
    assert lncc(flat, textured) == 0.0


def test_image_inputs_are_checked():
    with pytest.raises(ValueError, match="shape"):
        lncc(np.zeros((4, 4)), np.zeros((4, 5)))
    with pytest.raises(ValueError, match="2-D"):
        psnr(np.zeros((4, 4, 3)), np.zeros((4, 4, 3)))
    with pytest.raises(ValueError, match="NaN"):
        psnr(np.full((4, 4), np.nan), np.zeros((4, 4)))
    with pytest.raises(TypeError, match="dtype"):
        psnr(np.zeros((4, 4), dtype=bool), np.zeros((4, 4), dtype=bool))


# ---------------------------------------------------------------- properties

_images = arrays(np.uint8, (12, 13))


@settings(max_examples=50, deadline=None)
@given(_images, _images)
def test_bounds_and_symmetry(a, b):
    p = psnr(a, b)
    assert 0.0 <= p <= 100.0
    assert p == psnr(b, a)
    s = ssim(a, b)
    assert -1.0 - 1e-12 <= s <= 1.0 + 1e-12
    assert s == pytest.approx(ssim(b, a), abs=1e-12)
    c = lncc(a, b)
    assert -1.0 - 1e-6 <= c <= 1.0 + 1e-6
    assert c == pytest.approx(lncc(b, a), abs=1e-12)


@settings(max_examples=50, deadline=None)
@given(_images)
def test_identity_is_best(a):
    assert psnr(a, a) == 100.0
    assert ssim(a, a) == 1.0
    assert lncc(a, a) == pytest.approx(1.0, abs=1e-6)


@settings(max_examples=30, deadline=None)
@given(_images, _images)
def test_joint_transpose_changes_nothing(a, b):
    assert psnr(a.T, b.T) == pytest.approx(psnr(a, b), abs=1e-12)
    assert ssim(a.T, b.T) == pytest.approx(ssim(a, b), abs=1e-12)
    assert lncc(a.T, b.T) == pytest.approx(lncc(a, b), abs=1e-9)
