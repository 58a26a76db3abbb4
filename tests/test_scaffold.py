"""A new family is one folder: scaffolded or copied, it is listed, prepares and grades unedited.

Both tests work on a temporary copy of the imported ``rexmle`` package tree (never the repo),
put first on ``PYTHONPATH`` of the subprocesses that run the CLI.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import rexmle
from rexmle.errors import SpecError
from rexmle.scaffold.family import new_challenge, task_ids

CONTRACT_TEST = Path(__file__).resolve().parent / "test_task_contract.py"
REPO = CONTRACT_TEST.parents[1]


def _package_copy(tmp_path: Path) -> Path:
    """A copy of the imported package tree under ``tmp_path/pkg``; returns ``pkg``."""
    root = tmp_path / "pkg"
    source = Path(rexmle.__file__).resolve().parent
    shutil.copytree(source, root / "rexmle", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _run(root: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(root),
        "REXMLE_DATA_DIR": str(tmp_path / "data"),
    }
    done = subprocess.run(
        list(args), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{args}\n{done.stdout}\n{done.stderr}"
    return done


def _cli(root: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _run(root, tmp_path, sys.executable, "-m", "rexmle.cli", *args)


def _listed_prepared_and_graded(root: Path, tmp_path: Path, task_id: str) -> dict[str, object]:
    """``list`` names the task, ``prepare --mini`` works; returns the gold's grade report."""
    listed = json.loads(_cli(root, tmp_path, "list", "--json").stdout)
    assert task_id in {entry["id"] for entry in listed}
    data = tmp_path / "data"
    _cli(root, tmp_path, "prepare", task_id, "--mini", "--data-dir", str(data))
    report = tmp_path / f"{task_id}.grade.json"
    gold = data / task_id / "private" / "gold"
    _cli(
        root, tmp_path, "grade", task_id, str(gold), "--data-dir", str(data), "--json", str(report)
    )
    return json.loads(report.read_text(encoding="utf-8"))


def test_scaffolded_family_prepares_grades_and_keeps_the_task_contract(tmp_path) -> None:
    root = _package_copy(tmp_path)
    _cli(root, tmp_path, "dev", "new-challenge", "toy_seg", "--tasks", "2")
    folder = root / "rexmle" / "challenges" / "toy_seg"
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [
            "__init__.py",
            "baseline.py",
            "description.md",
            "fixture.py",
            "metrics.py",
            "prepare.py",
            "toy-seg-task1.leaderboard.csv",
            "toy-seg-task1.yaml",
            "toy-seg-task2.leaderboard.csv",
            "toy-seg-task2.yaml",
        ]
    )
    ruff = Path(sys.executable).with_name("ruff")
    if ruff.is_file():  # the scaffold writes code that passes the project's lint as it stands
        config = str(REPO / "pyproject.toml")
        _run(root, tmp_path, str(ruff), "format", "--check", "--config", config, str(folder))
        _run(root, tmp_path, str(ruff), "check", "--config", config, str(folder))
    report = _listed_prepared_and_graded(root, tmp_path, "toy-seg-task2")
    assert report["valid"] is True
    assert report["metrics"] == {"dice": 1.0, "abs_volume_diff": 0.0, "dice_median": 1.0}
    pytest_args = ["-q", "-n", "0", "-p", "no:cacheprovider", "--rootdir", str(REPO)]
    _run(
        root,
        tmp_path,
        sys.executable,
        "-m",
        "pytest",
        *pytest_args,
        str(CONTRACT_TEST),
        "-k",
        "toy-seg",
    )


def test_a_copied_family_folder_works_with_edits_inside_it_only(tmp_path) -> None:
    """ISLES'22 copied as family ``stroke_copy``, task ``stroke-copy``: only its YAML's id and
    family and its leaderboard file's name are edited, inside the copied folder.
    """
    root = _package_copy(tmp_path)
    challenges = root / "rexmle" / "challenges"
    folder = challenges / "stroke_copy"
    shutil.copytree(challenges / "isles22", folder)
    spec = yaml.safe_load((folder / "isles22.yaml").read_text(encoding="utf-8"))
    spec.update(id="stroke-copy", family="stroke_copy")
    (folder / "isles22.yaml").unlink()
    (folder / "stroke-copy.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    (folder / "isles22.leaderboard.csv").rename(folder / "stroke-copy.leaderboard.csv")
    report = _listed_prepared_and_graded(root, tmp_path, "stroke-copy")
    assert report["valid"] is True
    assert report["metrics"]["dice"] == 1.0
    assert report["ranking"]["positions"]["dice"] == 1.0


@pytest.mark.parametrize(
    ("family", "n_tasks", "reason"),
    [
        ("Toy-Seg", 1, "must be a lower-case Python identifier"),
        ("class", 1, "must be a lower-case Python identifier"),
        ("toy", 0, "--tasks must be between 1 and 20"),
        ("isles22", 1, r"task id\(s\) \['isles22'\] are registered already"),
    ],
)
def test_new_challenge_refuses_a_bad_request(tmp_path, family, n_tasks, reason) -> None:
    with pytest.raises(SpecError, match=reason):
        new_challenge(family, n_tasks=n_tasks, root=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_new_challenge_refuses_an_existing_folder(tmp_path) -> None:
    (tmp_path / "toy").mkdir()
    with pytest.raises(SpecError, match="exists already"):
        new_challenge("toy", root=tmp_path)


def test_task_ids_of_one_and_of_several_tasks() -> None:
    assert task_ids("my_seg", 1) == ["my-seg"]
    assert task_ids("my_seg", 3) == ["my-seg-task1", "my-seg-task2", "my-seg-task3"]
