"""USenhance raw -> public/private (spec usenhance.md): sorted pairs, 8-bit grayscale PNGs."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
from PIL import Image

from rexmle.errors import DataError
from rexmle.split import Split
from rexmle.tasks.files import write_csv
from rexmle.tasks.jobs import PrepareJob

from .submission import SIZES_CSV

ORGANS = ("breast", "carotid", "kidney", "liver", "thyroid")
log = logging.getLogger(__name__)


def discover_pairs(raw_dir: Path) -> dict[str, tuple[Path, Path]]:
    """Map ``<organ>_<stem>`` -> (low, high) paths, ordered by organ then file name."""
    root = raw_dir / "train_datasets"
    organs = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    if organs != list(ORGANS):
        msg = f"USenhance: expected organ folders {list(ORGANS)} in {root}, found {organs}"
        raise DataError(msg)
    pairs: dict[str, tuple[Path, Path]] = {}
    for organ in organs:
        low_dir, high_dir = root / organ / "low_quality", root / organ / "high_quality"
        lows = {p.name for p in low_dir.glob("*.png")}
        highs = {p.name for p in high_dir.glob("*.png")}
        if lows != highs:
            msg = (
                f"USenhance {organ}: unpaired files: low only {sorted(lows - highs)[:5]}, "
                f"high only {sorted(highs - lows)[:5]}"
            )
            raise DataError(msg)
        for name in sorted(lows):
            pairs[f"{organ}_{name[: -len('.png')]}"] = (low_dir / name, high_dir / name)
    return pairs


def _as_gray(path: Path) -> tuple[Image.Image, bool]:
    with Image.open(path) as image:
        image.load()
        if image.mode == "L":
            return image.copy(), False
        return image.convert("L"), True


def prepare(job: PrepareJob) -> Split:
    """Split pairs; write grayscale PNGs, the size file, a constant sample and the gold images."""
    pairs = discover_pairs(job.raw)
    split = job.shuffle_split(list(pairs), sort_keys=False)  # pairs sorted by organ, then name
    public_dir, gold_dir = job.public, job.gold
    converted = 0
    sizes: dict[str, tuple[int, int]] = {}
    for image_id, (low_path, high_path) in pairs.items():
        low, low_converted = _as_gray(low_path)
        high, high_converted = _as_gray(high_path)
        converted += low_converted + high_converted
        if low.size != high.size:
            msg = f"USenhance {image_id}: low {low.size} and high {high.size} differ in size (w, h)"
            raise DataError(msg)
        if image_id in split.test:
            low.save(_mkparent(public_dir / "test" / "low_quality" / f"{image_id}.png"))
            high.save(_mkparent(gold_dir / "enhanced" / f"{image_id}.png"))
            sizes[image_id] = (high.size[1], high.size[0])
        else:
            low.save(_mkparent(public_dir / "train" / "low_quality" / f"{image_id}.png"))
            high.save(_mkparent(public_dir / "train" / "high_quality" / f"{image_id}.png"))
    if converted:
        log.info("USenhance: converted %d non-grayscale PNG(s) to 8-bit grayscale", converted)
    test_ids = sorted(split.test)
    write_csv(
        public_dir / SIZES_CSV,
        (job.columns[0], "height", "width"),
        [(i, str(sizes[i][0]), str(sizes[i][1])) for i in test_ids],
    )
    rows = [(i, f"enhanced/{i}.png") for i in test_ids]
    for image_id in test_ids:
        height, width = sizes[image_id]
        constant = Image.fromarray(np.full((height, width), 128, np.uint8))
        constant.save(_mkparent(public_dir / "enhanced" / f"{image_id}.png"))
    job.write_answer_csvs(gold_rows=rows, sample_rows=rows)
    found = {organ: sum(i.startswith(f"{organ}_") for i in pairs) for organ in ORGANS}
    return Split(
        train=split.train,
        test=split.test,
        rule=split.rule,
        source={"converted_to_grayscale": converted},
        found={f"train_datasets/{organ}": n for organ, n in found.items()},
    )


def _mkparent(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path
