"""A list of reasons that keeps only the first MAX_REASONS and counts the rest (bounded memory)."""

from __future__ import annotations

from rexmle.errors import MAX_REASONS, cap_reasons


class BoundedReasons:
    """Reasons found while checking a submission: the first ``limit`` kept, the rest counted.

    ``len()`` is the number of problems found; :meth:`as_list` gives the kept ones and a line
    counting the rest, as :func:`rexmle.errors.cap_reasons` writes it.
    """

    def __init__(self, limit: int = MAX_REASONS) -> None:
        self.limit = limit
        self.kept: list[str] = []
        self.n_total = 0

    def append(self, reason: str) -> None:
        """Count ``reason``; keep it while fewer than ``limit`` are kept."""
        self.n_total += 1
        if len(self.kept) < self.limit:
            self.kept.append(reason)

    def count_more(self, n: int) -> None:
        """Count ``n`` problems found but not worded (beyond the limit)."""
        self.n_total += n

    def __len__(self) -> int:
        return self.n_total

    def as_list(self) -> list[str]:
        """The kept reasons, then one line counting the rest (when any was dropped)."""
        return cap_reasons(self.kept, n_total=self.n_total)
