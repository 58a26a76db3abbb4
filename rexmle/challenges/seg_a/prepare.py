"""SEG.A raw -> public/private (spec seg_a.md, "Source", "Split", "Public/Private layout")."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rexmle.errors import DataError
from rexmle.io import Geometry
from rexmle.split import Split
from rexmle.tasks.files import check_image_label_grid
from rexmle.tasks.jobs import PrepareJob
from rexmle.tasks.masks import copy_file, write_empty_mask

SPACING_TOLERANCE_MM = 1e-4
_CASE_ID = re.compile(r"^[A-Za-z0-9_-]+$")
_MASK_SUFFIX = ".seg.nrrd"


@dataclass(frozen=True)
class RawCase:
    """One AVT case: its CTA image and its aortic vessel tree mask."""

    case_id: str
    image: Path
    mask: Path


def prediction_name(case_id: str) -> str:
    """Relative path of a case's mask in the sample submission and in gold."""
    return f"predictions/{case_id}.seg.nrrd"


def discover_cases(raw_dir: Path) -> dict[str, RawCase]:
    """Every ``<id>.nrrd`` with a sibling ``<id>.seg.nrrd`` anywhere under ``raw_dir``.

    Raises:
        DataError: no case, a duplicate id, or an id with characters outside [A-Za-z0-9_-].
    """
    cases: dict[str, RawCase] = {}
    for image in sorted(raw_dir.rglob("*.nrrd")):
        if image.name.endswith(_MASK_SUFFIX):
            continue
        case_id = image.name[: -len(".nrrd")]
        mask = image.with_name(case_id + _MASK_SUFFIX)
        if not mask.is_file():
            continue
        if not _CASE_ID.match(case_id):
            msg = f"SEG.A case {image.relative_to(raw_dir)}: id {case_id!r} has characters "
            msg += "outside [A-Za-z0-9_-]"
            raise DataError(msg)
        if case_id in cases:
            first = cases[case_id].image.relative_to(raw_dir)
            msg = (
                f"SEG.A case id {case_id!r} appears twice: {first} and {image.relative_to(raw_dir)}"
            )
            raise DataError(msg)
        cases[case_id] = RawCase(case_id=case_id, image=image, mask=mask)
    if not cases:
        msg = f"no SEG.A cases (<id>.nrrd beside <id>.seg.nrrd) found under {raw_dir}"
        raise DataError(msg)
    return cases


def cases_per_folder(raw_dir: Path, cases: dict[str, RawCase]) -> dict[str, int]:
    """Cases per top folder of ``raw_dir`` (one per archive: Dongyang, KiTS, Rider), sorted."""
    tops = [case.image.relative_to(raw_dir).parts[0] for case in cases.values()]
    return {top: tops.count(top) for top in sorted(set(tops))}


def check_case(case: RawCase) -> Geometry:
    """Assert image and mask share a 3-D grid and the mask is a non-empty {0, 1} mask.

    Returns:
        The image geometry.

    Raises:
        DataError: a file is unreadable, not 3-D, the grids differ, or the mask values are wrong.
    """
    image, mask = check_image_label_grid(
        "SEG.A", case.case_id, case.image, case.mask, spacing_tol_mm=SPACING_TOLERANCE_MM
    )
    values = np.unique(np.asarray(mask.array)).tolist()
    if not set(values) <= {0, 1} or 1 not in values:
        msg = (
            f"SEG.A case {case.case_id}: mask values {values} must be within {{0, 1}} with at "
            f"least one foreground voxel"
        )
        raise DataError(msg)
    return image


def prepare(job: PrepareJob) -> Split:
    """Copy raw files into the public/private layout and write gold and the sample submission."""
    public_dir = job.public
    cases = discover_cases(job.raw)
    geometries = {case_id: check_case(case) for case_id, case in cases.items()}
    by_id = job.shuffle_split(list(cases))
    (figshare,) = job.task.sources
    split = Split(
        train=by_id.train,
        test=by_id.test,
        rule=by_id.rule + "; id = file stem of <id>.nrrd (string order, D10 before D2)",
        found=cases_per_folder(job.raw, cases),
        source={
            "dataset": "AVT (SEG.A 2023)",
            "figshare_article": figshare.record,
            "version": figshare.version,
        },
    )
    for case_id in split.train:
        case = cases[case_id]
        copy_file(case.image, public_dir / "train" / "images" / f"{case_id}.nrrd")
        copy_file(case.mask, public_dir / "train" / "labels" / f"{case_id}.seg.nrrd")
    gold_dir = job.gold
    rows: list[tuple[str, str]] = []
    for case_id in sorted(split.test):
        case = cases[case_id]
        copy_file(case.image, public_dir / "test" / "images" / f"{case_id}.nrrd")
        relative = prediction_name(case_id)
        copy_file(case.mask, gold_dir / relative)
        geometry = geometries[case_id]
        write_empty_mask(public_dir / relative, geometry)
        rows.append((case_id, relative))
    job.write_answer_csvs(rows, rows)
    return split
