"""The benchmark split reproduces scikit-learn's train_test_split membership and order."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.model_selection import train_test_split

from rexmle.split import Split, shuffle_split


@pytest.mark.parametrize("n", [2, 3, 10, 25, 56, 92, 125, 250, 1101])
@pytest.mark.parametrize("seed", [0, 42])
def test_shuffle_split_equals_sklearn(n: int, seed: int) -> None:
    keys = [f"case{i:04d}" for i in range(n)]
    train, test = train_test_split(sorted(keys), test_size=0.2, random_state=seed, shuffle=True)
    got = shuffle_split(keys, test_fraction=0.2, seed=seed)
    assert got.train == list(train)
    assert got.test == list(test)


def test_known_counts_of_the_real_datasets() -> None:
    # ceil(0.2 * n) test cases: 250 -> 50, 56 -> 12 (11.2 rounds up), 125 -> 25, 92 -> 19 (18.4)
    for n, n_test in ((250, 50), (56, 12), (125, 25), (92, 19), (50, 10), (1101, 221)):
        split = shuffle_split([str(i) for i in range(n)])
        assert (len(split.train), len(split.test)) == (n - n_test, n_test)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=6), min_size=2, max_size=40, unique=True))
def test_split_is_a_partition_and_ignores_input_order(keys: list[str]) -> None:
    a = shuffle_split(keys)
    b = shuffle_split(list(reversed(keys)))
    assert a == b
    assert sorted(a.train + a.test) == sorted(keys)


def test_duplicate_keys_are_rejected() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        shuffle_split(["a", "b", "a"])


def test_split_json_round_trip(tmp_path) -> None:
    split = shuffle_split([f"k{i}" for i in range(7)])
    split.write(tmp_path / "split.json")
    assert Split.read(tmp_path / "split.json") == split
    assert set(json.loads((tmp_path / "split.json").read_text())) == {
        "train",
        "test",
        "rule",
        "source",
    }
