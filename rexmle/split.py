"""Deterministic train/test splits that reproduce the published benchmark's test membership.

The published benchmark split most tasks with scikit-learn's
``train_test_split(keys, test_size=f, random_state=seed, shuffle=True)`` on the sorted case keys.
:func:`shuffle_split` reproduces that membership AND order with numpy alone (scikit-learn is not a
runtime dependency): ``perm = RandomState(seed).permutation(n)``, ``n_test = ceil(f * n)``,
test = ``perm[:n_test]``, train = ``perm[n_test:]``, both in permutation order.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Split:
    """A train/test split: ids in split order and the one-line rule that produced them."""

    train: list[str]
    test: list[str]
    rule: str
    source: dict[str, object] = field(default_factory=dict)
    ids_may_repeat_across_sets: bool = False
    """True where train and test are numbered independently (LDCT-IQA's official sets)."""
    found: dict[str, int] = field(default_factory=dict)
    """Cases found in the raw data per group (folder, organ, modality), in the group's order;
    reported when the counts differ from the declaration (recorded in ``prepared.json``)."""
    notes: tuple[str, ...] = ()
    """Decisions prepare took on this raw data that the user should read (printed, recorded)."""

    def __post_init__(self) -> None:
        overlap = set(self.train) & set(self.test)
        if overlap and not self.ids_may_repeat_across_sets:
            msg = f"train and test share ids: {sorted(overlap)[:5]}"
            raise ValueError(msg)

    def write(self, path: Path) -> None:
        """Write ``{"train", "test", "rule", "source"}`` as JSON (the ``private/split.json`` form)."""
        payload = {
            "train": self.train,
            "test": self.test,
            "rule": self.rule,
            "source": self.source,
        }
        Path(path).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")

    @classmethod
    def read(cls, path: Path) -> Split:
        """Read a split written by :meth:`write`."""
        payload = json.loads(Path(path).read_text(encoding="utf-8"))
        return cls(
            train=list(payload["train"]),
            test=list(payload["test"]),
            rule=str(payload["rule"]),
            source=dict(payload.get("source", {})),
        )


def split_sizes(n: int, test_fraction: float) -> tuple[int, int]:
    """(train, test) sizes of ``n`` cases under a fraction split, as every fraction rule here
    rounds: ``n_test = ceil(test_fraction * n)`` (the float product, as scikit-learn computes
    it), ``n_train = n - n_test``. For ``test_fraction = 0.2`` this equals the train-first rule
    ``n_train = int((1 - 0.2) * n)`` of DENTEX's reference split for every ``n`` up to 10**6.

    Raises:
        ValueError: a fraction outside (0, 1) or fewer than 2 cases.
    """
    if not 0.0 < test_fraction < 1.0:
        msg = f"test_fraction must be in (0, 1), got {test_fraction}"
        raise ValueError(msg)
    if n < 2:
        msg = f"need at least 2 keys to split, got {n}"
        raise ValueError(msg)
    n_test = math.ceil(test_fraction * n)
    return n - n_test, n_test


def shuffle_split(
    keys: Sequence[str], *, test_fraction: float = 0.2, seed: int = 42, sort_keys: bool = True
) -> Split:
    """Split ``keys`` as ``sklearn.model_selection.train_test_split(shuffle=True)`` does.

    Definition: keys are sorted (string sort) when ``sort_keys``; ``perm`` =
    ``numpy.random.RandomState(seed).permutation(n)``; ``n_test = ceil(test_fraction * n)``;
    test = keys[perm[:n_test]], train = keys[perm[n_test:]], each in permutation order.

    Raises:
        ValueError: duplicate keys, fewer than 2 keys, or a fraction outside (0, 1).
    """
    ordered = sorted(keys) if sort_keys else list(keys)
    if len(set(ordered)) != len(ordered):
        seen: set[str] = set()
        dupes = sorted({k for k in ordered if k in seen or seen.add(k)})  # type: ignore[func-returns-value]
        msg = f"duplicate keys cannot be split: {dupes[:5]}"
        raise ValueError(msg)
    n = len(ordered)
    _, n_test = split_sizes(n, test_fraction)
    perm = np.random.RandomState(seed).permutation(n)
    rule = (
        f"sorted keys; sklearn train_test_split(test_size={test_fraction}, "
        f"random_state={seed}, shuffle=True)"
    )
    return Split(
        train=[ordered[i] for i in perm[n_test:]],
        test=[ordered[i] for i in perm[:n_test]],
        rule=rule,
    )
