"""Preparation is idempotent and atomic: a second prepare does nothing, a failed one leaves none."""

from __future__ import annotations

import pytest

from rexmle.preparation import prepare_task

TASK = "isles22"


def test_prepare_twice_is_a_noop(prepared_mini) -> None:
    dirs = prepared_mini(TASK)
    before = dirs.prepared_json.read_text()
    _, did_work = prepare_task(TASK, data_dir=dirs.root.parent, mini=True)
    assert did_work is False
    assert dirs.prepared_json.read_text() == before


def test_interrupted_prepare_leaves_no_complete_looking_folder(tmp_path, monkeypatch) -> None:
    from rexmle.challenges.isles22 import prepare as isles_prepare

    def broken(*_args, **_kwargs):
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(isles_prepare, "prepare", broken)
    with pytest.raises(OSError, match="disk full"):
        prepare_task(TASK, data_dir=tmp_path, mini=True)
    assert not (tmp_path / TASK / "prepared.json").exists()
    assert not list((tmp_path / TASK).glob(".building-*"))
    monkeypatch.undo()
    _, did_work = prepare_task(TASK, data_dir=tmp_path, mini=True)
    assert did_work
    assert (tmp_path / TASK / "prepared.json").is_file()
