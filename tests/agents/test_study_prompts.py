"""Agent prompts under the paper condition: the study's texts (a stand-in repository's, see
test_study_texts.py), composed per agent as the study composed them, with the grading code and a
solution write-up (a fixture of this test).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_adapters import fake_env
from test_study_texts import standin

from rexmle.agents import study_texts
from rexmle.agents.adapters import adapter_runtime as runtime
from rexmle.agents.adapters import aide, ml_master, rdagent
from rexmle.agents.llm_launch import adapter_config
from rexmle.agents.registry import load_agent
from rexmle.grading.pair_score import usage_text
from rexmle.runner import run_texts
from rexmle.runner.batch import make_job
from rexmle.runner.run_texts import prepare_run_texts
from rexmle.runner.workspace import build_workspace

GATEWAY = {"REXMLE_LLM_BASE_URL": "http://127.0.0.1:4000", "REXMLE_LLM_TOKEN": "rx-token"}


@dataclass(frozen=True)
class FixtureSource:
    title: str
    address: str


@dataclass(frozen=True)
class FixtureWriteup:
    """A write-up of this test (what the runner needs of one)."""

    task: str
    sources: tuple[FixtureSource, ...]

    def render_markdown(self) -> str:
        return (
            f"- Method of {self.task}: a fixture nnU-Net ensemble of five folds.\n\nSources:\n"
            + "".join(f"- {s.title}: {s.address}\n" for s in self.sources)
        )


def fixture_source(task_id: str) -> FixtureWriteup:
    return FixtureWriteup(
        task=task_id,
        sources=(FixtureSource("Fixture winners' report", "https://example.org/winners"),),
    )


def adapter_config_of(spec, workspace, texts, tmp_path: Path) -> dict[str, object]:
    """The config the adapter reads back, as prepare_launch writes it (texts included)."""
    env = fake_env(tmp_path, spec.llm.environment, with_source=spec.llm.adapter == "ml-master")
    config = adapter_config(
        spec, env, task_id="isles22", seed=0, time_limit_s=spec.time_limit_s,
        validation_url="http://127.0.0.1:9/validate", hardware="1 NVIDIA H100 GPU",
        cuda_visible_devices=None, cpus=2,
    )  # fmt: skip
    config.update(texts.adapter_config())
    path = workspace.root / ".adapter" / "config.json"
    path.write_text(json.dumps(config))
    loaded = runtime.load_config(path)
    loaded["forwarder_port"] = 5111
    return loaded


@pytest.mark.parametrize("agent_id", ["aide", "ml-master", "rdagent"])
def test_study_texts_make_each_agent_s_prompt_as_the_study_did(
    agent_id, tmp_path: Path, prepared_mini, monkeypatch
):
    _, pins = standin(tmp_path)
    monkeypatch.setattr(study_texts, "load_pins", lambda: pins)
    monkeypatch.setenv("REXMLE_AGENTS_DIR", str(tmp_path / "agents"))
    study_texts.fetch_study_texts(pins=pins)
    monkeypatch.setattr(run_texts, "writeup_source", lambda: fixture_source)
    dirs = prepared_mini("isles22")
    workspace = build_workspace(
        tmp_path / "ws", task_id="isles22", public_dir=dirs.public, time_limit_s=43200,
        validation={"url": "http://x", "max_upload_bytes": 1, "max_requests_per_minute": 1},
        data_mode="copy",
    )  # fmt: skip
    spec = load_agent(agent_id).with_overrides(
        selection="study", scenario="kaggle" if agent_id == "rdagent" else None
    )
    job = make_job(
        spec, "isles22", 0, time_limit_s=43200, mini=True, runs_dir=tmp_path / "runs",
        group="g", prompts="study", solution_informed=True,
    )  # fmt: skip
    texts = prepare_run_texts(workspace.root, workspace.instructions, job.config)
    assert texts.texts_problem is None
    assert texts.study_commit == pins.commit
    config = adapter_config_of(spec, workspace, texts, tmp_path)
    module = {"aide": aide, "ml-master": ml_master, "rdagent": rdagent}[agent_id]
    launch = module.build(config, GATEWAY)
    prompt = next(t for p, t in launch.files.items() if p.name.endswith((".md", ".txt")))
    score_code = (workspace.data / "score.py").read_text()
    usage = usage_text("isles22")
    if agent_id == "aide":
        # rules, the notes with the run's values, the description, the grading code, write-up
        order = [
            "stand-in rules",
            "stand-in notes 12hrs 0mins 0secs",
            "stand-in description of isles22",
            usage.splitlines()[0],
            score_code.splitlines()[1],
            "a fixture nnU-Net ensemble",
        ]
    elif agent_id == "ml-master":
        order = ["stand-in ML-Master prompt of isles22", "a fixture nnU-Net ensemble"]
        # passed as the study passed it (its variables left as they are), the validation
        # address turned to where this run's forwarder listens (5111 here, not 5001)
        assert "check at localhost:5111 (${SERVER_URL})" in prompt
        assert "score.py" not in prompt  # the study did not append it for ML-Master
    else:
        order = [
            "stand-in description of isles22",
            usage.splitlines()[0],
            score_code.splitlines()[1],
            "a fixture nnU-Net ensemble",
        ]
    positions = [prompt.index(text) for text in order]
    assert positions == sorted(positions)
    if agent_id == "aide":
        assert "${" not in prompt  # the notes' variables are filled in
    assert "ReX-MLE task `isles22`" not in prompt  # ReX-MLE's own rules are not mixed in
