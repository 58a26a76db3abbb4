"""An agent's own code (``--agent-dir``): refused when it cannot be shipped, hashed into the run
config, shown read-only at ``$AGENT_DIR`` in the bwrap and local sandboxes (docker: the slow
test in test_runner_docker.py), and an edit is a new config that ``--force-config`` replaces.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from runner_support import COPY_SAMPLE, needs_bwrap
from typer.testing import CliRunner, Result

from rexmle.cli import app
from rexmle.records.runs import read_record
from rexmle.runner import agent_code
from rexmle.runner.agent_code import AgentDirError, scan, take_snapshot, tree_sha256

PROBE = """\
import os, pathlib
code = pathlib.Path(os.environ["AGENT_DIR"])
print("AGENT_DIR=" + str(code))
print("FILES=" + ",".join(sorted(p.name for p in code.iterdir())))
print("HELPER=" + (code / "lib" / "helper.txt").read_text().strip())
try:
    (code / "run.py").write_text("changed by the agent")
    print("WRITE=ok")
except OSError as error:
    print("WRITE=refused errno " + str(error.errno))
"""


def make_agent(folder: Path) -> Path:
    (folder / "lib").mkdir(parents=True)
    (folder / "run.py").write_text(PROBE)
    (folder / "lib" / "helper.txt").write_text("from the agent's own folder\n")
    (folder / "link.txt").symlink_to("lib/helper.txt")
    return folder


def rexmle(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def run_args(agent: Path, data: Path, runs: Path, sandbox: str, *more: str) -> list[str]:
    return [
        "run", "--agent", "command", "--agent-name", "own",
        "--agent-cmd", f"python3 $AGENT_DIR/run.py && {COPY_SAMPLE}",
        "--agent-dir", str(agent), "--task", "isles22", "--mini", "--data-dir", str(data),
        "--runs-dir", str(runs), "--sandbox", sandbox, *more,
    ]  # fmt: skip


def probe_output(folder: Path) -> dict[str, str]:
    lines = (folder / "agent.stdout.log").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


@pytest.mark.parametrize("sandbox", ["bwrap", "local"])
def test_a_command_agent_runs_its_own_code_from_agent_dir(
    sandbox: str, isles22_dirs, tmp_path: Path
) -> None:
    if sandbox == "bwrap":
        from rexmle.runner.sandbox.bwrap import bwrap_problem

        if bwrap_problem() is not None:
            pytest.skip(f"bwrap cannot run here: {bwrap_problem()}")
    if sandbox == "local" and os.geteuid() == 0:
        pytest.skip("refused for a root harness (the next test)")
    agent = make_agent(tmp_path / "my-agent")
    runs = tmp_path / "runs"
    result = rexmle(*run_args(agent, isles22_dirs.root.parent, runs, sandbox))
    assert result.exit_code == 0, result.output
    folder = runs / "default" / "isles22" / "own" / "seed-0"
    record = read_record(folder)
    assert record is not None
    assert record.status == "completed", (record.error, (folder / "agent.stderr.log").read_text())
    seen = probe_output(folder)
    assert seen["FILES"] == "lib,link.txt,run.py"
    assert seen["HELPER"] == "from the agent's own folder"
    assert record.config.agent.dir == str(agent)
    assert record.config.agent.dir_sha256 == tree_sha256(agent)
    assert json.loads((folder / "run.json").read_text())["config"]["agent"]["dir_sha256"]
    assert (agent / "run.py").read_text() == PROBE  # the host's folder is never the agent's
    assert not (folder / agent_code.SNAPSHOT_DIR).exists()  # the snapshot goes with the run
    assert record.sandbox is not None
    changed = [w for w in record.sandbox.warnings if "changed the copy of its code" in w]
    if sandbox == "bwrap":
        assert seen["AGENT_DIR"] == "/agent"  # the fixed path, whatever the host's
        assert seen["WRITE"] == "refused errno 30"  # EROFS: mounted read-only
        assert changed == []
    else:
        assert seen["AGENT_DIR"] == str(folder / agent_code.SNAPSHOT_DIR)
        assert seen["WRITE"] == "refused errno 13"  # EACCES: the copy's files are read-only
        assert changed == []


@pytest.mark.skipif(os.geteuid() != 0, reason="the refusal is for a root harness")
def test_the_local_sandbox_refuses_agent_code_under_a_root_harness(
    isles22_dirs, tmp_path: Path
) -> None:
    # its agent would run as root, which writes any copy, its own or another run's
    agent = make_agent(tmp_path / "my-agent")
    runs = tmp_path / "runs"
    refused = rexmle(*run_args(agent, isles22_dirs.root.parent, runs, "local"))
    assert refused.exit_code == 2, refused.output
    message = " ".join(refused.output.split())
    assert "--agent-dir: the local sandbox cannot keep an agent's code read-only when rexmle " in (
        message
    )
    assert "use the bwrap sandbox (apt-get install bubblewrap; --sandbox bwrap)" in message
    assert not runs.exists()  # refused before anything ran
    # where no preflight ran (a Slurm node), the run itself ends infra_error, having run nothing
    from rexmle.agents.registry import load_agent
    from rexmle.runner.batch import make_job
    from rexmle.runner.executor import RunOptions, execute_run
    from rexmle.runner.sandbox.local import LocalSandbox
    from rexmle.runner.settings import RunSettings

    spec = load_agent("command").with_overrides(command=f"touch ran; {COPY_SAMPLE}")
    spec = spec.model_copy(update={"dir": str(agent)})
    job = make_job(spec, "isles22", 0, time_limit_s=60, mini=True, runs_dir=runs, group="g")
    settings = RunSettings(runs_dir=runs, data_dir=isles22_dirs.root.parent, grade_workers=1)
    record = execute_run(job, RunOptions(settings=settings, sandbox=LocalSandbox()))
    assert record.status == "infra_error"
    assert "cannot keep an agent's code read-only when rexmle runs as root" in str(record.error)
    assert not (job.folder / "workspace" / "ran").exists()
    assert not (job.folder / agent_code.SNAPSHOT_DIR).exists()


ATTACK = """\
import os, pathlib, subprocess
code = pathlib.Path(os.environ["AGENT_DIR"])
def attempt(name, act):
    try:
        act()
        print(name + "=ok")
    except OSError as error:
        print(name + "=refused errno " + str(error.errno))
attempt("WRITE", lambda: (code / "run.py").write_text("changed by the agent"))
attempt("CHMOD", lambda: os.chmod(code / "run.py", 0o777))
attempt("CREATE", lambda: (code / "planted.py").write_text("x"))
attempt("UNLINK", lambda: (code / "lib" / "helper.txt").unlink())
attempt("RENAME", lambda: os.rename(code / "lib", code / "lib2"))
attempt("UTIME", lambda: os.utime(code / "run.py", (0, 0)))
remount = subprocess.run(
    ["unshare", "-Urm", "sh", "-c", f"mount -o remount,bind,rw {code} && echo x > {code}/run.py"],
    capture_output=True,
)
print("REMOUNT=" + ("ok" if remount.returncode == 0 else "refused"))
print("WHY=" + remount.stderr.decode().strip().replace("\\n", " "))
"""


@needs_bwrap()
def test_a_bwrap_agent_cannot_change_its_code_by_any_means(isles22_dirs, tmp_path: Path) -> None:
    agent = make_agent(tmp_path / "my-agent")
    (agent / "run.py").write_text(ATTACK)
    runs = tmp_path / "runs"
    result = rexmle(*run_args(agent, isles22_dirs.root.parent, runs, "bwrap"))
    assert result.exit_code == 0, result.output
    folder = runs / "default" / "isles22" / "own" / "seed-0"
    seen = probe_output(folder)
    for attack in ("WRITE", "CHMOD", "CREATE", "UNLINK", "RENAME", "UTIME"):
        assert seen[attack] == "refused errno 30", (attack, seen)  # EROFS: a read-only mount
    assert seen["REMOUNT"] == "refused"  # not even from a user namespace of its own
    record = read_record(folder)
    assert record is not None
    assert record.status == "completed"
    assert record.sandbox is not None
    assert not [w for w in record.sandbox.warnings if "changed the copy of its code" in w]


@needs_bwrap()
def test_an_edit_of_the_agent_code_is_a_new_config_that_force_config_replaces(
    isles22_dirs, tmp_path: Path
) -> None:
    agent = make_agent(tmp_path / "my-agent")
    runs = tmp_path / "runs"
    args = run_args(agent, isles22_dirs.root.parent, runs, "bwrap")
    assert rexmle(*args).exit_code == 0
    folder = runs / "default" / "isles22" / "own" / "seed-0"
    first = read_record(folder)
    assert first is not None
    assert rexmle(*args).exit_code == 0  # unchanged code: the same run, done already
    assert read_record(folder) == first

    (agent / "lib" / "helper.txt").write_text("edited\n")
    refused = rexmle(*args)
    assert refused.exit_code == 2
    message = " ".join(refused.output.split())
    old, new = first.config.agent.dir_sha256, tree_sha256(agent)
    assert old is not None
    assert f"the agent's code changed (sha256 {old[:12]}… → {new[:12]}…)" in message
    assert "--force-config" in message
    assert "--agent-name" in message
    assert read_record(folder) == first  # nothing ran

    replaced = rexmle(*args, "--force-config")
    assert replaced.exit_code == 0, replaced.output
    second = read_record(folder)
    assert second is not None
    assert second.status == "completed"
    assert second.run_id != first.run_id
    assert second.config.agent.dir_sha256 == new
    assert probe_output(folder)["HELPER"] == "edited"


def test_the_hash_covers_content_names_links_and_the_executable_bit(tmp_path: Path) -> None:
    agent = make_agent(tmp_path / "a")
    base = tree_sha256(agent)
    assert tree_sha256(agent) == base
    (agent / "run.py").chmod(0o755)
    with_exec = tree_sha256(agent)
    assert with_exec != base
    (agent / "link.txt").unlink()
    (agent / "link.txt").symlink_to("run.py")
    relinked = tree_sha256(agent)
    assert relinked != with_exec
    (agent / "lib" / "helper.txt").rename(agent / "lib" / "helper2.txt")
    assert tree_sha256(agent) != relinked
    renamed = tree_sha256(agent)
    (agent / ".git").mkdir()
    (agent / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (agent / "lib" / "__pycache__").mkdir()
    (agent / "lib" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert tree_sha256(agent) == renamed  # version control and bytecode caches are not code


def test_unshippable_folders_are_refused_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(AgentDirError, match="no such folder"):
        scan(tmp_path / "missing")
    (tmp_path / "file.py").write_text("x")
    with pytest.raises(AgentDirError, match="not a folder"):
        scan(tmp_path / "file.py")
    outside = make_agent(tmp_path / "outside")
    (outside / "escape").symlink_to("../../etc")
    with pytest.raises(AgentDirError, match=r"the link escape -> \.\./\.\./etc leads outside"):
        scan(outside)
    absolute = make_agent(tmp_path / "absolute")
    (absolute / "lib" / "abs").symlink_to(absolute / "run.py")
    with pytest.raises(AgentDirError, match=r"the link lib/abs -> .* is absolute"):
        scan(absolute)
    special = make_agent(tmp_path / "special")
    os.mkfifo(special / "pipe")
    with pytest.raises(AgentDirError, match="pipe is not a file, folder or link"):
        scan(special)


def test_the_size_cap_is_stated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = make_agent(tmp_path / "big")
    (agent / "weights.bin").write_bytes(b"\0" * 4096)
    monkeypatch.setattr(agent_code, "MAX_BYTES", 2048)
    with pytest.raises(AgentDirError, match=r"more than 0 MiB of files, the cap .*10,000 entries"):
        scan(agent)
    monkeypatch.setattr(agent_code, "MAX_BYTES", 1 << 20)
    monkeypatch.setattr(agent_code, "MAX_ENTRIES", 3)
    with pytest.raises(AgentDirError, match="more than 3 entries"):
        scan(agent)


def test_the_cli_refuses_an_unshippable_folder_before_anything_runs(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    missing = rexmle(*run_args(tmp_path / "nope", tmp_path / "data", runs, "local", "--dry-run"))
    assert missing.exit_code == 2
    assert f"--agent-dir {tmp_path / 'nope'}: no such folder" in " ".join(missing.output.split())
    agent = make_agent(tmp_path / "a")
    named = rexmle(
        "run", "--agent", "command", "--agent-cmd", f"python3 {agent}/run.py",
        "--agent-dir", str(agent), "--task", "isles22", "--mini", "--runs-dir", str(runs),
        "--dry-run",
    )  # fmt: skip
    assert named.exit_code == 2
    assert "names the host folder" in named.output
    assert "$AGENT_DIR" in named.output
    assert not runs.exists()


def test_a_snapshot_whose_source_changed_after_planning_is_refused(tmp_path: Path) -> None:
    agent = make_agent(tmp_path / "a")
    planned = tree_sha256(agent)
    snapshot = take_snapshot(agent, tmp_path / "snap", expected_sha256=planned)
    assert tree_sha256(snapshot) == planned
    assert not os.access(snapshot, os.W_OK) or os.geteuid() == 0
    assert oct((snapshot / "run.py").stat().st_mode & 0o777) == "0o444"
    (agent / "run.py").write_text("print('edited')\n")
    with pytest.raises(agent_code.AgentCodeChanged, match="changed after the run was planned"):
        take_snapshot(agent, tmp_path / "snap", expected_sha256=planned)


def test_an_experiment_entry_dir_is_relative_to_the_file(tmp_path: Path) -> None:
    from rexmle.runner.experiment import load_experiment, resolve_agents

    make_agent(tmp_path / "study" / "agent")
    path = tmp_path / "study" / "exp.yaml"
    path.write_text(
        "name: s\nagents:\n  - agent: command\n    command: python3 $AGENT_DIR/run.py\n"
        "    dir: agent\ntasks: [isles22]\nseeds: [0]\n"
    )
    experiment = load_experiment(path)
    (spec,) = resolve_agents(experiment).values()
    assert spec.dir == str(tmp_path / "study" / "agent")
    (tmp_path / "study" / "bad.yaml").write_text(path.read_text().replace("dir: agent", "dir: x"))
    result = rexmle("run", "--experiment", str(tmp_path / "study" / "bad.yaml"), "--dry-run")
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert f"bad.yaml, line 5: agents[0].dir: {tmp_path / 'study' / 'x'}: no such folder" in text


@pytest.mark.parametrize("inside", ["runs", "data"])
def test_an_agent_folder_holding_the_runs_or_data_dir_is_refused(
    tmp_path: Path, inside: str
) -> None:
    """``--agent-dir .`` with the default ``./runs``: the copy would change with every run (an
    infra_error after planning) and show the agent other runs' results or the private answers.
    """
    agent = make_agent(tmp_path / "agent")
    runs, data = tmp_path / "elsewhere-runs", tmp_path / "elsewhere-data"
    folder = agent / inside
    if inside == "runs":
        runs = folder
    else:
        data = folder
    result = rexmle(*run_args(agent, data, runs, "local", "--dry-run"))
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    flag = "--runs-dir" if inside == "runs" else "--data-dir"
    assert f"--agent-dir {agent}: holds the {'runs' if inside == 'runs' else 'data'} dir" in text
    assert f"give {flag} outside it" in text
    assert not folder.exists()


def test_a_link_that_leaves_the_folder_through_another_link_is_refused(tmp_path: Path) -> None:
    # each link's own text stays inside; followed, x leads to the folder's parent
    agent = make_agent(tmp_path / "a")
    (agent / "b").mkdir()
    (agent / "b" / "c").symlink_to("..")
    (agent / "x").symlink_to("b/c/..")
    assert os.path.realpath(agent / "x") == str(tmp_path)
    with pytest.raises(AgentDirError, match=r"the link x -> b/c/\.\. leads outside the folder"):
        scan(agent)


def test_a_folder_swapped_for_a_link_after_the_scan_is_never_read_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = make_agent(tmp_path / "a")
    (agent / "sub").mkdir()
    (agent / "sub" / "gold.csv").write_text("planned\n")
    planned = tree_sha256(agent)
    private = tmp_path / "private"
    private.mkdir()
    (private / "gold.csv").write_text("private-answer\n")
    real_scan = agent_code.scan

    def scan_then_swap(root: Path) -> list[agent_code.CodeEntry]:
        entries = real_scan(root)
        if root == agent:  # the source changes between the scan and the copy
            (agent / "sub" / "gold.csv").unlink()
            (agent / "sub").rmdir()
            (agent / "sub").symlink_to(private)
        return entries

    monkeypatch.setattr(agent_code, "scan", scan_then_swap)
    with pytest.raises(AgentDirError, match="without following a link"):
        take_snapshot(agent, tmp_path / "snap", expected_sha256=planned)
    copied = [p.read_text() for p in (tmp_path / "snap").rglob("*") if p.is_file()]
    assert not any("private-answer" in text for text in copied)


def test_a_file_swapped_for_a_fifo_after_the_scan_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = make_agent(tmp_path / "a")
    planned = tree_sha256(agent)
    real_scan = agent_code.scan

    def scan_then_swap(root: Path) -> list[agent_code.CodeEntry]:
        entries = real_scan(root)
        if root == agent:
            (agent / "run.py").unlink()
            os.mkfifo(agent / "run.py")
        return entries

    monkeypatch.setattr(agent_code, "scan", scan_then_swap)
    with pytest.raises(AgentDirError, match=r"run\.py is no longer a regular file"):
        take_snapshot(agent, tmp_path / "snap", expected_sha256=planned)
