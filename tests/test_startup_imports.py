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
NOT_FOR_GRADING = (
    "pandas",
    "matplotlib",
    "skimage",
    "sklearn",
    "rich.table",
    "litellm",
    "concurrent.futures.process",  # a worker pool, for a single worker
)


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


def test_every_command_declares_its_parameters_with_objects_not_strings() -> None:
    # typer reads a command's parameters from its annotations at every start, for every
    # command; string annotations (``from __future__ import annotations``) are compiled and
    # evaluated each time, which tripled the cost of building the command line.
    import inspect

    import typer

    from rexmle.cli import app

    def callbacks(group: typer.Typer):
        for command in group.registered_commands:
            yield command.callback
        for sub in group.registered_groups:
            if sub.typer_instance is not None:
                yield from callbacks(sub.typer_instance)

    found = list(callbacks(app))
    assert len(found) >= 15
    quoted = {
        f"{callback.__module__}.{callback.__name__}: {name}"
        for callback in found
        for name, annotation in inspect.get_annotations(callback).items()
        if isinstance(annotation, str)
    }
    assert quoted == set()


def _after_rexmle_list(before: str, after: str) -> object:
    """In a child: ``before``, then ``rexmle list`` through `cli.main` (output dropped, exit 0
    required), then ``after``, which prints a JSON value on its last line; that value.
    """
    code = (
        "import contextlib, gc, io, json, os, sys\n"
        f"{before}\n"
        "from rexmle import cli\n"
        "sys.argv = ['rexmle', 'list']\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        cli.main()\n"
        "    except SystemExit as stop:\n"
        "        assert not stop.code, stop.code\n"
        f"{after}\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(("preset", "scanned"), [(None, False), ("", True)])
def test_the_command_line_looks_for_no_pydantic_plugin_unless_asked(preset, scanned) -> None:
    # `rexmle list` builds the task specs (pydantic models). Looking for plugins reads every
    # installed distribution's metadata; an empty PYDANTIC_DISABLE_PLUGINS turns them back on.
    before = "os.environ.pop('PYDANTIC_DISABLE_PLUGINS', None)\n"
    if preset is not None:
        before += f"os.environ['PYDANTIC_DISABLE_PLUGINS'] = {preset!r}\n"
    after = (
        "import pydantic.plugin._loader as loader\nprint(json.dumps(loader._plugins is not None))"
    )
    assert _after_rexmle_list(before, after) is scanned


def test_the_command_line_freezes_the_collector_when_a_command_is_done() -> None:
    # The interpreter's last collection walks every object still alive; frozen, they are left
    # to their reference counts (the exit handlers run all the same).
    before, after = _after_rexmle_list(
        "frozen_before = gc.get_freeze_count()",
        "print(json.dumps([frozen_before, gc.get_freeze_count()]))",
    )
    assert before == 0
    assert after > 10_000
