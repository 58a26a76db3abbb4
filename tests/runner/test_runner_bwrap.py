"""The bwrap sandbox: gold answers and the data root are out of reach, limits and relay hold."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from runner_support import COPY_SAMPLE, marker_processes, needs_bwrap

import rexmle
from rexmle.runner.sandbox import SandboxRequest, choose_sandbox
from rexmle.runner.sandbox.bwrap import BwrapSandbox, bwrap_argv

pytestmark = needs_bwrap()


def test_agent_searching_for_gold_finds_nothing(run_agent, own_isles22):
    canary = f"CANARY-{uuid.uuid4().hex}.txt"
    (own_isles22.gold / canary).write_text("the answers\n")
    data_root = own_isles22.root.parent
    assert (data_root / "isles22" / "private" / "gold" / canary).is_file()  # there on the host
    command = (
        'echo "searching / for gold"; '
        f"find / \\( -path /proc -o -path /sys \\) -prune -o \\( -name '{canary}' "
        "-o -path '*isles22/private/*' \\) -print 2>/dev/null; "
        'echo "search done"; '
        f'echo "trying {data_root}"; ls -la {data_root}/isles22/private/gold; '
        f"cat {data_root}/isles22/private/gold/{canary}; "
        f"cat {data_root}/isles22/private/split.json; ls -la {data_root}; "
        f"{COPY_SAMPLE}"
    )
    record, folder = run_agent(command, dirs=own_isles22, sandbox=BwrapSandbox())
    stdout = (folder / "agent.stdout.log").read_text()
    stderr = (folder / "agent.stderr.log").read_text()
    # its attempts are in its log ...
    assert "searching / for gold" in stdout
    assert "search done" in stdout
    assert f"trying {data_root}" in stdout
    assert "No such file or directory" in stderr
    # ... and found nothing: no canary, no private/ of isles22, an empty data root
    assert canary not in stdout
    assert "isles22/private/" not in stdout
    assert "the answers" not in stdout
    assert "isles22" not in stdout.split(f"trying {data_root}")[1]
    assert record.sandbox is not None
    assert record.sandbox.isolated
    assert record.sandbox.kind == "bwrap"
    assert record.status == "completed"  # the run itself is normal


def test_no_capabilities_so_hidden_folders_cannot_be_unmounted(run_agent, own_isles22):
    data_root = own_isles22.root.parent
    command = (
        "grep CapEff /proc/self/status; "
        f"umount -l {data_root} && echo unmounted; "
        f"mount -t tmpfs none {data_root} && echo mounted; "
        f"ls {data_root}/isles22/private/gold 2>&1 | head -3; "
        f"{COPY_SAMPLE}"
    )
    record, folder = run_agent(command, dirs=own_isles22, sandbox=BwrapSandbox())
    stdout = (folder / "agent.stdout.log").read_text()
    assert "CapEff:\t0000000000000000" in stdout
    assert "unmounted" not in stdout
    assert "mounted" not in stdout
    assert "submission.csv" not in stdout
    assert ".nii.gz" not in stdout
    assert record.status == "completed"


def test_other_data_roots_on_the_machine_do_not_exist_inside(run_agent, own_isles22):
    # a second prepared copy beside the checkout (e.g. a demo folder) is not on the hidden list
    other = Path(rexmle.__file__).resolve().parent.parent / f"other-data-{uuid.uuid4().hex}"
    (other / "isles22" / "private" / "gold").mkdir(parents=True)
    (other / "isles22" / "private" / "gold" / "answers.txt").write_text("the answers\n")
    try:
        command = f"cat {other}/isles22/private/gold/answers.txt; ls {other.parent}; {COPY_SAMPLE}"
        record, folder = run_agent(command, dirs=own_isles22, sandbox=BwrapSandbox())
    finally:
        import shutil

        shutil.rmtree(other)
    stdout = (folder / "agent.stdout.log").read_text()
    assert "the answers" not in stdout
    assert other.name not in stdout
    assert record.status == "completed"


def test_only_the_workspace_is_writable(run_agent, isles22_dirs, tmp_path):
    # inside the rexmle package folder, which the sandbox mounts read-only wherever it lives
    outside = Path(rexmle.__file__).resolve().parent / f"outside-{uuid.uuid4().hex}.txt"
    beside = tmp_path / "beside.txt"  # under /tmp: the sandbox's /tmp is its own tmpfs
    command = (
        f"touch {outside} && echo wrote-outside; "
        f"touch {beside}; "
        'touch "$DATA_DIR/new.txt" && echo wrote-data; '
        "touch /usr/rexmle-test && echo wrote-usr; "
        'touch "$WORKSPACE/mine.txt" && echo wrote-workspace; '
        "touch /tmp/scratch && echo wrote-tmp; "
        f"{COPY_SAMPLE}"
    )
    record, folder = run_agent(command, dirs=isles22_dirs, sandbox=BwrapSandbox())
    stdout = (folder / "agent.stdout.log").read_text()
    assert "wrote-workspace" in stdout
    assert "wrote-tmp" in stdout  # a private tmpfs
    assert "wrote-outside" not in stdout
    assert "wrote-data" not in stdout
    assert "wrote-usr" not in stdout
    assert not outside.exists()
    assert not beside.exists()
    assert not (isles22_dirs.public / "new.txt").exists()
    assert record.status == "completed"


def test_no_network_but_validation_url_works_through_the_relay(run_agent, isles22_dirs):
    command = (
        f"{COPY_SAMPLE}; python validate.py; "
        "python -c \"import socket; socket.create_connection(('1.1.1.1', 53), timeout=3)\" "
        "2>/dev/null && echo network-reachable || echo network-unreachable"
    )
    record, folder = run_agent(command, dirs=isles22_dirs, sandbox=BwrapSandbox(), network=False)
    stdout = (folder / "agent.stdout.log").read_text()
    assert "valid (2 cases)" in stdout
    assert "network-unreachable" in stdout
    assert record.validation_requests == 1
    assert record.sandbox is not None
    assert record.sandbox.network_isolated


def test_timeout_kills_every_process_in_the_sandbox(run_agent, isles22_dirs):
    marker = f"98{uuid.uuid4().int % 10**6:06d}"
    command = (
        f"{COPY_SAMPLE}; sleep {marker}1 & setsid sleep {marker}2 & "
        f"(trap '' TERM; sleep {marker}3) & sleep {marker}4"
    )
    record, folder = run_agent(command, dirs=isles22_dirs, sandbox=BwrapSandbox(), time_limit_s=3.0)
    assert record.status == "timeout"
    assert marker_processes(marker) == []
    assert json.loads((folder / "grade.json").read_text())["valid"] is True


def test_baseline_agent_runs_inside_bwrap(run_agent, isles22_dirs):
    record, folder = run_agent(None, agent="baseline", dirs=isles22_dirs, sandbox=BwrapSandbox())
    assert record.status == "completed", (folder / "agent.stderr.log").read_text()
    assert record.grade is not None
    assert record.grade.valid


@pytest.mark.parametrize("network", [True, False])
def test_mount_order_hides_data_under_a_mounted_folder_only(tmp_path, network):
    shown = tmp_path / "shown"
    (shown / "hidden").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    request = SandboxRequest(
        argv=["true"],
        env={},
        workspace=tmp_path,
        stdout_path=tmp_path / "o",
        stderr_path=tmp_path / "e",
        time_limit_s=1,
        network=network,
        readonly=(shown,),
        hidden=(shown / "hidden", elsewhere),
    )
    argv = bwrap_argv(request)
    tmpfs_hidden = argv.index(str((shown / "hidden").resolve()))
    assert argv[tmpfs_hidden - 1] == "--tmpfs"
    assert tmpfs_hidden > argv.index(str(shown.resolve()))  # hidden after its folder is bound
    assert str(elsewhere.resolve()) not in argv  # never mounted, so nothing to hide
    assert "--unshare-net" in argv  # own network namespace, with or without network


def test_auto_picks_bwrap_here():
    assert choose_sandbox("auto").kind == "bwrap"


@pytest.mark.parametrize("network", [True, False])
def test_info_states_isolation(network):
    info = BwrapSandbox().info(network=network)
    assert info.isolated
    assert info.network_isolated  # own namespace either way: no host loopback
    assert info.network == ("isolated-outbound" if network else "off")


def test_links_to_the_answers_are_not_followed_by_grading(run_agent, own_isles22):
    gold = own_isles22.gold
    # the agent cannot see gold, but it can guess its path; grading runs outside the sandbox
    command = (
        f'{COPY_SAMPLE}; rm "$SUBMISSION_DIR/submission.csv"; '
        f'ln -s {gold}/submission.csv "$SUBMISSION_DIR/submission.csv"; '
        f'ln -s {gold}/predictions "$SUBMISSION_DIR/gold-predictions"; '
        'ln -s predictions/missing.nii.gz "$SUBMISSION_DIR/dangling"'
    )
    record, folder = run_agent(command, dirs=own_isles22, sandbox=BwrapSandbox())
    assert record.status == "invalid_submission"
    copied = folder / "submission"
    assert not (copied / "submission.csv").exists()
    assert not any(p.is_symlink() for p in copied.rglob("*"))
    assert sorted(n.split(":")[0] for n in record.submission_notes) == [
        "dangling",
        "gold-predictions",
        "submission.csv",
    ]
    grade = json.loads((folder / "grade.json").read_text())
    assert "submission.csv: file not found" in grade["reasons"][0]
