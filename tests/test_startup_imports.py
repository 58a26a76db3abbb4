"""Start-up cost: what the CLI and the grader import, checked by module (not by the clock).

``import rexmle.cli`` builds every command of the CLI; the libraries a command needs are imported
inside it. Grading a task imports the numeric libraries its family uses and nothing that only
reports, plots or other families need. Timings are measured by ``bench/startup.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY_FOR_THE_CLI = ("pydantic", "numpy", "pandas", "yaml", "scipy", "rich.console", "rich.table")
NOT_FOR_GRADING = ("pandas", "matplotlib", "skimage", "sklearn", "rich.table", "litellm")


def _modules_after(code: str, names: tuple[str, ...]) -> list[str]:
    """The modules of ``names`` present in ``sys.modules`` after running ``code`` in a child."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps([m for m in {list(names)!r} if m in sys.modules]))"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_importing_the_cli_imports_no_heavy_library() -> None:
    assert _modules_after("import rexmle.cli", HEAVY_FOR_THE_CLI) == []


def test_the_help_of_every_command_imports_no_heavy_library() -> None:
    code = (
        "import contextlib, io\n"
        "from rexmle.cli import app\n"
        "from typer.main import get_command\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        get_command(app)(['--help'], standalone_mode=False)\n"
        "    except SystemExit:\n"
        "        pass\n"
    )
    assert _modules_after(code, ("pydantic", "numpy", "pandas", "scipy")) == []


@pytest.mark.parametrize("task_id", ["isles22", "ldct-iqa"])
def test_grading_imports_only_what_the_family_needs(task_id, prepared_mini) -> None:
    dirs = prepared_mini(task_id)
    code = (
        "from pathlib import Path\n"
        "from rexmle.grading import grade_submission\n"
        f"report = grade_submission({task_id!r}, Path({str(dirs.gold)!r}), "
        f"data_dir=Path({str(dirs.root.parent)!r}), workers=1)\n"
        "assert report.valid, report.reasons\n"
    )
    assert _modules_after(code, NOT_FOR_GRADING) == []
