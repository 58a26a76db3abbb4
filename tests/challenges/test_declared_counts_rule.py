"""The declared case counts: one line per count, the train/test sizes derived by the split rule.

The published train/test sizes of every task are listed here as they were declared before the
counts were reduced to one line each; the derived sizes must equal them. Changing the one line
a mismatch names (and nothing else) must give the sizes the rule gives on the new count.
"""

from __future__ import annotations

import pytest

from rexmle.challenges.dentex.prepare import split_ids
from rexmle.declarations import parse_declaration
from rexmle.errors import DataError
from rexmle.split import Split, shuffle_split, split_sizes
from rexmle.tasks.declared_counts import check_declared_counts, split_line
from rexmle.tasks.registry import all_tasks, family_folder, get_task
from rexmle.tasks.spec import SplitSpec, TaskSpec

PUBLISHED = {
    "dentex": (564, 141),
    "isles22": (200, 50),
    "ldct-iqa": (1000, 300),
    "neurips-cellseg": (880, 221),
    "panther-task1": (73, 19),
    "panther-task2": (40, 10),
    "puma-track1-task1": (164, 41),
    "puma-track1-task2": (164, 41),
    "puma-track2-task1": (164, 41),
    "puma-track2-task2": (164, 41),
    "seg_a": (44, 12),
    "topbrain-track1": (20, 5),
    "topbrain-track2": (20, 5),
    "topcow-track1-task1": (100, 25),
    "topcow-track1-task2": (100, 25),
    "topcow-track1-task3": (100, 25),
    "topcow-track2-task1": (100, 25),
    "topcow-track2-task2": (100, 25),
    "topcow-track2-task3": (100, 25),
    "usenhance": (1200, 300),
}
"""(train, test) of the real data per task, as the published splits have them."""


def _text(spec: TaskSpec) -> str:
    return family_folder(spec.family).joinpath(f"{spec.id}.yaml").read_text(encoding="utf-8")


def test_every_task_derives_exactly_its_published_sizes() -> None:
    assert set(all_tasks()) == set(PUBLISHED)
    for task_id, sizes in PUBLISHED.items():
        declared = get_task(task_id).split
        assert declared.expected_sizes() == sizes, task_id
        if declared.test_fraction is not None:
            assert declared.expected_cases == sum(sizes), task_id
            assert (declared.expected_train, declared.expected_test) == (None, None)


def test_the_family_split_functions_give_the_derived_sizes() -> None:
    for task_id in PUBLISHED:
        declared = get_task(task_id).split
        if declared.test_fraction is None or declared.seed is None:
            continue
        assert declared.expected_cases is not None
        keys = [f"case_{i:05d}" for i in range(declared.expected_cases)]
        drawn = shuffle_split(keys, test_fraction=declared.test_fraction, seed=declared.seed)
        if task_id == "dentex":  # its own train-first rule: int((1 - fraction) n) train
            train, test = split_ids(
                list(range(declared.expected_cases)),
                seed=declared.seed,
                test_fraction=declared.test_fraction,
            )
            drawn = Split([str(i) for i in train], [str(i) for i in test], rule="dentex")
        assert (len(drawn.train), len(drawn.test)) == declared.expected_sizes(), task_id


def test_dentex_train_first_rounding_equals_the_stated_rounding() -> None:
    for n in range(2, 1500):
        train, test = split_ids(list(range(n)), seed=42, test_fraction=0.2)
        assert (len(train), len(test)) == split_sizes(n, 0.2), n


@pytest.mark.parametrize("task_id", sorted(PUBLISHED))
def test_changing_the_one_named_line_is_all_a_corrected_count_takes(task_id: str) -> None:
    spec = get_task(task_id)
    text = _text(spec)
    key = "expected_cases" if spec.split.test_fraction is not None else "expected_test"
    number = split_line(text, key)
    assert number is not None
    lines = text.splitlines()
    old = getattr(spec.split, key)
    assert lines[number - 1].strip() == f"{key}: {old}"
    lines[number - 1] = lines[number - 1].replace(f"{key}: {old}", f"{key}: {old + 7}")
    changed = parse_declaration("\n".join(lines) + "\n", TaskSpec, task_id, what="task")
    if spec.split.test_fraction is not None:
        assert spec.split.expected_cases is not None
        want = split_sizes(spec.split.expected_cases + 7, spec.split.test_fraction)
    else:
        want = (PUBLISHED[task_id][0], PUBLISHED[task_id][1] + 7)
    assert changed.split.expected_sizes() == want
    assert changed.model_copy(update={"split": spec.split}) == spec  # nothing else moved


def test_a_mismatch_names_the_file_and_line_of_the_count() -> None:
    spec = get_task("seg_a")
    ids = [f"c{i}" for i in range(60)]
    split = Split(ids[:48], ids[48:], rule="r", found={"Dongyang": 20, "KiTS": 20, "Rider": 20})
    with pytest.raises(DataError) as caught:
        check_declared_counts(spec, split)
    number = split_line(_text(spec), "expected_cases")
    message = str(caught.value)
    assert f"rexmle/challenges/seg_a/seg_a.yaml:{number} to 'expected_cases: 60'" in message
    assert "Dongyang 20, KiTS 20, Rider 20 (total 60)" in message
    assert "expects 56 (44 / 12)" in message


def test_sizes_against_the_rule_are_refused_even_on_the_declared_total() -> None:
    spec = get_task("seg_a")  # 56 cases: the rule gives 44 / 12, not 46 / 10
    ids = [f"c{i}" for i in range(56)]
    with pytest.raises(DataError, match="does not follow its declaration"):
        check_declared_counts(spec, Split(ids[:46], ids[46:], rule="r"))


def test_the_official_sets_name_only_the_set_that_differs() -> None:
    spec = get_task("ldct-iqa")
    split = Split(
        [f"t{i}" for i in range(1000)],
        [f"s{i}" for i in range(298)],
        rule="official",
        ids_may_repeat_across_sets=True,
    )
    with pytest.raises(DataError) as caught:
        check_declared_counts(spec, split)
    message = str(caught.value)
    number = split_line(_text(spec), "expected_test")
    assert f"the one line rexmle/challenges/ldct_iqa/ldct-iqa.yaml:{number} to" in message
    assert "'expected_test: 298'" in message
    assert "expected_train" not in message


def test_counts_must_fit_the_kind_of_split() -> None:
    with pytest.raises(ValueError, match="declares its total as 'expected_cases'"):
        SplitSpec(rule="r", test_fraction=0.2, expected_train=8, expected_test=2)
    with pytest.raises(ValueError, match="'expected_cases' needs a test_fraction"):
        SplitSpec(rule="r", seed=None, test_fraction=None, expected_cases=10)
    with pytest.raises(ValueError, match="greater than or equal to 2"):
        SplitSpec(rule="r", expected_cases=1)


def test_split_line_reads_only_the_split_block() -> None:
    text = (
        "id: x\n"
        "params:\n"
        "  expected_cases: 3\n"
        "split:\n"
        "  rule: a long rule\n"
        "    wrapped over two lines\n"
        "  # a comment\n"
        "  expected_cases: 10\n"
        "spec_version: 1\n"
    )
    assert split_line(text, "expected_cases") == 8
    assert split_line(text, "expected_train") is None
    assert split_line("split:\n  seed: 1\nother:\n  expected_cases: 2\n", "expected_cases") is None
