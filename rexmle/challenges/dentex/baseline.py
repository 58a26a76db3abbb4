"""Non-LLM baseline for DENTEX: a tooth-position prior plus a learned brightness rule.

Model, fitted on ``public/train``: for every (quadrant, tooth) pair the median box in coordinates
relative to the image size; how often that tooth is annotated; and, from the contrast of the box
region (mean inside minus image mean, over the image standard deviation), a logistic rule
"annotated vs not" and one Gaussian per diagnosis. At test time every known tooth position gets one
detection: its median box, the most likely diagnosis, and score = prior x P(annotated | contrast).
Deterministic; needs numpy and Pillow only.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import numpy.typing as npt
from PIL import Image

from rexmle.tasks.jobs import BaselineJob

from .prepare import DISEASE_JSON

Tooth = tuple[int, int]


def _pixels(path: Path) -> npt.NDArray[np.float64]:
    with Image.open(path) as image:
        pixels = np.asarray(image.convert("L"), dtype=np.float64)
    spread = float(pixels.std()) or 1.0
    return (pixels - float(pixels.mean())) / spread


def _contrast(pixels: npt.NDArray[np.float64], box: npt.NDArray[np.float64]) -> float:
    """Mean of the standardised image inside ``box`` (relative ``[x, y, w, h]``)."""
    height, width = pixels.shape
    x, y, w, h = box * np.array([width, height, width, height])
    r0, r1 = int(max(0, round(y))), int(min(height, round(y + h)))
    c0, c1 = int(max(0, round(x))), int(min(width, round(x + w)))
    if r1 <= r0 or c1 <= c0:
        return 0.0
    return float(pixels[r0:r1, c0:c1].mean())


def fit(public_dir: Path) -> dict[str, object]:
    """Learn the position prior, the presence rule and the diagnosis model from the train set."""
    document = json.loads((public_dir / "train" / DISEASE_JSON).read_text(encoding="utf-8"))
    sizes = {int(i["id"]): (float(i["width"]), float(i["height"])) for i in document["images"]}
    relative: dict[Tooth, list[list[float]]] = defaultdict(list)
    labelled: dict[int, dict[Tooth, int]] = defaultdict(dict)
    for a in document["annotations"]:
        width, height = sizes[int(a["image_id"])]
        x, y, w, h = (float(v) for v in a["bbox"])
        tooth = (int(a["category_id_1"]), int(a["category_id_2"]))
        relative[tooth].append([x / width, y / height, w / width, h / height])
        labelled[int(a["image_id"])][tooth] = int(a["category_id_3"])
    boxes = {tooth: np.median(np.asarray(v), axis=0) for tooth, v in relative.items()}
    n_images = max(1, len(document["images"]))
    prior = {tooth: len(v) / n_images for tooth, v in relative.items()}
    positive: list[float] = []
    negative: list[float] = []
    by_diagnosis: dict[int, list[float]] = defaultdict(list)
    for image in document["images"]:
        pixels = _pixels(public_dir / "train" / "images" / str(image["file_name"]))
        marks = labelled.get(int(image["id"]), {})
        for tooth, box in boxes.items():
            value = _contrast(pixels, box)
            if tooth in marks:
                positive.append(value)
                by_diagnosis[marks[tooth]].append(value)
            else:
                negative.append(value)
    pos_mean = float(np.mean(positive)) if positive else 1.0
    neg_mean = float(np.mean(negative)) if negative else 0.0
    spread = float(np.std(positive + negative)) or 1.0
    diagnoses = {
        d: (float(np.mean(v)), float(np.std(v)) + 0.1 * spread, len(v) / max(1, len(positive)))
        for d, v in sorted(by_diagnosis.items())
    }
    return {
        "boxes": boxes,
        "prior": prior,
        "midpoint": (pos_mean + neg_mean) / 2.0,
        "slope": (pos_mean - neg_mean) / spread,
        "spread": spread,
        "diagnoses": diagnoses,
    }


def predict(model: dict[str, object], pixels: npt.NDArray[np.float64]) -> list[dict[str, object]]:
    """Detections of one image: one per known tooth position, in a fixed order."""
    height, width = pixels.shape
    detections = []
    boxes: dict[Tooth, npt.NDArray[np.float64]] = model["boxes"]  # type: ignore[assignment]
    prior: dict[Tooth, float] = model["prior"]  # type: ignore[assignment]
    diagnoses: dict[int, tuple[float, float, float]] = model["diagnoses"]  # type: ignore[assignment]
    for tooth in sorted(boxes):
        box = boxes[tooth]
        value = _contrast(pixels, box)
        z = float(model["slope"]) * (value - float(model["midpoint"])) / float(model["spread"])  # type: ignore[arg-type]
        presence = 1.0 / (1.0 + np.exp(-4.0 * z))
        likelihood = {
            d: weight * np.exp(-0.5 * ((value - mean) / sd) ** 2) / sd
            for d, (mean, sd, weight) in diagnoses.items()
        }
        diagnosis = max(sorted(likelihood), key=lambda d: likelihood[d]) if likelihood else 0
        x, y, w, h = (float(v) for v in box * np.array([width, height, width, height]))
        detections.append(
            {
                "bbox": [round(x, 2), round(y, 2), round(w, 2), round(h, 2)],
                "category_id_1": tooth[0],
                "category_id_2": tooth[1],
                "category_id_3": int(diagnosis),
                "score": round(float(min(1.0, prior[tooth]) * presence), 6),
            }
        )
    return detections


def solve(job: BaselineJob) -> None:
    """Fit on ``public/train`` and write one prediction JSON per test image."""
    public_dir, submission_dir = job.public, job.submission
    model = fit(public_dir)
    rows = []
    for path in sorted((public_dir / "test" / "images").glob("*.png")):
        relative = f"predictions/{path.stem}.json"
        target = submission_dir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(predict(model, _pixels(path))) + "\n", encoding="utf-8")
        rows.append((path.stem, relative))
    job.write_submission_csv(rows)
