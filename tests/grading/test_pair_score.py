"""``public/score.py``: the official metrics of two submission-shaped folders, as ``rexmle grade``.

For every task, with the prepared test gold as GOLD_DIR (so ``rexmle grade`` can score the same
predictions): the gold, the sample and a perturbed submission (gold for every other case, the
sample's prediction for the rest) get exactly the grader's metrics.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rexmle.agents.dummy import copy_sample_submission
from rexmle.grading import grade_submission
from rexmle.grading.pair_score import PairScoreError, score_folders, usage_text
from rexmle.runner.workspace import PASSED_THROUGH
from rexmle.tasks.registry import all_tasks, load_task

TASKS = sorted(all_tasks())
HOST = {name: os.environ[name] for name in PASSED_THROUGH if name in os.environ}
"""What an agent's environment keeps of the host's (OpenBLAS's kernel choice among them)."""


def gold_dir(dirs, target: Path) -> Path:
    """``private/gold`` with what the scorer also reads from ``private/`` (TopCoW's ROIs)."""
    shutil.copytree(dirs.gold, target)
    if (dirs.private / "roi").is_dir():
        shutil.copytree(dirs.private / "roi", target / "roi")
    return target


def mixed(task_id: str, gold: Path, sample: Path, target: Path) -> Path:
    """Gold for even rows, the sample's row (and its files, under ``s/``) for odd rows."""
    columns = load_task(task_id).columns
    paths = set(columns.path_columns)
    with open(gold / "submission.csv", newline="") as handle:
        gold_rows = list(csv.DictReader(handle))
    with open(sample / "submission.csv", newline="") as handle:
        sample_rows = {row[columns.id_column]: row for row in csv.DictReader(handle)}
    shutil.copytree(gold, target)
    rows = []
    for index, row in enumerate(gold_rows):
        if index % 2:
            row = dict(sample_rows[row[columns.id_column]])
            for column in paths:
                (target / "s" / row[column]).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(sample / row[column], target / "s" / row[column])
                row[column] = f"s/{row[column]}"
        rows.append(row)
    with open(target / "submission.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(gold_rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return target


@pytest.mark.parametrize("task_id", TASKS)
def test_score_folders_agrees_with_the_grader(task_id, prepared_mini, mini_data_dir, tmp_path):
    dirs = prepared_mini(task_id)
    gold = gold_dir(dirs, tmp_path / "gold")
    sample = tmp_path / "sample"
    copy_sample_submission(dirs.public, sample)
    perturbed = mixed(task_id, dirs.gold, sample, tmp_path / "perturbed")
    seen = []
    for folder in (dirs.gold, sample, perturbed):
        report = grade_submission(task_id, folder, data_dir=mini_data_dir, workers=1)
        assert report.valid, report.reasons
        metrics = score_folders(task_id, folder, gold, public_dir=dirs.public, workers=1)
        assert metrics == report.metrics
        seen.append(metrics)
    assert list(seen[0]) == [m.key for m in load_task(task_id).spec.metrics]
    assert len({json.dumps(m, sort_keys=True) for m in seen}) > 1  # the three are not all equal


def test_dentex_reference_from_gt_coco_or_from_the_gold_detections(prepared_mini, tmp_path):
    dirs = prepared_mini("dentex")
    derived = gold_dir(dirs, tmp_path / "derived")
    official = gold_dir(dirs, tmp_path / "official")
    shutil.copyfile(dirs.private / "gt_coco.json", official / "gt_coco.json")
    sample = tmp_path / "sample"
    copy_sample_submission(dirs.public, sample)
    perturbed = mixed("dentex", dirs.gold, sample, tmp_path / "perturbed")
    assert score_folders("dentex", perturbed, derived, public_dir=dirs.public, workers=1) == (
        score_folders("dentex", perturbed, official, public_dir=dirs.public, workers=1)
    )


def test_mismatched_folders_are_refused_with_the_reason(prepared_mini, tmp_path):
    dirs = prepared_mini("isles22")
    gold = gold_dir(dirs, tmp_path / "gold")
    short = tmp_path / "short"
    shutil.copytree(dirs.gold, short)
    lines = (short / "submission.csv").read_text().splitlines()
    (short / "submission.csv").write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(PairScoreError, match=r"test id.*missing"):
        score_folders("isles22", short, gold, public_dir=dirs.public)
    with pytest.raises(PairScoreError, match=r"has no submission\.csv"):
        score_folders("isles22", short, tmp_path / "nothing", public_dir=dirs.public)
    roi_less = tmp_path / "roi-less"
    task1 = prepared_mini("topcow-track1-task1")
    shutil.copytree(task1.gold, roi_less)
    with pytest.raises(PairScoreError, match="GOLD_DIR must also hold roi/topcow_ct_"):
        score_folders("topcow-track1-task1", task1.gold, roi_less, public_dir=task1.public)


def run_script(public: Path, args: list[str], *, python: str, env: dict[str, str]):
    return subprocess.run(
        [python, str(public / "score.py"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


@pytest.mark.parametrize("task_id", ["isles22", "ldct-iqa"])
def test_the_public_script_prints_the_grader_metrics(task_id, prepared_mini, tmp_path):
    dirs = prepared_mini(task_id)
    gold = gold_dir(dirs, tmp_path / "gold")
    sample = tmp_path / "sample"
    copy_sample_submission(dirs.public, sample)
    expected = score_folders(task_id, sample, gold, public_dir=dirs.public)
    env = {**HOST, "PATH": "/usr/bin:/bin", "HARNESS_PYTHON": sys.executable}
    done = run_script(
        dirs.public, [str(sample), str(gold), "--json"], python=sys.executable, env=env
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"task": task_id, "metrics": expected}
    text = run_script(dirs.public, [str(sample), str(gold)], python=sys.executable, env=env)
    assert [line.split()[0] for line in text.stdout.splitlines()] == list(expected)
    bad = run_script(
        dirs.public, [str(sample), str(tmp_path / "none")], python=sys.executable, env=env
    )
    assert bad.returncode == 1
    assert "GOLD_DIR" in bad.stderr


def test_the_script_runs_the_grader_with_the_harness_interpreter(prepared_mini, tmp_path):
    """Started by an interpreter without rexmle (an agent's own), it uses $HARNESS_PYTHON.

    With no interpreter that can import the grader it says so and exits 2.
    """
    bare = shutil.which("python3", path="/usr/bin:/bin")
    if (
        bare is None
        or subprocess.run(
            [bare, "-c", "import rexmle"], capture_output=True, cwd=tmp_path, env={}, check=False
        ).returncode
        == 0
    ):
        pytest.skip("needs a system python3 without rexmle")
    dirs = prepared_mini("ldct-iqa")
    gold = gold_dir(dirs, tmp_path / "gold")
    base = {**HOST, "PATH": "/usr/bin:/bin"}
    found = run_script(
        dirs.public,
        [str(gold), str(gold), "--json"],
        python=bare,
        env={**base, "HARNESS_PYTHON": sys.executable},
    )
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["metrics"] == score_folders(
        "ldct-iqa", gold, gold, public_dir=dirs.public
    )
    missing = run_script(dirs.public, [str(gold), str(gold)], python=bare, env=base)
    assert missing.returncode == 2
    assert "no interpreter here can import the harness's grader" in missing.stderr
    assert "ModuleNotFoundError" in missing.stderr


def test_every_task_has_its_script_and_usage(prepared_mini):
    for task_id in TASKS:
        script = prepared_mini(task_id).public / "score.py"
        assert f'TASK = "{task_id}"' in script.read_text()
        assert os.access(script, os.X_OK)
        text = usage_text(task_id)
        assert all(m.key in text for m in load_task(task_id).spec.metrics)


@pytest.mark.parametrize("harness_package", [True, False])
def test_the_script_inside_a_bwrap_sandbox(harness_package, prepared_mini, tmp_path):
    """In bwrap the agent's environment names the harness's interpreter at its inside path.

    A request with the harness package mounted (every agent kind the runner starts) gets the
    grader's metrics; one without it gets the reason.
    """
    from rexmle.runner.sandbox import SandboxRequest
    from rexmle.runner.sandbox.bwrap import BwrapSandbox, bwrap_problem
    from rexmle.runner.workspace import agent_env, build_workspace

    if bwrap_problem() is not None:
        pytest.skip(f"bwrap cannot run here: {bwrap_problem()}")
    dirs = prepared_mini("ldct-iqa")
    workspace = build_workspace(
        tmp_path / "ws",
        task_id="ldct-iqa",
        public_dir=dirs.public,
        time_limit_s=60,
        validation={
            "url": "http://127.0.0.1:9",
            "max_upload_bytes": 1,
            "max_requests_per_minute": 1,
        },
        data_mode="link",
    )
    gold_dir(dirs, workspace.root / "gold")
    sample = workspace.root / "sample"
    copy_sample_submission(dirs.public, sample)
    env = agent_env(
        workspace,
        task_id="ldct-iqa",
        seed=0,
        time_limit_s=60,
        validation_url="http://127.0.0.1:9",
        pass_env=[],
        cuda_visible_devices=None,
    )
    assert env["HARNESS_PYTHON"] == sys.executable
    request = SandboxRequest(
        argv=[
            "/bin/sh",
            "-c",
            "cd $WORKSPACE && /usr/bin/python3 data/score.py sample gold --json",
        ],
        env=env,
        workspace=workspace.root,
        stdout_path=tmp_path / "out.log",
        stderr_path=tmp_path / "err.log",
        time_limit_s=120,
        kill_grace_s=1,
        harness_package=harness_package,
    )
    result = BwrapSandbox().run(request)
    assert result.error is None
    out, err = (tmp_path / "out.log").read_text(), (tmp_path / "err.log").read_text()
    if harness_package:
        assert result.exit_code == 0, err
        expected = grade_submission("ldct-iqa", sample, data_dir=dirs.root.parent).metrics
        assert json.loads(out)["metrics"] == expected
    else:
        assert result.exit_code == 2
        assert "no interpreter here can import the harness's grader" in err
