"""Typed model of a task's declarative YAML file (``rexmle/challenges/<family>/<task-id>.yaml``).

A task file says what a task is (ids, modality, sources, leaderboard metrics, split rule);
the code that prepares and grades it lives in the module named by ``implementation``.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

TaskType = Literal[
    "segmentation",
    "detection",
    "classification",
    "regression",
    "enhancement",
]
SourceKind = Literal["zenodo", "http", "gdrive", "figshare"]
Direction = Literal["higher", "lower"]

_CHECKSUM = re.compile(r"^(md5|sha1|sha256):[0-9a-f]+$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SourceFile(_Strict):
    """One file of a source, as the source publishes it."""

    name: str
    """File name on the source (Zenodo key, Figshare file name, or the local name for a URL)."""
    checksum: str | None = None
    """Pinned checksum with its algorithm as prefix, e.g. ``md5:0cc1...`` or ``sha256:e3b0...``."""
    size_bytes: int | None = Field(default=None, ge=0)
    """Pinned size in bytes, when known."""
    url: str | None = None
    """Direct URL for ``http`` sources; a Google Drive file id for ``gdrive``; a Figshare file id."""
    extract: bool = True
    """Whether the file is an archive that is extracted into ``raw/`` after download."""
    extract_to: str | None = None
    """Sub-folder of ``raw/`` to extract into (default: ``raw/`` itself)."""

    @field_validator("checksum")
    @classmethod
    def _checksum_has_algorithm(cls, value: str | None) -> str | None:
        if value is not None and not _CHECKSUM.match(value):
            msg = f"checksum must look like 'md5:<hex>' or 'sha256:<hex>', got {value!r}"
            raise ValueError(msg)
        return value


class SourceSpec(_Strict):
    """Where a task's raw data comes from."""

    kind: SourceKind
    record: str | None = None
    """Zenodo record id, Figshare article id; None for plain URLs and Google Drive files."""
    version: str | None = None
    """Record/article version when the source versions its records (Figshare)."""
    files: list[SourceFile]
    licence: str | None = None
    """Licence string as stated by the source (recorded in the download manifest)."""

    @model_validator(mode="after")
    def _record_when_needed(self) -> SourceSpec:
        if self.kind in ("zenodo", "figshare") and not self.record:
            msg = f"a {self.kind} source needs a 'record'"
            raise ValueError(msg)
        if self.kind in ("http", "gdrive"):
            missing = [f.name for f in self.files if not f.url]
            if missing:
                msg = f"{self.kind} source files need 'url' (file id for gdrive): {missing}"
                raise ValueError(msg)
        return self


class MetricSpec(_Strict):
    """One leaderboard metric: its key in grade reports and its direction."""

    key: str
    direction: Direction
    headline: bool = False
    description: str = ""

    @property
    def higher_is_better(self) -> bool:
        """True when larger values rank better."""
        return self.direction == "higher"


class SplitSpec(_Strict):
    """The rule that reproduces the published benchmark's train/test membership."""

    rule: str
    """One-line rule, copied into ``private/split.json``."""
    seed: int | None = 42
    test_fraction: float | None = Field(default=0.2, gt=0, lt=1)
    expected_train: int | None = None
    """Train cases on the real data (prepare fails on a mismatch unless mini)."""
    expected_test: int | None = None


class TaskSpec(_Strict):
    """A benchmark task, as declared in its YAML file."""

    id: str
    name: str
    family: str
    """Challenge family (folder under ``rexmle/challenges``)."""
    task_type: TaskType
    modality: str
    anatomy: str
    sources: list[SourceSpec]
    shared_raw: str | None = None
    """Name of the shared raw folder (e.g. ``topcow-shared``) when tasks share one download."""
    metrics: list[MetricSpec]
    extra_metrics: list[str] = []
    """Keys reported beside the leaderboard metrics but never ranked."""
    split: SplitSpec
    spec_version: int = 1
    implementation: str | None = None
    """Dotted module path of the task implementation; None while not built."""
    description_file: str = "description.md"

    @field_validator("metrics")
    @classmethod
    def _one_headline(cls, metrics: list[MetricSpec]) -> list[MetricSpec]:
        keys = [m.key for m in metrics]
        if len(set(keys)) != len(keys):
            msg = f"metric keys repeat: {keys}"
            raise ValueError(msg)
        if sum(m.headline for m in metrics) != 1:
            msg = f"exactly one metric must be the headline, got {keys}"
            raise ValueError(msg)
        return metrics

    @property
    def headline(self) -> MetricSpec:
        """The metric shown in tables (ranking always uses all metrics)."""
        return next(m for m in self.metrics if m.headline)

    @property
    def raw_folder(self) -> str:
        """Folder name under the data dir that holds this task's ``raw/``."""
        return self.shared_raw or self.id

    @property
    def is_implemented(self) -> bool:
        """Whether prepare and grade exist for this task."""
        return self.implementation is not None
