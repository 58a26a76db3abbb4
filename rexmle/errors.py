"""Exception types shared by the whole package.

The split that matters most: :class:`InvalidSubmission` means "the submission is wrong" (exit 1);
everything else raised while grading is a harness error (exit 2) and never counts against a submission.
"""

from __future__ import annotations


class RexmleError(Exception):
    """Base class of every error the harness raises on purpose."""


class SpecError(RexmleError):
    """A task YAML file, a leaderboard file or a registry entry is malformed."""


class TaskNotImplemented(RexmleError):
    """The task is registered, but its prepare/grade code does not exist yet."""


class DataError(RexmleError):
    """Raw or prepared data does not look as the task's spec says (prepare fails loudly)."""


class NotPrepared(RexmleError):
    """A command needs a prepared task that is missing or incomplete."""


class HarnessError(RexmleError):
    """A failure of the harness itself (bug, missing dependency), never the submission's fault."""


class InvalidSubmission(RexmleError):
    """The submission breaks one or more validity rules; ``reasons`` says which, one line each."""

    def __init__(self, reasons: list[str]) -> None:
        self.reasons = list(reasons)
        n = len(self.reasons)
        msg = f"submission is invalid ({n} problem{'s' if n != 1 else ''}):\n" + "\n".join(
            f"  - {r}" for r in self.reasons
        )
        super().__init__(msg)
