"""The record of what a raw folder holds: ``raw/.rexmle-sources.json``."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from rexmle import __version__
from rexmle.sources.checksums import parse_checksum
from rexmle.tasks.spec import SourceKind, TaskSpec

MANIFEST_NAME = ".rexmle-sources.json"
MANIFEST_VERSION = 1

Outcome = Literal["downloaded", "resumed", "reused", "from_dir"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DownloadedFile(_Model):
    """One source file, verified."""

    name: str
    kind: SourceKind
    record: str | None = None
    version: str | None = None
    size_bytes: int
    checksums: dict[str, str]
    """Hex digest per algorithm of the verified bytes (always md5 and sha256)."""
    verified_against: list[str]
    """Each checksum/size the bytes matched, with its origin; empty when nothing was known."""
    source_url: str
    """Where the bytes came from (download URL, or ``file://`` for a local copy)."""
    licence: str | None = None
    """Licence as written in the task YAML."""
    source_licence: str | None = None
    """Licence as stated by the source's API, when it states one."""
    path: str
    """Where the verified file lies."""
    outcome: Outcome
    found_by: str | None = None
    """For a file taken from ``--from DIR``: ``"by name"``, or what of its content matched
    (size and checksum, else the members it holds) when no file carried the declared name."""


class ExtractedArchive(_Model):
    """One file placed into ``raw/``: an extracted archive or a copied plain file."""

    name: str
    target: str
    """Folder under ``raw/`` (``.`` for ``raw/`` itself)."""
    is_archive: bool
    member_count: int
    file_count: int
    uncompressed_bytes: int


class SourceManifest(_Model):
    """What was downloaded, verified and extracted into one raw folder."""

    manifest_version: int = MANIFEST_VERSION
    raw_folder: str
    task_ids: list[str]
    complete: bool
    files: list[DownloadedFile]
    extracted: list[ExtractedArchive]
    created_at: str
    rexmle_version: str = __version__

    def problems_for(self, task: TaskSpec, raw_dir: Path) -> list[str]:
        """Why this manifest does not show ``task``'s sources in ``raw_dir`` (empty: it does).

        Checks completeness, then per task file: same name, kind and record; pinned
        checksum and size equal to the verified ones; its extraction recorded and the
        target folder present.
        """
        if not self.complete:
            return ["the last fetch did not complete"]
        problems: list[str] = []
        files = {f.name: f for f in self.files}
        placed = {e.name: e for e in self.extracted}
        for source in task.sources:
            for file in source.files:
                done = files.get(file.name)
                if done is None:
                    problems.append(f"{file.name}: not downloaded")
                    continue
                if (done.kind, done.record) != (source.kind, source.record):
                    problems.append(
                        f"{file.name}: came from {done.kind} {done.record}, the task names "
                        f"{source.kind} {source.record}"
                    )
                if file.checksum:
                    want = parse_checksum(file.checksum)
                    if done.checksums.get(want.algorithm) != want.hexdigest:
                        problems.append(f"{file.name}: verified bytes do not have {want}")
                if file.size_bytes is not None and file.size_bytes != done.size_bytes:
                    problems.append(
                        f"{file.name}: {done.size_bytes} bytes, the task pins {file.size_bytes}"
                    )
                entry = placed.get(file.name)
                target = file.extract_to or "."
                if entry is None or entry.target != target:
                    problems.append(f"{file.name}: not placed into raw/{target}")
                elif not (raw_dir / target).is_dir():
                    problems.append(f"{file.name}: raw/{target} is missing")
        return problems


def manifest_path(raw_dir: Path) -> Path:
    """Where the manifest of ``raw_dir`` lives."""
    return raw_dir / MANIFEST_NAME


def read_manifest(raw_dir: Path) -> SourceManifest | None:
    """The manifest of ``raw_dir``; None when absent or unreadable (it is then rewritten)."""
    path = manifest_path(raw_dir)
    try:
        return SourceManifest.model_validate_json(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValidationError, ValueError):
        return None


def raw_problems(task: TaskSpec, raw_dir: Path) -> list[str]:
    """Why ``raw_dir`` does not (yet) hold ``task``'s verified sources; empty when it does."""
    manifest = read_manifest(raw_dir)
    if manifest is None:
        return [f"no readable {MANIFEST_NAME} in {raw_dir}"]
    return manifest.problems_for(task, raw_dir)


def write_manifest(raw_dir: Path, manifest: SourceManifest) -> Path:
    """Write the manifest atomically (temporary file, then rename)."""
    raw_dir.mkdir(parents=True, exist_ok=True)
    path = manifest_path(raw_dir)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(manifest.model_dump(), indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def now_utc() -> str:
    """Current time, ISO 8601 in UTC, second precision."""
    return datetime.now(UTC).replace(microsecond=0).isoformat()
