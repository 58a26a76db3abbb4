"""``--from DIR`` recognises renamed archives by their members, in each known layout.

LDCT-IQA's test archive is known in two layouts (``LDCTIQAC_test/test.json`` or an organiser-style
``test-ground-truth.json``); its ``holds`` pattern names both as alternatives, so a renamed copy
of either is found, and the renamed training archive beside it is never taken for it. What was
matched is recorded per file in the raw folder's sources record. PUMA's three archives are
known with and without their top folders (torch-em read both nestings over the record's
versions); each renamed archive is told from the other two by its members in either nesting.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from rexmle.sources.errors import DownloadError
from rexmle.sources.fetch import fetch_task_raw
from rexmle.tasks.jobs import PrepareJob
from rexmle.tasks.registry import get_task, load_task

TASK = "ldct-iqa"


def _zip(tree: Path, top: str, archive: Path) -> None:
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted((tree / top).rglob("*")):
            zf.write(path, path.relative_to(tree).as_posix())


def _downloads(tmp_path: Path, *, quirks: bool) -> tuple[Path, Path]:
    """The fixture's two archives under browser names; returns (fixture tree, folder)."""
    tree = tmp_path / "tree"
    load_task(TASK).make_fixture(tree, seed=0, real_quirks=quirks)
    shared = tmp_path / "downloads"
    shared.mkdir()
    _zip(tree, "LDCTIQAG2023_train", shared / "LDCTIQAG2023_train (1).zip")
    test_top = "LDCTIQAC2023_test" if quirks else "LDCTIQAC_test"
    _zip(tree, test_top, shared / "test_dataset (3).zip")
    return tree, shared


def _prepare(raw: Path, root: Path) -> tuple[list[str], list[str]]:
    task = load_task(TASK)
    public, private = root / "public", root / "private"
    public.mkdir(parents=True)
    private.mkdir(parents=True)
    split = task.required_function("prepare")(
        PrepareJob(raw, public, private, task.spec, mini=True)
    )
    return split.train, split.test


@pytest.mark.usefixtures("offline")
@pytest.mark.parametrize(
    ("quirks", "member"),
    [(False, "LDCTIQAC_test/test.json"), (True, "LDCTIQAC2023_test/test-ground-truth.json")],
)
def test_a_renamed_test_archive_is_recognised_in_either_layout(
    tmp_path: Path, quirks: bool, member: str
) -> None:
    tree, shared = _downloads(tmp_path, quirks=quirks)
    raw = tmp_path / "raw"
    manifest = fetch_task_raw(
        get_task(TASK),
        raw,
        from_dir=shared,
        allow_unpinned=True,
        published_checksums=False,
        progress=False,
    )
    found = {f.name: (Path(f.path).name, f.found_by) for f in manifest.files}
    assert found == {
        "LDCTIQAG2023_train.zip": (
            "LDCTIQAG2023_train (1).zip",
            "by content: it holds 'LDCTIQAG2023_train/train.json'",
        ),
        "test_dataset.zip": ("test_dataset (3).zip", f"by content: it holds {member!r}"),
    }
    assert _prepare(raw, tmp_path / "from-archives") == _prepare(tree, tmp_path / "from-tree")


@pytest.mark.usefixtures("offline")
def test_without_a_test_archive_it_says_both_layouts_it_looked_for(tmp_path: Path) -> None:
    _, shared = _downloads(tmp_path, quirks=False)
    (shared / "test_dataset (3).zip").unlink()
    with pytest.raises(DownloadError) as caught:
        fetch_task_raw(
            get_task(TASK),
            tmp_path / "raw",
            from_dir=shared,
            allow_unpinned=True,
            published_checksums=False,
            progress=False,
        )
    message = str(caught.value)
    assert "test_dataset.zip" in message
    assert "not found in from_dir" in message
    assert "a member matching 'LDCTIQAC_test/test.json' or '*test-ground-truth.json'" in message


PUMA = "puma-track1-task1"
PUMA_KINDS = {
    "01_training_dataset_tif_ROIs.zip": ("01_training_dataset_tif_ROIs", ".tif"),
    "01_training_dataset_geojson_tissue.zip": ("01_training_dataset_geojson_tissue", "_tissue"),
    "01_training_dataset_geojson_nuclei.zip": ("01_training_dataset_geojson_nuclei", "_nuclei"),
}


@pytest.mark.usefixtures("offline")
@pytest.mark.parametrize("top_folders", [True, False])
def test_renamed_puma_archives_are_told_apart_with_or_without_their_top_folders(
    tmp_path: Path, top_folders: bool
) -> None:
    tree = tmp_path / "tree"
    load_task(PUMA).make_fixture(tree, seed=0)
    shared = tmp_path / "downloads"
    shared.mkdir()
    files = sorted(p for p in tree.rglob("*") if p.is_file())
    for n, (_name, (top, marker)) in enumerate(sorted(PUMA_KINDS.items())):
        with zipfile.ZipFile(shared / f"download ({n}).zip", "w") as zf:
            for path in (p for p in files if marker in p.name):
                zf.write(path, f"{top}/{path.name}" if top_folders else path.name)
    manifest = fetch_task_raw(
        get_task(PUMA),
        tmp_path / "raw",
        from_dir=shared,
        allow_unpinned=True,
        published_checksums=False,
        progress=False,
    )
    taken = {f.name: f.found_by or "" for f in manifest.files}
    assert set(taken) == set(PUMA_KINDS)
    for name, (top, marker) in PUMA_KINDS.items():
        assert marker in taken[name], (name, taken[name])
        assert (f"'{top}/" in taken[name]) == top_folders
    assert len({Path(f.path).name for f in manifest.files}) == 3
