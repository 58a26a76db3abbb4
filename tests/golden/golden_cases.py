"""The submissions whose grade reports are frozen in ``tests/golden/<task>.json``, and how to grade.

For every registered task, prepared with ``--mini`` (the deterministic fixtures, no secret), these
submissions are graded:

- ``gold``: ``private/gold/`` itself;
- ``sample``: the public sample submission with the files it names (what the dummy agent writes);
- ``baseline``: the baseline solver's submission with seed 0 (slow on some tasks);
- ``missing-row``: gold with its last CSV row deleted (invalid, with reasons);
- ``mixed``: gold with its first case (in file order) taken from the sample submission;
- ``shifted``: gold with every file moved slightly: images rolled by one pixel/voxel along the
  first array axis (header and dtype kept), every number inside a JSON list moved (+1 for
  integers, +0.5 for other numbers), every number in a CSV value column moved by +0.25 on even
  rows and -0.25 on odd rows (so that correlations change too).

A frozen report is the grade report without the fields that change from run to run
(``rexmle_version``, ``seconds``); NaN and infinities are written as the strings "NaN", "Infinity"
and "-Infinity" so that the JSON files stay standard.

Comparison (:func:`differences`): everything but floating-point numbers must be equal exactly
(validity, reasons, case ids, integers, NaN/infinity markers, key order aside); two floats are
equal when they agree to a relative 1e-12 (``FLOAT_REL_TOL``). Last-bit equality holds only on
one kind of processor: OpenBLAS picks its kernels by CPU (``OPENBLAS_CORETYPE``) and numpy its
SIMD reductions, so a correlation or a least-squares fit moves by a few units in the last place
from one machine to another. A real change of a grade moves a value by far more than 1e-12.
"""

from __future__ import annotations

import csv
import json
import math
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np

from rexmle.agents.dummy import copy_sample_submission
from rexmle.grading import grade_submission
from rexmle.tasks.folders import TaskDirs
from rexmle.tasks.registry import load_task

GOLDEN_DIR = Path(__file__).resolve().parent
SUBMISSION_CSV = "submission.csv"
FAST_VARIANTS = ("gold", "sample", "missing-row", "mixed", "shifted")
SLOW_VARIANTS = ("baseline",)
VARIANTS = (*FAST_VARIANTS, *SLOW_VARIANTS)
VOLATILE_FIELDS = ("rexmle_version", "seconds")


def golden_path(task_id: str) -> Path:
    """The frozen reports of one task."""
    return GOLDEN_DIR / f"{task_id}.json"


def _read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    with open(path, newline="", encoding="utf-8") as handle:
        records = list(csv.reader(handle))
    return records[0], records[1:]


def _write_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def _sample(dirs: TaskDirs, out: Path) -> Path:
    copy_sample_submission(dirs.public, out)
    return out


def _baseline(task_id: str, dirs: TaskDirs, out: Path) -> Path:
    out.mkdir(parents=True)
    load_task(task_id).solve_baseline(dirs.public, out, seed=0)
    return out


def _missing_row(dirs: TaskDirs, out: Path) -> Path:
    shutil.copytree(dirs.gold, out)
    header, rows = _read_csv(out / SUBMISSION_CSV)
    _write_csv(out / SUBMISSION_CSV, header, rows[:-1])
    return out


def _mixed(task_id: str, dirs: TaskDirs, out: Path) -> Path:
    """Gold, except that the first gold row and the files it names come from the sample."""
    shutil.copytree(dirs.gold, out)
    impl = load_task(task_id).columns
    header, rows = _read_csv(out / SUBMISSION_CSV)
    sample_header, sample_rows = _read_csv(dirs.public / "sample_submission.csv")
    id_index = header.index(impl.id_column)
    first_id = rows[0][id_index]
    sample_row = next(r for r in sample_rows if r[sample_header.index(impl.id_column)] == first_id)
    by_column = dict(zip(sample_header, sample_row, strict=True))
    for column in impl.path_columns:
        (out / rows[0][header.index(column)]).unlink()
        target = out / by_column[column]
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(dirs.public / by_column[column], target)
    rows[0] = [by_column[column] for column in header]
    _write_csv(out / SUBMISSION_CSV, header, rows)
    return out


def _roll_nifti(path: Path) -> None:
    import nibabel as nib

    img = nib.load(str(path))
    array = np.roll(np.asanyarray(img.dataobj), 1, axis=0)
    header = img.header.copy()
    nib.save(nib.Nifti1Image(array.astype(header.get_data_dtype()), img.affine, header), str(path))


def _roll_itk(path: Path) -> None:
    import SimpleITK as sitk

    itk = sitk.ReadImage(str(path))
    array = sitk.GetArrayFromImage(itk)  # (z, y, x): the first rexmle axis x is numpy's last
    spatial = itk.GetDimension()
    rolled = sitk.GetImageFromArray(
        np.roll(array, 1, axis=spatial - 1), isVector=itk.GetNumberOfComponentsPerPixel() > 1
    )
    rolled.CopyInformation(itk)
    for key in itk.GetMetaDataKeys():
        rolled.SetMetaData(key, itk.GetMetaData(key))
    sitk.WriteImage(rolled, str(path), useCompression=True)


def _roll_tiff(path: Path) -> None:
    import tifffile

    tifffile.imwrite(str(path), np.roll(tifffile.imread(str(path)), 1, axis=0))


def _roll_pillow(path: Path) -> None:
    from PIL import Image

    with Image.open(path) as pil:
        array = np.asarray(pil)
    Image.fromarray(np.roll(array, 1, axis=0)).save(path)


def _move_json_numbers(value: object, *, in_list: bool = False) -> object:
    if isinstance(value, dict):
        return {k: _move_json_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_move_json_numbers(v, in_list=True) for v in value]
    if in_list and isinstance(value, bool):
        return value
    if in_list and isinstance(value, int):
        return value + 1
    if in_list and isinstance(value, float):
        return value + 0.5
    return value


def _move_json(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(_move_json_numbers(data)), encoding="utf-8")


_FILE_MOVERS: dict[str, Callable[[Path], None]] = {
    ".nii.gz": _roll_nifti,
    ".nii": _roll_nifti,
    ".mha": _roll_itk,
    ".nrrd": _roll_itk,
    ".tif": _roll_tiff,
    ".tiff": _roll_tiff,
    ".png": _roll_pillow,
    ".json": _move_json,
}


def _mover(path: Path) -> Callable[[Path], None]:
    name = path.name.lower()
    for suffix, mover in _FILE_MOVERS.items():
        if name.endswith(suffix):
            return mover
    msg = f"no perturbation defined for {path.name}"
    raise ValueError(msg)


def _shifted(task_id: str, dirs: TaskDirs, out: Path) -> Path:
    shutil.copytree(dirs.gold, out)
    impl = load_task(task_id).columns
    header, rows = _read_csv(out / SUBMISSION_CSV)
    for number, row in enumerate(rows):
        for column in impl.path_columns:
            target = out / row[header.index(column)]
            _mover(target)(target)
        for column in impl.value_columns:
            index = header.index(column)
            row[index] = repr(float(row[index]) + (0.25 if number % 2 == 0 else -0.25))
    _write_csv(out / SUBMISSION_CSV, header, rows)
    return out


def build_submission(task_id: str, variant: str, dirs: TaskDirs, out: Path) -> Path:
    """Write the ``variant`` submission of ``task_id`` into the new folder ``out``."""
    if variant == "gold":
        return dirs.gold
    if variant == "sample":
        return _sample(dirs, out)
    if variant == "baseline":
        return _baseline(task_id, dirs, out)
    if variant == "missing-row":
        return _missing_row(dirs, out)
    if variant == "mixed":
        return _mixed(task_id, dirs, out)
    if variant == "shifted":
        return _shifted(task_id, dirs, out)
    msg = f"unknown variant {variant!r}; known: {VARIANTS}"
    raise ValueError(msg)


def _json_safe(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


def frozen_report(task_id: str, submission: Path, dirs: TaskDirs) -> dict[str, object]:
    """Grade ``submission`` (one worker) and return the report without its volatile fields."""
    report = grade_submission(task_id, submission, data_dir=dirs.root.parent, workers=1)
    dumped = report.model_dump(mode="python")
    for name in VOLATILE_FIELDS:
        dumped.pop(name)
    # the submission folder is temporary: reasons name files relative to it, never its path
    return _json_safe(json.loads(json.dumps(dumped, default=str)))  # type: ignore[return-value]


FLOAT_REL_TOL = 1e-12
"""Relative tolerance of float values (a few thousand units in the last place)."""
FLOAT_ABS_TOL = 1e-15
"""Absolute tolerance, for values that are zero in one report and a rounding residue in another."""


def differences(got: object, frozen: object, where: str = "") -> list[str]:
    """Paths (``.metrics.plcc``, ``.cases[3].hd95``) at which two reports differ (see above)."""
    if isinstance(got, bool) or isinstance(frozen, bool):
        return [] if got is frozen else [f"{where}: {got!r} != {frozen!r}"]
    if isinstance(got, float) and isinstance(frozen, float):
        if math.isclose(got, frozen, rel_tol=FLOAT_REL_TOL, abs_tol=FLOAT_ABS_TOL):
            return []
        return [f"{where}: {got!r} != {frozen!r}"]
    if isinstance(got, dict) and isinstance(frozen, dict):
        if set(got) != set(frozen):
            return [f"{where}: keys {sorted(got)} != {sorted(frozen)}"]
        return [d for key in got for d in differences(got[key], frozen[key], f"{where}.{key}")]
    if isinstance(got, list) and isinstance(frozen, list):
        if len(got) != len(frozen):
            return [f"{where}: {len(got)} items != {len(frozen)}"]
        pairs = zip(got, frozen, strict=True)
        return [d for i, (a, b) in enumerate(pairs) for d in differences(a, b, f"{where}[{i}]")]
    if type(got) is not type(frozen) or got != frozen:
        return [f"{where}: {got!r} != {frozen!r}"]
    return []


def grade_variant(task_id: str, variant: str, dirs: TaskDirs, work: Path) -> dict[str, object]:
    """Build and grade one variant in ``work`` (a fresh folder per call)."""
    submission = build_submission(task_id, variant, dirs, work / variant)
    return frozen_report(task_id, submission, dirs)
