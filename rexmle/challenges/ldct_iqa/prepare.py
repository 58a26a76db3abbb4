"""LDCT-IQA raw -> public/private (spec ldct-iqa.md): the official train/test sets, no random split."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import tifffile

from rexmle.errors import DataError
from rexmle.split import Split
from rexmle.tasks.files import write_csv
from rexmle.tasks.jobs import PrepareJob


def _read_scores(path: Path) -> dict[str, int | float]:
    """File name -> score as written in the JSON (an int stays an int)."""
    if not path.is_file():
        msg = f"LDCT-IQA: score file {path} is missing"
        raise DataError(msg)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        msg = f"LDCT-IQA: {path.name} is not valid JSON ({err})"
        raise DataError(msg) from err
    if not isinstance(raw, dict):
        msg = f"LDCT-IQA: {path.name} must map file names to scores"
        raise DataError(msg)
    scores = {}
    for name, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value):
            msg = f"LDCT-IQA: {path.name}: score of {name!r} is not a finite number: {value!r}"
            raise DataError(msg)
        scores[name] = value
    return scores


def _pair(images_dir: Path, scores: dict[str, float], suffix: str, what: str) -> dict[str, Path]:
    files = {p.name: p for p in sorted(images_dir.glob(f"*{suffix}")) if p.is_file()}
    if not files:
        msg = f"LDCT-IQA: no {suffix} images in {images_dir}"
        raise DataError(msg)
    unscored = sorted(set(files) - set(scores))
    unimaged = sorted(set(scores) - set(files))
    if unscored or unimaged:
        msg = (
            f"LDCT-IQA {what}: {len(unscored)} image(s) without a score {unscored[:5]} and "
            f"{len(unimaged)} score(s) without an image {unimaged[:5]}"
        )
        raise DataError(msg)
    stems: dict[str, Path] = {}
    for name, path in files.items():
        stem = name[: -len(suffix)]
        if stem in stems:
            msg = f"LDCT-IQA {what}: id {stem!r} occurs twice"
            raise DataError(msg)
        stems[stem] = path
    return stems


def _check_image(path: Path) -> tuple[tuple[int, ...], str]:
    array = tifffile.imread(path)
    if array.ndim != 2 or array.dtype.kind != "f":
        msg = f"LDCT-IQA: {path.name} is {array.ndim}-D {array.dtype}; expected 2-D floating point"
        raise DataError(msg)
    return array.shape, str(array.dtype)


def prepare(job: PrepareJob) -> Split:
    """Copy images byte-identical; write train labels, the sample (0.0 each) and gold."""
    train_root, test_root = job.raw / "LDCTIQAG2023_train", job.raw / "LDCTIQAC_test"
    train_scores = _read_scores(train_root / "train.json")
    test_scores = _read_scores(test_root / "test.json")
    train = _pair(train_root / "image", train_scores, ".tif", "train")
    test = _pair(test_root / "images", test_scores, ".tiff", "test")
    formats = {_check_image(p) for p in [*train.values(), *test.values()]}
    gold_values = [test_scores[f"{stem}.tiff"] for stem in test]
    if len(set(gold_values)) < 2:
        msg = "LDCT-IQA: the test scores are constant; correlations would be undefined"
        raise DataError(msg)
    public_dir = job.public
    (public_dir / "train" / "images").mkdir(parents=True)
    (public_dir / "test" / "images").mkdir(parents=True)
    for path in train.values():
        shutil.copyfile(path, public_dir / "train" / "images" / path.name)
    for path in test.values():
        shutil.copyfile(path, public_dir / "test" / "images" / path.name)
    write_csv(
        public_dir / "train_labels.csv",
        job.columns,
        [(stem, json.dumps(train_scores[f"{stem}.tif"])) for stem in sorted(train)],
    )
    job.write_answer_csvs(
        gold_rows=[(stem, json.dumps(test_scores[f"{stem}.tiff"])) for stem in sorted(test)],
        sample_rows=[(stem, "0.0") for stem in sorted(test)],
    )
    return Split(
        train=sorted(train),
        test=sorted(test),
        rule=job.task.split.rule,
        source={"image_formats": sorted([list(s), d] for s, d in formats)},
        ids_may_repeat_across_sets=True,
    )
