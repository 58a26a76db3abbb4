"""Where a solution-informed run gets the task's winning-solution write-up.

The write-ups live in the task kit (:func:`rexmle.tasks.solutions.solution_writeup`: a typed
write-up that renders itself as Markdown, its sources listed last). This module is the one
place the runner reaches them: :func:`writeup_source` returns that function, and
:func:`render_writeup` turns a write-up into the section the instructions carry, refusing one
without a source. Tests may hand the runner another source (:data:`WriteupSource`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from rexmle.errors import RexmleError

INTRO = (
    "How the team that won this task's challenge solved it, summarised from public sources "
    "(cited below); you may build on it."
)
"""The sentence before the write-up in the instructions."""


class Writeup(Protocol):
    """What the runner needs of a write-up (:class:`rexmle.tasks.solutions.SolutionWriteup`)."""

    @property
    def sources(self) -> Sequence[object]:
        """Where its facts come from (objects with a title and an address, or URLs)."""
        ...

    def render_markdown(self) -> str:
        """The write-up as Markdown, its sources listed in it."""
        ...


WriteupSource = Callable[[str], Writeup]
"""``task_id -> write-up``."""


class WriteupsUnavailable(RexmleError):
    """No write-up can be given for a solution-informed run (the message says why)."""

    exit_code = 2


def writeup_source() -> WriteupSource:
    """The task kit's :func:`~rexmle.tasks.solutions.solution_writeup`."""
    from rexmle.tasks.solutions import solution_writeup

    return solution_writeup


def _source_line(source: object) -> str:
    title = getattr(source, "title", None)
    address = getattr(source, "address", None) or getattr(source, "url", None)
    if title is not None and address is not None:
        return f"{title}: {address}"
    return str(address or title or source)


def source_lines(writeup: Writeup) -> list[str]:
    """One line per source of ``writeup`` (its title and address where it has them)."""
    return [_source_line(s) for s in writeup.sources]


def render_writeup(task_id: str, writeup: Writeup) -> str:
    """The section added to the instructions: a rule, :data:`INTRO`, the write-up.

    Raises:
        WriteupsUnavailable: the write-up is empty, cites no source, or its text leaves out
            the address of one of its sources.
    """
    text = writeup.render_markdown().strip()
    if not text or not writeup.sources:
        msg = f"the write-up of {task_id} is empty or cites no source: not given to the agent"
        raise WriteupsUnavailable(msg)
    for source in writeup.sources:
        address = getattr(source, "address", None) or getattr(source, "url", None) or source
        if str(address) not in text:
            msg = f"the write-up of {task_id} does not show its source {address}: not given"
            raise WriteupsUnavailable(msg)
    return "\n".join(["", "---", "", INTRO, "", text, ""])
