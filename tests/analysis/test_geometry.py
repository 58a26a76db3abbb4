"""Geometry diagnostics: a gold mask transposed, flipped or relabelled is detected as such;
a random mask and the gold itself are not.
"""

from __future__ import annotations

import numpy as np
import pytest

from rexmle.analysis.geometry import diagnose, foreground_dice, label_dice


def _gold(shape: tuple[int, ...] = (20, 20, 12)) -> np.ndarray:
    """Two labelled blobs away from the centre, so no flip or transpose maps the mask to itself."""
    grid = np.indices(shape)
    gold = np.zeros(shape, dtype=np.uint8)
    centre_1 = (5, 13, 3)[: len(shape)]
    centre_2 = (14, 4, 8)[: len(shape)]
    radius_1 = sum((g - c) ** 2 for g, c in zip(grid, centre_1, strict=True))
    radius_2 = sum((g - c) ** 2 for g, c in zip(grid, centre_2, strict=True))
    gold[radius_1 <= 9] = 1
    gold[radius_2 <= 6] = 2
    return gold


def test_dice_definitions_by_hand() -> None:
    a = np.array([[1, 1, 0, 0]])
    b = np.array([[0, 2, 2, 0]])
    # foreground: |a ∧ b| = 1, |a| + |b| = 4 -> 0.5; labels: label 1: 0, label 2: 0 -> 0
    assert foreground_dice(a, b) == 0.5
    assert label_dice(a, b) == 0.0
    assert foreground_dice(np.zeros((2, 2)), np.zeros((2, 2))) == 1.0


def test_the_gold_itself_is_ok() -> None:
    gold = _gold()
    finding = diagnose(gold, gold)
    assert (finding.kind, finding.dice_as_is) == ("ok", 1.0)


def test_a_transposed_gold_is_detected_on_a_square_and_a_non_square_grid() -> None:
    gold = _gold()
    square = diagnose(np.transpose(gold, (1, 0, 2)), gold)
    assert square.kind == "axes_permuted"
    assert square.transform == "transpose (1, 0, 2)"
    assert square.dice_as_is < 0.25
    assert square.dice_fixed == 1.0
    # on a (20, 20, 12) grid a (z, y, x) array has another shape: only a permutation fits
    other = diagnose(np.transpose(gold, (2, 1, 0)), gold)
    assert other.kind == "axes_permuted"
    assert other.dice_as_is == 0.0


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_a_flipped_gold_is_detected(axis: int) -> None:
    gold = _gold()
    finding = diagnose(np.flip(gold, axis), gold)
    assert finding.kind == "flipped"
    assert finding.transform == f"flip axes ({axis},)"
    assert finding.dice_fixed == 1.0


def test_a_permuted_and_flipped_2d_gold_is_detected() -> None:
    gold = _gold((24, 24))
    finding = diagnose(np.flip(gold.T, 0), gold)
    assert finding.kind in ("permuted_and_flipped", "flipped", "axes_permuted")
    assert finding.dice_fixed == 1.0  # a 90° rotation is a transpose plus a flip


def test_swapped_labels_are_detected() -> None:
    gold = _gold()
    swapped = np.where(gold == 1, 2, np.where(gold == 2, 1, 0)).astype(np.uint8)
    finding = diagnose(swapped, gold)
    assert finding.kind == "labels_remapped"
    assert finding.transform == "labels {1: 2, 2: 1}"
    assert (finding.dice_as_is, finding.dice_fixed) == (0.0, 1.0)


def test_random_masks_are_not_flagged() -> None:
    gold = _gold()
    rng = np.random.default_rng(7)
    fraction = float((gold > 0).mean())
    for _ in range(5):
        noise = (rng.random(gold.shape) < fraction).astype(np.uint8)
        noise[noise == 1] = rng.integers(1, 3, size=int(noise.sum()))
        assert not diagnose(noise, gold).flagged
    assert not diagnose(np.zeros_like(gold), gold).flagged


def test_large_volumes_are_searched_on_a_subsample() -> None:
    gold = np.zeros((160, 140, 100), dtype=np.uint8)
    gold[20:70, 90:130, 10:40] = 1
    finding = diagnose(np.flip(gold, 1), gold)
    assert finding.kind == "flipped"
    assert finding.dice_fixed == pytest.approx(1.0)


def test_a_dimension_mismatch_is_an_error() -> None:
    with pytest.raises(ValueError, match="3 axes but the truth has 2"):
        diagnose(np.zeros((2, 2, 2)), np.zeros((2, 2)))


def test_a_left_right_flip_of_a_symmetric_structure_is_a_flip_not_a_relabelling() -> None:
    # two mirror-image blobs, label 1 on the left and 2 on the right: flipping x keeps the
    # foreground (Dice 1 as is) and only swaps the labels
    gold = np.zeros((20, 12, 8), dtype=np.uint8)
    gold[2:6, 3:8, 2:6] = 1
    gold[14:18, 3:8, 2:6] = 2
    finding = diagnose(np.flip(gold, 0), gold)
    assert (finding.kind, finding.transform) == ("flipped", "flip axes (0,)")
    assert (finding.dice_as_is, finding.dice_fixed) == (0.0, 1.0)


def test_renumbered_instances_are_not_a_label_remap() -> None:
    """Instance ids (one value per cell) carry no meaning: a renumbering is the same answer."""
    gold = _gold((24, 24))
    renumbered = np.where(gold == 1, 2, np.where(gold == 2, 1, 0)).astype(np.uint8)
    finding = diagnose(renumbered, gold, instances=True)
    assert (finding.kind, finding.dice_as_is) == ("ok", 1.0)  # the foreground is the gold's
    flipped = diagnose(np.flip(renumbered, 0), gold, instances=True)
    assert flipped.kind == "flipped"  # a geometric fault is still found on the foreground
    assert flipped.dice_fixed == 1.0


def test_only_the_instance_tasks_declare_instance_labels() -> None:
    from rexmle.analysis.cases import instance_labels
    from rexmle.tasks.registry import all_tasks

    assert [task for task in all_tasks() if instance_labels(task)] == ["neurips-cellseg"]
