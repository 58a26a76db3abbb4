"""A submission after the generic rules: its cases, every cell a string, file paths resolved."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class SubmissionCase:
    """One row of a submission: its id, every cell as a string, and resolved file paths."""

    case_id: str
    row: dict[str, str]
    paths: dict[str, Path] = field(default_factory=dict)
    """Path columns resolved inside the submission folder (checked: no escape, regular file)."""


@dataclass(frozen=True)
class LoadedSubmission:
    """A submission whose CSV, ids and paths passed the generic rules."""

    folder: Path
    cases: dict[str, SubmissionCase]
    warnings: list[str] = field(default_factory=list)

    def ids(self) -> list[str]:
        """Case ids in sorted order (grading order)."""
        return sorted(self.cases)
