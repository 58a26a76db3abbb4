"""Winning-solution write-ups: ``rexmle/challenges/<family>/solutions.yaml``, typed and checked.

A write-up summarises, in the project's own words, how the team that won a task's challenge
solved it: method, architecture, preprocessing, training, post-processing, ensembling and the
score the team reported, each fact with the public source it comes from (a DOI or a URL). A
fact that could not be established is named in ``not_established`` instead of being guessed.

One file per family. An entry covers every task it lists (tasks of one family whose winners and
methods coincide share an entry); every task of the family has exactly one entry. The family's
``sources`` (the challenge page, its summary paper) are cited by every entry after its own.

The YAML is read on first use only (``import rexmle.cli`` stays free of pydantic and yaml).
"""

from __future__ import annotations

import functools
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from rexmle.declarations import parse_declaration
from rexmle.errors import SpecError
from rexmle.tasks.registry import family_folder, get_task

SOLUTIONS_FILE = "solutions.yaml"
"""The file name of a family's write-ups (beside its task YAML files; not a task)."""

_DOI = re.compile(r"^10\.\d{4,9}/\S+$")
_URL = re.compile(r"^https?://[A-Za-z0-9.-]+\.[A-Za-z]{2,}(:\d+)?(/\S*)?$")

SourceKind = Literal[
    "summary paper",
    "dataset paper",
    "team paper",
    "team code",
    "organiser code",
    "challenge page",
    "leaderboard",
]
"""What a source is: the challenge's summary or dataset paper, the winning team's own paper or code, the
organisers' code, the challenge's web page, or its published leaderboard."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SolutionSource(_Strict):
    """One public source of a write-up's facts: a DOI, a URL, or both."""

    title: str = Field(min_length=3)
    """The source's title as it is published (paper title, page title)."""
    kind: SourceKind
    doi: str | None = None
    """A DOI without its resolver prefix, e.g. ``10.1038/s41592-024-02233-6``."""
    url: str | None = None
    """An ``http(s)`` address of the source."""

    @field_validator("doi")
    @classmethod
    def _doi_is_well_formed(cls, value: str | None) -> str | None:
        if value is not None and not _DOI.match(value):
            msg = f"doi {value!r} must look like 10.NNNN/suffix (no https://doi.org/ prefix)"
            raise ValueError(msg)
        return value

    @field_validator("url")
    @classmethod
    def _url_is_well_formed(cls, value: str | None) -> str | None:
        if value is not None and not _URL.match(value):
            msg = f"url {value!r} must be an http(s) address with a host name"
            raise ValueError(msg)
        return value

    @model_validator(mode="after")
    def _has_an_address(self) -> SolutionSource:
        if self.doi is None and self.url is None:
            msg = f"source {self.title!r} needs a doi or a url"
            raise ValueError(msg)
        return self

    @property
    def address(self) -> str:
        """Where to find the source: ``https://doi.org/<doi>`` when a DOI is given, else the URL."""
        return f"https://doi.org/{self.doi}" if self.doi else str(self.url)


class _Entry(_Strict):
    """One entry of a family's ``solutions.yaml`` (the fields of :class:`SolutionWriteup`)."""

    tasks: list[str] = Field(min_length=1)
    """The task ids this entry describes."""
    team: str = Field(min_length=1)
    """The winning team as the challenge names it."""
    leaderboard_team: str | None = None
    """The team's name in the task's ``<task-id>.leaderboard.csv`` where it differs."""
    rank: int | None = Field(default=None, ge=1)
    """The team's published final rank in the challenge (None: not published)."""
    reported_score: str = Field(min_length=1)
    """The score as published, with its metric and where it was measured (free text)."""
    method: str = Field(min_length=20)
    """The method in one paragraph, in the project's own words."""
    architecture: str | None = None
    preprocessing: str | None = None
    training: str | None = None
    postprocessing: str | None = None
    ensembling: str | None = None
    not_established: str | None = None
    """Facts no public source established (said instead of guessed)."""
    sources: list[SolutionSource] = Field(min_length=1)
    """The sources of this entry's facts (at least one)."""


class _FamilyFile(_Strict):
    """A family's ``solutions.yaml``."""

    family: str
    sources: list[SolutionSource] = []
    """Sources every entry of the family cites after its own (challenge page, summary paper)."""
    writeups: list[_Entry] = Field(min_length=1)


DETAIL_FIELDS: tuple[tuple[str, str], ...] = (
    ("architecture", "Architecture"),
    ("preprocessing", "Preprocessing"),
    ("training", "Training"),
    ("postprocessing", "Post-processing"),
    ("ensembling", "Ensembling"),
)
"""The optional detail fields of a write-up, with their headings, in rendering order."""


class SolutionWriteup(_Strict):
    """The winning solution of one task, with its sources (the family's after the entry's)."""

    task: str
    family: str
    team: str
    leaderboard_team: str | None
    rank: int | None
    reported_score: str
    method: str
    architecture: str | None
    preprocessing: str | None
    training: str | None
    postprocessing: str | None
    ensembling: str | None
    not_established: str | None
    sources: list[SolutionSource] = Field(min_length=1)
    file: str
    """The YAML file it was read from, as messages cite it."""

    def render_markdown(self) -> str:
        """The write-up as a Markdown section (heading, method, details, score, sources)."""
        rank = f", rank {self.rank}" if self.rank is not None else ""
        lines = [
            f"## Winning solution of {self.task}: {self.team}{rank}",
            "",
            self.method.strip(),
            "",
        ]
        for field, heading in DETAIL_FIELDS:
            value = getattr(self, field)
            if value:
                lines.append(f"- **{heading}:** {value.strip()}")
        lines.append(f"- **Reported score:** {self.reported_score.strip()}")
        if self.not_established:
            lines.append(
                f"- **Not established from public sources:** {self.not_established.strip()}"
            )
        lines += ["", "Sources:"]
        lines += [f"- {s.title} ({s.kind}): {s.address}" for s in self.sources]
        return "\n".join(lines) + "\n"

    def as_dict(self) -> dict[str, object]:
        """The write-up as JSON-ready values, each source with its resolved ``address``."""
        dumped = self.model_dump(mode="json")
        dumped["sources"] = [
            {**s.model_dump(mode="json"), "address": s.address} for s in self.sources
        ]
        return dumped


def parse_solutions(text: str, family: str, where: str) -> dict[str, SolutionWriteup]:
    """The write-ups declared in one family file, by task id.

    Args:
        text: The file's YAML text.
        family: The family folder the file lies in.
        where: The file, as messages name it.

    Raises:
        SpecError: the YAML is malformed, a field is unknown or missing (a source above all), the
            family differs from its folder, or a task is listed twice.
    """
    parsed = parse_declaration(text, _FamilyFile, where, what="solutions file")
    if parsed.family != family:
        msg = f"{where}: family {parsed.family!r} differs from its folder {family!r}"
        raise SpecError(msg)
    found: dict[str, SolutionWriteup] = {}
    for entry in parsed.writeups:
        fields = entry.model_dump(exclude={"tasks", "sources"})
        for task in entry.tasks:
            if task in found:
                msg = f"{where}: task {task!r} has two write-ups"
                raise SpecError(msg)
            found[task] = SolutionWriteup(
                task=task,
                family=family,
                sources=[*entry.sources, *parsed.sources],
                file=where,
                **fields,
            )
    return found


@functools.cache
def family_solutions(family: str) -> dict[str, SolutionWriteup]:
    """Every write-up of one family, by task id (read once).

    Raises:
        SpecError: the family has no ``solutions.yaml``, or it is not valid.
    """
    where = f"rexmle/challenges/{family}/{SOLUTIONS_FILE}"
    entry = family_folder(family).joinpath(SOLUTIONS_FILE)
    if not entry.is_file():
        msg = f"{where}: no winning-solution write-ups for family {family!r}"
        raise SpecError(msg)
    found = parse_solutions(entry.read_text(encoding="utf-8"), family, where)
    strangers = [t for t in found if not family_folder(family).joinpath(f"{t}.yaml").is_file()]
    if strangers:
        msg = f"{where}: {', '.join(strangers)} not a task of family {family!r}"
        raise SpecError(msg)
    return found


def solution_writeup(task_id: str) -> SolutionWriteup:
    """The winning-solution write-up of ``task_id``.

    Raises:
        SpecError: the task is unknown, or its family's file is missing, invalid, or has no
            entry for it.
    """
    spec = get_task(task_id)
    writeups = family_solutions(spec.family)
    if task_id not in writeups:
        where = f"rexmle/challenges/{spec.family}/{SOLUTIONS_FILE}"
        msg = f"{where}: no write-up for task {task_id!r} (it lists {', '.join(writeups)})"
        raise SpecError(msg)
    return writeups[task_id]


def solution_writeup_if_written(task_id: str) -> SolutionWriteup | None:
    """The write-up of ``task_id``, or None when its family has no ``solutions.yaml`` yet.

    A new family (``rexmle dev new-challenge``) starts without write-ups; a file that exists but
    is invalid or lacks the task still raises.

    Raises:
        SpecError: as :func:`solution_writeup`, except for a missing family file.
    """
    spec = get_task(task_id)
    if not family_folder(spec.family).joinpath(SOLUTIONS_FILE).is_file():
        return None
    return solution_writeup(task_id)
