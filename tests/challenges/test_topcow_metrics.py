"""TopCoW building blocks: ROI parsing and crop, raw-file checks, graph rules, per-case scores."""

from __future__ import annotations

import numpy as np
import pytest

from rexmle.challenges.topcow import fixture
from rexmle.challenges.topcow.graph import (
    LabelMapGraph,
    edge_bits,
    edge_dict,
    is_flipped,
    neighbours_of,
    region_matches,
)
from rexmle.challenges.topcow.labels import variant_string
from rexmle.challenges.topcow.metrics import (
    aggregate_edges,
    aggregate_segmentation,
    score_box,
    score_edges,
    score_segmentation,
)
from rexmle.challenges.topcow.raw import parse_edge_lists
from rexmle.challenges.topcow.roi import Box, format_roi_text, parse_roi_text
from rexmle.errors import DataError
from rexmle.tasks.registry import get_task
from rexmle.tasks.rows import CaseRow

# ---- ROI -------------------------------------------------------------------------------------


def test_roi_text_parses_like_the_official_code_and_round_trips() -> None:
    text = "--- ROI Meta Data ---\nSize (Voxels): 96 68 36\nLocation (Voxels): 103 93 77\n"
    box = parse_roi_text(text, where="x.txt")
    assert box == Box(size=(96, 68, 36), location=(103, 93, 77))
    assert parse_roi_text(format_roi_text(box), where="y.txt") == box
    assert box.to_json() == {"size": [96, 68, 36], "location": [103, 93, 77]}


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("header\nSize (Voxels): 96 68 36\n", "2 line(s)"),
        ("header\nSize (Voxels): 96 68\nLocation (Voxels): 1 2 3\n", "line 2 (size)"),
        ("header\nSize (Voxels): 1 2 3\nLocation (Voxels): 1 2 3 4\n", "line 3 (location)"),
    ],
)
def test_roi_text_with_the_wrong_token_count_fails_loudly(text: str, fragment: str) -> None:
    with pytest.raises(DataError, match=r"bad\.txt") as err:
        parse_roi_text(text, where="bad.txt")
    assert fragment in str(err.value)


def test_crop_is_inclusive_and_clipped_to_the_volume() -> None:
    # location 8 + size 5 -> indices 8..12, clipped to 0..9 on axis 0 -> slice(8, 10)
    box = Box(size=(5, 3, 2), location=(8, 0, 1))
    assert box.crop((10, 10, 10)) == (slice(8, 10), slice(0, 3), slice(1, 3))
    with pytest.raises(ValueError, match="outside"):
        Box(size=(2, 2, 2), location=(20, 0, 0)).crop((10, 10, 10))


# ---- raw edge files --------------------------------------------------------------------------


def _edges(anterior=(1, 1, 0, 1), posterior=(1, 1, 1, 1)) -> dict[str, dict[str, int]]:
    return {
        "anterior": dict(zip(("L-A1", "Acom", "3rd-A2", "R-A1"), anterior, strict=True)),
        "posterior": dict(zip(("L-Pcom", "L-P1", "R-P1", "R-Pcom"), posterior, strict=True)),
    }


def test_edge_lists_need_exactly_the_eight_keys_with_values_zero_or_one() -> None:
    assert parse_edge_lists(_edges(), where="a.yml") == _edges()
    broken = _edges()
    del broken["anterior"]["Acom"]
    with pytest.raises(DataError, match="anterior must hold exactly"):
        parse_edge_lists(broken, where="a.yml")
    two = _edges()
    two["posterior"]["R-P1"] = 2
    with pytest.raises(DataError, match="R-P1"):
        parse_edge_lists(two, where="a.yml")
    with pytest.raises(DataError, match="expected the keys"):
        parse_edge_lists({"anterior": {}}, where="a.yml")


def test_variant_strings() -> None:
    assert variant_string("anterior", (1, 0, 0, 1)) == "Var_Ant_1_0_0_1"
    assert variant_string("posterior", [0, 1, 1, 1]) == "Var_Pos_0_1_1_1"


# ---- graph rules -----------------------------------------------------------------------------


def test_edge_bits_follow_presence_and_touching() -> None:
    # L-A1 needs 12 touching 6; R-P1 needs 2 touching 1; Acom/3rd-A2/Pcoms need presence only
    neighbours = {12: {6}, 6: {12}, 2: {1}, 1: {2}, 11: set(), 4: set()}
    bits = edge_bits({1, 2, 4, 6, 10, 11, 12}, neighbours)
    assert bits == {"anterior": (1, 1, 0, 0), "posterior": (0, 0, 1, 0)}
    assert edge_dict(bits)["anterior"] == {"L-A1": 1, "Acom": 1, "3rd-A2": 0, "R-A1": 0}


def test_fixture_label_maps_have_the_edges_written_in_their_yml() -> None:
    for pid, variant in fixture.VARIANTS.items():
        labels = fixture.make_label_map(variant, (0, 0, 0))
        graph = LabelMapGraph(labels)
        assert edge_dict(graph.bits) == variant.edges(), pid
        assert not is_flipped(labels, "anterior", graph.present)
        assert not is_flipped(labels, "posterior", graph.present)


def test_flip_uses_ica_first_then_aca_and_pca_for_posterior() -> None:
    labels = np.zeros((10, 3, 3), np.uint8)
    labels[1, 1, 1], labels[8, 1, 1] = 4, 6  # R-ICA at x=1, L-ICA at x=8: LPS+, not flipped
    labels[7, 0, 0], labels[2, 0, 0] = 11, 12  # ACAs the wrong way round: ignored while ICAs exist
    assert not is_flipped(labels, "anterior", {4, 6, 11, 12})
    labels[labels == 4] = 0
    # without 4, the ACAs decide: median_x(12) = 2 < median_x(11) = 7 -> flipped
    assert is_flipped(labels, "anterior", {6, 11, 12})
    labels[3, 2, 2], labels[6, 2, 2] = 3, 2  # L-PCA at smaller x than R-PCA -> flipped
    assert is_flipped(labels, "posterior", {2, 3, 6, 11, 12})
    assert not is_flipped(labels, "posterior", {3, 6, 11, 12})


def test_region_match_fails_on_a_missing_label_or_an_extra_piece() -> None:
    truth = fixture.make_label_map(fixture.Variant(), (0, 0, 0))
    truth_graph = LabelMapGraph(truth)
    assert region_matches(LabelMapGraph(truth.copy()), truth_graph, "anterior")
    no_acom = truth.copy()
    no_acom[no_acom == 10] = 0  # Acom FN -> anterior fails, posterior untouched
    assert not region_matches(LabelMapGraph(no_acom), truth_graph, "anterior")
    assert region_matches(LabelMapGraph(no_acom), truth_graph, "posterior")
    extra = truth.copy()
    extra[30, 0, 0] = 9  # a second, isolated piece of L-Pcom: b0 2 vs 1
    pred_graph = LabelMapGraph(extra)
    assert pred_graph.b0(9) == 2
    assert not region_matches(pred_graph, truth_graph, "posterior")
    assert region_matches(pred_graph, truth_graph, "anterior")
    assert neighbours_of(pred_graph.neighbours, 9) == neighbours_of(truth_graph.neighbours, 9)


# ---- per-case scores -------------------------------------------------------------------------


def test_segmentation_case_matches_a_hand_computation() -> None:
    truth = np.zeros((6, 5, 4), np.uint8)
    pred = np.zeros_like(truth)
    truth[0:2, 0:2, 0:2] = 1  # 8 voxels
    truth[4:6, 0:2, 0:2] = 2  # 8 voxels, not predicted
    pred[0:2, 0:2, 0:1] = 1  # the z = 0 half of label 1: 4 voxels
    pred[4:6, 3:5, 0:2] = 3  # a label absent from the truth
    scores = score_segmentation(pred, truth, spacing_mm=(1.0, 1.0, 2.0))
    # L = {1, 2, 3}; Dice_1 = 2*4/(8+4) = 2/3, Dice_2 = Dice_3 = 0 -> 2/9
    assert scores["dice"] == pytest.approx(2 / 9)
    # HD95_1: P->G all 0; G->P four voxels at 0 and four at z=1 (2 mm) -> percentile 95 = 2 mm;
    # labels 2 and 3 exist on one side only -> 90 mm each; (2 + 90 + 90) / 3
    assert scores["hd95"] == pytest.approx(182 / 3)
    # B0: |1-1| = 0, |0-1| = 1, |1-0| = 1 -> 2/3
    assert scores["b0_error"] == pytest.approx(2 / 3)
    # a 2x2x2 cube thins to an empty skeleton: Tsens = 0, so clDice = 0
    assert scores["cldice"] == 0.0
    assert [scores[f"grp2_{c}"] for c in (8, 9, 10, 15)] == ["TN"] * 4
    # label 2 never touches label 1 -> R-P1 = 0 in the truth
    assert scores["gt_posterior"] == "Var_Pos_0_0_0_0"


def test_cldice_of_a_half_line_matches_a_hand_computation() -> None:
    truth = np.zeros((9, 5, 5), np.uint8)
    truth[1:8, 2, 2] = 1  # a 7-voxel line: its own skeleton
    pred = np.zeros_like(truth)
    pred[1:5, 2, 2] = 1  # the first 4 voxels
    scores = score_segmentation(pred, truth, spacing_mm=(1.0, 1.0, 1.0))
    # Tprec = 4/4 = 1; Tsens = 4/7; clDice = 2 * (4/7) / (1 + 4/7) = 8/11
    assert scores["cldice"] == pytest.approx(8 / 11)
    # Dice = 2*4 / (4 + 7) = 8/11 as well
    assert scores["dice"] == pytest.approx(8 / 11)


def test_identical_maps_score_best_and_empty_prediction_scores_worst() -> None:
    truth = fixture.make_label_map(fixture.Variant(), (0, 0, 0))
    best = score_segmentation(truth.copy(), truth, spacing_mm=(0.5, 0.5, 0.6))
    assert (best["dice"], best["cldice"], best["b0_error"], best["hd95"]) == (1.0, 1.0, 0.0, 0.0)
    assert best["anterior_match"]
    assert best["posterior_match"]
    empty = score_segmentation(np.zeros_like(truth), truth, spacing_mm=(0.5, 0.5, 0.6))
    # 13 GT labels, each absent from P: Dice 0, HD95 90, B0 error = its GT component count:
    # 1 each, 2 for label 5 (the uncropped fragment) -> 14 / 13
    assert (empty["dice"], empty["cldice"], empty["hd95"]) == (0, 0, 90)
    assert empty["b0_error"] == pytest.approx(14 / 13)
    assert empty["grp2_10"] == "FN"
    assert not empty["anterior_match"]
    assert not empty["posterior_match"]


def test_aggregation_of_group2_f1_and_balanced_accuracies() -> None:
    def row(grp2, gt_ant, pred_ant, ant_match):
        return {
            "dice": 1.0, "cldice": 1.0, "b0_error": 0.0, "hd95": 0.0,
            **{f"grp2_{c}": o for c, o in zip((8, 9, 10, 15), grp2, strict=True)},
            "gt_anterior": gt_ant, "pred_anterior": pred_ant, "anterior_match": ant_match,
            "gt_posterior": "P", "pred_posterior": "P", "posterior_match": True,
        }  # fmt: skip

    cases = [
        CaseRow("a", row(("TP", "TP", "FN", "TN"), "A", "A", False)),
        CaseRow("b", row(("TP", "FN", "TP", "FP"), "A", "B", False)),
        CaseRow("c", row(("TN", "TP", "TP", "TN"), "C", "C", True)),
    ]
    metrics = aggregate_segmentation(cases, get_task("topcow-track1-task1"))
    # F1_8 = 2*2/(4) = 1; F1_9 = 4/5; F1_10 = 4/5; F1_15 = 0 (FP only) -> (1 + .8 + .8 + 0) / 4
    assert metrics["f1_grp2"] == pytest.approx(0.65)
    # graph: class A recall 1/2, class C recall 1 -> 0.75
    assert metrics["anterior_graph_acc"] == pytest.approx(0.75)
    # topology: A cases both FAIL -> 0, C matched -> 1 -> 0.5
    assert metrics["anterior_topology"] == pytest.approx(0.5)
    assert metrics["posterior_graph_acc"] == metrics["posterior_topology"] == 1.0


def _shell(box: Box, ratio: float, grid: np.ndarray) -> np.ndarray:
    """Set-based shell on an explicit voxel grid (independent of the closed form)."""
    inside = np.ones(grid.shape[1:], bool)
    near_face = np.zeros(grid.shape[1:], bool)
    for axis, (lo, size) in enumerate(zip(box.location, box.size, strict=True)):
        hi = lo + size - 1
        depth = int(np.ceil(size * ratio))
        v = grid[axis]
        inside &= (v >= lo) & (v <= hi)
        near_face |= (v - lo < depth) | (hi - v < depth)
    return inside & near_face


def test_box_scores_equal_the_set_based_definition_and_a_hand_computation() -> None:
    a = Box(size=(6, 3, 3), location=(0, 0, 0))
    b = Box(size=(6, 3, 3), location=(2, 0, 0))
    scores = score_box(b, a)
    # d = (ceil(1.2), ceil(0.6), ceil(0.6)) = (2, 1, 1): each core is x 2..3 / 4..5, y 1, z 1
    # |shell| = 54 - 2 = 52; |A∩B| = 4*3*3 = 36; minus 2 (core A in B) minus 2 (core B in A);
    # cores disjoint -> intersection 32, union 52 + 52 - 32 = 72 -> 4/9
    assert scores["boundary_iou"] == pytest.approx(4 / 9)
    # plain IoU: 36 / (54 + 54 - 36) = 1/2
    assert scores["iou"] == pytest.approx(0.5)
    grid = np.indices((14, 14, 14)) - 3  # covers every box drawn below (-2 .. 8)
    rng = np.random.default_rng(0)
    for _ in range(40):
        boxes = [
            Box(
                size=tuple(int(v) for v in rng.integers(1, 7, 3)),
                location=tuple(int(v) for v in rng.integers(-2, 3, 3)),
            )
            for _ in range(2)
        ]
        got = score_box(boxes[1], boxes[0])
        for key, ratio in (("boundary_iou", 0.2), ("iou", 0.5)):
            sa, sb = _shell(boxes[0], ratio, grid), _shell(boxes[1], ratio, grid)
            expected = (sa & sb).sum() / (sa | sb).sum()
            assert got[key] == pytest.approx(expected), (boxes, key)


def test_edge_scores_read_edges_by_name_not_by_file_order() -> None:
    truth = _edges((1, 1, 0, 1), (0, 1, 1, 1))
    reordered = {
        "posterior": dict(reversed(list(truth["posterior"].items()))),
        "anterior": dict(reversed(list(truth["anterior"].items()))),
    }
    case = score_edges(reordered, truth)
    assert case["pred_anterior"] == case["gt_anterior"] == "Var_Ant_1_1_0_1"
    assert case["pred_posterior"] == "Var_Pos_0_1_1_1"
    wrong = score_edges(_edges((1, 1, 1, 1)), truth)
    rows = [CaseRow("a", case), CaseRow("b", wrong)]
    metrics = aggregate_edges(rows, get_task("topcow-track1-task3"))
    # both cases have the GT class 1101; one right -> recall 1/2
    assert metrics["anterior_acc"] == pytest.approx(0.5)


def test_zero_padding_changes_no_segmentation_value() -> None:
    # labels touch the array border; padding adds background that the foreground crop removes
    # again down to a 2-voxel margin: every value must stay the same (border = background)
    truth = fixture.make_label_map(fixture.Variant(no_acom=True), (0, 0, 0))
    pred = fixture.make_label_map(fixture.Variant(detach_l_a1=True), (1, 0, 0))
    tight = score_segmentation(pred, truth, spacing_mm=(0.3, 0.4, 0.6))
    padded = score_segmentation(np.pad(pred, 4), np.pad(truth, 4), spacing_mm=(0.3, 0.4, 0.6))
    assert padded == pytest.approx(tight)
    assert tight["dice"] < 1.0


def test_a_flipped_prediction_fails_even_when_every_label_check_passes() -> None:
    truth = np.zeros((10, 3, 3), np.uint8)
    truth[1, 1, 1], truth[8, 1, 1] = 4, 6  # R-ICA right (small x), L-ICA left (large x)
    truth[4:6, 1, 1] = 10  # Acom, touching neither ICA
    pred = truth.copy()
    pred[1, 1, 1], pred[8, 1, 1] = 6, 4  # ICAs swapped; anterior labels 10/11/12/15 unchanged
    # 10: TP, same (empty) neighbours, one piece; 11/12/15: TN -> only the flip rule decides
    assert region_matches(LabelMapGraph(truth.copy()), LabelMapGraph(truth), "anterior")
    assert not region_matches(LabelMapGraph(pred), LabelMapGraph(truth), "anterior")


def test_expected_gold_is_capped_by_absent_group2_labels_and_flipped_truths() -> None:
    from rexmle.challenges.topcow.prepare import expected_gold_segmentation

    facts = [
        ({8, 9, 10}, {"anterior": "A", "posterior": "P"}, []),
        ({8}, {"anterior": "B", "posterior": "P"}, ["anterior"]),
    ]
    expected = expected_gold_segmentation(facts)
    # 8, 9, 10 occur in some test GT, 15 in none -> 3/4
    assert expected["f1_grp2"] == 0.75
    # anterior: class A matched, class B flipped (FAIL) -> (1 + 0) / 2
    assert expected["anterior_topology"] == 0.5
    assert expected["posterior_topology"] == expected["anterior_graph_acc"] == 1.0


def _official_2d(rows: list[list[int]]) -> np.ndarray:
    """A 2-D array as the official tests build it (SimpleITK array (z, y, x) = (rows, cols, 1)),
    in this package's (x, y, z) order.
    """
    return np.expand_dims(np.asarray(rows, dtype=np.uint8), -1).transpose(2, 1, 0)


# Mirrors of the three end-to-end cases of the official test_topology_matching.py (@25ca839):
# (gt, pred, gt graph, pred graph, {label: (gt b0, gt neighbours, pred b0, pred neighbours)},
#  match verdicts)
OFFICIAL_TOPOLOGY_CASES = [
    (
        [
            [4, 6, 10, 10, 12, 12],
            [4, 4, 6, 10, 15, 15],
            [11, 11, 6, 6, 12, 15],
            [11, 4, 11, 12, 12, 15],
        ],
        [[4, 6, 10, 10, 12, 0], [4, 4, 6, 10, 15, 15], [11, 0, 6, 6, 0, 15], [11, 4, 11, 0, 0, 15]],
        {"anterior": (1, 1, 1, 1), "posterior": (0, 0, 0, 0)},
        {"anterior": (0, 1, 1, 1), "posterior": (0, 0, 0, 0)},
        {
            10: (1, (4, 6, 12, 15), 1, (4, 6, 12, 15)),
            11: (1, (4, 6, 12), 2, (4, 6)),
            12: (2, (6, 10, 11, 15), 1, (10, 15)),
            15: (1, (6, 10, 12), 1, (6, 10, 12)),
        },
        {"anterior": False, "posterior": True},
    ),
    (
        [
            [0, 2, 2, 2, 0, 0, 0, 0],
            [0, 2, 0, 2, 0, 0, 0, 0],
            [3, 3, 3, 0, 0, 8, 0, 0],
            [3, 0, 0, 0, 9, 9, 9, 0],
        ],
        [
            [0, 2, 0, 2, 0, 0, 8, 8],
            [0, 2, 0, 2, 0, 8, 8, 8],
            [3, 3, 3, 0, 0, 8, 0, 0],
            [3, 0, 0, 9, 9, 9, 9, 0],
        ],
        {"anterior": (0, 0, 0, 0), "posterior": (1, 0, 0, 1)},
        {"anterior": (0, 0, 0, 0), "posterior": (1, 0, 0, 1)},
        {
            2: (1, (3,), 2, (3,)),
            3: (1, (2,), 1, (2, 9)),
            8: (1, (9,), 1, (9,)),
            9: (1, (8,), 1, (3, 8)),
        },
        {"anterior": True, "posterior": False},
    ),
    (
        [[0, 1, 2, 3], [4, 0, 6, 7], [8, 9, 0, 11], [12, 0, 0, 0]],
        [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 0, 0, 15]],
        {"anterior": (0, 0, 0, 0), "posterior": (1, 0, 1, 1)},
        {"anterior": (0, 1, 1, 0), "posterior": (1, 0, 1, 1)},
        {
            10: (0, (), 1, (5, 6, 7, 9, 11, 15)),
            11: (1, (6, 7), 1, (6, 7, 10, 15)),
            2: (1, (1, 3, 6, 7), 1, (1, 3, 5, 6, 7)),
            9: (1, (4, 6, 8, 12), 1, (4, 5, 6, 8, 10, 12)),
        },
        {"anterior": False, "posterior": False},
    ),
]


@pytest.mark.parametrize("case", OFFICIAL_TOPOLOGY_CASES)
def test_topology_matches_the_official_unit_tests(case) -> None:
    gt_rows, pred_rows, gt_bits, pred_bits, per_label, verdicts = case
    truth, pred = LabelMapGraph(_official_2d(gt_rows)), LabelMapGraph(_official_2d(pred_rows))
    assert truth.bits == gt_bits
    assert pred.bits == pred_bits
    for label, (gt_b0, gt_neighbours, pred_b0, pred_neighbours) in per_label.items():
        assert (truth.b0(label), neighbours_of(truth.neighbours, label)) == (gt_b0, gt_neighbours)
        assert (pred.b0(label), neighbours_of(pred.neighbours, label)) == (pred_b0, pred_neighbours)
    for region, verdict in verdicts.items():
        assert region_matches(pred, truth, region) is verdict


# --- the study's definitions (docs/study-errata.md, topcow-track1/2-task1, -task2) -------------


@pytest.mark.parametrize("task_id", ["topcow-track1-task2", "topcow-track2-task2"])
def test_study_boundary_iou_grows_the_boxes_outward(task_id, tmp_path) -> None:
    import json as _json

    from study_cases import score_case

    gold, pred = tmp_path / "gold.json", tmp_path / "pred.json"
    gold.write_text(_json.dumps({"size": [10, 10, 10], "location": [0, 0, 0]}))
    pred.write_text(_json.dumps({"size": [10, 10, 10], "location": [2, 0, 0]}))
    official = score_case(task_id, "official", pred, gold).values
    study = score_case(task_id, "study", pred, gold).values
    # official boundary IoU, band d = ceil(0.2·10) = 2: shells 1000 - 6³ = 784 each; shared
    # 800 - 216 - 216 + 144 = 512 -> 512 / (784 + 784 - 512) = 512 / 1056
    assert official["boundary_iou"] == pytest.approx(512 / 1056)
    # official IoU: 800 / (1000 + 1000 - 800)
    assert official["iou"] == pytest.approx(800 / 1200)
    # study: boxes grown by 2 to 14³, offset 2: 12·14·14 / (2·14³ - 12·14·14) = 2352 / 3136
    assert study["boundary_iou"] == pytest.approx(2352 / 3136)
    # study IoU: grown by ceil(0.5·10) = 5 to 20³, offset 2: 18·400 / (2·8000 - 7200)
    assert study["iou"] == pytest.approx(7200 / 8800)


def test_study_task1_scores_gold_labels_only_without_crop() -> None:
    from rexmle.challenges.topcow.metrics import score_segmentation
    from rexmle.challenges.topcow.study import score_segmentation_study

    truth = np.zeros((12, 6, 6), np.uint8)
    truth[2:5, 2:4, 2:4] = 1
    pred = truth.copy()
    pred[8:10, 2:4, 2:4] = 2  # a false-positive label (R-PCA, a posterior label)
    official = score_segmentation(pred, truth, spacing_mm=(1.0, 1.0, 1.0))
    study = score_segmentation_study(pred, truth, spacing_mm=(1.0, 1.0, 1.0))
    # official over L = {1, 2}: Dice (1 + 0) / 2, B0 (0 + 1) / 2, HD95 (0 + 90) / 2
    assert official["dice"] == 0.5
    assert official["b0_error"] == 0.5
    assert official["hd95"] == 45.0
    # study over the gold labels {1} only: the false-positive label costs nothing
    assert study["dice"] == 1.0
    assert study["b0_error"] == 0.0
    assert study["hd95"] == 0.0
    # simplified match: label 2 is absent from G but predicted -> posterior fails; no anterior
    # label anywhere -> anterior holds
    assert study["posterior_match"] is False
    assert study["anterior_match"] is True


def test_study_task1_hd95_is_one_directional_on_six_neighbourhood_surfaces() -> None:
    from rexmle.challenges.topcow.study import score_segmentation_study

    truth = np.zeros((14, 5, 5), np.uint8)
    truth[2, 2, 2] = truth[12, 2, 2] = 1
    pred = np.zeros_like(truth)
    pred[2, 2, 2] = 1
    study = score_segmentation_study(pred, truth, spacing_mm=(1.0, 1.0, 1.0))
    # d(P→G) = [0]: the study's HD95 is 0; the official one is 0.95 · 10 = 9.5 (G→P)
    assert study["hd95"] == 0.0
    reverse = score_segmentation_study(truth, pred, spacing_mm=(1.0, 1.0, 1.0))
    assert reverse["hd95"] == pytest.approx(0.95 * 10)


def test_study_task1_graph_accuracy_is_the_fraction_of_matching_cases() -> None:
    from study_cases import aggregate

    from rexmle.tasks.rows import CaseRow

    outcomes = {f"grp2_{label}": "TN" for label in (8, 9, 10, 15)}
    rows = [
        CaseRow("a", {**outcomes, "anterior_match": True, "posterior_match": False}),
        CaseRow("b", {**outcomes, "anterior_match": True, "posterior_match": True}),
        CaseRow("c", {**outcomes, "anterior_match": False, "posterior_match": True}),
    ]
    study = aggregate("topcow-track1-task1", "study", rows)
    assert study["anterior_graph_acc"] == study["anterior_topology"] == pytest.approx(2 / 3)
    assert study["posterior_graph_acc"] == study["posterior_topology"] == pytest.approx(2 / 3)
    assert study["f1_grp2"] == 0.0


def test_study_task1_reads_the_whole_volume_where_the_official_crops_to_the_roi(tmp_path) -> None:
    from study_cases import score_case, write_xyz

    truth = np.zeros((16, 8, 8), np.uint8)
    truth[2:5, 2:5, 2:5] = 1
    truth[12:14, 2:4, 2:4] = 4  # outside the ROI below
    pred = np.zeros_like(truth)
    pred[2:5, 2:5, 2:5] = 1
    (tmp_path / "roi").mkdir()
    roi = Box(size=(8, 8, 8), location=(0, 0, 0))
    (tmp_path / "roi" / "topcow_ct_c1.txt").write_text(format_roi_text(roi), encoding="utf-8")
    gold = write_xyz(tmp_path / "gold.nii.gz", truth, (1.0, 1.0, 1.0))
    mine = write_xyz(tmp_path / "pred.nii.gz", pred, (1.0, 1.0, 1.0))
    official = score_case("topcow-track1-task1", "official", mine, gold, private=tmp_path)
    study = score_case("topcow-track1-task1", "study", mine, gold, private=tmp_path)
    # official: inside the ROI only label 1 exists, predicted exactly -> Dice 1;
    # study: the whole volume's gold labels {1, 4}, label 4 missed -> (1 + 0) / 2
    assert official.values["dice"] == 1.0
    assert study.values["dice"] == 0.5
    assert study.values["hd95"] == 45.0  # (0 + 90) / 2
