"""What the docs state about the code holds: the layer lists of docs/architecture.md and the
README are the import-linter contract's, every module path docs/architecture.md names is a file
of the package, and every flag of the README's command table is an option of that command.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def _contract_layers() -> list[set[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers"]
    return [
        {name.strip().removeprefix("rexmle.") for name in re.split(r"[|:]", layer)}
        for layer in layers
    ]


def _names(text: str) -> set[str]:
    return set(re.findall(r"`([a-z_]+)`", text))


def test_the_architecture_table_lists_the_contract_layers_in_order() -> None:
    rows = re.findall(r"^\| (\d+) \| ([^|]+) \|", ARCHITECTURE, flags=re.MULTILINE)
    assert [int(number) for number, _ in rows] == list(range(1, len(rows) + 1))
    assert [_names(packages) for _, packages in rows] == _contract_layers()


def test_the_readme_lists_the_contract_layers_in_order() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("(`[tool.importlinter]` in\n`pyproject.toml`): ")
    sentence = readme[start : readme.index(" A module may import only", start)]
    sentence = sentence.split("): ", 1)[1]
    assert [_names(part) for part in sentence.split(";")] == _contract_layers()


RUNTIME_FILES = {"score.py", "public/score.py"}
"""Files the page names that a run writes (into a task's ``public/``), not modules."""


def test_every_module_path_of_the_architecture_page_exists() -> None:
    package = ROOT / "rexmle"
    shipped = {path.name for path in package.rglob("*") if path.is_file()}
    named = set(re.findall(r"`([\w/]+\.(?:py|yaml|lock))", ARCHITECTURE)) - RUNTIME_FILES
    assert len(named) > 30
    missing = []
    for path in sorted(named):
        if "/" not in path:  # a bare name, in a sentence that names its folder
            found = path in shipped
        else:
            found = any(
                p.is_file() for p in (ROOT / path, package / path, package / "runner" / path)
            )
        if not found:
            missing.append(path)
    assert not missing, f"docs/architecture.md names files that do not exist: {missing}"


def test_the_scaffold_points_to_a_readme_section_that_exists() -> None:
    source = (ROOT / "rexmle" / "scaffold" / "commands.py").read_text(encoding="utf-8")
    (section,) = re.findall(r"\(README, '([^']+)'\)", source)
    headings = re.findall(r"^#+ (.+)$", (ROOT / "README.md").read_text(encoding="utf-8"), re.M)
    assert section in headings


def test_every_flag_of_the_readme_command_table_is_in_its_help() -> None:
    from typer.testing import CliRunner

    from rexmle.cli import app

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("| command | what it does |") : readme.index("Examples:")]
    rows = re.findall(r"^\| `rexmle ([a-z-]+)([^`]*)` \|", table, flags=re.MULTILINE)
    assert len(rows) >= 14
    for command, usage in rows:
        shown = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"})
        assert shown.exit_code == 0, shown.output
        for flag in re.findall(r"(?<![\w-])--[a-z][a-z-]*", usage):
            assert re.search(rf"{flag}(?![\w-])", shown.output), f"rexmle {command}: {flag}"
