"""Prepare a task: raw data (mini fixture or real download) -> ``public/``, ``private/``, prepared.json.

Preparation builds into ``<task-dir>/.building-<pid>/`` and moves ``public/`` and ``private/`` into place
at the end; ``prepared.json`` is written last, atomically. A task folder without ``prepared.json`` is
therefore never taken for a complete one, and leftovers of an interrupted run are removed by the next.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import secrets
import shutil
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from rexmle import __version__
from rexmle.errors import DataError
from rexmle.grading.score_script import write_score_script
from rexmle.processes import pid_is_alive
from rexmle.split import Split
from rexmle.tasks.declared_counts import check_declared_counts
from rexmle.tasks.files import sha256_file
from rexmle.tasks.folders import TaskDirs, read_prepared, task_dirs
from rexmle.tasks.jobs import PrepareJob
from rexmle.tasks.registry import get_task, load_task
from rexmle.tasks.spec import TaskSpec

log = logging.getLogger(__name__)

RAW_COMPLETE_MARKER = ".rexmle-raw-complete.json"
SOURCES_MANIFEST = ".rexmle-sources.json"


MINI_SECRET_FILE = "mini_secret.json"
"""The mini fixture's secret: in the raw folder (hidden like ``private/``) and in ``private/``."""
FixtureSecret = bytes | None | Literal["new"]
"""``"new"``: draw a fresh secret; bytes: that secret; None: no secret (the fixed seed 0)."""
SECRET_BYTES = 16


def fixture_seed(secret: bytes | None) -> int:
    """The seed a mini fixture's RNGs start from: 0 without a secret, else the secret's 128 bits.

    Every fixture seeds each of its generators from this seed and its own constants (e.g.
    ``seed * 2 + offset``), so without the secret its output cannot be reproduced, while
    ``None`` gives exactly the fixed bytes the golden grade reports and hand values rest on.
    """
    return 0 if secret is None else int.from_bytes(secret, "big")


def _raw_secret(raw_dir: Path) -> bytes | None:
    path = raw_dir / MINI_SECRET_FILE
    if not path.is_file():
        return None
    return bytes.fromhex(json.loads(path.read_text(encoding="utf-8"))["secret_hex"])


def ensure_mini_raw(task_id: str, raw_dir: Path, *, secret: FixtureSecret = "new") -> bytes | None:
    """Generate the mini raw fixture into ``raw_dir`` once (tasks sharing raw data share it).

    A fixture already there is kept when it matches ``secret`` (``"new"`` accepts any secret
    but not a fixture made without one); otherwise it is made again.

    Returns:
        The secret the fixture in ``raw_dir`` was made with (None: none).

    Raises:
        DataError: ``raw_dir`` holds real downloaded data (never overwritten by a fixture).
    """
    if (raw_dir / RAW_COMPLETE_MARKER).is_file():
        existing = _raw_secret(raw_dir)
        if (secret == "new" and existing is not None) or secret == existing:
            return existing
    if (raw_dir / SOURCES_MANIFEST).is_file():
        msg = f"{raw_dir} holds real downloaded data; prepare the mini suite in another --data-dir"
        raise DataError(msg)
    chosen = secrets.token_bytes(SECRET_BYTES) if secret == "new" else secret
    make_fixture = load_task(task_id).required_function("make_fixture")
    for stale in raw_dir.parent.glob(f".{raw_dir.name}.building-*"):
        pid = stale.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not pid_is_alive(int(pid)):  # left by a killed prepare
            shutil.rmtree(stale, ignore_errors=True)
    building = raw_dir.with_name(f".{raw_dir.name}.building-{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir(parents=True)
    make_fixture(building, seed=fixture_seed(chosen))
    if chosen is not None:
        record = {"secret_hex": chosen.hex()}
        (building / MINI_SECRET_FILE).write_text(json.dumps(record) + "\n", encoding="utf-8")
    marker = {
        "kind": "mini-fixture",
        "made_by": task_id,
        "seeded_by_secret": chosen is not None,
        "rexmle": __version__,
    }
    (building / RAW_COMPLETE_MARKER).write_text(json.dumps(marker) + "\n", encoding="utf-8")
    if raw_dir.exists():
        shutil.rmtree(raw_dir)
    raw_dir.parent.mkdir(parents=True, exist_ok=True)
    building.rename(raw_dir)
    return chosen


def ensure_real_raw(
    task_id: str,
    raw_dir: Path,
    *,
    from_dir: Path | None,
    allow_unpinned: bool = False,
    published_checksums: bool = True,
) -> None:
    """Download (or take from ``from_dir``), verify and extract the task's real sources.

    A mini fixture left in ``raw_dir`` (by an earlier ``--mini`` prepare) is removed first.
    """
    from rexmle.sources import fetch_task_raw

    if (raw_dir / RAW_COMPLETE_MARKER).is_file():
        shutil.rmtree(raw_dir)
    fetch_task_raw(
        get_task(task_id),
        raw_dir,
        from_dir=from_dir,
        allow_unpinned=allow_unpinned,
        published_checksums=published_checksums,
        progress=sys.stderr.isatty(),
    )


def prepare_task(
    task_id: str,
    *,
    data_dir: Path | None = None,
    mini: bool = False,
    force: bool = False,
    from_dir: Path | None = None,
    allow_unpinned: bool = False,
    check_counts: bool = True,
    published_checksums: bool = True,
    fixture_secret: FixtureSecret = "new",
) -> tuple[TaskDirs, bool]:
    """Prepare one task; returns its folders and whether work was done (False: already prepared).

    ``fixture_secret`` (mini only): by default a fresh 128-bit secret seeds the fixture, so its
    ground truth cannot be regenerated by anyone who has the code but not ``private/``; the
    secret is kept in ``private/mini_secret.json`` (and the hidden raw folder). ``None`` makes
    the fixed fixture of seed 0 (tests, golden reports).

    ``check_counts`` (real data only) compares the split sizes with the spec's expected counts;
    it is turned off only for mini-sized copies of a real source (tests of the download path).
    ``published_checksums`` (real data only) also checks each source file against the sizes and
    checksums third parties published (`rexmle.sources.published`).

    Raises:
        DataError: the raw data does not look as the spec says, or the task is prepared with the
            other data kind (mini vs full) and ``force`` is not set.
        TaskNotImplemented: the task has no implementation yet.
    """
    task = load_task(task_id)
    prepare = task.required_function("prepare")
    dirs = task_dirs(task_id, data_dir)
    existing = read_prepared(dirs)
    if existing is not None and not force:
        if bool(existing.get("mini")) != mini:
            kind = "mini" if existing.get("mini") else "full"
            msg = (
                f"{task_id} is already prepared from the {kind} data in {dirs.root}; "
                f"use --force to replace it, or another --data-dir"
            )
            raise DataError(msg)
        return dirs, False
    started = time.perf_counter()
    secret: bytes | None = None
    if mini:
        secret = ensure_mini_raw(task_id, dirs.raw, secret=fixture_secret)
    else:
        ensure_real_raw(
            task_id,
            dirs.raw,
            from_dir=from_dir,
            allow_unpinned=allow_unpinned,
            published_checksums=published_checksums,
        )

    dirs.root.mkdir(parents=True, exist_ok=True)
    for stale in dirs.root.glob(".building-*"):
        shutil.rmtree(stale, ignore_errors=True)
    building = dirs.root / f".building-{os.getpid()}"
    public, private = building / "public", building / "private"
    public.mkdir(parents=True)
    private.mkdir(parents=True)
    try:
        job = PrepareJob(raw=dirs.raw, public=public, private=private, task=task.spec, mini=mini)
        split = with_declared_source(prepare(job), task.spec)
        for note in split.notes:
            log.warning("%s: %s", task_id, note)
        if not mini and check_counts:
            check_declared_counts(task.spec, split)
        split.write(private / "split.json")
        if secret is not None:
            shutil.copyfile(dirs.raw / MINI_SECRET_FILE, private / MINI_SECRET_FILE)
        (public / "description.md").write_text(task.description(), encoding="utf-8")
        write_score_script(public, task_id)
        manifest = {
            "task": task_id,
            "spec_version": task.spec.spec_version,
            "mini": mini,
            "mini_seeded_by_secret": secret is not None,
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "rexmle_version": __version__,
            "split": {
                "rule": split.rule,
                "train": split.train,
                "test": split.test,
            },
            "found": split.found,
            "notes": list(split.notes),
            "files": {
                "public": _hash_tree(public),
                "private": _hash_tree(private),
            },
            "seconds": 0.0,
        }
        dirs.prepared_json.unlink(missing_ok=True)
        for name in ("public", "private"):
            target = dirs.root / name
            if target.exists():
                shutil.rmtree(target)
            (building / name).rename(target)
        manifest["seconds"] = round(time.perf_counter() - started, 3)
        tmp = dirs.prepared_json.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, dirs.prepared_json)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return dirs, True


def with_declared_source(split: Split, spec: TaskSpec) -> Split:
    """The split with ``source`` naming the task's declared sources (kind, record, files).

    Raises:
        DataError: the family's prepare returned something other than a Split.
    """
    if not isinstance(split, Split):
        msg = f"{spec.id}: prepare returned {type(split).__name__}, not a Split"
        raise DataError(msg)
    if split.source:
        return split
    sources = [
        {"kind": source.kind, "record": source.record, "files": [f.name for f in source.files]}
        for source in spec.sources
    ]
    return dataclasses.replace(split, source={"sources": sources})


def _hash_tree(root: Path) -> dict[str, str]:
    return {
        path.relative_to(root).as_posix(): sha256_file(path)
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }
