"""Every task is registered with metadata consistent with the human leaderboards."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rexmle.errors import SpecError, TaskNotImplemented
from rexmle.tasks import registry
from rexmle.tasks.registry import (
    Task,
    all_tasks,
    fill_placeholders,
    get_task,
    load_task,
    resolve_function,
)

TASK_IDS = {
    "dentex",
    "isles22",
    "ldct-iqa",
    "neurips-cellseg",
    "panther-task1",
    "panther-task2",
    "puma-track1-task1",
    "puma-track1-task2",
    "puma-track2-task1",
    "puma-track2-task2",
    "seg_a",
    "topbrain-track1",
    "topbrain-track2",
    "topcow-track1-task1",
    "topcow-track1-task2",
    "topcow-track1-task3",
    "topcow-track2-task1",
    "topcow-track2-task2",
    "topcow-track2-task3",
    "usenhance",
}
SHARED_LEADERBOARDS = Path(__file__).resolve().parents[2] / "shared" / "leaderboards"


def test_the_twenty_published_tasks_are_registered() -> None:
    """The published benchmark's tasks; a new challenge adds to them without editing this list."""
    assert set(all_tasks()) >= TASK_IDS


@pytest.mark.skipif(not SHARED_LEADERBOARDS.is_dir(), reason="shared/leaderboards not beside repo")
def test_project_leaderboards_equal_the_published_figures() -> None:
    for task_id in TASK_IDS:
        ours = Task(get_task(task_id)).leaderboard_file().read_text()
        assert ours == (SHARED_LEADERBOARDS / f"{task_id}.csv").read_text(), task_id


def test_unknown_task_lists_the_known_ones() -> None:
    with pytest.raises(SpecError, match="known tasks: dentex"):
        get_task("isles23")


def test_a_task_without_functions_says_where_to_declare_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    unbuilt = get_task("isles22").model_copy(update={"functions": None, "implementation": None})
    monkeypatch.setattr(registry, "get_task", lambda _task_id: unbuilt)
    with pytest.raises(TaskNotImplemented, match=r"section functions.*isles22\.yaml"):
        load_task("isles22")


def test_every_task_is_implemented() -> None:
    assert [s.id for s in all_tasks().values() if not s.is_implemented] == []


def test_every_task_has_a_description() -> None:
    for task_id in all_tasks():
        assert len(load_task(task_id).description()) > 200, task_id


def test_relative_function_names_resolve_inside_the_family() -> None:
    from rexmle.split import shuffle_split

    assert resolve_function("isles22", "rexmle.split:shuffle_split") is shuffle_split
    fixture = resolve_function("isles22", ".fixture:make_fixture")
    assert fixture.__module__ == "rexmle.challenges.isles22.fixture"


@pytest.mark.parametrize(
    ("dotted", "reason"),
    [
        ("fixture.make_fixture", "must look like 'module:function'"),
        (".no_such_module:run", "cannot import rexmle.challenges.isles22.no_such_module"),
        (".fixture:no_such_function", "has no function 'no_such_function'"),
        (".fixture:N_CASES", "has no function 'N_CASES'"),
    ],
)
def test_bad_function_names_are_refused_with_the_reason(dotted: str, reason: str) -> None:
    with pytest.raises(SpecError, match=reason):
        resolve_function("isles22", dotted)


def test_description_placeholders_are_filled_from_declared_values() -> None:
    spec = get_task("isles22").model_copy(update={"params": {"track": 2}})
    assert fill_placeholders("{{id}} / {{ params.track }}", spec) == "isles22 / 2"
    with pytest.raises(SpecError, match=r"placeholder \{\{params.size\}\} names no declared"):
        fill_placeholders("{{params.size}}", spec)


@pytest.mark.parametrize("key", ["implementation", "extra_metrics", "description_file", "metric"])
def test_a_yaml_key_the_model_does_not_know_is_refused_naming_it(key: str) -> None:
    from rexmle.tasks.spec import TaskSpec

    declared = get_task("isles22").model_dump(mode="json")
    with pytest.raises(ValueError, match=key):
        TaskSpec.model_validate({**declared, key: "x"})


def test_a_broken_task_yaml_is_named_with_what_is_wrong() -> None:
    from rexmle.declarations import parse_declaration
    from rexmle.tasks.spec import TaskSpec

    with pytest.raises(SpecError, match=r"^fam/x\.yaml: not valid YAML"):
        parse_declaration("id: [", TaskSpec, "fam/x.yaml", what="task")
    with pytest.raises(SpecError, match=r"^fam/x\.yaml: not a valid task:\n  name: required, miss"):
        parse_declaration("id: x\n", TaskSpec, "fam/x.yaml", what="task")


def test_one_task_is_read_from_its_own_file_alone() -> None:
    code = (
        "from rexmle.tasks import registry\n"
        "spec = registry.get_task('panther-task2')\n"
        "assert spec == registry.all_tasks()['panther-task2']\n"
        "print(registry._single_spec.cache_info().currsize)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["1"]


def test_an_unknown_task_still_lists_the_known_ones() -> None:
    from rexmle.tasks.registry import forget_tasks, get_task

    forget_tasks()
    with pytest.raises(SpecError, match=r"unknown task 'isles23'; known tasks: dentex, isles22"):
        get_task("isles23")
