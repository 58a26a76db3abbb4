"""PUMA raw -> public/private (spec puma.md, "Source", "Split", "Conversions", layouts).

The four tasks read one shared raw folder. Files are found by name anywhere under ``raw/`` (an
archive may extract with or without its top folder); nothing in ``raw/`` is moved or changed.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rexmle.errors import DataError
from rexmle.split import Split
from rexmle.tasks.jobs import PrepareJob

from .classes import NUCLEI_NAMES, TISSUE_CLASSES, TISSUE_VALUES, Track, nuclei_name, track_of
from .geojson import read_features
from .raster import paint_features
from .submission import roi_size

log = logging.getLogger(__name__)

_STEM = r"training_set_(?:primary|metastatic)_roi_\d+"
ROI_PATTERN = re.compile(rf"^({_STEM})\.tiff?$")
"""ROIs are ``.tif``; record version 5 stores one as ``.tiff``, so both suffixes are read."""
TISSUE_PATTERN = re.compile(rf"^({_STEM})_tissue\.geojson$")
NUCLEI_PATTERN = re.compile(rf"^({_STEM})_nuclei\.geojson$")
NUCLEI_SOURCES = "nuclei_sources"
"""Folder under ``private/`` with each test case's :func:`nuclei_sources`."""


@dataclass(frozen=True)
class RawCases:
    """Files of the shared raw folder, by case id (= TIFF stem), for cases with both annotations."""

    rois: dict[str, Path]
    tissue: dict[str, Path]
    nuclei: dict[str, Path]
    excluded: dict[str, list[Path]] = field(default_factory=dict)
    """Declared exclusions found in the raw data: case id -> its files (ROI, annotations)."""

    @property
    def ids(self) -> list[str]:
        """Case ids in string order."""
        return sorted(self.rois)


def _find(raw_dir: Path, pattern: re.Pattern[str]) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted(raw_dir.rglob("*")):
        relative = path.relative_to(raw_dir)
        if any(part.startswith((".", "__MACOSX")) for part in relative.parts):
            continue
        match = pattern.match(path.name)
        if match is None or not path.is_file():
            continue
        case_id = match.group(1)
        if case_id in found:
            msg = (
                f"PUMA raw data: {path.name} found twice, at {found[case_id].relative_to(raw_dir)} "
                f"and {relative}"
            )
            raise DataError(msg)
        found[case_id] = path
    return found


def discover_cases(raw_dir: Path, excluded: Mapping[str, str] | None = None) -> RawCases:
    """Find every ROI TIFF and its tissue and nuclei GeoJSON files.

    Args:
        raw_dir: the shared raw folder.
        excluded: case id -> reason, the cases the task declares out (``params.excluded_cases``);
            their ROI and annotations are set aside by exact case id, never counted as orphans.

    Raises:
        DataError: no ROI found, an annotation has no ROI, or the tissue and nuclei case lists
            differ (the four tasks must share one case list and one split).
    """
    excluded = excluded or {}
    rois = _find(raw_dir, ROI_PATTERN)
    tissue = _find(raw_dir, TISSUE_PATTERN)
    nuclei = _find(raw_dir, NUCLEI_PATTERN)
    set_aside: dict[str, list[Path]] = {}
    for found in (rois, tissue, nuclei):
        for case_id in sorted(set(found) & set(excluded)):
            set_aside.setdefault(case_id, []).append(found.pop(case_id))
    if not rois:
        msg = f"no PUMA ROI (training_set_*_roi_NNN.tif) found under {raw_dir}"
        raise DataError(msg)
    orphans = sorted((set(tissue) | set(nuclei)) - set(rois))
    if orphans:
        msg = (
            f"PUMA raw data: annotations without an ROI TIFF: {orphans[:10]} (declared "
            f"exclusions, set aside with their files: {sorted(excluded)})"
        )
        raise DataError(msg)
    tissue_ids = sorted(set(rois) & set(tissue))
    nuclei_ids = sorted(set(rois) & set(nuclei))
    if tissue_ids != nuclei_ids:
        only_tissue = sorted(set(tissue_ids) - set(nuclei_ids))
        only_nuclei = sorted(set(nuclei_ids) - set(tissue_ids))
        msg = (
            "PUMA raw data: the tissue and nuclei case lists differ (the four tasks share one "
            f"split); only tissue: {only_tissue[:10]}, only nuclei: {only_nuclei[:10]}"
        )
        raise DataError(msg)
    if not tissue_ids:
        msg = f"PUMA raw data: no ROI under {raw_dir} has tissue and nuclei annotations"
        raise DataError(msg)
    return RawCases(
        rois={i: rois[i] for i in tissue_ids},
        tissue={i: tissue[i] for i in tissue_ids},
        nuclei={i: nuclei[i] for i in tissue_ids},
        excluded=set_aside,
    )


def excluded_cases(job: PrepareJob) -> dict[str, str]:
    """The declared exclusions, ``params.excluded_cases``: case id -> reason."""
    declared = job.params.get("excluded_cases") or {}
    return {str(case_id): str(reason) for case_id, reason in dict(declared).items()}


def exclusion_notes(cases: RawCases, excluded: Mapping[str, str]) -> tuple[str, ...]:
    """One line per declared exclusion: what was set aside (or that it is absent), and why."""
    notes = []
    for case_id, reason in excluded.items():
        files = cases.excluded.get(case_id)
        if files:
            names = ", ".join(sorted(p.name for p in files))
            notes.append(f"PUMA: left out {case_id} ({names}): {reason}")
        else:
            notes.append(
                f"PUMA: {case_id} is not in this download (declared out: {reason}); "
                "nothing to leave out"
            )
    return tuple(notes)


def split_cases(cases: RawCases, job: PrepareJob) -> Split:
    """The shared split: sorted ids, ``train_test_split`` with the declared fraction and seed.

    The four tasks declare the same split, so every task gets the same train and test ids.
    ``found`` counts the cases by kind (primary, metastatic); ``notes`` state the exclusions.
    """
    drawn = job.shuffle_split(cases.ids)
    kinds = ("primary", "metastatic")
    found = {kind: sum(f"_{kind}_" in case_id for case_id in cases.ids) for kind in kinds}
    notes = exclusion_notes(cases, excluded_cases(job)) if excluded_cases(job) else ()
    return Split(drawn.train, drawn.test, drawn.rule, found=found, notes=notes)


def _roi_shape(case_id: str, path: Path) -> tuple[int, int]:
    import tifffile

    with tifffile.TiffFile(path) as tif:
        page = tif.pages[0]
        shape = tuple(int(s) for s in page.shape)  # type: ignore[union-attr]
    if len(shape) != 3 or shape[2] not in (3, 4):
        msg = f"PUMA case {case_id}: ROI {path.name} has shape {shape}, expected (H, W, 4) RGBA"
        raise DataError(msg)
    return roi_size(path)


def tissue_map(case_id: str, cases: RawCases) -> np.ndarray:
    """The rasterised tissue map of a case (uint8, ROI height x width)."""
    shape = _roi_shape(case_id, cases.rois[case_id])
    features = read_features(cases.tissue[case_id], allowed_classes=TISSUE_VALUES)
    return paint_features(features, TISSUE_VALUES, shape)


def nuclei_document(case_id: str, cases: RawCases, track: Track) -> dict[str, list[dict]]:
    """The case's nuclei in the submission ``polygons`` format with ``track``'s class names.

    Each Polygon is one nucleus (each part of a MultiPolygon is one); ``path_points`` is the
    exterior ring without a repeated closing vertex; ``score`` is 1.0.

    Raises:
        DataError: a nucleus has fewer than 3 distinct vertices.
    """
    path = cases.nuclei[case_id]
    polygons: list[dict] = []
    for index, feature in enumerate(read_features(path, allowed_classes=NUCLEI_NAMES)):
        for rings in feature.polygons:
            exterior = rings[0]
            if len(exterior) > 1 and np.array_equal(exterior[0], exterior[-1]):
                exterior = exterior[:-1]
            if len(exterior) < 3:
                msg = (
                    f"{path.name} feature {index}: a nucleus outline has {len(exterior)} "
                    f"vertices; at least 3 are needed"
                )
                raise DataError(msg)
            polygons.append(
                {
                    "name": nuclei_name(feature.class_name, track),
                    "path_points": exterior.tolist(),
                    "score": 1.0,
                }
            )
    return {"polygons": polygons}


def nuclei_sources(case_id: str, cases: RawCases) -> dict[str, list[dict[str, str]]]:
    """Where each nucleus of :func:`nuclei_document` comes from, in the same order.

    Per polygon: ``raw_class`` (the release's class name) and ``geometry`` (``Polygon`` or
    ``MultiPolygon``, the feature it is a part of). Grading reads it only for the study's
    definitions (``study.py``), which prepared the classes and geometries differently.
    """
    sources = [
        {"raw_class": feature.class_name, "geometry": feature.geometry_type}
        for feature in read_features(cases.nuclei[case_id], allowed_classes=NUCLEI_NAMES)
        for _ in feature.polygons
    ]
    return {"polygons": sources}


def write_json(path: Path, content: object) -> None:
    """Write JSON (UTF-8), parents created."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content) + "\n", encoding="utf-8")


def _copy_images(cases: RawCases, split: Split, public_dir: Path) -> None:
    for folder, ids in (("train", split.train), ("test", split.test)):
        target = public_dir / folder / "images"
        target.mkdir(parents=True, exist_ok=True)
        for case_id in ids:
            _roi_shape(case_id, cases.rois[case_id])
            shutil.copyfile(cases.rois[case_id], target / f"{case_id}.tif")


def prepare_tissue(job: PrepareJob) -> Split:
    """Prepare a tissue task (``puma-track1-task1``, ``puma-track2-task1``)."""
    import tifffile

    public_dir = job.public
    cases = discover_cases(job.raw, excluded_cases(job))
    split = split_cases(cases, job)
    _copy_images(cases, split, public_dir)
    for case_id in split.train:
        labels = public_dir / "train" / "labels"
        labels.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(cases.tissue[case_id], labels / f"{case_id}_tissue.geojson")
        masks = public_dir / "train" / "masks"
        masks.mkdir(parents=True, exist_ok=True)
        tifffile.imwrite(masks / f"{case_id}.tif", tissue_map(case_id, cases))
    gold = job.gold
    rows = []
    pixel_counts = np.zeros(len(TISSUE_CLASSES) + 1, dtype=np.int64)
    for case_id in sorted(split.test):
        relative = f"predictions/{case_id}.tif"
        truth = tissue_map(case_id, cases)
        pixel_counts += np.bincount(truth.ravel(), minlength=pixel_counts.size)
        (gold / "predictions").mkdir(parents=True, exist_ok=True)
        tifffile.imwrite(gold / relative, truth)
        (public_dir / "predictions").mkdir(parents=True, exist_ok=True)
        tifffile.imwrite(public_dir / relative, np.zeros_like(truth))
        rows.append((case_id, relative))
    job.write_answer_csvs(rows, rows)
    counts = {TISSUE_CLASSES.get(v, "background"): int(n) for v, n in enumerate(pixel_counts)}
    absent = [name for v, name in TISSUE_CLASSES.items() if pixel_counts[v] == 0]
    log.info("PUMA tissue test ground truth, pixels per class: %s", counts)
    if absent:
        log.warning("PUMA tissue classes absent from every test map (dice 0 for all): %s", absent)
    return split


def expected_gold_f1(case_classes: list[set[str]]) -> float:
    """Best achievable nuclei ``f1``: mean over GT classes of (cases holding it) / (cases).

    Args:
        case_classes: per test case, the set of ground-truth class names it holds.
    """
    holding: dict[str, int] = {}
    for names in case_classes:
        for name in names:
            holding[name] = holding.get(name, 0) + 1
    if not holding:
        return 0.0
    return float(np.mean([n / len(case_classes) for n in holding.values()]))


def prepare_nuclei(job: PrepareJob) -> Split:
    """Prepare a nuclei task (``puma-track1-task2``, ``puma-track2-task2``) of ``params.track``."""
    track = track_of(job.params)
    public_dir = job.public
    cases = discover_cases(job.raw, excluded_cases(job))
    split = split_cases(cases, job)
    _copy_images(cases, split, public_dir)
    for case_id in split.train:
        labels = public_dir / "train" / "labels"
        labels.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(cases.nuclei[case_id], labels / f"{case_id}_nuclei.geojson")
        document = nuclei_document(case_id, cases, track)
        write_json(public_dir / "train" / "nuclei_json" / f"{case_id}.json", document)
    gold = job.gold
    rows = []
    case_classes: list[set[str]] = []
    for case_id in sorted(split.test):
        relative = f"predictions/{case_id}.json"
        document = nuclei_document(case_id, cases, track)
        case_classes.append({str(p["name"]) for p in document["polygons"]})
        write_json(gold / relative, document)
        write_json(job.private / NUCLEI_SOURCES / f"{case_id}.json", nuclei_sources(case_id, cases))
        write_json(public_dir / relative, {"polygons": []})
        rows.append((case_id, relative))
    job.write_answer_csvs(rows, rows)
    log.info(
        "PUMA nuclei track %d: best achievable f1 on the test cases = %.6f",
        track,
        expected_gold_f1(case_classes),
    )
    return split
