"""Provider keys never reach an agent, even when the host has them and a declaration asks."""

from __future__ import annotations

import pytest
from runner_support import COPY_SAMPLE

from rexmle.llm.gateway import PROVIDER_KEY_VARIABLES

KEYS = {"OPENAI_API_KEY": "sk-host-openai-0123456789", "HF_TOKEN": "hf-host-token-0123456789"}


@pytest.mark.parametrize("name", sorted(KEYS))
def test_a_declared_provider_key_is_not_in_the_agent_environment(
    run_agent, isles22_dirs, monkeypatch, name
):
    monkeypatch.setenv(name, KEYS[name])
    monkeypatch.setenv("HARMLESS_SETTING", "kept")
    record, folder = run_agent(
        f"{COPY_SAMPLE}; env", dirs=isles22_dirs, env=[name, "HARMLESS_SETTING"]
    )
    seen = (folder / "agent.stdout.log").read_text()
    assert record.status == "completed"
    assert KEYS[name] not in seen
    assert "HARMLESS_SETTING=kept" in seen  # other declared variables still pass


def test_the_known_key_variables_cover_the_paper_providers():
    assert {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"} <= PROVIDER_KEY_VARIABLES
