"""The reading commands (status, report, analyze, cancel) find the runs folder as `run` does."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from rexmle.cli import app


@pytest.mark.parametrize("command", ["status", "report", "analyze", "cancel"])
def test_without_a_folder_the_commands_read_the_runs_dir_variable(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "from-the-variable"
    monkeypatch.setenv("REXMLE_RUNS_DIR", str(missing))
    result = CliRunner().invoke(app, [command])
    assert result.exit_code == 2
    assert str(missing) in " ".join(result.output.split())


def test_without_the_variable_status_reads_runs_in_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "runs").mkdir()
    monkeypatch.delenv("REXMLE_RUNS_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["status", "--json"])
    assert result.exit_code == 0, result.output
    assert '"total": 0' in result.output or '"total":0' in result.output
