"""A real-data prepare whose counts differ from the declaration, corrected as the message says.

The whole path runs as a user would meet it, in a copy of the package (never the repository):
``rexmle prepare usenhance --from DIR`` with the source saved under another name, recognised by
the members it holds; the count check then stops with the pairs found per organ folder and the
one line of the declaration to set, by file and line number. That line, and nothing else, is
changed in the copy's YAML; the next prepare passes and its split is exactly what the declared
rule gives on the pairs found, computed here independently.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

from test_scaffold import _package_copy

from rexmle.challenges.usenhance.prepare import ORGANS, discover_pairs
from rexmle.split import shuffle_split
from rexmle.tasks.registry import get_task, load_task

TASK = "usenhance"
YAML = f"rexmle/challenges/{TASK}/{TASK}.yaml"


def _cli(root: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "500"}
    return subprocess.run(
        [sys.executable, "-m", "rexmle.cli", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _browser_download(tmp_path: Path) -> tuple[Path, Path]:
    """The mini fixture zipped as the real archive is, saved under a browser's name."""
    tree = tmp_path / "tree"
    load_task(TASK).make_fixture(tree, seed=0)
    shared = tmp_path / "downloads"
    shared.mkdir()
    archive = shared / "train_dataset (2).zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted(tree.rglob("*")):
            zf.write(path, path.relative_to(tree).as_posix())
    return tree, shared


def test_a_count_mismatch_is_corrected_in_the_declaration_and_the_split_follows_the_rule(
    tmp_path: Path,
) -> None:
    root = _package_copy(tmp_path)
    tree, shared = _browser_download(tmp_path)
    data = tmp_path / "data"
    args = ["prepare", TASK, "--from", str(shared), "--allow-unpinned", "--data-dir", str(data)]

    first = _cli(root, tmp_path, *args)
    said = " ".join((first.stdout + first.stderr).split())
    assert first.returncode == 2, said
    assert "no file named 'train_dataset.zip'" in said
    assert "train_dataset (2).zip, recognised by content: it holds 'train_datasets/" in said
    per_organ = ", ".join(f"train_datasets/{organ} 4" for organ in ORGANS)
    assert f"cases found: {per_organ} (total 20)" in said
    assert "the declaration expects 1500 (1200 / 300)" in said
    wanted = re.search(rf"the one line {re.escape(YAML)}:(\d+) to 'expected_cases: (\d+)'", said)
    assert wanted is not None, said
    assert not (data / TASK / "prepared.json").exists()

    declaration = root / YAML
    before = declaration.read_text(encoding="utf-8").splitlines()
    number, total = int(wanted[1]), int(wanted[2])
    assert before[number - 1] == "  expected_cases: 1500"  # the named line is the declared count
    after = [*before[: number - 1], f"  expected_cases: {total}", *before[number:]]
    declaration.write_text("\n".join(after) + "\n", encoding="utf-8")

    second = _cli(root, tmp_path, *args)
    assert second.returncode == 0, second.stdout + second.stderr
    manifest = json.loads((data / TASK / "prepared.json").read_text(encoding="utf-8"))
    spec = get_task(TASK)
    rule = shuffle_split(
        list(discover_pairs(tree)),
        test_fraction=spec.split.test_fraction,
        seed=spec.split.seed,
        sort_keys=False,
    )
    assert (manifest["split"]["train"], manifest["split"]["test"]) == (rule.train, rule.test)
    assert len(rule.train) + len(rule.test) == total == 20
    assert manifest["found"] == {f"train_datasets/{organ}": 4 for organ in ORGANS}
    sources = json.loads((data / TASK / "raw" / ".rexmle-sources.json").read_text("utf-8"))
    (taken,) = sources["files"]
    assert taken["outcome"] == "from_dir"
    assert taken["path"].endswith("train_dataset (2).zip")
    assert taken["found_by"].startswith("by content: it holds 'train_datasets/")
