"""Names that become folders (``--group``, ``--agent-name``) are refused when they would escape
the runs root, with the reason, before anything is written.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rexmle.cli import app
from rexmle.names import folder_name
from rexmle.records.runs import run_dir


@pytest.mark.parametrize("name", ["../x", "/abs/path", "a/b", "..", ".hidden", "", "a b", "-x"])
def test_a_folder_name_is_refused_with_its_rule(name: str) -> None:
    with pytest.raises(ValueError, match="is not a folder name") as refused:
        folder_name(name, what="--group")
    assert repr(name) in str(refused.value)


@pytest.mark.parametrize("name", ["default", "paper-grid-full", "v1.2_b", "7"])
def test_folder_names_that_stay_inside_are_kept(name: str) -> None:
    assert folder_name(name, what="--group") == name


def test_run_dir_never_leaves_the_runs_root(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=re.escape("group '../x'")):
        run_dir(tmp_path, "../x", "isles22", "dummy", 0)
    with pytest.raises(ValueError, match="agent '/etc'"):
        run_dir(tmp_path, "g", "isles22", "/etc", 0)
    assert run_dir(tmp_path, "g", "isles22", "dummy", 3) == tmp_path / "g/isles22/dummy/seed-3"


@pytest.mark.parametrize(
    ("option", "value"),
    [("--group", "../escaped"), ("--group", "ABSOLUTE"), ("--agent-name", "../escaped")],
)
def test_rexmle_run_refuses_a_name_that_escapes_the_runs_root(
    isles22_dirs, tmp_path: Path, option: str, value: str
) -> None:
    runs = tmp_path / "area" / "runs"
    outside = tmp_path / "outside"
    value = str(outside) if value == "ABSOLUTE" else value
    done = CliRunner().invoke(
        app,
        [
            "run", "--agent", "command", "--agent-cmd", "true", "--task", "isles22", "--mini",
            "--data-dir", str(isles22_dirs.root.parent), "--runs-dir", str(runs),
            "--sandbox", "local", option, value,
        ],
    )  # fmt: skip
    assert done.exit_code == 2, done.output
    assert f"{option} {value!r} is not a folder name" in " ".join(done.stderr.split())
    assert not outside.exists()
    assert not (tmp_path / "area" / "escaped").exists()
    assert not runs.exists()
