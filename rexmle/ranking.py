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
import numpy.typing as npt
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
    """Human leaderboard of one task: team names, one value column per metric, directions.

    ``values[m][i]`` is row ``i``'s value of metric ``m``; every column has one value per team.
    """

    task_id: str
    teams: tuple[str, ...]
    values: dict[str, npt.NDArray[np.float64]]
    directions: dict[str, Direction]

    def __post_init__(self) -> None:
        if list(self.values) != list(self.directions):
            msg = (
                f"{self.task_id}: leaderboard columns {list(self.values)} differ from the "
                f"declared metrics {list(self.directions)} (same keys, same order)"
            )
            raise SpecError(msg)
        if not self.teams:
            msg = f"{self.task_id}: leaderboard has no rows"
            raise SpecError(msg)
        for metric, column in self.values.items():
            if column.shape != (len(self.teams),):
                msg = (
                    f"{self.task_id}: leaderboard column {metric!r} holds {column.size} values "
                    f"for {len(self.teams)} teams"
                )
                raise SpecError(msg)
            if not np.isfinite(column).all():
                msg = f"{self.task_id}: leaderboard holds non-finite values"
                raise SpecError(msg)

    def column(self, metric: str) -> npt.NDArray[np.float64]:
        """The leaderboard's values of one metric, in row order (a copy)."""
        return self.values[metric].copy()

    def without_row(self, index: int) -> Leaderboard:
        """The same leaderboard with row ``index`` left out."""
        keep = [i for i in range(self.n_rows) if i != index]
        return Leaderboard(
            task_id=self.task_id,
            teams=tuple(self.teams[i] for i in keep),
            values={m: column[keep] for m, column in self.values.items()},
            directions=dict(self.directions),
        )

    @property
    def metrics(self) -> list[str]:
        """Metric keys in column order."""
        return list(self.directions)

    @property
    def n_rows(self) -> int:
        """Number of leaderboard rows N."""
        return len(self.teams)

    def row_mean_positions(self) -> list[float]:
        """Mean position of every leaderboard row, ranked among the rows alone (row order)."""
        positions = np.column_stack(
            [_min_rank(self.values[m], self.directions[m]) for m in self.metrics]
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
            column = np.append(self.values[m], value)
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
    """Read a ``team,<metric>...`` CSV (values parsed explicitly as floats).

    Raises:
        SpecError: the first column is not ``team`` or a value is not a number.
    """
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        records = list(reader)
        columns = list(reader.fieldnames or [])
    if not columns or columns[0] != "team":
        msg = f"{path}: first column must be 'team', got {columns[:1]}"
        raise SpecError(msg)
    values: dict[str, npt.NDArray[np.float64]] = {}
    for column in columns[1:]:
        try:
            values[column] = np.array([float(r[column]) for r in records], dtype=np.float64)
        except (TypeError, ValueError) as err:
            msg = f"{path}: column {column!r} holds a value that is not a number ({err})"
            raise SpecError(msg) from err
    teams = tuple(r["team"] for r in records)
    return Leaderboard(task_id=task_id, teams=teams, values=values, directions=dict(directions))
