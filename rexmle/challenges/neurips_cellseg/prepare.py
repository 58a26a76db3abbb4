"""NeurIPS-CellSeg raw -> public/private (spec neurips-cellseg.md, "Source", "Split", layouts).

Raw pairs come from ``Training-labeled/`` and ``Tuning/`` (each with ``images/`` and ``labels/``).
Both sources reuse the stems ``cell_00001`` ...; public ids keep the Training-labeled stem and
prefix Tuning stems with ``tuning_``, after the split (which reproduces the reference benchmark's
test membership position by position).
"""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import tifffile
from PIL import Image

from rexmle.errors import DataError
from rexmle.io import ImageReadError, read_image
from rexmle.metrics.instances import cellseg_match_counts
from rexmle.split import Split
from rexmle.tasks.files import write_csv
from rexmle.tasks.jobs import PrepareJob

log = logging.getLogger(__name__)

SOURCES: tuple[tuple[str, str], ...] = (("Training-labeled", ""), ("Tuning", "tuning_"))
"""(raw folder, public id prefix), in the order the pair list is built."""
EXPECTED_PAIRS: dict[str, int] = {"Training-labeled": 1000, "Tuning": 101}
IMAGE_EXTENSIONS = (".png", ".bmp", ".tif", ".tiff", ".jpg", ".jpeg")
CHANNEL_COUNTS = (1, 3, 4)
SIZES_FILE = "image_sizes.csv"
GOLD_EXPECTED_FILE = "gold_expected.json"


@dataclass(frozen=True)
class Pair:
    """One raw image with its instance label."""

    source: str
    stem: str
    image: Path
    label: Path
    public_id: str
    height: int
    width: int


def label_name(case_id: str) -> str:
    """File name of the label of ``case_id`` (``<id>_label.tiff``)."""
    return f"{case_id}_label.tiff"


def _tiff_shape(path: Path) -> tuple[tuple[int, ...], np.dtype]:
    with tifffile.TiffFile(str(path)) as tif:
        series = tif.series[0]
        return tuple(int(s) for s in series.shape), np.dtype(series.dtype)


def _pillow_shape(path: Path) -> tuple[int, int, int]:
    """(H, W, bands) from the header; whole-slide images exceed Pillow's decompression-bomb
    limit, which guards against untrusted files and is lifted here for the trusted raw data.
    """
    limit = Image.MAX_IMAGE_PIXELS
    Image.MAX_IMAGE_PIXELS = None
    try:
        with Image.open(path) as image:
            width, height = image.size
            return (height, width, len(image.getbands()))
    finally:
        Image.MAX_IMAGE_PIXELS = limit


def image_spatial_shape(path: Path, expected: tuple[int, int]) -> tuple[int, int] | None:
    """(H, W) of an image read from its header, or None when no layout gives ``expected``.

    Accepted layouts: H x W, H x W x C and C x H x W with C in {1, 3, 4}.
    """
    if path.suffix.lower() in (".tif", ".tiff"):
        shape, _ = _tiff_shape(path)
    else:
        shape = _pillow_shape(path)
    if len(shape) == 2:
        return (shape[0], shape[1]) if shape == expected else None
    if len(shape) == 3:
        if shape[:2] == expected and shape[2] in CHANNEL_COUNTS:
            return expected
        if shape[1:] == expected and shape[0] in CHANNEL_COUNTS:
            return expected
    return None


def discover_pairs(raw_dir: Path) -> list[Pair]:
    """Every (image, label) pair of both sources, Training-labeled first, in stem order each."""
    pairs: list[Pair] = []
    for source, prefix in SOURCES:
        images_dir = raw_dir / source / "images"
        labels_dir = raw_dir / source / "labels"
        if not images_dir.is_dir() or not labels_dir.is_dir():
            msg = (
                f"NeurIPS-CellSeg raw data not found: {images_dir} and {labels_dir} must exist "
                f"(extract {source}.zip into raw/)"
            )
            raise DataError(msg)
        found = sorted(
            p for p in images_dir.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS
        )
        stems = [p.stem for p in found]
        if len(set(stems)) != len(stems):
            dupes = sorted({s for s in stems if stems.count(s) > 1})
            msg = f"NeurIPS-CellSeg {source}: several images share the stem(s) {dupes[:5]}"
            raise DataError(msg)
        for image in found:
            label = labels_dir / label_name(image.stem)
            if not label.is_file():
                msg = f"NeurIPS-CellSeg {source}: image {image.name} has no label {label.name}"
                raise DataError(msg)
            shape, dtype = _tiff_shape(label)
            if len(shape) != 2 or dtype.kind not in "iu":
                msg = (
                    f"NeurIPS-CellSeg {source}/{label.name}: labels must be 2-D integer maps, "
                    f"got shape {shape} and dtype {dtype}"
                )
                raise DataError(msg)
            expected = (shape[0], shape[1])
            if image_spatial_shape(image, expected) is None:
                msg = (
                    f"NeurIPS-CellSeg {source}/{image.name}: image size does not match its label "
                    f"{expected} in any accepted layout (H x W, H x W x C, C x H x W; C in 1, 3, 4)"
                )
                raise DataError(msg)
            pairs.append(
                Pair(
                    source=source,
                    stem=image.stem,
                    image=image,
                    label=label,
                    public_id=prefix + image.stem,
                    height=expected[0],
                    width=expected[1],
                )
            )
    return pairs


def split_pairs(pairs: list[Pair], job: PrepareJob) -> tuple[list[Pair], list[Pair], str]:
    """Stable sort by original stem, then the declared shuffle split by position.

    Returns (train pairs, test pairs, the declared split rule).
    """
    ordered = sorted(pairs, key=lambda p: p.stem)  # stable: Training-labeled first on equal stems
    by_id = {p.public_id: p for p in ordered}
    split = job.shuffle_split([p.public_id for p in ordered], sort_keys=False)
    return [by_id[i] for i in split.train], [by_id[i] for i in split.test], split.rule


def _check_counts(pairs: list[Pair]) -> None:
    counts = {source: sum(p.source == source for p in pairs) for source, _ in SOURCES}
    if counts != EXPECTED_PAIRS:
        msg = (
            f"NeurIPS-CellSeg: found {counts} image/label pairs, the spec expects {EXPECTED_PAIRS}"
        )
        raise DataError(msg)


def gold_f1(label_path: Path, threshold: float) -> float:
    """The best per-image F1 (gold against itself): 1.0 when an instance survives boundary
    removal (per tile in tiled mode), else 0.0.
    """
    try:
        labels = np.asarray(read_image(label_path).array)
    except ImageReadError as err:
        raise DataError(str(err)) from err
    counts = cellseg_match_counts(labels, labels, thresholds=(threshold,))
    return float(round(counts[0].f1, 4))


def _write_zero_mask(path: Path, height: int, width: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tifffile.imwrite(str(path), np.zeros((height, width), dtype=np.uint8), compression="zlib")


def prepare(job: PrepareJob) -> Split:
    """Copy pairs into public/private; write image sizes, gold, the sample and gold's score."""
    pairs = discover_pairs(job.raw)
    if not job.mini:
        _check_counts(pairs)
    train, test, rule = split_pairs(pairs, job)
    thresholds = [float(t) for t in job.params["iou_thresholds"]]
    public_dir, private_dir, gold_dir = job.public, job.private, job.gold
    for folder in ("train/images", "train/labels", "test/images"):
        (public_dir / folder).mkdir(parents=True)
    for pair in train:
        shutil.copyfile(
            pair.image, public_dir / "train" / "images" / (pair.public_id + pair.image.suffix)
        )
        shutil.copyfile(pair.label, public_dir / "train" / "labels" / label_name(pair.public_id))
    (gold_dir / "predictions").mkdir(parents=True)
    rows = []
    per_image_gold = {}
    for pair in sorted(test, key=lambda p: p.public_id):
        shutil.copyfile(
            pair.image, public_dir / "test" / "images" / (pair.public_id + pair.image.suffix)
        )
        relative = f"predictions/{label_name(pair.public_id)}"
        shutil.copyfile(pair.label, gold_dir / relative)
        _write_zero_mask(public_dir / relative, pair.height, pair.width)
        rows.append((pair.public_id, relative))
        per_image_gold[pair.public_id] = gold_f1(pair.label, thresholds[0])
    write_csv(
        public_dir / "test" / SIZES_FILE,
        (job.columns[0], "height", "width"),
        [(p.public_id, p.height, p.width) for p in sorted(test, key=lambda p: p.public_id)],
    )
    job.write_answer_csvs(gold_rows=rows, sample_rows=rows)
    best = float(np.mean(list(per_image_gold.values())))
    log.info(
        "NeurIPS-CellSeg: %d of %d test images keep a GT cell after boundary removal; "
        "gold scores f1_t = %.4f",
        int(sum(per_image_gold.values())),
        len(per_image_gold),
        best,
    )
    expected = {
        "metrics": {f"f1_{t}": best for t in thresholds},
        "per_image_f1": per_image_gold,
    }
    (private_dir / GOLD_EXPECTED_FILE).write_text(json.dumps(expected, indent=2) + "\n", "utf-8")
    return Split(
        train=[p.public_id for p in train],
        test=[p.public_id for p in test],
        rule=rule,
        found={source: sum(p.source == source for p in pairs) for source, _ in SOURCES},
        source={
            "dataset": "NeurIPS 2022 CellSeg Training-labeled.zip + Tuning.zip",
            "zenodo_record": "10719375",
            "cases": {p.public_id: {"source": p.source, "stem": p.stem} for p in train + test},
        },
    )
