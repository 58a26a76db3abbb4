"""``rexmle agents list|install`` and the llm-agent options of ``rexmle run``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rexmle.cli import app

runner = CliRunner()


def test_list_shows_every_agent_and_whether_its_environment_is_installed(monkeypatch, tmp_path):
    monkeypatch.setenv("REXMLE_AGENTS_DIR", str(tmp_path / "agents"))
    monkeypatch.setenv("REXMLE_TORCH_VARIANT", "cpu")
    result = runner.invoke(app, ["agents", "list", "--json"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.replace("}\n{", "}\n\n{").split("\n\n")]
    by_id = {row["id"]: row for row in rows}
    assert sorted(by_id) == ["aide", "baseline", "command", "dummy", "ml-master", "rdagent"]
    assert by_id["aide"]["installed"] is False
    assert by_id["aide"]["variant"] == "cpu"
    assert by_id["aide"]["path"].startswith(str(tmp_path / "agents" / "aide-cpu-"))
    assert by_id["ml-master"]["steps"] == 5000
    assert {by_id[a]["selection"] for a in ("aide", "ml-master", "rdagent")} == {"best-valid"}
    assert by_id["rdagent"]["scenario"] == "data-science"
    assert by_id["aide"]["scenario"] is None
    assert "environment" not in by_id["dummy"]


@pytest.mark.usefixtures("tiny_envs")
def test_install_is_idempotent_and_says_so(monkeypatch, agents_cache_outside_tmp: Path):
    monkeypatch.setenv("REXMLE_AGENTS_DIR", str(agents_cache_outside_tmp))
    first = runner.invoke(app, ["agents", "install", "tiny", "--variant", "cpu", "--offline"])
    assert first.exit_code == 0, first.output
    assert "tiny: installed in" in first.output
    again = runner.invoke(app, ["agents", "install", "tiny", "--variant", "cpu", "--offline"])
    assert again.exit_code == 0
    assert "tiny: already installed" in again.output
    unknown = runner.invoke(app, ["agents", "install", "nothing"])
    assert unknown.exit_code == 2
    assert "no agent environment 'nothing'" in unknown.output


def test_run_refuses_an_llm_agent_whose_environment_is_missing(monkeypatch, tmp_path: Path):
    # paths outside /tmp (an agents cache under /tmp is refused first); none is created
    outside = Path("/srv") / f"rexmle-test-{tmp_path.name}"
    monkeypatch.setenv("REXMLE_AGENTS_DIR", str(outside / "agents"))
    args = ["run", "--task", "isles22", "--mini", "--data-dir", str(outside / "d")]
    args += ["--runs-dir", str(tmp_path / "r")]
    result = runner.invoke(app, [*args, "--agent", "aide/claude-sonnet-4-5", "--steps", "3"])
    assert result.exit_code == 2
    assert "rexmle agents install aide" in " ".join(result.output.split())
    assert not (tmp_path / "r").exists()
    monkeypatch.setenv("REXMLE_AGENTS_DIR", str(outside / "d" / "agents"))
    hidden = runner.invoke(app, [*args, "--agent", "aide"])
    assert hidden.exit_code == 2
    assert "hides that folder" in " ".join(hidden.output.split())
    not_llm = runner.invoke(app, [*args, "--agent", "dummy", "--model", "gpt-5"])
    assert not_llm.exit_code == 2
    assert "llm agents only" in " ".join(not_llm.output.split())
    assert not outside.exists()
