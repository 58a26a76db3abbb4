"""Agent declarations and the dummy agent's copy of the sample submission."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from rexmle.agents.dummy import copy_sample_submission
from rexmle.agents.registry import AgentSpec, all_agents, load_agent
from rexmle.errors import SpecError


def test_built_in_agents():
    agents = all_agents()
    assert list(agents) == ["aide", "baseline", "command", "dummy", "ml-master", "rdagent"]
    assert {a.kind for a in agents.values()} == {"baseline", "command", "dummy", "llm"}
    for name in ("aide", "ml-master", "rdagent"):
        spec = agents[name]
        assert spec.llm is not None
        assert spec.llm.environment == name
        assert spec.network is False
        assert spec.env == []
        with pytest.raises(SpecError, match="started by its adapter"):
            spec.argv()
    assert agents["baseline"].argv() == [sys.executable, "-m", "rexmle.agents.baseline"]
    assert agents["dummy"].network is False
    assert agents["baseline"].network is False


def test_command_agent_needs_a_command_and_is_named_by_it():
    command = load_agent("command")
    with pytest.raises(SpecError, match="--agent-cmd"):
        command.argv()
    given = command.with_overrides(command="echo hi", time_limit_s=5)
    assert given.argv() == ["/bin/sh", "-c", "echo hi"]
    assert given.id == "command-" + hashlib.sha256(b"echo hi").hexdigest()[:8]
    assert given.time_limit_s == 5
    assert command.with_overrides(command="echo hi", name="mine").id == "mine"
    assert given.with_overrides(env=["EXTRA"]).env == [*command.env, "EXTRA"]


def test_agent_from_a_yaml_file(tmp_path: Path):
    path = tmp_path / "mine.yaml"
    path.write_text("id: mine\nkind: command\ncommand: 'true'\ntime_limit_s: 9\nnetwork: true\n")
    spec = load_agent(str(path))
    assert (spec.id, spec.time_limit_s, spec.network) == ("mine", 9, True)


def test_bad_declarations_are_refused(tmp_path: Path):
    with pytest.raises(
        SpecError, match="built-in agents: aide, baseline, command, dummy, ml-master, rdagent"
    ):
        load_agent("nope")
    path = tmp_path / "bad.yaml"
    path.write_text("id: bad\nkind: baseline\n")  # no command
    with pytest.raises(SpecError, match="needs a 'command'"):
        load_agent(str(path))
    with pytest.raises(ValueError, match="time_limit_s"):
        AgentSpec(id="x", kind="command", command="true", time_limit_s=0)


def test_dummy_copies_the_sample_and_only_files_inside_public(tmp_path: Path):
    public = tmp_path / "public"
    (public / "preds").mkdir(parents=True)
    (public / "preds" / "a.bin").write_bytes(b"A")
    (public / "secret.txt").write_text("outside")  # named with '..' below: never copied
    (public / "sample_submission.csv").write_text(
        "case_id,path,value\nc1,preds/a.bin,0.5\nc2,../public/secret.txt,1\nc3,/etc/hostname,2\n"
    )
    out = tmp_path / "out"
    assert copy_sample_submission(public, out) == 1
    assert (out / "submission.csv").read_text() == (public / "sample_submission.csv").read_text()
    assert (out / "preds" / "a.bin").read_bytes() == b"A"
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == [
        "preds",
        "preds/a.bin",
        "submission.csv",
    ]


def test_dummy_without_sample_fails_loudly(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="no sample submission"):
        copy_sample_submission(tmp_path, tmp_path / "out")
