"""Leftovers of killed processes are removed on the next start; folders in use never are."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from rexmle.preparation import ensure_mini_raw
from rexmle.runner.leftovers import OWNER_LOCK, SocketDir, remove_stale_socket_dirs

CLAIM = """
import sys, time
from rexmle.runner.leftovers import SocketDir
claimed = SocketDir()
print(claimed.path, flush=True)
time.sleep(float(sys.argv[1]))
"""


def test_socket_dir_of_a_killed_harness_is_removed_one_in_use_is_kept(tmp_path: Path):
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    killed = subprocess.Popen(
        [sys.executable, "-c", CLAIM, "60"], stdout=subprocess.PIPE, text=True, env=env
    )
    alive = subprocess.Popen(
        [sys.executable, "-c", CLAIM, "60"], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        killed_dir = Path(killed.stdout.readline().strip())  # type: ignore[union-attr]
        alive_dir = Path(alive.stdout.readline().strip())  # type: ignore[union-attr]
        killed.kill()  # SIGKILL: its finally never runs
        killed.wait()
        assert killed_dir.is_dir()
        assert (killed_dir / OWNER_LOCK).is_file()
        assert remove_stale_socket_dirs(tmp_path) == [killed_dir]
        assert not killed_dir.exists()
        assert alive_dir.is_dir()  # its owner still holds the lock
    finally:
        alive.kill()
        alive.wait()


def test_released_socket_dir_is_gone(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    claimed = SocketDir()
    assert claimed.path.parent == tmp_path
    assert remove_stale_socket_dirs(tmp_path) == []
    claimed.release()
    assert not claimed.path.exists()


def test_unclaimed_folder_is_left_alone_while_young(tmp_path: Path):
    young = tmp_path / "rexmle-v-young"
    young.mkdir()
    old = tmp_path / "rexmle-v-old"
    old.mkdir()
    an_hour_ago = time.time() - 3600
    os.utime(old, (an_hour_ago, an_hour_ago))
    assert remove_stale_socket_dirs(tmp_path) == [old]
    assert young.is_dir()


def test_building_folder_of_a_killed_prepare_is_removed(tmp_path: Path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    raw = tmp_path / "isles22" / "raw"
    raw.parent.mkdir(parents=True)
    stale = raw.with_name(f".raw.building-{dead.pid}")
    (stale / "half").mkdir(parents=True)
    in_use = raw.with_name(f".raw.building-{os.getppid()}")  # a live process
    in_use.mkdir()
    ensure_mini_raw("isles22", raw, secret=None)
    assert not stale.exists()
    assert in_use.is_dir()
    assert raw.is_dir()
