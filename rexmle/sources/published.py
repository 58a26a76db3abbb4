"""Checksums and sizes of the real source files as third parties published them.

``published_checksums.tsv`` (beside this module) lists, per source file, the size, md5 and sha256
that dataset loaders and download scripts pinned for their own downloads, each with its evidence
(a repository file, or a note where the location was not recorded). They are an extra check
beside the value the live record (Zenodo, Figshare) publishes and the task's own pin: a download
must match all of them. A third-party value describes the file as that third party saw it; when
it alone disagrees, check the live record before trusting either (``--no-published-checksums``).
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from importlib import resources

from rexmle.tasks.spec import SourceFile, SourceSpec, TaskSpec

TABLE = "published_checksums.tsv"
COLUMNS = (
    "family",
    "task",
    "kind",
    "record",
    "version",
    "file_name",
    "size_bytes",
    "md5",
    "sha256",
    "evidence",
    "evidence_kind",
)


@dataclass(frozen=True)
class PublishedChecksum:
    """One third party's values for one source file (empty fields: not published)."""

    task_ids: tuple[str, ...]
    kind: str
    record: str | None
    file_name: str
    size_bytes: int | None
    md5: str | None
    sha256: str | None
    evidence: str
    evidence_kind: str

    @property
    def origin(self) -> str:
        """Where the values come from, as the messages name it."""
        return f"published by a {self.evidence_kind or 'third party'}: {self.evidence}"

    @property
    def checksums(self) -> list[str]:
        """The values as ``<algorithm>:<hex>`` strings."""
        return [
            f"{name}:{value}"
            for name, value in (("md5", self.md5), ("sha256", self.sha256))
            if value
        ]

    @property
    def is_empty(self) -> bool:
        """Whether the row states neither a size nor a checksum ("not found")."""
        return self.size_bytes is None and not self.checksums

    def as_dict(self) -> dict[str, object]:
        """The row for JSON output (``rexmle info --json``)."""
        return {
            "size_bytes": self.size_bytes,
            "checksums": self.checksums,
            "evidence": self.evidence,
            "evidence_kind": self.evidence_kind,
        }


@functools.cache
def published_table() -> tuple[PublishedChecksum, ...]:
    """Every row of the packaged table that states a size or a checksum.

    Raises:
        ValueError: the table's header differs from ``COLUMNS`` or a row is malformed.
    """
    text = resources.files("rexmle.sources").joinpath(TABLE).read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    reader = csv.reader(lines, delimiter="\t")
    header = tuple(next(reader))
    if header != COLUMNS:
        msg = f"{TABLE}: header {header} differs from {COLUMNS}"
        raise ValueError(msg)
    rows = []
    for number, fields in enumerate(reader, start=2):
        if len(fields) != len(COLUMNS):
            msg = f"{TABLE}: row {number} has {len(fields)} fields, expected {len(COLUMNS)}"
            raise ValueError(msg)
        cell = dict(zip(COLUMNS, fields, strict=True))
        size = cell["size_bytes"].strip()
        row = PublishedChecksum(
            task_ids=tuple(t.strip() for t in cell["task"].split(",") if t.strip()),
            kind=cell["kind"],
            record=cell["record"] or None,
            file_name=cell["file_name"],
            size_bytes=int(size) if size else None,
            md5=cell["md5"].strip().lower() or None,
            sha256=cell["sha256"].strip().lower() or None,
            evidence=cell["evidence"],
            evidence_kind=cell["evidence_kind"],
        )
        if not row.is_empty:
            rows.append(row)
    return tuple(rows)


def published_for(task: TaskSpec, source: SourceSpec, file: SourceFile) -> list[PublishedChecksum]:
    """The third-party values for one of the task's source files (same task, kind, record, name)."""
    return [
        row
        for row in published_table()
        if task.id in row.task_ids
        and row.kind == source.kind
        and row.record == source.record
        and row.file_name == file.name
    ]
