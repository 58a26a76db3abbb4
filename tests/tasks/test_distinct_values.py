"""The kit's distinct-value counter equals numpy.unique on every path it takes."""

from __future__ import annotations

import numpy as np
import pytest

from rexmle.tasks.checks import PRESENCE_MAX_VALUE, check_allowed_values, distinct_values


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


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int16])
@pytest.mark.parametrize("order", ["C", "F"])
def test_counted_distinct_values_equal_numpy_unique(dtype, order: str) -> None:
    rng = np.random.default_rng(3)
    array = np.asarray(rng.integers(0, 300, (40, 30, 20)), dtype=dtype, order=order)
    array[array > 200] = 15
    assert np.array_equal(distinct_values(array), np.unique(array))
    if dtype == np.int16:
        array[0, 0, 0] = -1  # negative values are counted too
        assert np.array_equal(distinct_values(array), np.unique(array))


def test_a_value_outside_the_set_is_named_with_the_allowed_set() -> None:
    labels = np.zeros((4, 4, 4), np.uint8)
    labels[1, 2, 3] = 13
    # 13 is one voxel in a map of 0s; the allowed set lists what may be written
    assert check_allowed_values(labels, (0, 1, 15)) == (
        "values 13 are not allowed; allowed values are [0, 1, 15]"
    )
    assert check_allowed_values(labels, range(14)) is None
