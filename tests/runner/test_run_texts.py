"""What a run's agent reads under the paper and solution-informed conditions, and score.py for a
command agent inside bwrap.

The write-up here is a fixture of this test (the task kit's write-ups are reached through
``rexmle.runner.solution_writeups``); the study's texts are a stand-in repository's
(tests/agents/test_study_texts.py), never the real ones.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from runner_support import COPY_SAMPLE, needs_bwrap

from rexmle.agents.registry import load_agent
from rexmle.errors import SpecError
from rexmle.records.runs import read_record
from rexmle.runner import run_texts
from rexmle.runner.batch import make_job
from rexmle.runner.executor import RunOptions, execute_run
from rexmle.runner.run_texts import prepare_run_texts
from rexmle.runner.sandbox import Sandbox
from rexmle.runner.sandbox.bwrap import BwrapSandbox
from rexmle.runner.sandbox.local import LocalSandbox
from rexmle.runner.settings import RunSettings
from rexmle.runner.solution_writeups import INTRO
from rexmle.runner.workspace import build_workspace
from rexmle.tasks.solutions import solution_writeup


@dataclass(frozen=True)
class FixtureSource:
    title: str
    address: str


@dataclass(frozen=True)
class FixtureWriteup:
    """A write-up of this test: what the runner needs of one (text and sources)."""

    text: str
    sources: tuple[FixtureSource, ...]
    shows_sources: bool = True

    def render_markdown(self) -> str:
        shown = self.sources if self.shows_sources else ()
        return self.text + "\n\nSources:\n" + "".join(f"- {s.address}\n" for s in shown)


def run_options(tmp_path: Path, dirs, sandbox: Sandbox | None = None) -> RunOptions:
    """Options of a test run on ``dirs``' data, in the local sandbox unless another is given."""
    return RunOptions(
        settings=RunSettings(
            runs_dir=tmp_path / "runs", data_dir=dirs.root.parent, kill_grace_s=1.0, grade_workers=1
        ),
        sandbox=sandbox or LocalSandbox(),
    )


def run_job(tmp_path: Path, dirs, command: str, **config):
    spec = load_agent("command").with_overrides(command=command, time_limit_s=60)
    job = make_job(
        spec, "isles22", 0, time_limit_s=60, mini=True, runs_dir=tmp_path / "runs",
        group="g-solution-informed", condition="solution-informed", **config,
    )  # fmt: skip
    return execute_run(job, run_options(tmp_path, dirs)), job.folder


def test_a_solution_informed_run_s_instructions_carry_the_writeup(tmp_path: Path, isles22_dirs):
    # the agent keeps what it was given, so the test reads what the agent read
    command = f'cp "$INSTRUCTIONS" seen.md && {COPY_SAMPLE}'
    record, folder = run_job(tmp_path, isles22_dirs, command, solution_informed=True)
    assert record.status == "completed", record.error
    seen = (folder / "workspace" / "seen.md").read_text()
    writeup = solution_writeup("isles22")
    rules_and_task, section = seen.split(INTRO)
    assert "ReX-MLE task `isles22`" in rules_and_task  # the write-up comes after rules and task
    assert f"## Winning solution of isles22: {writeup.team}" in section
    assert writeup.method.strip() in section
    assert writeup.sources
    for source in writeup.sources:  # every source, with its address
        assert f"{source.title} ({source.kind}): {source.address}" in section
    on_disk = read_record(folder)
    assert on_disk is not None
    assert on_disk.condition == "solution-informed"
    assert on_disk.config.solution_informed is True
    assert on_disk.selection is None  # a command agent has no selection policy
    assert on_disk.deviations == []  # the study never ran command agents
    plain, plain_folder = run_job(tmp_path / "plain", isles22_dirs, command)
    assert plain.status == "completed", plain.error
    assert INTRO not in (plain_folder / "workspace" / "seen.md").read_text()


def test_a_writeup_that_cannot_be_given_fails_the_run_with_the_reason(
    tmp_path: Path, isles22_dirs, monkeypatch
):
    def unavailable():
        msg = "no winning-solution write-ups for family 'isles22' (test)"
        raise SpecError(msg)

    monkeypatch.setattr(run_texts, "writeup_source", unavailable)
    record, _ = run_job(tmp_path, isles22_dirs, COPY_SAMPLE, solution_informed=True)
    assert record.status == "infra_error"
    assert "no winning-solution write-ups for family 'isles22' (test)" in (record.error or "")
    for index, (writeup, reason) in enumerate(
        (
            (FixtureWriteup(text="text", sources=()), "cites no source"),
            (
                FixtureWriteup(
                    text="a method",
                    sources=(FixtureSource("report", "https://example.org/w"),),
                    shows_sources=False,
                ),
                "does not show its source https://example.org/w",
            ),
        )
    ):
        monkeypatch.setattr(run_texts, "writeup_source", lambda w=writeup: lambda _task: w)
        record, _ = run_job(tmp_path / f"case-{index}", isles22_dirs, COPY_SAMPLE,
                            solution_informed=True)  # fmt: skip
        assert record.status == "infra_error"
        assert reason in (record.error or "")


def test_without_fetched_texts_the_run_says_so_and_uses_its_own(
    tmp_path: Path, prepared_mini, monkeypatch
):
    monkeypatch.setenv("REXMLE_AGENTS_DIR", str(tmp_path / "empty-cache"))
    dirs = prepared_mini("isles22")
    workspace = build_workspace(
        tmp_path / "ws", task_id="isles22", public_dir=dirs.public, time_limit_s=60,
        validation={"url": "http://x", "max_upload_bytes": 1, "max_requests_per_minute": 1},
        data_mode="copy",
    )  # fmt: skip
    job = make_job(
        load_agent("aide"), "isles22", 0, time_limit_s=60, mini=True,
        runs_dir=tmp_path / "runs", group="g", prompts="study",
    )  # fmt: skip
    texts = prepare_run_texts(workspace.root, workspace.instructions, job.config)
    assert texts.study_files == {}
    assert texts.texts_problem is not None
    assert "rexmle agents fetch-study-texts" in texts.texts_problem
    assert texts.adapter_config()["study_texts"] is None
    from rexmle.runner.deviations import deviations_of

    ids = [d.id for d in deviations_of(job.config, None, texts_problem=texts.texts_problem)]
    assert "prompts-unavailable" in ids


@needs_bwrap()
def test_a_command_agent_in_bwrap_runs_score_py(tmp_path: Path, isles22_dirs):
    """The harness package is shown read-only to command agents, so data/score.py works."""
    command = (
        f"{COPY_SAMPLE} && /usr/bin/python3 data/score.py submission submission --json "
        "> scored.json"
    )
    spec = load_agent("command").with_overrides(command=command, time_limit_s=120)
    job = make_job(
        spec, "isles22", 0, time_limit_s=120, mini=True, runs_dir=tmp_path / "runs", group="g"
    )
    options = run_options(tmp_path, isles22_dirs, BwrapSandbox())
    record = execute_run(job, options)
    stderr = (job.folder / "agent.stderr.log").read_text()
    assert record.status == "completed", (record.error, stderr)
    scored = json.loads((job.folder / "workspace" / "scored.json").read_text())
    assert scored["task"] == "isles22"
    # the sample scored against itself: a perfect Dice
    assert scored["metrics"]["dice"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("agent_id", "model_deviation"),
    # gpt-5: the study's went to Azure OpenAI, ours to the config's OpenAI provider; Claude goes
    # through AIDE's own Anthropic back-end, as in the study: nothing to state
    [("aide-gpt-5", ["openai-endpoint"]), ("aide-claude-sonnet-4-5", [])],
)
def test_a_paper_condition_run_records_its_condition_selection_and_deviations(
    tmp_path: Path, isles22_dirs, monkeypatch, agent_id, model_deviation
):
    """The preset's paper condition, run end to end on the mini data with AIDE's environment
    stood in by this interpreter (no agent installed: the adapter stops for want of a gateway,
    after the harness has written what the run is).
    """
    import sys

    from rexmle.agents.environments import resolve_env
    from rexmle.runner.experiment import experiment_jobs, load_experiment

    monkeypatch.setenv("REXMLE_AGENTS_DIR", str(tmp_path / "agents"))
    env = resolve_env("aide")
    env.python.parent.mkdir(parents=True)
    env.python.symlink_to(sys.executable)
    env.stamp.write_text(json.dumps({"lock_hash": env.lock_hash}))
    grid = load_experiment("paper-grid").model_copy(
        update={"suite": None, "tasks": ["isles22"], "mini": True}
    )
    jobs = experiment_jobs(grid.only_condition("paper"), tmp_path / "runs", recorded_name="pg")
    (job,) = [j for j in jobs if j.config.agent.id == agent_id]
    options = run_options(tmp_path, isles22_dirs)
    execute_run(job, options)
    record = read_record(job.folder)
    assert record is not None
    assert record.condition == "paper"
    assert record.experiment == "pg"
    assert record.selection == "study"
    ids = [d.id for d in record.deviations]
    # no gateway in this run: no rate cap to state; the local sandbox is no sandbox, as the
    # study ran; the study's texts are not fetched here
    assert ids == [
        "network",
        "environment",
        "validation",
        *model_deviation,
        "gpus",
        "grading-script",
        "prompts-unavailable",
    ]
    texts = next(d for d in record.deviations if d.id == "prompts-unavailable")
    assert "rexmle agents fetch-study-texts" in texts.ours
    config = json.loads((job.folder / "workspace" / ".adapter" / "config.json").read_text())
    assert config["selection"] == "study"
    assert config["steps"] == 2000
    assert config["study_texts"] is None  # not fetched: the agent gets ReX-MLE's texts
    # the route: in the run's recorded agent spec and in what the adapter reads
    assert record.config.agent.llm is not None
    assert record.config.agent.llm.llm_route == "native"
    recorded = json.loads((job.folder / "run.json").read_text())
    assert recorded["config"]["agent"]["llm"]["llm_route"] == "native"
    assert config["llm_route"] == "native"
