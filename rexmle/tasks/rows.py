"""One typed row per scored case: what a family's scorer returns and a grade report lists."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

CaseValue = float | int | str | bool | None
"""A cell of a per-case row: a metric value, a count, a label or a flag."""


@dataclass(frozen=True)
class CaseRow:
    """The metrics of one test case.

    ``values`` are reported in the grade report's ``cases`` (with ``case_id`` first);
    ``detail`` is what the task's ``aggregate`` function needs beyond them (e.g. per-class
    matches) and is never reported.
    """

    case_id: str
    values: dict[str, CaseValue]
    detail: Any = field(default=None, compare=False)

    def number(self, key: str) -> float:
        """The value of ``key`` as a float.

        Raises:
            KeyError: the row has no ``key``.
            TypeError: the value is not a number (a label, a flag or None).
        """
        value = self.values[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            msg = f"case {self.case_id!r}: {key} is {value!r}, not a number"
            raise TypeError(msg)
        return float(value)

    def as_json(self) -> dict[str, CaseValue]:
        """The row as written in a grade report: ``{"case_id": ..., **values}``."""
        return {"case_id": self.case_id, **self.values}

    @classmethod
    def from_json(cls, record: Mapping[str, object]) -> CaseRow:
        """A row read back from a grade report's ``cases`` list."""
        values = {str(k): _case_value(v) for k, v in record.items() if k != "case_id"}
        return cls(case_id=str(record["case_id"]), values=values)


def _case_value(value: object) -> CaseValue:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    msg = f"a case row holds scalars only, got {type(value).__name__}"
    raise TypeError(msg)


def column(rows: Sequence[CaseRow], key: str) -> list[float]:
    """The numeric values of ``key`` over ``rows``, in row order."""
    return [row.number(key) for row in rows]


def mean_of(rows: Sequence[CaseRow], key: str) -> float:
    """Arithmetic mean of ``key`` over ``rows`` (numpy's pairwise summation).

    Definition: ``numpy.mean([row[key] for row in rows])``; NaN when any value is NaN.
    """
    import numpy as np

    return float(np.mean(column(rows, key)))


def median_of(rows: Sequence[CaseRow], key: str) -> float:
    """Median of ``key`` over ``rows`` (``numpy.median``)."""
    import numpy as np

    return float(np.median(column(rows, key)))


def is_finite_number(value: CaseValue) -> bool:
    """Whether ``value`` is a finite int or float (not a flag)."""
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)
