"""ISLES'22 raw -> public/private (spec isles22.md, "Source", "Split", "Public/Private layout")."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np

from rexmle.errors import DataError
from rexmle.io import read_geometry, read_image
from rexmle.split import Split
from rexmle.tasks.jobs import PrepareJob
from rexmle.tasks.masks import write_empty_mask

_MASK = re.compile(r"^(sub-strokecase\d{4})_ses-0001_msk\.nii\.gz$")


def _case_files(root: Path, subject: str) -> dict[str, Path]:
    key = f"{subject}_ses-0001"
    return {
        "dwi": root / subject / "ses-0001" / "dwi" / f"{key}_dwi.nii.gz",
        "adc": root / subject / "ses-0001" / "dwi" / f"{key}_adc.nii.gz",
        "flair": root / subject / "ses-0001" / "anat" / f"{key}_FLAIR.nii.gz",
        "msk": root / "derivatives" / subject / "ses-0001" / f"{key}_msk.nii.gz",
    }


def _spelled_otherwise(missing: list[Path]) -> str:
    """A hint naming files beside the missing ones whose names differ from theirs only in case.

    The release spells its BIDS suffixes as the prepare reads them (``_dwi``, ``_adc``,
    ``_FLAIR``, ``_msk``); a copy that renamed them (``_ADC``) is refused, never read as is.
    """
    found = []
    for path in missing:
        if path.parent.is_dir():
            found += [
                sibling.name
                for sibling in sorted(path.parent.iterdir())
                if sibling.name != path.name and sibling.name.lower() == path.name.lower()
            ]
    if not found:
        return ""
    return (
        f"; beside them: {found}, which differ only in letter case from the release's names "
        "(a renamed or re-packed copy? take the record's ISLES-2022.zip as it is)"
    )


def discover_cases(raw_dir: Path) -> dict[str, dict[str, Path]]:
    """Map public id (``sub-strokecaseNNNN``) -> its four files; fail on any missing file."""
    root = raw_dir / "ISLES-2022"
    if not (root / "derivatives").is_dir():
        msg = f"ISLES'22 raw data not found: {root / 'derivatives'} is missing"
        raise DataError(msg)
    cases: dict[str, dict[str, Path]] = {}
    for mask in sorted((root / "derivatives").rglob("sub-strokecase*_ses-0001_msk.nii.gz")):
        match = _MASK.match(mask.name)
        if match is None:
            continue
        subject = match.group(1)
        files = _case_files(root, subject)
        missing = [p for p in files.values() if not p.is_file()]
        if missing:
            listed = [str(p.relative_to(raw_dir)) for p in missing]
            msg = f"ISLES'22 case {subject}: missing file(s) {listed}{_spelled_otherwise(missing)}"
            raise DataError(msg)
        cases[subject] = files
    if not cases:
        msg = f"no ISLES'22 masks found under {root / 'derivatives'}"
        raise DataError(msg)
    return cases


def _check_case(subject: str, files: dict[str, Path]) -> None:
    dwi, adc = read_geometry(files["dwi"]), read_geometry(files["adc"])
    mask = read_image(files["msk"])
    shapes = {"dwi": dwi.shape, "adc": adc.shape, "msk": mask.geometry.shape}
    if any(len(s) != 3 for s in shapes.values()) or len(set(shapes.values())) != 1:
        msg = f"ISLES'22 case {subject}: DWI, ADC and mask must be 3-D of one shape, got {shapes}"
        raise DataError(msg)
    values = set(np.unique(mask.array).tolist())
    if not values <= {0, 1}:
        msg = f"ISLES'22 case {subject}: mask values {sorted(values)} are not within {{0, 1}}"
        raise DataError(msg)


def prepare(job: PrepareJob) -> Split:
    """Copy raw files into the public/private layout and write gold and the sample submission."""
    cases = discover_cases(job.raw)
    for subject, files in cases.items():
        _check_case(subject, files)
    by_key = job.shuffle_split([f"{s}_ses-0001" for s in cases])
    split = Split(
        train=[k.split("_ses-")[0] for k in by_key.train],
        test=[k.split("_ses-")[0] for k in by_key.test],
        rule=by_key.rule,
        found={"ISLES-2022/derivatives": len(cases)},
    )
    public_dir, gold_dir = job.public, job.gold
    train_dir, test_dir = public_dir / "train", public_dir / "test"
    train_dir.mkdir(parents=True)
    test_dir.mkdir(parents=True)
    for subject in split.train:
        files = cases[subject]
        for kind in ("dwi", "adc", "flair", "msk"):
            shutil.copyfile(files[kind], train_dir / f"{subject}_{kind}.nii.gz")
    sample_rows, gold_rows = [], []
    for subject in sorted(split.test):
        files = cases[subject]
        for kind in ("dwi", "adc", "flair"):
            shutil.copyfile(files[kind], test_dir / f"{subject}_{kind}.nii.gz")
        relative = f"predictions/{subject}_pred.nii.gz"
        (gold_dir / "predictions").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(files["msk"], gold_dir / relative)
        geometry = read_geometry(files["dwi"])
        write_empty_mask(public_dir / relative, geometry)
        sample_rows.append((subject, relative))
        gold_rows.append((subject, relative))
    job.write_answer_csvs(gold_rows, sample_rows)
    return split
