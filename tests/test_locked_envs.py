"""The locked-environment parts the agents and the LLM gateway share (rexmle.envs.locked)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from rexmle.agents import environments
from rexmle.envs import locked
from rexmle.llm import environment as gateway_environment


def test_agents_and_gateway_resolve_one_cache(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv("REXMLE_AGENTS_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    expected = tmp_path / "xdg" / "rexmle-agents"
    assert locked.agents_cache_dir() == expected
    assert environments.resolve_env("aide", variant="cpu").root.parent == expected
    gateway = gateway_environment.gateway_env()
    assert gateway.root == expected / f"gateway-{gateway_environment.lock_hash()[:16]}"
    monkeypatch.setenv("REXMLE_AGENTS_DIR", str(tmp_path / "mine"))
    assert gateway_environment.gateway_env().root.parent == tmp_path / "mine"
    assert environments.resolve_env("aide", variant="cpu").root.parent == tmp_path / "mine"


def test_a_stamp_counts_only_with_its_hash_and_entry_point(tmp_path: Path) -> None:
    entry = tmp_path / "venv" / "bin" / "python"
    assert not locked.is_installed(tmp_path, "abc", entry)
    written = locked.write_stamp(tmp_path, "abc", {"seconds": 1.5})
    assert json.loads((tmp_path / locked.STAMP).read_text()) == written
    assert written["python"] == str(locked.base_interpreter())
    assert not locked.is_installed(tmp_path, "abc", entry)  # no entry point yet
    entry.parent.mkdir(parents=True)
    entry.write_text("")
    assert locked.is_installed(tmp_path, "abc", entry)
    assert not locked.is_installed(tmp_path, "abd", entry)  # another lock
    (tmp_path / locked.STAMP).write_text("{torn")
    assert not locked.is_installed(tmp_path, "abc", entry)
    assert not list(tmp_path.glob(".*.tmp"))


def test_the_gateway_environment_keeps_its_installed_stamp_format(tmp_path: Path) -> None:
    env = gateway_environment.gateway_env(tmp_path)
    env.litellm.parent.mkdir(parents=True)
    env.litellm.write_text("")
    # a stamp as installs before the shared module wrote it: still an installed environment
    stamp = {"lock_hash": gateway_environment.lock_hash(), "seconds": 20.0, "python": "x"}
    (env.root / locked.STAMP).write_text(json.dumps(stamp))
    assert env.is_installed()
    assert gateway_environment.install_gateway(tmp_path) == (env, 0.0)


def test_a_failed_step_names_itself_its_exit_its_output_and_its_log(tmp_path: Path) -> None:
    lines: list[str] = []
    log = tmp_path / "install.log"
    script = "import sys; print('first'); print('the reason'); sys.exit(3)"
    with pytest.raises(locked.EnvInstallError, match=r"probe failed \(exit 3\)") as raised:
        locked.run_step([sys.executable, "-c", script], "probe", lines.append, log=log)
    assert "the reason" in str(raised.value)
    assert str(log) in str(raised.value)
    assert lines[1:] == ["first", "the reason"]
    assert "the reason" in log.read_text()


def test_a_step_past_its_time_is_killed_and_said_so() -> None:
    script = "import time; time.sleep(30)"
    with pytest.raises(locked.EnvInstallError, match="ran past 1 s"):
        locked.run_step([sys.executable, "-c", script], "sleeper", timeout_s=1.0)


def test_uv_steps_see_no_active_virtualenv_or_pythonpath(monkeypatch) -> None:
    monkeypatch.setenv("VIRTUAL_ENV", "/somewhere")
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    env = locked.uv_environment()
    assert "VIRTUAL_ENV" not in env
    assert "PYTHONPATH" not in env
    assert env["UV_NO_CONFIG"] == "1"
    assert Path(locked.uv_executable()).is_file()
