"""The kit's distinct-value counter equals numpy.unique on every path it takes."""

from __future__ import annotations

import numpy as np
import pytest

from rexmle.tasks.checks import PRESENCE_MAX_VALUE, distinct_values


@pytest.mark.parametrize("dtype", [np.uint32, np.int32, np.uint64, np.int64])
@pytest.mark.parametrize("order", ["C", "F"])
def test_wide_integers_equal_numpy_unique(dtype, order: str) -> None:
    rng = np.random.default_rng(0)
    array = np.asarray(rng.integers(0, 5000, size=(40, 30)), dtype=dtype, order=order)
    array[array % 7 == 0] = 0
    found = distinct_values(array)
    assert np.array_equal(found, np.unique(array))
    assert found.dtype == array.dtype


def test_values_beyond_the_table_or_negative_fall_back_to_unique() -> None:
    # 3 distinct values each: one beyond the table's range, one negative
    beyond = np.array([[0, 5], [PRESENCE_MAX_VALUE + 1, 5]], dtype=np.int64)
    negative = np.array([[-3, 0], [2, 2]], dtype=np.int32)
    assert distinct_values(beyond).tolist() == [0, 5, PRESENCE_MAX_VALUE + 1]
    assert distinct_values(negative).tolist() == [-3, 0, 2]


def test_an_empty_wide_array_has_no_values() -> None:
    assert distinct_values(np.zeros((0, 4), dtype=np.uint32)).size == 0
