"""Statistics over seeds and tasks: sample std, SEM over seeds, a hierarchical bootstrap.

All functions are pure (arrays in, numbers out); NaN stands for "not defined" (n/a in reports),
never for zero.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

BOOTSTRAP_METHOD = (
    "hierarchical percentile bootstrap: each draw resamples tasks with replacement, then each "
    "drawn task's seeds with replacement; statistic = mean over drawn tasks of the mean over "
    "drawn seeds; interval = 2.5th and 97.5th percentiles of {n} draws (numpy Generator, seed {seed})"
)


def sample_std(values: Sequence[float]) -> float:
    """Sample standard deviation (ddof 1); NaN for fewer than two values."""
    if len(values) < 2:
        return float("nan")
    return float(np.std(np.asarray(values, dtype=float), ddof=1))


def sem_over_seeds(values: Mapping[str, Mapping[int, float]]) -> float:
    """Standard error of the overall mean over seeds.

    Definition: for each seed index k, m_k = mean over the tasks that have seed k of their value;
        SEM = std(m_k, ddof 1) / sqrt(K), K the number of seed indices.
    Empty: NaN for fewer than two seed indices.

    Args:
        values: task -> seed -> value.
    """
    by_seed: dict[int, list[float]] = {}
    for seeds in values.values():
        for seed, value in seeds.items():
            by_seed.setdefault(seed, []).append(value)
    if len(by_seed) < 2:
        return float("nan")
    means = [float(np.mean(v)) for v in by_seed.values()]
    return float(np.std(means, ddof=1) / np.sqrt(len(means)))


def hierarchical_bootstrap(
    values_by_task: Sequence[Sequence[float]],
    *,
    n_bootstrap: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile interval of the mean over tasks of the mean over seeds (see BOOTSTRAP_METHOD).

    Definition: draw b picks T tasks uniformly with replacement; for each pick, n_t seeds of that
        task uniformly with replacement; s_b = mean over picks of the mean of the drawn seeds.
        The interval is the ((1 - level) / 2, (1 + level) / 2) quantiles of s_1..s_B.
    Empty: (NaN, NaN) when there is no task. One task with one seed gives a zero-width interval.

    Args:
        values_by_task: per task, the values of its seeds (each non-empty).
        n_bootstrap: number of draws B.
        seed: seed of the numpy Generator.
        level: coverage of the interval.

    Raises:
        ValueError: a task has no values, or ``n_bootstrap`` < 1.
    """
    if n_bootstrap < 1:
        msg = f"n_bootstrap must be >= 1, got {n_bootstrap}"
        raise ValueError(msg)
    if not values_by_task:
        return float("nan"), float("nan")
    counts = np.array([len(v) for v in values_by_task])
    if (counts == 0).any():
        msg = "every task needs at least one seed value"
        raise ValueError(msg)
    width = int(counts.max())
    table = np.zeros((len(values_by_task), width))
    for i, values in enumerate(values_by_task):
        table[i, : len(values)] = values
    rng = np.random.default_rng(seed)
    n_tasks = len(values_by_task)
    picks = rng.integers(0, n_tasks, size=(n_bootstrap, n_tasks))
    n_seeds = counts[picks]  # (B, T)
    uniform = rng.random((n_bootstrap, n_tasks, width))
    seed_index = np.minimum((uniform * n_seeds[..., None]).astype(int), n_seeds[..., None] - 1)
    drawn = table[picks[..., None], seed_index]  # (B, T, width)
    used = np.arange(width)[None, None, :] < n_seeds[..., None]
    seed_means = (drawn * used).sum(axis=2) / n_seeds
    statistic: npt.NDArray[np.float64] = seed_means.mean(axis=1)
    tail = (1.0 - level) / 2.0
    return float(np.quantile(statistic, tail)), float(np.quantile(statistic, 1.0 - tail))
