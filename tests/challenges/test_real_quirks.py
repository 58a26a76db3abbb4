"""The mini fixtures' "real quirks" mode: prepare reads each known variant of the real archives.

Each family's ``make_fixture(..., real_quirks=True)`` writes the variants its ``LAYOUT.md`` lists
(PUMA's version-5 ``.tiff`` ROI, TopBrain's derived label folders, SEG.A's ``R1 (AD)/`` folders,
DENTEX's sibling folders, LDCT-IQA's organiser-style test layout, ISLES'22's empty masks). Where the
variant only changes the packaging, prepare must give byte-identical public and private trees; the
count check must name the folders it counted and the declaration to correct.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from rexmle.cli import app
from rexmle.errors import DataError
from rexmle.io import read_image
from rexmle.preparation import check_declared_counts
from rexmle.split import Split
from rexmle.tasks.jobs import PrepareJob
from rexmle.tasks.registry import get_task, load_task
from rexmle.tasks.spec import TaskSpec

PUMA_OUT = "training_set_metastatic_roi_103"


def _prepare(task_id: str, root: Path, *, quirks: bool, spec: TaskSpec | None = None) -> Split:
    """Write the fixture into ``root/raw`` and run the task's prepare on it."""
    load_task(task_id).make_fixture(root / "raw", seed=0, real_quirks=quirks)
    return _run_prepare(task_id, root, spec)


def _run_prepare(task_id: str, root: Path, spec: TaskSpec | None = None) -> Split:
    """Run the task's prepare on ``root/raw`` into ``root/public`` and ``root/private``."""
    task = load_task(task_id)
    public, private = root / "public", root / "private"
    public.mkdir()
    private.mkdir()
    job = PrepareJob(root / "raw", public, private, spec or task.spec, mini=True)
    return task.required_function("prepare")(job)


def _tree(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _same_as_plain(task_id: str, tmp_path: Path) -> tuple[Split, Split]:
    plain = _prepare(task_id, tmp_path / "plain", quirks=False)
    quirky = _prepare(task_id, tmp_path / "quirks", quirks=True)
    assert (quirky.train, quirky.test) == (plain.train, plain.test)
    for part in ("public", "private"):
        assert _tree(tmp_path / "quirks" / part) == _tree(tmp_path / "plain" / part), part
    return plain, quirky


def test_puma_leaves_the_version_5_roi_out_by_name_and_says_so(tmp_path: Path) -> None:
    raw_roi = tmp_path / "quirks" / "raw" / "01_training_dataset_tif_ROIs" / f"{PUMA_OUT}.tiff"
    for task_id in ("puma-track1-task1", "puma-track2-task2"):
        plain, quirky = _same_as_plain(task_id, tmp_path / task_id)
        assert (tmp_path / task_id / raw_roi.relative_to(tmp_path)).is_file()
        assert len(quirky.train) + len(quirky.test) == 10
        assert quirky.found == {"primary": 5, "metastatic": 5}
        (note,) = quirky.notes
        assert f"left out {PUMA_OUT}" in note
        assert f"{PUMA_OUT}.tiff" in note
        assert f"{PUMA_OUT}_nuclei.geojson" in note
        assert f"{PUMA_OUT}_tissue.geojson" in note
        assert "version 3" in note
        assert "205" in note
        (absent,) = plain.notes  # the version-4 record: nothing to leave out, and it says so
        assert "not in this download" in absent
        public = tmp_path / task_id / "quirks" / "public"
        assert not [p for p in public.rglob("*") if PUMA_OUT in p.name]


def test_puma_without_the_declared_exclusion_counts_the_tiff_roi(tmp_path: Path) -> None:
    spec = get_task("puma-track1-task1")
    params = {k: v for k, v in spec.params.items() if k != "excluded_cases"}
    bare = spec.model_copy(update={"params": params})
    split = _prepare("puma-track1-task1", tmp_path, quirks=True, spec=bare)
    assert PUMA_OUT in split.train + split.test  # read as a case, not an orphan
    assert split.found == {"primary": 5, "metastatic": 6}
    assert split.notes == ()


def test_puma_yaml_and_description_state_the_choice() -> None:
    for task_id in (
        "puma-track1-task1",
        "puma-track1-task2",
        "puma-track2-task1",
        "puma-track2-task2",
    ):
        task = load_task(task_id)
        assert set(task.spec.params["excluded_cases"]) == {PUMA_OUT}
        assert PUMA_OUT in task.description()
        assert task.spec.split.expected_cases == 205
        assert task.spec.split.expected_sizes() == (164, 41)


def test_topbrain_ignores_the_derived_label_folders(tmp_path: Path) -> None:
    for task_id in ("topbrain-track1", "topbrain-track2"):
        _, quirky = _same_as_plain(task_id, tmp_path / task_id)
        raw = tmp_path / task_id / "quirks" / "raw"
        assert len(list(raw.rglob("labelsTr_topbrain_*_5groups/*.nii.gz"))) == 12
        assert quirky.found == {"imagesTr_topbrain_ct": 6, "imagesTr_topbrain_mr": 6}


def test_seg_a_reads_rider_folders_with_spaces_and_brackets(tmp_path: Path) -> None:
    _same_as_plain("seg_a", tmp_path)
    assert (tmp_path / "quirks" / "raw" / "Rider" / "R1 (AD)" / "R1.seg.nrrd").is_file()


def test_dentex_reads_its_folder_beside_the_three_siblings(tmp_path: Path) -> None:
    _same_as_plain("dentex", tmp_path)
    siblings = {p.name for p in (tmp_path / "quirks" / "raw" / "training_data").iterdir()}
    assert siblings == {
        "quadrant",
        "quadrant_enumeration",
        "quadrant-enumeration-disease",
        "unlabelled",
    }


def test_ldct_iqa_reads_the_organiser_test_layout_as_the_plain_one(tmp_path: Path) -> None:
    plain, quirky = _same_as_plain("ldct-iqa", tmp_path)
    raw = tmp_path / "quirks" / "raw"
    assert not (raw / "LDCTIQAC_test").exists()
    assert (raw / "LDCTIQAC2023_test" / "test-ground-truth.json").is_file()
    assert "0000.tif" not in json.loads((raw / "LDCTIQAG2023_train" / "train.json").read_text())
    assert plain.found == {"LDCTIQAG2023_train/image": 12, "LDCTIQAC_test/images": 6}
    assert quirky.found == {
        "LDCTIQAG2023_train/image": 12,
        "LDCTIQAC2023_test/test_0": 2,
        "LDCTIQAC2023_test/test_1": 2,
        "LDCTIQAC2023_test/test_2": 2,
    }
    assert "test-ground-truth.json" in quirky.notes[0]


def test_ldct_iqa_refuses_both_test_layouts_at_once(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    load_task("ldct-iqa").make_fixture(raw, seed=0)
    load_task("ldct-iqa").make_fixture(tmp_path / "other", seed=0, real_quirks=True)
    (tmp_path / "other" / "LDCTIQAC2023_test").rename(raw / "LDCTIQAC2023_test")
    with pytest.raises(DataError, match="both test layouts"):
        _run_prepare("ldct-iqa", tmp_path)


def test_isles22_prepares_the_empty_mask_cases(tmp_path: Path) -> None:
    split = _prepare("isles22", tmp_path, quirks=True)
    extra = {f"sub-strokecase{n:04d}" for n in (150, 151, 170)}
    assert extra <= set(split.train + split.test)
    assert len(split.train) + len(split.test) == 13
    for subject in extra:
        if subject in split.train:
            mask = tmp_path / "public" / "train" / f"{subject}_msk.nii.gz"
        else:
            mask = tmp_path / "private" / "gold" / "predictions" / f"{subject}_pred.nii.gz"
        assert not np.any(read_image(mask).array)


@pytest.mark.parametrize(
    ("task_id", "found"),
    [
        ("usenhance", "train_datasets/breast 4, train_datasets/carotid 4"),
        ("topbrain-track2", "imagesTr_topbrain_ct 6, imagesTr_topbrain_mr 6 (total 12)"),
        ("ldct-iqa", "LDCTIQAG2023_train/image 12, LDCTIQAC_test/images 6"),
        ("seg_a", "Dongyang 3, KiTS 3, Rider 3 (total 9)"),
        ("isles22", "ISLES-2022/derivatives 10 (total 10)"),
        ("dentex", "training_data/quadrant-enumeration-disease/xrays 20"),
        ("neurips-cellseg", "Training-labeled 12, Tuning 4 (total 16)"),
        ("topcow-track2-task1", "imagesTr (topcow_mr_*) 6"),
        ("panther-task2", "LabelsTr (task 2) 10"),
    ],
)
def test_a_count_mismatch_names_the_folder_counts_and_the_declaration(
    tmp_path: Path, task_id: str, found: str
) -> None:
    spec = get_task(task_id)
    split = _prepare(task_id, tmp_path, quirks=False)
    with pytest.raises(DataError) as caught:
        check_declared_counts(spec, split)
    message = " ".join(str(caught.value).split())
    assert found in message
    expected = spec.split.expected_sizes()
    assert expected is not None
    if spec.split.test_fraction is None:
        assert f"expects {expected[0]} / {expected[1]}" in message
    else:
        assert f"expects {spec.split.expected_cases} ({expected[0]} / {expected[1]})" in message
    file = f"rexmle/challenges/{spec.family}/{task_id}.yaml"
    named = re.findall(rf"{re.escape(file)}:(\d+) to '(\w+): (\d+)'", message)
    lines = (Path(__file__).parents[2] / file).read_text(encoding="utf-8").splitlines()
    for number, key, _ in named:
        assert lines[int(number) - 1].strip().startswith(f"{key}:"), (number, key)
    total = len(split.train) + len(split.test)
    if spec.split.test_fraction is None:  # official sets: one line per set that differs
        assert [(k, int(n)) for _, k, n in named] == [
            ("expected_train", len(split.train)),
            ("expected_test", len(split.test)),
        ]
    else:
        assert [(k, int(n)) for _, k, n in named] == [("expected_cases", total)]
    update = {key: int(n) for _, key, n in named}
    corrected = spec.model_copy(update={"split": spec.split.model_copy(update=update)})
    check_declared_counts(corrected, split)  # the named lines are all it takes


def test_rexmle_prepare_prints_the_puma_choice(tmp_path: Path) -> None:
    args = ["prepare", "puma-track1-task1", "--mini", "--data-dir", str(tmp_path)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert f"note: PUMA: {PUMA_OUT} is not in this download" in " ".join(result.output.split())
    manifest = json.loads((tmp_path / "puma-track1-task1" / "prepared.json").read_text())
    assert manifest["notes"][0].startswith(f"PUMA: {PUMA_OUT} is not in this download")
    assert manifest["found"] == {"primary": 5, "metastatic": 5}


def test_isles22_refuses_an_adc_spelled_in_capitals_and_says_what_it_found(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    load_task("isles22").make_fixture(raw, seed=0)
    dwi = raw / "ISLES-2022" / "sub-strokecase0003" / "ses-0001" / "dwi"
    (dwi / "sub-strokecase0003_ses-0001_adc.nii.gz").rename(
        dwi / "sub-strokecase0003_ses-0001_ADC.nii.gz"
    )
    with pytest.raises(DataError) as caught:
        _run_prepare("isles22", tmp_path)
    message = str(caught.value)
    assert "case sub-strokecase0003: missing file(s)" in message
    assert "sub-strokecase0003_ses-0001_adc.nii.gz" in message
    assert "beside them: ['sub-strokecase0003_ses-0001_ADC.nii.gz']" in message
    assert "letter case" in message
    assert not (tmp_path / "public" / "train").exists()
