"""Ranking: positions, percentile and medals (spec README §3) on all 20 leaderboards."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

from rexmle.ranking import Leaderboard
from rexmle.tasks.leaderboard import load_leaderboard
from rexmle.tasks.registry import all_tasks

# Thresholds (gold, silver, bronze, above-median) as published in spec/challenges/README.md §1.
PUBLISHED_THRESHOLDS = {
    "dentex": (3.0, 3.125, 4.5, 5.5),
    "isles22": (3.5, 4.75, 4.75, 5.75),
    "ldct-iqa": (1, 2, 3, 4),
    "neurips-cellseg": (1.4, 2.2, 3.6, 5.8),
    "panther-task1": (1.0, 4.0, 4.0, 5.8),
    "panther-task2": (1.6, 2.4, 2.4, 6.6),
    "puma-track1-task1": (1, 2, 3, 6),
    "puma-track1-task2": (1, 2, 3, 6),
    "puma-track2-task1": (1, 2, 3, 6),
    "puma-track2-task2": (1, 2, 3, 6),
    "seg_a": (1.5, 2.0, 2.5, 6.5),
    "topbrain-track1": (F(4, 3), 2.0, F(19, 6), 6.5),
    "topbrain-track2": (F(4, 3), F(13, 6), F(7, 3), F(19, 3)),
    "topcow-track1-task1": (F(19, 9), F(25, 9), 3.0, F(47, 9)),
    "topcow-track1-task2": (1, 2, 3, 5),
    "topcow-track1-task3": (1.5, 1.5, 3, 4),
    "topcow-track2-task1": (F(16, 9), 2.0, F(8, 3), 5.0),
    "topcow-track2-task2": (1, 2, 3, 4),
    "topcow-track2-task3": (1, 2, 3, 4.5),
    "usenhance": (F(4, 3), F(5, 3), F(16, 3), 6.0),
}


@pytest.mark.parametrize("task_id", sorted(PUBLISHED_THRESHOLDS))
def test_medal_thresholds_match_the_published_table(task_id: str) -> None:
    t = load_leaderboard(task_id).thresholds()
    expected = [float(v) for v in PUBLISHED_THRESHOLDS[task_id]]
    assert [t.gold, t.silver, t.bronze, t.above_median] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("task_id", sorted(all_tasks()))
def test_every_row_ranked_against_the_others_gets_its_expected_position(task_id: str) -> None:
    board = load_leaderboard(task_id)
    for i in range(board.n_rows):
        others = board.without_row(i)
        values = {m: float(board.column(m)[i]) for m in board.metrics}
        ranking = others.rank(values)
        for m in board.metrics:
            column = board.column(m)
            mine = column[i]
            better = column > mine if board.directions[m] == "higher" else column < mine
            # expected position = 1 + number of rows strictly better (ties share the better place)
            assert ranking.positions[m] == 1 + int(better.sum()), (task_id, i, m)
        assert ranking.mean_position == pytest.approx(board.row_mean_positions()[i])


def _board(values_a: list[float], values_b: list[float]) -> Leaderboard:
    return Leaderboard(
        "toy",
        tuple(f"t{i}" for i in range(len(values_a))),
        {"a": np.array(values_a), "b": np.array(values_b)},
        {"a": "higher", "b": "lower"},
    )


def test_hand_computed_positions_percentile_and_medal() -> None:
    board = _board([0.9, 0.8, 0.7, 0.6], [1.0, 2.0, 3.0, 4.0])
    # a = 0.8 ties row 2 -> position 2 ("min"); b = 3.5 beats only row 4 -> position 4
    r = board.rank({"a": 0.8, "b": 3.5})
    assert r.positions == {"a": 2.0, "b": 4.0}
    # mean 3.0; percentile = 1 - (3 - 1) / 4 = 0.5
    assert r.mean_position == 3.0
    assert r.percentile == 0.5
    # rows among themselves: means 1, 2, 3, 4 -> gold 1, silver 2, bronze 3, median (index 2) 3
    assert r.medal == "bronze"
    assert r.above_median is True


def test_best_everywhere_is_percentile_one_and_last_everywhere_is_zero() -> None:
    board = _board([0.9, 0.8, 0.7], [1.0, 2.0, 3.0])
    assert board.rank({"a": 0.9, "b": 1.0}).percentile == 1.0
    worst = board.rank({"a": 0.1, "b": 9.0})
    # positions 4 and 4 -> 1 - (4 - 1) / 3 = 0
    assert worst.percentile == 0.0
    assert worst.medal is None
    assert worst.above_median is False


def test_invalid_submission_gets_percentile_zero_and_no_medal() -> None:
    r = load_leaderboard("isles22").rank(None)
    assert (r.percentile, r.medal, r.positions, r.any_medal) == (0.0, None, {}, False)
    # last on every metric of a 10-row board: mean position 11 -> percentile 1 - 10/10 = 0
    assert r.mean_position == 11.0


def test_missing_or_non_finite_metric_is_refused() -> None:
    board = _board([0.9], [1.0])
    with pytest.raises(ValueError, match="missing"):
        board.rank({"a": 0.5})
    with pytest.raises(ValueError, match="finite"):
        board.rank({"a": np.nan, "b": 1.0})


def test_values_are_compared_unrounded() -> None:
    board = _board([0.7869], [1.0])
    assert board.rank({"a": 0.78689999, "b": 1.0}).positions["a"] == 2.0
