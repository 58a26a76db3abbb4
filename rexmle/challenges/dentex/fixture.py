"""Mini raw fixture of DENTEX: the extracted tree of ``training_data.zip``, 20 small X-rays.

Layout and naming follow the real release: the scored folder is
``training_data/quadrant-enumeration-disease/`` (hyphens) with ``xrays/train_<k>.png`` and
``train_quadrant_enumeration_disease.json`` (COCO-like, 0-based category ids in three lists). A
decoy folder ``training_data/quadrant/`` with its own JSON proves that only the scored folder is
read. Images are 96 x 192 grayscale PNGs: noise plus one bright rectangle per annotated tooth, whose
position follows its quadrant and tooth number (as on a real panoramic X-ray). Image ids 1..20 are
listed in a fixed non-sorted order, so the split's "file order" rule matters; one image has no
annotation; the test images jointly carry every category id of every level.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
from PIL import Image

from .prepare import DISEASE_DIR, DISEASE_JSON, split_ids

N_IMAGES = 20
HEIGHT = 96
WIDTH = 192
DIAGNOSES = ("Impacted", "Caries", "Periapical Lesion", "Deep Caries")
SPLIT_SEED = 42
TEST_FRACTION = 0.2
"""The split of dentex.yaml, under which the fixture places its test cases (golden reports and
the split test fail if the two differ)."""


def image_order(n_images: int = N_IMAGES) -> list[int]:
    """The fixed non-sorted order in which image ids 1..n are listed in the JSON."""
    order = list(range(1, n_images + 1))
    random.Random(7).shuffle(order)
    return order


def split_test_ids(order: list[int]) -> list[int]:
    """Image ids that prepare's split sends to test."""
    _, test = split_ids(order, seed=SPLIT_SEED, test_fraction=TEST_FRACTION)
    return test


def tooth_box(
    quadrant: int, tooth: int, height: int, width: int
) -> tuple[float, float, float, float]:
    """Nominal ``[x, y, w, h]`` of tooth ``tooth`` (0-based) in quadrant ``quadrant`` (0-based).

    Quadrants 0 and 1 are the upper jaw (image top), 2 and 3 the lower jaw; quadrants 0 and 3 lie
    on the image's left half (the patient's right), counted outwards from the midline.
    """
    box_w = width / 18.0
    box_h = height / 3.0
    offset = (tooth + 0.5) * (width / 2.0 - 2.0) / 8.0
    centre_x = width / 2.0 - offset if quadrant in (0, 3) else width / 2.0 + offset
    centre_y = height * 0.3 if quadrant in (0, 1) else height * 0.7
    return (centre_x - box_w / 2.0, centre_y - box_h / 2.0, box_w, box_h)


def _labels_for(
    image_id: int, test_ids: list[int], rng: np.random.Generator
) -> list[tuple[int, int, int]]:
    """(quadrant, tooth, diagnosis) of every annotation of one image."""
    if image_id == test_ids[-1]:
        return []  # an image without any abnormal tooth
    if image_id in test_ids:
        # the first test images jointly cover every id of every level
        slot = test_ids.index(image_id)
        return [(k % 4, (2 * slot + k) % 8, (slot + k) % 4) for k in range(5 if slot < 2 else 4)]
    n = int(rng.integers(2, 6))
    return [
        (int(rng.integers(0, 4)), int(rng.integers(0, 8)), int(rng.integers(0, 4)))
        for _ in range(n)
    ]


SIBLING_FOLDERS = {
    "quadrant_enumeration": "train_quadrant_enumeration.json",
    "unlabelled": None,
}
"""The real archive's other folders beside ``quadrant/`` (folder -> its JSON), not read."""


def make_fixture(raw_dir: Path, *, seed: int = 0, real_quirks: bool = False) -> None:
    """Write the extracted ``training_data/`` tree under ``raw_dir``.

    ``real_quirks`` adds the archive's two other sibling folders (``quadrant_enumeration/``,
    ``unlabelled/``; ``quadrant/`` is always written), with X-rays named like the disease
    folder's and, where labelled, a COCO-style JSON.
    """
    write_dataset(raw_dir, n_images=N_IMAGES, seed=seed)
    if real_quirks:
        write_sibling_folders(raw_dir, seed=seed)


def write_sibling_folders(raw_dir: Path, *, seed: int) -> None:
    """Three X-rays and (where labelled) an empty-annotation JSON per sibling folder."""
    rng = np.random.default_rng([seed, 7])
    for name, json_name in SIBLING_FOLDERS.items():
        folder = raw_dir / DISEASE_DIR.parent / name
        (folder / "xrays").mkdir(parents=True)
        images = []
        for k in range(3):
            pixels = np.clip(rng.normal(60.0, 12.0, (HEIGHT, WIDTH)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(folder / "xrays" / f"train_{k}.png")
            images.append({"id": k + 1, "file_name": f"train_{k}.png"})
        if json_name is not None:
            document = {"images": images, "annotations": []}
            (folder / json_name).write_text(json.dumps(document), encoding="utf-8")


def write_dataset(raw_dir: Path, *, n_images: int, seed: int) -> None:
    """Write ``n_images`` X-rays and their JSON in the real layout (also used by benchmarks)."""
    rng = np.random.default_rng(seed)
    order = image_order(n_images)
    test_ids = split_test_ids(order)
    folder = raw_dir / DISEASE_DIR
    (folder / "xrays").mkdir(parents=True)
    images: list[dict[str, object]] = []
    annotations: list[dict[str, object]] = []
    next_annotation_id = 1
    for image_id in order:
        file_name = f"train_{image_id - 1}.png"
        pixels = rng.normal(60.0, 12.0, (HEIGHT, WIDTH))
        seen: set[tuple[int, int]] = set()
        for quadrant, tooth, diagnosis in _labels_for(image_id, test_ids, rng):
            if (quadrant, tooth) in seen:
                continue  # one box per tooth
            seen.add((quadrant, tooth))
            x, y, w, h = tooth_box(quadrant, tooth, HEIGHT, WIDTH)
            x = round(x + float(rng.uniform(-1.5, 1.5)), 1)
            y = round(y + float(rng.uniform(-2.0, 2.0)), 1)
            w, h = round(w, 1), round(h, 1)
            r0, r1 = round(y), round(y + h)
            c0, c1 = round(x), round(x + w)
            pixels[r0:r1, c0:c1] += 90.0 + 20.0 * diagnosis
            annotations.append(
                {
                    "id": next_annotation_id,
                    "image_id": image_id,
                    "bbox": [x, y, w, h],
                    "area": round(w * h, 2),
                    "iscrowd": 0,
                    "segmentation": [[x, y, x + w, y, x + w, y + h, x, y + h]],
                    "category_id_1": quadrant,
                    "category_id_2": tooth,
                    "category_id_3": diagnosis,
                }
            )
            next_annotation_id += 1
        array = np.clip(pixels, 0, 255).astype(np.uint8)
        Image.fromarray(array).save(folder / "xrays" / file_name)
        images.append({"id": image_id, "file_name": file_name, "width": WIDTH, "height": HEIGHT})
    document = {
        "images": images,
        "annotations": annotations,
        "categories_1": [
            {"id": q, "name": str(q + 1), "supercategory": str(q + 1)} for q in range(4)
        ],
        "categories_2": [
            {"id": t, "name": str(t + 1), "supercategory": str(t + 1)} for t in range(8)
        ],
        "categories_3": [
            {"id": d, "name": name, "supercategory": name} for d, name in enumerate(DIAGNOSES)
        ],
    }
    (folder / DISEASE_JSON).write_text(json.dumps(document), encoding="utf-8")
    decoy = raw_dir / "training_data" / "quadrant"
    (decoy / "xrays").mkdir(parents=True)
    Image.fromarray(np.zeros((HEIGHT, WIDTH), dtype=np.uint8)).save(decoy / "xrays" / "train_0.png")
    decoy_doc = {
        "images": [{"id": 1, "file_name": "train_0.png", "width": WIDTH, "height": HEIGHT}]
    }
    (decoy / "train_quadrant.json").write_text(
        json.dumps({**decoy_doc, "annotations": [], "categories": []}), encoding="utf-8"
    )
