"""Every task is registered with metadata consistent with the human leaderboards."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
import yaml

from rexmle.challenges.registry import all_tasks, get_task, load_implementation
from rexmle.errors import SpecError, TaskNotImplemented

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


def test_all_twenty_tasks_are_registered() -> None:
    assert set(all_tasks()) == TASK_IDS


def test_metric_keys_and_directions_match_the_leaderboard_directions() -> None:
    text = resources.files("rexmle.leaderboards").joinpath("directions.yaml").read_text()
    directions = yaml.safe_load(text)
    for task_id, spec in all_tasks().items():
        declared = {m.key: m.direction for m in spec.metrics}
        assert list(declared.items()) == list(directions[task_id].items()), task_id


@pytest.mark.skipif(not SHARED_LEADERBOARDS.is_dir(), reason="shared/leaderboards not beside repo")
def test_project_leaderboards_equal_the_published_figures() -> None:
    for task_id in TASK_IDS:
        ours = resources.files("rexmle.leaderboards").joinpath(f"{task_id}.csv").read_text()
        assert ours == (SHARED_LEADERBOARDS / f"{task_id}.csv").read_text(), task_id


def test_unknown_task_lists_the_known_ones() -> None:
    with pytest.raises(SpecError, match="known tasks: dentex"):
        get_task("isles23")


def test_unimplemented_task_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    from rexmle.challenges import registry

    unbuilt = get_task("isles22").model_copy(update={"implementation": None})
    monkeypatch.setattr(registry, "get_task", lambda task_id: unbuilt)
    with pytest.raises(TaskNotImplemented, match=r"not built yet.*isles22\.yaml"):
        load_implementation("isles22")


def test_every_task_is_implemented() -> None:
    assert [s.id for s in all_tasks().values() if not s.is_implemented] == []


def test_implemented_tasks_load_and_have_descriptions() -> None:
    for spec in all_tasks().values():
        if spec.is_implemented:
            impl = load_implementation(spec.id)
            assert impl.spec is spec
            assert len(impl.description()) > 200, spec.id
