"""LDCT-IQA raw -> public/private (spec ldct-iqa.md): the official train/test sets, no random split."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
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
    return _read_score_items(_json_object(path, "file names to scores"), path.name)


def _json_object(path: Path, mapping: str) -> dict[str, object]:
    """The JSON object in ``path``, which must map ``mapping``."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        msg = f"LDCT-IQA: {path.name} is not valid JSON ({err})"
        raise DataError(msg) from err
    if not isinstance(document, dict):
        msg = f"LDCT-IQA: {path.name} must map {mapping}"
        raise DataError(msg)
    return document


def _read_score_items(raw: dict[str, object], where: str) -> dict[str, int | float]:
    scores: dict[str, int | float] = {}
    for name, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not np.isfinite(value):
            msg = f"LDCT-IQA: {where}: score of {name!r} is not a finite number: {value!r}"
            raise DataError(msg)
        scores[name] = value
    return scores


TRAIN_FOLDER = "LDCTIQAG2023_train"
TEST_FOLDER = "LDCTIQAC_test"
"""Test layout A: ``LDCTIQAC_test/images/<stem>.tiff`` with ``test.json`` {file name: score}."""
GROUND_TRUTH_JSON = "test-ground-truth.json"
"""Test layout B (organiser style): ``<top>/test-ground-truth.json`` =
``{"<group>.<ext>": {"fnames": [stem, ...], "scores": [score, ...]}}``, each image at
``<top>/<group>/<stem>.tif``."""


def _pair(images_dir: Path, scores: dict[str, float], suffix: str, what: str) -> dict[str, Path]:
    """Stem -> image, for a folder of ``*<suffix>`` images and a score file keyed by name.

    A key names its image with or without the suffix (``0000.tif`` or ``0000``).
    """
    files = {p.name: p for p in sorted(images_dir.glob(f"*{suffix}")) if p.is_file()}
    if not files:
        msg = f"LDCT-IQA: no {suffix} images in {images_dir}"
        raise DataError(msg)
    keyed = {name if name in files else f"{name}{suffix}": name for name in scores}
    unscored = sorted(set(files) - set(keyed))
    unimaged = sorted(keyed[k] for k in set(keyed) - set(files))
    if unscored or unimaged or len(keyed) != len(scores):
        msg = (
            f"LDCT-IQA {what}: {len(unscored)} image(s) without a score {unscored[:5]} and "
            f"{len(unimaged)} score(s) without an image {unimaged[:5]} (in {images_dir})"
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


def _scored(
    images_dir: Path, scores: dict[str, int | float], suffix: str, what: str
) -> dict[str, tuple[Path, int | float]]:
    """Stem -> (image, score)."""
    stems = _pair(images_dir, scores, suffix, what)
    return {
        stem: (path, scores[path.name] if path.name in scores else scores[stem])
        for stem, path in stems.items()
    }


@dataclass(frozen=True)
class TestSet:
    """The official test set as found: its layout, cases and images per folder."""

    layout: str
    cases: dict[str, tuple[Path, int | float]]
    per_folder: dict[str, int]


def _ground_truth_layout(path: Path) -> TestSet:
    root = path.parent
    document = _json_object(path, "groups to {fnames, scores}")
    cases: dict[str, tuple[Path, int | float]] = {}
    per_folder: dict[str, int] = {}
    for group, entry in sorted(document.items()):
        if not isinstance(entry, dict) or set(entry) != {"fnames", "scores"}:
            msg = f"LDCT-IQA: {path.name}: {group!r} must hold exactly 'fnames' and 'scores'"
            raise DataError(msg)
        fnames, values = entry["fnames"], entry["scores"]
        if not isinstance(fnames, list) or not isinstance(values, list):
            msg = f"LDCT-IQA: {path.name}: {group!r} needs lists 'fnames' and 'scores'"
            raise DataError(msg)
        if len(fnames) != len(values):
            msg = (
                f"LDCT-IQA: {path.name}: {group!r} lists {len(fnames)} file names and "
                f"{len(values)} scores"
            )
            raise DataError(msg)
        folder = root / Path(group).stem
        scores = _read_score_items(dict(zip(map(str, fnames), values, strict=True)), path.name)
        if len(scores) != len(fnames):
            msg = f"LDCT-IQA: {path.name}: {group!r} lists a file name twice"
            raise DataError(msg)
        found = _scored(folder, scores, ".tif", f"test ({folder.name})")
        repeated = sorted(set(found) & set(cases))
        if repeated:
            msg = f"LDCT-IQA test: ids {repeated[:5]} occur in more than one group"
            raise DataError(msg)
        cases.update(found)
        per_folder[f"{root.name}/{folder.name}"] = len(found)
    return TestSet(GROUND_TRUTH_JSON, cases, per_folder)


def find_test_set(raw_dir: Path) -> TestSet:
    """The official test set in either known layout (A: ``test.json``; B: ground-truth JSON).

    Raises:
        DataError: neither layout, both at once, or a layout that is incomplete.
    """
    layout_a = raw_dir / TEST_FOLDER / "test.json"
    layout_b = sorted(p for p in raw_dir.rglob(GROUND_TRUTH_JSON) if TRAIN_FOLDER not in p.parts)
    if layout_a.is_file() and layout_b:
        msg = (
            f"LDCT-IQA: both test layouts are in {raw_dir} ({layout_a} and {layout_b[0]}); "
            "keep one of them"
        )
        raise DataError(msg)
    if layout_b:
        if len(layout_b) > 1:
            msg = f"LDCT-IQA: {GROUND_TRUTH_JSON} found {len(layout_b)} times: {layout_b[:3]}"
            raise DataError(msg)
        return _ground_truth_layout(layout_b[0])
    if not layout_a.is_file():
        msg = (
            f"LDCT-IQA: no test set in {raw_dir}: expected {TEST_FOLDER}/test.json with "
            f"{TEST_FOLDER}/images/*.tiff, or {GROUND_TRUTH_JSON} with one folder of .tif "
            "images per group"
        )
        raise DataError(msg)
    cases = _scored(raw_dir / TEST_FOLDER / "images", _read_scores(layout_a), ".tiff", "test")
    return TestSet("test.json", cases, {f"{TEST_FOLDER}/images": len(cases)})


def _check_image(path: Path) -> tuple[tuple[int, ...], str]:
    array = tifffile.imread(path)
    if array.ndim != 2 or array.dtype.kind != "f":
        msg = f"LDCT-IQA: {path.name} is {array.ndim}-D {array.dtype}; expected 2-D floating point"
        raise DataError(msg)
    return array.shape, str(array.dtype)


def prepare(job: PrepareJob) -> Split:
    """Copy images byte-identical; write train labels, the sample (0.0 each) and gold.

    Test images are published as ``test/images/<id>.tiff`` whichever layout held them.
    """
    train_root = job.raw / TRAIN_FOLDER
    train = _scored(train_root / "image", _read_scores(train_root / "train.json"), ".tif", "train")
    test_set = find_test_set(job.raw)
    test = test_set.cases
    formats = {_check_image(p) for p, _ in [*train.values(), *test.values()]}
    gold_values = [score for _, score in test.values()]
    if len(set(gold_values)) < 2:
        msg = "LDCT-IQA: the test scores are constant; correlations would be undefined"
        raise DataError(msg)
    public_dir = job.public
    (public_dir / "train" / "images").mkdir(parents=True)
    (public_dir / "test" / "images").mkdir(parents=True)
    for stem, (path, _) in train.items():
        shutil.copyfile(path, public_dir / "train" / "images" / f"{stem}.tif")
    for stem, (path, _) in test.items():
        shutil.copyfile(path, public_dir / "test" / "images" / f"{stem}.tiff")
    write_csv(
        public_dir / "train_labels.csv",
        job.columns,
        [(stem, json.dumps(train[stem][1])) for stem in sorted(train)],
    )
    job.write_answer_csvs(
        gold_rows=[(stem, json.dumps(test[stem][1])) for stem in sorted(test)],
        sample_rows=[(stem, "0.0") for stem in sorted(test)],
    )
    return Split(
        train=sorted(train),
        test=sorted(test),
        rule=job.task.split.rule,
        source={"image_formats": sorted([list(s), d] for s, d in formats)},
        ids_may_repeat_across_sets=True,
        found={f"{TRAIN_FOLDER}/image": len(train), **test_set.per_folder},
        notes=()
        if test_set.layout == "test.json"
        else (f"LDCT-IQA: test set read from {GROUND_TRUTH_JSON} ({len(test)} images)",),
    )
