"""Non-LLM baseline for the PUMA tissue tasks: a Gaussian colour classifier per pixel.

Model: features per pixel = RGB smoothed at two scales (Gaussian sigma 1 and 4 px); one
multivariate Gaussian per tissue value 0-5 with its training frequency as prior, fitted on a
seeded sample of training pixels (``train/masks``); each test pixel gets the most probable value.
Deterministic; needs numpy, scipy and tifffile only.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy import ndimage

from rexmle.tasks.jobs import BaselineJob

N_VALUES = 6
SAMPLES_PER_IMAGE = 4000
SIGMAS_PX = (1.0, 4.0)
RIDGE = 1e-3


def _features(image: npt.NDArray[np.generic]) -> npt.NDArray[np.float64]:
    rgb = np.asarray(image[..., :3], dtype=np.float64) / 255.0
    layers = [ndimage.gaussian_filter(rgb[..., k], sigma) for sigma in SIGMAS_PX for k in range(3)]
    return np.stack(layers, axis=-1)


class GaussianPixelClassifier:
    """Class-conditional Gaussians with priors over pixel feature vectors."""

    def __init__(self) -> None:
        self.values: list[int] = []
        self.means: list[np.ndarray] = []
        self.precisions: list[np.ndarray] = []
        self.offsets: list[float] = []

    def fit(self, features: np.ndarray, labels: np.ndarray) -> None:
        """Fit one Gaussian per label value present (features: (n, d), labels: (n,))."""
        n, d = features.shape
        for value in np.unique(labels):
            rows = features[labels == value]
            mean = rows.mean(axis=0)
            spread = np.cov(rows, rowvar=False) if len(rows) > 1 else np.zeros((d, d))
            covariance = spread + RIDGE * np.eye(d)
            _, logdet = np.linalg.slogdet(covariance)
            self.values.append(int(value))
            self.means.append(mean)
            self.precisions.append(np.linalg.inv(covariance))
            self.offsets.append(float(np.log(len(rows) / n) - 0.5 * logdet))

    def predict(self, features: np.ndarray) -> np.ndarray:
        """Most probable label value per row."""
        scores = np.empty((features.shape[0], len(self.values)))
        for k, (mean, precision, offset) in enumerate(
            zip(self.means, self.precisions, self.offsets, strict=True)
        ):
            centred = features - mean
            scores[:, k] = offset - 0.5 * np.einsum("ij,jk,ik->i", centred, precision, centred)
        return np.asarray(self.values, dtype=np.uint8)[np.argmax(scores, axis=1)]


def solve(job: BaselineJob) -> None:
    """Fit on ``public/train`` (pixels sampled with ``job.seed``) and write one map per test ROI."""
    import tifffile

    public_dir, submission_dir = job.public, job.submission
    rng = np.random.default_rng(job.seed)
    samples, labels = [], []
    for mask_path in sorted((public_dir / "train" / "masks").glob("*.tif")):
        mask = tifffile.imread(mask_path)
        image = tifffile.imread(public_dir / "train" / "images" / mask_path.name)
        features = _features(image).reshape(-1, len(SIGMAS_PX) * 3)
        flat = mask.reshape(-1)
        pick = rng.choice(flat.size, size=min(SAMPLES_PER_IMAGE, flat.size), replace=False)
        samples.append(features[np.sort(pick)])
        labels.append(flat[np.sort(pick)])
    model = GaussianPixelClassifier()
    model.fit(np.concatenate(samples), np.concatenate(labels))
    rows = []
    for case_id in job.test_ids():
        image = tifffile.imread(public_dir / "test" / "images" / f"{case_id}.tif")
        features = _features(image)
        height, width = features.shape[:2]
        prediction = model.predict(features.reshape(height * width, -1)).reshape(height, width)
        relative = f"predictions/{case_id}.tif"
        (submission_dir / "predictions").mkdir(parents=True, exist_ok=True)
        tifffile.imwrite(submission_dir / relative, prediction)
        rows.append((case_id, relative))
    job.write_submission_csv(rows)
