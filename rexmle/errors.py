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


MAX_REASONS = 200
"""Most reasons an invalid submission reports; one more line counts the rest."""


def cap_reasons(reasons: list[str], *, n_total: int | None = None) -> list[str]:
    """At most MAX_REASONS of ``reasons``, then one line counting the rest.

    ``n_total`` is the number of problems found when only the first ones were kept (default:
    ``len(reasons)``).
    """
    total = len(reasons) if n_total is None else n_total
    if total <= MAX_REASONS:
        return list(reasons)
    rest = total - MAX_REASONS
    return [*reasons[:MAX_REASONS], f"... and {rest} more problem(s) of the same kinds"]


class InvalidSubmission(RexmleError):
    """The submission breaks one or more validity rules; ``reasons`` says which, one line each.

    At most MAX_REASONS + 1 lines are kept, wherever they come from: a longer list is cut by
    :func:`cap_reasons` (a list already cut by it is kept as it is).
    """

    def __init__(self, reasons: list[str]) -> None:
        given = list(reasons)
        self.reasons = given if len(given) <= MAX_REASONS + 1 else cap_reasons(given)
        n = len(self.reasons)
        msg = f"submission is invalid ({n} problem{'s' if n != 1 else ''}):\n" + "\n".join(
            f"  - {r}" for r in self.reasons
        )
        super().__init__(msg)
