"""Ranking against a human leaderboard — the only place where positions and medals are computed.

Rule (spec/challenges/README.md §3, identical for all tasks):

1. Positions: for every leaderboard metric m, the N leaderboard values plus the submission's value
   are ranked with "min" ties (ties share the better position), descending when higher is better.
   ``pos_m`` is the submission's position, an integer in 1..N+1. Values are compared unrounded.
2. ``mean_position`` = mean of ``pos_m`` over all leaderboard metrics.
3. ``percentile`` = 1 − (mean_position − 1) / N (N = leaderboard rows, not N+1).
4. Medals: the N rows ranked among themselves the same way give N mean positions, sorted
   ascending: gold = 1st, silver = 2nd, bronze = 3rd, above-median = value at 0-based index N // 2.
   gold if mean_position ≤ gold; else silver if ≤ silver; else bronze if ≤ bronze.
5. A missing or invalid submission gets percentile 0, no positions, no medals and mean position
   N + 1 (as if last on every metric, which is what percentile 0 means).

A :class:`Rounding` changes steps 2-4 the way the published study's grader did: the mean position
and percentile are rounded to ``result_decimals`` and the medal thresholds (the rows' mean
positions) to ``threshold_decimals`` before the comparisons; positions still compare unrounded
values. Without one (the default) nothing is rounded.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel

from rexmle.errors import SpecError

Direction = Literal["higher", "lower"]
Medal = Literal["gold", "silver", "bronze"]


class MedalThresholds(BaseModel):
    """Mean-position thresholds derived from the leaderboard rows ranked among themselves."""

    gold: float
    silver: float
    bronze: float
    above_median: float


class Ranking(BaseModel):
    """A submission's place on a leaderboard."""

    n_rows: int
    positions: dict[str, float]
    mean_position: float
    """Mean of the positions; for an invalid submission N + 1 (last on every metric)."""
    percentile: float
    medal: Medal | None
    above_median: bool
    any_medal: bool
    thresholds: MedalThresholds


@dataclass(frozen=True)
class Rounding:
    """Decimals of the ranking's results and of the medal thresholds (module docstring)."""

    result_decimals: int
    threshold_decimals: int


@dataclass(frozen=True)
class Leaderboard:
    """Human leaderboard of one task: ``rows`` (team + one column per metric) and directions."""

    task_id: str
    rows: pd.DataFrame
    directions: dict[str, Direction]

    def __post_init__(self) -> None:
        metric_cols = [c for c in self.rows.columns if c != "team"]
        if metric_cols != list(self.directions):
            msg = (
                f"{self.task_id}: leaderboard columns {metric_cols} differ from the declared "
                f"metrics {list(self.directions)} (same keys, same order)"
            )
            raise SpecError(msg)
        if len(self.rows) == 0:
            msg = f"{self.task_id}: leaderboard has no rows"
            raise SpecError(msg)
        values = self.rows[metric_cols].to_numpy(dtype=float)
        if not np.isfinite(values).all():
            msg = f"{self.task_id}: leaderboard holds non-finite values"
            raise SpecError(msg)

    @property
    def metrics(self) -> list[str]:
        """Metric keys in column order."""
        return list(self.directions)

    @property
    def n_rows(self) -> int:
        """Number of leaderboard rows N."""
        return len(self.rows)

    def row_mean_positions(self) -> list[float]:
        """Mean position of every leaderboard row, ranked among the rows alone (row order)."""
        positions = np.column_stack(
            [
                _min_rank(self.rows[m].to_numpy(dtype=float), self.directions[m])
                for m in self.metrics
            ]
        )
        return [float(v) for v in positions.mean(axis=1)]

    def thresholds(self, rounding: Rounding | None = None) -> MedalThresholds:
        """Medal thresholds (README §3 step 4), rounded as ``rounding`` says."""
        means = sorted(self.row_mean_positions())
        if rounding is not None:
            means = [round(m, rounding.threshold_decimals) for m in means]
        n = len(means)
        return MedalThresholds(
            gold=means[0],
            silver=means[min(1, n - 1)],
            bronze=means[min(2, n - 1)],
            above_median=means[n // 2],
        )

    def rank(
        self, metrics: dict[str, float] | None, *, rounding: Rounding | None = None
    ) -> Ranking:
        """Rank a submission's metric values; ``None`` (invalid or missing) gets percentile 0.

        Raises:
            ValueError: a leaderboard metric is missing from ``metrics`` or is not finite.
        """
        thresholds = self.thresholds(rounding)
        if metrics is None:
            return Ranking(
                n_rows=self.n_rows,
                positions={},
                mean_position=float(self.n_rows + 1),
                percentile=0.0,
                medal=None,
                above_median=False,
                any_medal=False,
                thresholds=thresholds,
            )
        missing = [m for m in self.metrics if m not in metrics]
        if missing:
            msg = f"{self.task_id}: metric values missing for {missing}"
            raise ValueError(msg)
        positions: dict[str, float] = {}
        for m in self.metrics:
            value = float(metrics[m])
            if not math.isfinite(value):
                msg = f"{self.task_id}: metric {m} is {value}; ranking needs finite values"
                raise ValueError(msg)
            column = np.append(self.rows[m].to_numpy(dtype=float), value)
            positions[m] = float(_min_rank(column, self.directions[m])[-1])
        mean_position = float(np.mean(list(positions.values())))
        percentile = 1.0 - (mean_position - 1.0) / self.n_rows
        if rounding is not None:
            mean_position = round(mean_position, rounding.result_decimals)
            percentile = round(percentile, rounding.result_decimals)
        medal: Medal | None = None
        if mean_position <= thresholds.gold:
            medal = "gold"
        elif mean_position <= thresholds.silver:
            medal = "silver"
        elif mean_position <= thresholds.bronze:
            medal = "bronze"
        return Ranking(
            n_rows=self.n_rows,
            positions=positions,
            mean_position=mean_position,
            percentile=percentile,
            medal=medal,
            above_median=mean_position <= thresholds.above_median,
            any_medal=medal is not None,
            thresholds=thresholds,
        )


def _min_rank(values: np.ndarray, direction: Direction) -> np.ndarray:
    """Positions 1..n with "min" ties: 1 + number of values strictly better than each value."""
    others, mine = values[None, :], values[:, None]
    better = others > mine if direction == "higher" else others < mine
    return 1 + better.sum(axis=1)


def read_leaderboard_csv(task_id: str, path: Path, directions: dict[str, Direction]) -> Leaderboard:
    """Read a ``team,<metric>...`` CSV (values parsed explicitly as floats)."""
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        records = list(reader)
        columns = list(reader.fieldnames or [])
    if not columns or columns[0] != "team":
        msg = f"{path}: first column must be 'team', got {columns[:1]}"
        raise SpecError(msg)
    frame = pd.DataFrame(records, columns=columns)
    for column in columns[1:]:
        try:
            frame[column] = frame[column].astype(float)
        except ValueError as err:
            msg = f"{path}: column {column!r} holds a value that is not a number ({err})"
            raise SpecError(msg) from err
    return Leaderboard(task_id=task_id, rows=frame, directions=dict(directions))
