"""Every family is self-contained: a renamed copy works after its original folder is deleted.

For each family, the copy (in a temporary copy of the package, never the repo) gets a new
family name and task ids by edits inside the copied folder only (its YAMLs' ``id``/``family``
and its leaderboard files' names); the original folder is then removed, so a copy that still
imported its original's modules would fail. The copy must be listed, prepare with ``--mini`` and
grade its gold exactly as the original grades its own (both fixtures made without a secret,
so that their bytes are the same).
"""

from __future__ import annotations

import json
import shutil
import sys

import pytest
import yaml
from test_scaffold import _cli, _package_copy, _run

from rexmle.grading import grade_submission
from rexmle.tasks.registry import all_tasks

FAMILIES = sorted({spec.family for spec in all_tasks().values()})


def _first_task(family: str) -> str:
    return min(t for t, spec in all_tasks().items() if spec.family == family)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_renamed_copy_of_the_family_works_without_its_original(
    family: str, tmp_path, prepared_mini
) -> None:
    root = _package_copy(tmp_path)
    challenges = root / "rexmle" / "challenges"
    copy = challenges / f"{family}_copy"
    shutil.copytree(challenges / family, copy)
    shutil.rmtree(challenges / family)
    for path in sorted(copy.glob("*.yaml")):
        if path.name == "solutions.yaml":  # write-ups name the original's tasks: optional
            path.unlink()
            continue
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
        old_id = spec["id"]
        spec.update(id=f"copy-{old_id}", family=copy.name)
        if spec.get("shared_raw"):
            spec["shared_raw"] = f"copy-{spec['shared_raw']}"
        path.unlink()
        (copy / f"copy-{old_id}.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
        (copy / f"{old_id}.leaderboard.csv").rename(copy / f"copy-{old_id}.leaderboard.csv")
    task_id = _first_task(family)
    copied = f"copy-{task_id}"
    listed = json.loads(_cli(root, tmp_path, "list", "--json").stdout)
    assert copied in {entry["id"] for entry in listed}
    assert not any(entry["id"] == task_id for entry in listed)
    data = tmp_path / "data"
    prepare = (
        "import sys; from pathlib import Path; from rexmle.preparation import prepare_task; "
        "prepare_task(sys.argv[1], data_dir=Path(sys.argv[2]), mini=True, fixture_secret=None)"
    )
    _run(root, tmp_path, sys.executable, "-c", prepare, copied, str(data))
    graded = tmp_path / "grade.json"
    gold = data / copied / "private" / "gold"
    _cli(root, tmp_path, "grade", copied, str(gold), "--data-dir", str(data), "--json", str(graded))
    report = json.loads(graded.read_text(encoding="utf-8"))
    dirs = prepared_mini(task_id)
    original = grade_submission(task_id, dirs.gold, data_dir=dirs.root.parent, workers=1)
    assert report["valid"] is True
    assert report["metrics"] == original.metrics
    assert report["ranking"] == original.ranking.model_dump(mode="json")
