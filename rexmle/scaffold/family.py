"""Scaffolding of a new challenge family (``rexmle dev new-challenge``).

:func:`new_challenge` writes ``rexmle/challenges/<family>/`` from the templates beside this
module: one YAML and one leaderboard per task, the description, and the family's plain
functions (``fixture.py``, ``prepare.py``, ``metrics.py``, ``baseline.py``) of a tiny synthetic
3-D segmentation challenge that prepares with ``--mini``, grades its gold and passes the task
contract test (``tests/test_task_contract.py``) as written.
"""

from __future__ import annotations

import keyword
import re
from importlib import resources
from pathlib import Path

from rexmle.errors import SpecError
from rexmle.tasks.registry import LEADERBOARD_SUFFIX, all_tasks, forget_tasks

MAX_TASKS = 20
FAMILY_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
FAMILY_FILES = {
    "__init__.py": "__init__.py.tmpl",
    "fixture.py": "fixture.py.tmpl",
    "prepare.py": "prepare.py.tmpl",
    "metrics.py": "metrics.py.tmpl",
    "baseline.py": "baseline.py.tmpl",
    "description.md": "description.md.tmpl",
}
"""Family file -> its template (the per-task YAML and leaderboard are written once per task)."""


def challenges_folder() -> Path:
    """The ``rexmle/challenges`` folder of the imported package (where families are found)."""
    return Path(str(resources.files("rexmle.challenges")))


def task_ids(family: str, n_tasks: int) -> list[str]:
    """Ids of the new family's tasks: ``<family>`` alone, else ``<family>-task<k>``, k = 1..n.

    Underscores of the family name become hyphens (family ``my_seg``: task ``my-seg``).
    """
    base = family.replace("_", "-")
    return [base] if n_tasks == 1 else [f"{base}-task{k}" for k in range(1, n_tasks + 1)]


def _template(name: str) -> str:
    return resources.files(__package__).joinpath("template", name).read_text(encoding="utf-8")


def _fill(text: str, values: dict[str, str]) -> str:
    for marker, value in values.items():
        text = text.replace(marker, value)
    return text


def _check_request(family: str, n_tasks: int, root: Path) -> list[str]:
    if not FAMILY_NAME.match(family) or keyword.iskeyword(family):
        msg = (
            f"family name {family!r} must be a lower-case Python identifier "
            f"(letters, digits, '_'; starting with a letter), e.g. 'brats23'"
        )
        raise SpecError(msg)
    if not 1 <= n_tasks <= MAX_TASKS:
        msg = f"--tasks must be between 1 and {MAX_TASKS}, got {n_tasks}"
        raise SpecError(msg)
    if (root / family).exists():
        msg = f"{root / family} exists already; choose another family name"
        raise SpecError(msg)
    ids = task_ids(family, n_tasks)
    taken = sorted(set(ids) & set(all_tasks()))
    if taken:
        msg = f"task id(s) {taken} are registered already; choose another family name"
        raise SpecError(msg)
    return ids


def new_challenge(family: str, *, n_tasks: int = 1, root: Path | None = None) -> list[Path]:
    """Write a new family folder ``<root>/<family>/`` with ``n_tasks`` tasks; return its files.

    Args:
        family: the folder and package name (a lower-case Python identifier).
        n_tasks: how many tasks the family declares; task k segments the fixture's structure k.
        root: the challenges folder (default: :func:`challenges_folder`).

    Raises:
        SpecError: the name is not an identifier, the folder or a task id exists already, or
            ``n_tasks`` is out of range.
    """
    root = challenges_folder() if root is None else root
    ids = _check_request(family, n_tasks, root)
    title = family.replace("_", " ").title()
    shared = f"shared_raw: {family.replace('_', '-')}-shared\n" if n_tasks > 1 else ""
    common = {"__FAMILY__": family, "__TITLE__": title, "__N_TASKS__": str(n_tasks)}
    folder = root / family
    folder.mkdir(parents=True)
    written = []
    for name, template in FAMILY_FILES.items():
        (folder / name).write_text(_fill(_template(template), common), encoding="utf-8")
        written.append(folder / name)
    for label, task_id in enumerate(ids, start=1):
        values = {
            **common,
            "__TASK_ID__": task_id,
            "__LABEL__": str(label),
            "__SHARED_RAW__": shared,
        }
        yaml_path = folder / f"{task_id}.yaml"
        yaml_path.write_text(_fill(_template("task.yaml.tmpl"), values), encoding="utf-8")
        board = folder / f"{task_id}{LEADERBOARD_SUFFIX}"
        board.write_text(_template("leaderboard.csv.tmpl"), encoding="utf-8")
        written += [yaml_path, board]
    forget_tasks()
    return written
