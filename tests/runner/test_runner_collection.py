"""Collecting what an agent left: any name, any depth, sparse files, caps, no setuid bits."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from runner_support import COPY_SAMPLE

from rexmle.records.runs import read_record
from rexmle.runner.sandbox import choose_sandbox
from rexmle.runner.trees import copy_file_sparse, remove_tree_iteratively, strip_special_bits
from rexmle.runner.workspace import CollectionLimits, collect_submission

NON_UTF8 = os.fsdecode(b"case-\xff\xfe.nii.gz")
DEEP = 1100


def nested(root: Path, depth: int) -> Path:
    """``root/d/d/.../d`` with ``depth`` folders, made without recursion."""
    folder = root
    for _ in range(depth):
        folder = folder / "d"
        folder.mkdir()
    return folder


def test_agent_with_odd_names_and_deep_folders_gets_a_final_record(run_agent, own_isles22):
    # a non-UTF-8 name and 1100 nested folders in submission/: the old collector raised
    # PydanticSerializationError / RecursionError and left the run 'running'
    command = (
        f'{COPY_SAMPLE} && cd "$SUBMISSION_DIR" && printf x > "$(printf \'case-\\377\\376.nii.gz\')" && '
        f"python3 -c \"import os\nfor _ in range({DEEP}): os.mkdir('d'); os.chdir('d')\""
    )
    record, folder = run_agent(command, dirs=own_isles22, sandbox=choose_sandbox("auto"))
    assert record.status == "completed"
    on_disk = read_record(folder)
    assert on_disk is not None
    assert on_disk.status == "completed"
    notes = json.loads((folder / "run.json").read_text())["submission_notes"]
    assert any("nested deeper than 32 folders" in note for note in notes)
    assert (folder / "submission" / NON_UTF8).read_bytes() == b"x"
    # the next attempt's clean-up removes the deep tree it kept in workspace/ as well
    record, folder = run_agent(COPY_SAMPLE, dirs=own_isles22, sandbox=choose_sandbox("auto"))
    assert record.status == "completed"
    assert not (folder / "submission" / NON_UTF8).exists()


def test_notes_show_undecodable_names_as_escapes(tmp_path: Path):
    source = tmp_path / "sub"
    source.mkdir()
    os.mkfifo(source / NON_UTF8)
    notes = collect_submission(source, tmp_path / "copy")
    assert notes == ["case-\\xff\\xfe.nii.gz: not a regular file; dropped"]
    json.dumps(notes)  # valid text for run.json


def test_depth_cap_counts_folders_below_the_submission(tmp_path: Path):
    source = tmp_path / "sub"
    source.mkdir()
    (nested(source, 3) / "kept.txt").write_text("3 folders down")
    (nested(source / "d" / "d" / "d", 1) / "dropped.txt").write_text("4 folders down")
    notes = collect_submission(source, tmp_path / "copy", limits=CollectionLimits(max_depth=4))
    assert (tmp_path / "copy/d/d/d/kept.txt").read_text() == "3 folders down"
    assert not (tmp_path / "copy/d/d/d/d/dropped.txt").exists()
    assert notes == ["1 entries nested deeper than 4 folders were left out"]


def test_file_count_cap(tmp_path: Path):
    source = tmp_path / "sub"
    source.mkdir()
    for index in range(50):
        (source / f"f{index:03d}").write_text("x")
    notes = collect_submission(source, tmp_path / "copy", limits=CollectionLimits(max_files=20))
    assert len(os.listdir(tmp_path / "copy")) == 20
    assert notes == ["30 files past the limit of 20 files were left out"]


def test_sparse_file_stays_sparse_and_counts_its_blocks(tmp_path: Path):
    source = tmp_path / "sub"
    source.mkdir()
    sparse = source / "sparse.bin"
    with open(sparse, "wb") as handle:
        handle.truncate(2 << 30)  # 2 GiB apparent
        handle.seek(1 << 30)
        handle.write(b"data")
    assert sparse.stat().st_blocks * 512 < 1 << 20
    notes = collect_submission(
        source, tmp_path / "copy", limits=CollectionLimits(max_bytes=1 << 20)
    )
    copy = tmp_path / "copy" / "sparse.bin"
    assert notes == []
    assert copy.stat().st_size == 2 << 30
    assert copy.stat().st_blocks * 512 < 1 << 20  # not 2 GiB of real disk
    with open(copy, "rb") as handle:
        handle.seek(1 << 30)
        assert handle.read(4) == b"data"


def test_size_cap_counts_allocated_blocks(tmp_path: Path):
    source = tmp_path / "sub"
    source.mkdir()
    (source / "a.bin").write_bytes(os.urandom(300_000))
    (source / "b.bin").write_bytes(os.urandom(300_000))
    notes = collect_submission(
        source, tmp_path / "copy", limits=CollectionLimits(max_bytes=500_000)
    )
    assert [p.name for p in (tmp_path / "copy").iterdir()] == ["a.bin"]
    assert notes == [
        "1 files were left out: the copy would pass the limit of 500000 bytes "
        "(a file counts its allocated blocks)"
    ]


def test_copy_of_a_file_with_data_at_both_ends(tmp_path: Path):
    source = tmp_path / "a"
    payload = os.urandom(10_000)
    with open(source, "wb") as handle:
        handle.write(payload)
        handle.seek(5 << 20)
        handle.write(payload)
    copy_file_sparse(str(source), str(tmp_path / "b"))
    assert (tmp_path / "b").read_bytes() == source.read_bytes()


def test_setuid_binary_left_by_the_agent_does_not_stay_setuid(run_agent, own_isles22):
    command = (
        f'{COPY_SAMPLE} && cp /bin/true "$WORKSPACE/.home/sh" && '
        'chmod 6755 "$WORKSPACE/.home/sh" && cp /bin/true "$SUBMISSION_DIR/tool" && '
        'chmod 4755 "$SUBMISSION_DIR/tool" && mkdir -m 2775 "$WORKSPACE/sgid" && '
        'stat -c %a "$WORKSPACE/.home/sh"'
    )
    record, folder = run_agent(command, dirs=own_isles22, sandbox=choose_sandbox("auto"))
    assert record.status == "completed"
    assert (folder / "agent.stdout.log").read_text().strip() == "6755"  # it was set inside
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for path in [folder, *folder.rglob("*")]:
        mode = path.lstat().st_mode
        assert not mode & (stat.S_ISUID | stat.S_ISGID), path


def test_strip_special_bits_counts_changes(tmp_path: Path):
    (tmp_path / "x").write_text("x")
    (tmp_path / "x").chmod(0o4755)
    (tmp_path / "link").symlink_to("x")
    assert strip_special_bits(tmp_path) == 1
    assert stat.S_IMODE((tmp_path / "x").stat().st_mode) == 0o755


def test_remove_tree_handles_depth_read_only_folders_and_links(tmp_path: Path):
    outside = tmp_path / "outside.txt"
    outside.write_text("kept")
    root = tmp_path / "tree"
    root.mkdir()
    deepest = nested(root, DEEP)
    (deepest / "link").symlink_to(outside)
    (root / "d").chmod(0o500)
    remove_tree_iteratively(root)
    assert not root.exists()
    assert outside.read_text() == "kept"


@pytest.mark.parametrize("kind", ["file", "link"])
def test_remove_tree_of_a_non_folder_removes_only_it(tmp_path: Path, kind: str):
    target = tmp_path / "target"
    target.mkdir()
    (target / "keep").write_text("k")
    path = tmp_path / "path"
    if kind == "file":
        path.write_text("f")
    else:
        path.symlink_to(target)
    remove_tree_iteratively(path)
    assert not path.exists()
    assert not path.is_symlink()
    assert (target / "keep").exists()
