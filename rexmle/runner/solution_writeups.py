"""Where a solution-informed run gets the task's winning-solution write-up.

The write-ups live in the task kit (``rexmle.tasks.solutions.solution_writeup(task_id)``, an
object with ``text`` and ``sources``). This module is the one place the runner reaches them:
:func:`writeup_source` returns that function, or raises :class:`WriteupsUnavailable` when this
install has none, and :func:`render_writeup` turns a write-up into the Markdown section the
instructions carry. Tests hand the runner a source of their own (:data:`WriteupSource`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from rexmle.errors import RexmleError


class Writeup(Protocol):
    """What the runner needs of a write-up."""

    @property
    def text(self) -> str:
        """The write-up, Markdown."""
        ...

    @property
    def sources(self) -> Sequence[object]:
        """Where its facts come from (URLs, DOIs, or objects naming them)."""
        ...


WriteupSource = Callable[[str], Writeup]
"""``task_id -> write-up``."""

SECTION_TITLE = "## Winning solution write-up"


class WriteupsUnavailable(RexmleError):
    """No write-up can be given for a solution-informed run (the message says why)."""

    exit_code = 2


def writeup_source() -> WriteupSource:
    """The task kit's ``solution_writeup``.

    Raises:
        WriteupsUnavailable: this install has no write-ups (``rexmle.tasks.solutions``).
    """
    try:
        from rexmle.tasks import solutions  # type: ignore[attr-defined]
    except ImportError as error:
        msg = (
            "solution-informed runs need the winning-solution write-ups "
            f"(rexmle.tasks.solutions), which this install lacks: {error}"
        )
        raise WriteupsUnavailable(msg) from error
    found: WriteupSource = solutions.solution_writeup
    return found


def _source_line(source: object) -> str:
    parts = [
        str(value)
        for name in ("title", "doi", "url")
        if (value := getattr(source, name, None)) is not None
    ]
    return " - ".join(parts) if parts else str(source)


def source_lines(writeup: Writeup) -> list[str]:
    """One line per source of ``writeup`` (its title, DOI and URL where it has them)."""
    return [_source_line(s) for s in writeup.sources]


def render_writeup(task_id: str, writeup: Writeup) -> str:
    """The section added to the instructions: the write-up, then its sources.

    Raises:
        WriteupsUnavailable: the write-up is empty or cites no source.
    """
    text = writeup.text.strip()
    sources = source_lines(writeup)
    if not text or not sources:
        msg = f"the write-up of {task_id} is empty or cites no source: not given to the agent"
        raise WriteupsUnavailable(msg)
    lines = [
        "",
        SECTION_TITLE,
        "",
        "How the challenge's winning team solved this task (a summary of their published "
        "report, for you to build on):",
        "",
        text,
        "",
        "Sources:",
        *[f"- {line}" for line in sources],
        "",
    ]
    return "\n".join(lines)
