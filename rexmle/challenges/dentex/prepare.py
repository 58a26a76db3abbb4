"""DENTEX raw -> public/private (spec dentex.md, "Source", "Split", "Public/Private layout")."""

from __future__ import annotations

import json
import logging
import math
import random
import shutil
from pathlib import Path
from typing import Any

from rexmle.errors import DataError
from rexmle.split import Split
from rexmle.tasks.jobs import PrepareJob

log = logging.getLogger(__name__)

DISEASE_DIR = Path("training_data") / "quadrant-enumeration-disease"
DISEASE_JSON = "train_quadrant_enumeration_disease.json"
LEVEL_KEYS = ("category_id_1", "category_id_2", "category_id_3")
CATEGORY_LISTS = ("categories_1", "categories_2", "categories_3")
EXPECTED_CATEGORY_IDS: dict[str, set[int]] = {
    "categories_1": set(range(4)),
    "categories_2": set(range(8)),
    "categories_3": set(range(4)),
}
GT_FILE = "gt_coco.json"


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def load_source(raw_dir: Path) -> tuple[dict[str, Any], Path]:
    """The disease JSON and the folder of its X-rays; fail when either is missing."""
    folder = raw_dir / DISEASE_DIR
    json_path = folder / DISEASE_JSON
    if not json_path.is_file():
        msg = (
            f"DENTEX raw data not found: {json_path} is missing (expected the extracted "
            f"training_data.zip with folder {DISEASE_DIR.as_posix()}/)"
        )
        raise DataError(msg)
    if not (folder / "xrays").is_dir():
        msg = f"DENTEX raw data: folder {folder / 'xrays'} is missing"
        raise DataError(msg)
    try:
        document = json.loads(json_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        msg = f"DENTEX: {json_path.name} is not valid JSON ({err})"
        raise DataError(msg) from err
    if not isinstance(document, dict):
        msg = f"DENTEX: {json_path.name} must hold a JSON object"
        raise DataError(msg)
    return document, folder / "xrays"


def check_source(document: dict[str, Any], xrays: Path) -> dict[int, dict[str, Any]]:
    """Apply the spec's assertions; return the images by numeric id (file order kept)."""
    for name in ("images", "annotations", *CATEGORY_LISTS):
        if not isinstance(document.get(name), list):
            msg = f"DENTEX: the JSON has no list {name!r}"
            raise DataError(msg)
    for name, expected in EXPECTED_CATEGORY_IDS.items():
        ids = [c.get("id") if isinstance(c, dict) else None for c in document[name]]
        present = sorted(i for i in ids if _is_int(i))  # type: ignore[type-var]  # ints only
        if present != sorted(expected) or len(ids) != len(expected):
            msg = f"DENTEX: {name} has ids {ids}, expected exactly {sorted(expected)}"
            raise DataError(msg)
    images: dict[int, dict[str, Any]] = {}
    for image in document["images"]:
        image_id = image.get("id")
        file_name = image.get("file_name")
        if not _is_int(image_id) or not isinstance(file_name, str) or "/" in file_name:
            msg = f"DENTEX: malformed image entry {image}"
            raise DataError(msg)
        if image_id in images:
            msg = f"DENTEX: image id {image_id} appears twice"
            raise DataError(msg)
        if not (xrays / file_name).is_file():
            msg = f"DENTEX: image file {xrays / file_name} is missing"
            raise DataError(msg)
        images[image_id] = image
    stems = [Path(str(i["file_name"])).stem for i in images.values()]
    if len(set(stems)) != len(stems):
        msg = "DENTEX: two images share a file stem; stems are the public ids"
        raise DataError(msg)
    annotation_ids: set[object] = set()
    for annotation in document["annotations"]:
        where = f"DENTEX annotation {annotation.get('id')!r}"
        if annotation.get("id") in annotation_ids:
            msg = f"{where}: annotation id repeats"
            raise DataError(msg)
        annotation_ids.add(annotation.get("id"))
        if annotation.get("image_id") not in images:
            msg = f"{where}: unknown image_id {annotation.get('image_id')!r}"
            raise DataError(msg)
        bbox = annotation.get("bbox")
        if (
            not isinstance(bbox, list)
            or len(bbox) != 4
            or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in bbox)
            or not all(math.isfinite(v) for v in bbox)
            or bbox[2] <= 0
            or bbox[3] <= 0
        ):
            msg = f"{where}: bbox {bbox!r} is not [x, y, w, h] with w > 0 and h > 0"
            raise DataError(msg)
        for key, name in zip(LEVEL_KEYS, CATEGORY_LISTS, strict=True):
            value = annotation.get(key)
            if not _is_int(value) or value not in EXPECTED_CATEGORY_IDS[name]:
                msg = f"{where}: {key} = {value!r} is not one of {sorted(EXPECTED_CATEGORY_IDS[name])}"
                raise DataError(msg)
    return images


def split_ids(
    image_ids: list[int], *, seed: int, test_fraction: float
) -> tuple[list[int], list[int]]:
    """The reference split: shuffle the file-order ids with ``random.Random(seed)``; the first
    ``int((1 - test_fraction) n)`` are train, the rest test.
    """
    ids = list(image_ids)
    random.Random(seed).shuffle(ids)
    n_train = int((1.0 - test_fraction) * len(ids))
    return ids[:n_train], ids[n_train:]


def _gt_annotation(annotation: dict[str, Any], counts: dict[str, int]) -> dict[str, Any]:
    x, y, w, h = annotation["bbox"]
    out = {
        "id": annotation["id"],
        "image_id": annotation["image_id"],
        "bbox": [x, y, w, h],
        "area": annotation.get("area"),
        "iscrowd": annotation.get("iscrowd"),
        **{key: annotation[key] for key in LEVEL_KEYS},
    }
    if out["area"] is None:
        out["area"] = w * h
        counts["area"] += 1
    if out["iscrowd"] is None:
        out["iscrowd"] = 0
        counts["iscrowd"] += 1
    return out


def detection_of(annotation: dict[str, Any]) -> dict[str, Any]:
    """A GT annotation written as a submitted detection (score 1.0)."""
    return {
        "bbox": list(annotation["bbox"]),
        **{key: annotation[key] for key in LEVEL_KEYS},
        "score": 1.0,
    }


def prepare(job: PrepareJob) -> Split:
    """Copy raw files into the public/private layout; write gold, gt_coco.json and the sample.

    Raises:
        DataError: the raw data breaks a rule of the spec.
        ValueError: the YAML's split declares no seed or no test fraction.
    """
    document, xrays = load_source(job.raw)
    images = check_source(document, xrays)
    declared = job.task.split
    if declared.seed is None or declared.test_fraction is None:
        msg = f"{job.task.id}: the split needs a seed and a test_fraction"
        raise ValueError(msg)
    train_ids, test_ids = split_ids(
        list(images), seed=declared.seed, test_fraction=declared.test_fraction
    )
    public_dir, private_dir, gold_dir = job.public, job.private, job.gold
    by_image: dict[int, list[dict[str, Any]]] = {i: [] for i in images}
    for annotation in document["annotations"]:
        by_image[annotation["image_id"]].append(annotation)
    test_annotations = [a for i in test_ids for a in by_image[i]]
    if not test_annotations:
        msg = "DENTEX: the test split holds no annotation, so COCO AP is undefined on every level"
        raise DataError(msg)

    def stem(image_id: int) -> str:
        return Path(str(images[image_id]["file_name"])).stem

    train_dir = public_dir / "train"
    (train_dir / "images").mkdir(parents=True)
    (public_dir / "test" / "images").mkdir(parents=True)
    for image_id in train_ids:
        name = str(images[image_id]["file_name"])
        shutil.copyfile(xrays / name, train_dir / "images" / name)
    train_set = set(train_ids)
    train_doc = {
        **document,
        "images": [images[i] for i in images if i in train_set],
        "annotations": [a for a in document["annotations"] if a["image_id"] in train_set],
    }
    (train_dir / DISEASE_JSON).write_text(json.dumps(train_doc), encoding="utf-8")

    counts = {"area": 0, "iscrowd": 0}
    test_set = set(test_ids)
    gt = {
        "images": [images[i] for i in images if i in test_set],
        "annotations": [
            _gt_annotation(a, counts) for a in document["annotations"] if a["image_id"] in test_set
        ],
        **{name: document[name] for name in CATEGORY_LISTS},
    }
    if counts["area"] or counts["iscrowd"]:
        log.info(
            "DENTEX gt: %d annotation(s) without area (set to w*h), %d without iscrowd (set to 0)",
            counts["area"],
            counts["iscrowd"],
        )
    (private_dir / GT_FILE).write_text(json.dumps(gt), encoding="utf-8")

    rows = []
    for image_id in sorted(test_ids, key=stem):
        name = str(images[image_id]["file_name"])
        shutil.copyfile(xrays / name, public_dir / "test" / "images" / name)
        relative = f"predictions/{stem(image_id)}.json"
        detections = [detection_of(a) for a in by_image[image_id]]
        write_json(gold_dir / relative, detections)
        write_json(public_dir / relative, [])
        rows.append((stem(image_id), relative))
    job.write_answer_csvs(gold_rows=rows, sample_rows=rows)
    return Split(
        train=[stem(i) for i in train_ids],
        test=[stem(i) for i in test_ids],
        rule=declared.rule,
        found={f"{DISEASE_DIR.as_posix()}/xrays": len(images)},
        source={
            "dataset": "DENTEX 2023 training_data.zip, quadrant-enumeration-disease",
            "zenodo_record": "7812323",
            "coco_image_ids": {stem(i): i for i in [*train_ids, *test_ids]},
        },
    )


def write_json(path: Path, payload: object) -> None:
    """Write JSON (parents created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload) + "\n", encoding="utf-8")
