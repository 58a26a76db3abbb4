"""Workspaces: public data only, instructions, helper files, and an environment without the data root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rexmle.runner.workspace import agent_env, build_workspace, collect_submission, remove_tree

VALIDATION = {
    "url": "http://127.0.0.1:9/validate",
    "max_upload_bytes": 1000,
    "max_requests_per_minute": 7,
}


def files_under(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("mode", ["link", "copy"])
def test_workspace_holds_public_data_only(isles22_dirs, tmp_path: Path, mode: str):
    workspace = build_workspace(
        tmp_path / "ws",
        task_id="isles22",
        public_dir=isles22_dirs.public,
        time_limit_s=90,
        validation=VALIDATION,
        data_mode=mode,  # type: ignore[arg-type]
    )
    assert files_under(workspace.data) == files_under(isles22_dirs.public)
    assert not any("gold" in name or "split.json" in name for name in files_under(workspace.root))
    sample = workspace.data / "sample_submission.csv"
    same_inode = (
        sample.stat().st_ino == (isles22_dirs.public / "sample_submission.csv").stat().st_ino
    )
    assert same_inode is (mode == "link")
    assert workspace.data_mode == mode  # both folders on one filesystem: no fallback to copies
    assert not (workspace.root / ".data-mode-copy").exists()  # nothing the agent could forge
    if mode == "copy":
        assert sample.stat().st_mode & 0o222 == 0  # read-only copies
    assert workspace.submission.is_dir()
    assert not any(workspace.submission.iterdir())
    assert workspace.validate_script.stat().st_mode & 0o100
    remove_tree(workspace.root)
    assert not workspace.root.exists()
    assert (isles22_dirs.public / "sample_submission.csv").is_file()  # links only unlinked


def test_instructions_state_rules_limits_and_the_task_description(isles22_dirs, tmp_path: Path):
    workspace = build_workspace(
        tmp_path / "ws",
        task_id="isles22",
        public_dir=isles22_dirs.public,
        time_limit_s=90,
        validation=VALIDATION,
        data_mode="copy",
    )
    text = workspace.instructions.read_text()
    assert "`isles22`" in text
    assert "90 seconds" in text
    assert "python validate.py" in text
    assert "never gives a score" in text
    assert "At most 7 checks per minute" in text
    assert text.endswith((isles22_dirs.public / "description.md").read_text())


def test_nothing_points_to_the_data_root(isles22_dirs, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("REXMLE_DATA_DIR", str(isles22_dirs.root.parent))
    monkeypatch.setenv("MY_API_KEY", "secret-value")
    monkeypatch.setenv("NOT_PASSED", "x")
    workspace = build_workspace(
        tmp_path / "ws",
        task_id="isles22",
        public_dir=isles22_dirs.public,
        time_limit_s=90,
        validation=VALIDATION,
        data_mode="copy",
    )
    env = agent_env(
        workspace,
        task_id="isles22",
        seed=2,
        time_limit_s=90,
        validation_url=VALIDATION["url"],
        pass_env=["MY_API_KEY", "REXMLE_DATA_DIR"],
        cuda_visible_devices="1",
    )
    data_root = str(isles22_dirs.root.parent)
    assert not any(data_root in value or "private" in value for value in env.values())
    assert "REXMLE_DATA_DIR" not in env
    assert "NOT_PASSED" not in env
    assert env["MY_API_KEY"] == "secret-value"
    assert env["CUDA_VISIBLE_DEVICES"] == "1"
    expected = {
        "DATA_DIR": str(workspace.data),
        "SUBMISSION_DIR": str(workspace.submission),
        "INSTRUCTIONS": str(workspace.instructions),
        "TIME_LIMIT_SECS": "90",
        "VALIDATION_URL": VALIDATION["url"],
        "TASK_ID": "isles22",
        "SEED": "2",
        "HOME": str(workspace.home),
    }
    assert {k: env[k] for k in expected} == expected
    for path in workspace.root.rglob("*"):
        if path.is_file() and not path.is_relative_to(workspace.data):
            assert data_root not in path.read_text(errors="replace"), path
    assert os.environ["REXMLE_DATA_DIR"] == data_root  # the harness keeps its own


def test_collect_submission_copies_files_and_drops_outside_links(tmp_path: Path):
    source, target = tmp_path / "sub", tmp_path / "copy"
    (source / "masks").mkdir(parents=True)
    (source / "submission.csv").write_text("case_id,path\na,masks/a.bin\n")
    (source / "masks" / "a.bin").write_bytes(b"A")
    secret = tmp_path / "secret.txt"
    secret.write_text("answers")
    (source / "inside-link").symlink_to("masks/a.bin")
    (source / "outside-link").symlink_to(secret)
    (source / "dir-link").symlink_to(tmp_path)
    os.mkfifo(source / "pipe")
    notes = collect_submission(source, target)
    assert files_under(target) == {"submission.csv", "masks/a.bin", "inside-link"}
    assert (target / "inside-link").read_bytes() == b"A"
    assert not (target / "inside-link").is_symlink()
    assert sorted(n.split(":")[0] for n in notes) == ["dir-link", "outside-link", "pipe"]
    # a submission folder that is itself a link counts as empty
    linked = tmp_path / "linked"
    linked.symlink_to(source)
    assert "ignored" in collect_submission(linked, tmp_path / "copy2")[0]
    assert files_under(tmp_path / "copy2") == set()
    remove_tree(linked)
    assert not linked.exists()
    assert source.is_dir()
