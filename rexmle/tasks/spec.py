"""Typed model of a task's declarative YAML file (``rexmle/challenges/<family>/<task-id>.yaml``).

A task file states every fact about a task once: ids, sources, the submission's columns and their
file rules, the metric keys with direction and aggregation, the split numbers, per-task
``params``, and the plain functions (named by dotted path) that make the mini fixture, prepare,
check, score and solve it. The leaderboard is ``<task-id>.leaderboard.csv`` beside the file.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from rexmle.split import split_sizes

TaskType = Literal[
    "segmentation",
    "detection",
    "classification",
    "regression",
    "enhancement",
]
SourceKind = Literal["zenodo", "http", "gdrive", "figshare"]
Direction = Literal["higher", "lower"]
Aggregate = Literal["mean", "median", "dataset"]
"""How a metric's value over the test set is formed from the cases: the arithmetic mean or the
median of the per-case values (computed by grading), or ``dataset``: computed over all cases at
once by the task's ``aggregate`` (or ``score_dataset``) function (pooled AP, correlations)."""

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
    holds: list[str] = []
    """Glob patterns (``fnmatch``; ``*`` also crosses ``/``) of member paths that every real copy
    of the archive holds, e.g. ``ISLES-2022/derivatives/*``: ``prepare --from DIR`` recognises a
    copy saved under another name by them when no size or checksum is known. ``A|B`` in one
    pattern is met by a member matching either (an archive known in two layouts)."""

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
    """One metric: its key in grade reports, direction, aggregation and whether it is ranked."""

    key: str
    direction: Direction
    headline: bool = False
    ranked: bool = True
    """Ranked metrics are the leaderboard's columns (same keys, same order); the others are
    reported beside them and never ranked."""
    aggregate: Aggregate = "mean"
    of: str | None = None
    """The per-case value a ``mean`` or ``median`` is taken of (default: ``key`` itself), e.g.
    ``hd_50pc`` as the median of the cases' ``hd``."""
    description: str = ""

    @property
    def case_key(self) -> str:
        """The per-case value that ``mean`` and ``median`` aggregate."""
        return self.of or self.key

    @model_validator(mode="after")
    def _of_only_for_case_aggregates(self) -> MetricSpec:
        if self.of is not None and self.aggregate == "dataset":
            msg = f"metric {self.key}: 'of' applies to mean and median metrics only"
            raise ValueError(msg)
        return self

    @property
    def higher_is_better(self) -> bool:
        """True when larger values rank better."""
        return self.direction == "higher"


class SplitSpec(_Strict):
    """The rule that reproduces the published benchmark's train/test membership."""

    rule: str
    """One-line rule, copied into ``private/split.json``."""
    seed: int | None = 42
    """The shuffle seed (None: the split has no randomness, e.g. official sets)."""
    test_fraction: float | None = Field(default=0.2, gt=0, lt=1)
    """Fraction of cases in the test set (None: the split is not a fraction)."""
    expected_cases: int | None = Field(default=None, ge=2)
    """Fraction splits: the cases the real data holds, all groups (folders, organs, modalities)
    together. The train/test sizes follow from it by the rule (:meth:`expected_sizes`), so a
    corrected count is this one line. Prepare fails on a mismatch unless mini."""
    expected_train: int | None = Field(default=None, ge=1)
    """Official sets only (``test_fraction`` null): the cases of the official training set."""
    expected_test: int | None = Field(default=None, ge=1)
    """Official sets only: the cases of the official test set (its own source, its own line)."""

    @model_validator(mode="after")
    def _counts_fit_the_rule(self) -> SplitSpec:
        if self.test_fraction is not None and (
            self.expected_train is not None or self.expected_test is not None
        ):
            msg = (
                "a split with a test_fraction declares its total as 'expected_cases'; the "
                "train/test sizes follow from the rule (expected_train/expected_test are for "
                "official sets, test_fraction: null)"
            )
            raise ValueError(msg)
        if self.test_fraction is None and self.expected_cases is not None:
            msg = (
                "'expected_cases' needs a test_fraction to derive train/test from; official "
                "sets declare expected_train and expected_test"
            )
            raise ValueError(msg)
        return self

    def expected_sizes(self) -> tuple[int, int] | None:
        """The (train, test) sizes the declaration expects on the real data, None if undeclared.

        Fraction splits: :func:`rexmle.split.split_sizes` of ``expected_cases`` (test =
        ``ceil(test_fraction * expected_cases)``, train = the rest). Official sets:
        ``(expected_train, expected_test)`` when both are declared.
        """
        if self.test_fraction is not None:
            if self.expected_cases is None:
                return None
            return split_sizes(self.expected_cases, self.test_fraction)
        if self.expected_train is None or self.expected_test is None:
            return None
        return self.expected_train, self.expected_test


FileFormat = Literal["any", "label-volume"]
Severity = Literal["error", "warning"]


class FileRule(_Strict):
    """Declared rules for the files of one path column, checked by grading before the task's own
    checks (public data only, never a repair).
    """

    suffixes: list[str]
    """Accepted file name endings, lower case (``.nii.gz``, ``.png``)."""
    format: FileFormat = "any"
    """``label-volume``: a 3-D single-component label image on the grid of ``grid_from``."""
    grid_from: str | None = None
    """Public file (relative to ``public/``, ``{case_id}`` replaced) whose array shape the file
    must have; required for ``label-volume``."""
    values: list[int] | None = None
    """Allowed label values (exact, NaN refused); None: any integer values."""
    labels: Literal["classes", "instances"] = "classes"
    """What a label value names: ``classes`` (each value one structure or class) or
    ``instances`` (each value one object, numbered in any order: two files that differ only in
    the numbering are the same segmentation)."""
    reader: Literal["auto", "simpleitk"] = "auto"
    """How the file is read (``simpleitk`` where the official evaluation reads with SimpleITK)."""
    placement_tolerance: float | None = None
    """Largest difference of origin and of direction x spacing from the grid file, per entry;
    None: placement is not compared."""
    placement: Severity = "warning"
    """Whether a placement beyond the tolerance invalidates the file or only warns."""
    spacing_tolerance_mm: float | None = None
    """Largest difference of the voxel size from the grid file's, per axis, in mm; None: the
    spacing is not compared."""
    spacing: Severity = "warning"
    """Whether a spacing beyond the tolerance invalidates the file or only warns."""
    wrong_ndim_hint: str = ""
    """Appended to the reason given for a file that is not 3-D."""

    @model_validator(mode="after")
    def _grid_for_volumes(self) -> FileRule:
        if self.format == "label-volume" and not self.grid_from:
            msg = "a label-volume file rule needs 'grid_from'"
            raise ValueError(msg)
        return self


class ColumnSpec(_Strict):
    """One required column of ``submission.csv`` besides the id column."""

    name: str
    kind: Literal["path", "value"]
    """``path``: a relative file path inside the submission; ``value``: a cell read as text."""
    file: FileRule | None = None
    """Declared file rules of a path column."""

    @model_validator(mode="after")
    def _rules_only_for_paths(self) -> ColumnSpec:
        if self.file is not None and self.kind != "path":
            msg = f"column {self.name}: file rules apply to path columns only"
            raise ValueError(msg)
        return self


class SubmissionSpec(_Strict):
    """The columns of ``submission.csv``: the id column first, then one per declared column."""

    id_column: str = "case_id"
    columns: list[ColumnSpec]

    @property
    def path_columns(self) -> tuple[str, ...]:
        """Columns holding relative file paths."""
        return tuple(c.name for c in self.columns if c.kind == "path")

    @property
    def value_columns(self) -> tuple[str, ...]:
        """Columns holding values (read as text by the task's checks)."""
        return tuple(c.name for c in self.columns if c.kind == "value")

    @property
    def required_columns(self) -> tuple[str, ...]:
        """Every column a submission must have, the id column first."""
        return (self.id_column, *(c.name for c in self.columns))

    def column(self, name: str) -> ColumnSpec:
        """The declared column ``name`` (KeyError when not declared)."""
        for column in self.columns:
            if column.name == name:
                return column
        raise KeyError(name)


class StudyFunctionsSpec(_Strict):
    """The scoring functions of the ``study`` definition set (``rexmle.tasks.definitions``).

    Each one named replaces its official counterpart when grading with ``--definitions study``;
    one not named keeps the official function. Same signatures as in :class:`FunctionsSpec`.
    """

    score_case: str | None = None
    score_dataset: str | None = None
    aggregate: str | None = None

    @model_validator(mode="after")
    def _at_most_one_scorer(self) -> StudyFunctionsSpec:
        if self.score_case is not None and self.score_dataset is not None:
            msg = "name at most one of score_case and score_dataset"
            raise ValueError(msg)
        return self


class FunctionsSpec(_Strict):
    """The task's plain functions, as ``module:function``; a module starting with ``.`` is inside
    the family's package (``.prepare:prepare`` is ``rexmle.challenges.<family>.prepare``).
    """

    make_fixture: str
    """``(raw_dir: Path, *, seed: int, real_quirks: bool = False) -> None``: write the mini raw
    data in the real layout; ``real_quirks`` adds the real archive's known variants."""
    prepare: str
    """``(job: PrepareJob) -> Split``: raw -> public/ and private/ (gold, sample submission)."""
    score_case: str | None = None
    """``(case: ScoreCase) -> CaseRow``: metrics of one case (run in parallel)."""
    score_dataset: str | None = None
    """``(job: ScoreJob) -> list[CaseRow]``: rows of all cases at once, for scoring that needs
    every case together (instead of ``score_case``)."""
    aggregate: str | None = None
    """``(rows: list[CaseRow], task: TaskSpec) -> dict[str, float]``: the ``dataset`` metrics."""
    check_case: str | None = None
    """``(case: SubmissionCase, context: CheckContext) -> list[str]``: the task's own checks."""
    check_submission: str | None = None
    """``(submission: LoadedSubmission, context: CheckContext) -> list[str]``: across cases."""
    test_ids: str | None = None
    """``(context: CheckContext) -> list[str]``: ids to submit (default: the sample's)."""
    solve_baseline: str | None = None
    """``(job: BaselineJob) -> None``: the non-LLM baseline."""
    study: StudyFunctionsSpec | None = None
    """The scoring functions of the study's definitions, where they differ from the official."""

    @model_validator(mode="after")
    def _one_scorer(self) -> FunctionsSpec:
        if (self.score_case is None) == (self.score_dataset is None):
            msg = "name exactly one of score_case and score_dataset"
            raise ValueError(msg)
        return self


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
    split: SplitSpec
    spec_version: int = 1
    description: str | None = None
    """The agent-facing description: a Markdown file beside this YAML; ``{{id}}``, ``{{name}}``
    and ``{{params.<key>}}`` are replaced by the task's values."""
    submission: SubmissionSpec | None = None
    params: dict[str, Any] = {}
    """Per-task values the family's functions read (e.g. which track's classes)."""
    functions: FunctionsSpec | None = None
    """None: the task is registered, but its prepare and grade functions are not built yet."""

    @model_validator(mode="after")
    def _built_tasks_declare_everything(self) -> TaskSpec:
        if self.functions is not None and (self.submission is None or self.description is None):
            msg = "a task with functions also declares its submission columns and description"
            raise ValueError(msg)
        return self

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
    def ranked_metrics(self) -> list[MetricSpec]:
        """The leaderboard's metrics, in leaderboard column order."""
        return [m for m in self.metrics if m.ranked]

    @property
    def directions(self) -> dict[str, Direction]:
        """Direction of every ranked metric, in leaderboard column order."""
        return {m.key: m.direction for m in self.ranked_metrics}

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
        return self.functions is not None
