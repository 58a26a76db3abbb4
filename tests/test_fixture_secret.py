"""The mini ground truth cannot be rebuilt from the code: a secret per prepare seeds the fixture."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from rexmle.agents.registry import load_agent
from rexmle.preparation import MINI_SECRET_FILE, fixture_seed, prepare_task
from rexmle.records.runs import RunConfig, run_dir
from rexmle.runner.executor import RunJob, RunOptions, execute_run
from rexmle.runner.sandbox.local import LocalSandbox
from rexmle.runner.settings import RunSettings
from rexmle.tasks.registry import all_tasks

ATTACK = """\
import os, shutil, tempfile
from pathlib import Path
from rexmle.tasks.jobs import PrepareJob
from rexmle.tasks.registry import load_task
impl = load_task(os.environ["TASK_ID"])
work = Path(tempfile.mkdtemp())
(work / "raw").mkdir(); (work / "public").mkdir(); (work / "private").mkdir()
impl.make_fixture(work / "raw", seed=0)
job = PrepareJob(work / "raw", work / "public", work / "private", impl.spec, True)
impl.required_function("prepare")(job)
shutil.copytree(work / "private" / "gold", os.environ["SUBMISSION_DIR"], dirs_exist_ok=True)
print("submitted a regenerated gold")
"""


def gold_hashes(prepared_json: Path) -> dict[str, str]:
    files = json.loads(prepared_json.read_text())["files"]["private"]
    return {name: digest for name, digest in files.items() if name.startswith("gold/")}


def attack_dice(data_dir: Path, tmp_path: Path) -> float | None:
    """Run the regenerate-the-fixture attack as a real agent (local sandbox: the package is
    importable) and return the dice its submission scored.
    """
    script = tmp_path / "attack.py"
    script.write_text(ATTACK)
    spec = load_agent("command").with_overrides(
        command=f"{sys.executable} {script}", time_limit_s=120, network=False
    )
    config = RunConfig(
        task="isles22", task_spec_version=1, agent=spec, seed=0, time_limit_s=120, mini=True
    )
    runs = tmp_path / f"runs-{data_dir.name}"
    folder = run_dir(runs, "test", "isles22", spec.id, 0)
    settings = RunSettings(runs_dir=runs, data_dir=data_dir, grade_workers=1)
    options = RunOptions(settings=settings, sandbox=LocalSandbox())
    record = execute_run(RunJob(config=config, group="test", folder=folder), options)
    assert record.grade is not None, record
    assert record.grade.valid, record
    return record.grade.headline_value


def test_regenerated_fixture_no_longer_reproduces_the_gold(tmp_path: Path):
    fixed, _ = prepare_task("isles22", data_dir=tmp_path / "fixed", mini=True, fixture_secret=None)
    secret, _ = prepare_task("isles22", data_dir=tmp_path / "secret", mini=True)
    # without a secret (the old behaviour) the attack rebuilds the answers exactly ...
    assert attack_dice(fixed.root.parent, tmp_path) == 1.0
    # ... with the per-prepare secret it does not
    dice = attack_dice(secret.root.parent, tmp_path)
    assert dice is not None
    assert dice < 0.9


def test_secret_lives_in_private_only_and_differs_per_prepare(tmp_path: Path):
    first, _ = prepare_task("isles22", data_dir=tmp_path / "a", mini=True)
    second, _ = prepare_task("isles22", data_dir=tmp_path / "b", mini=True)
    secret_hex = json.loads((first.private / MINI_SECRET_FILE).read_text())["secret_hex"]
    assert len(bytes.fromhex(secret_hex)) == 16
    assert secret_hex != json.loads((second.private / MINI_SECRET_FILE).read_text())["secret_hex"]
    assert gold_hashes(first.prepared_json) != gold_hashes(second.prepared_json)
    assert secret_hex not in first.prepared_json.read_text()
    for path in first.public.rglob("*"):
        assert not path.is_file() or secret_hex.encode() not in path.read_bytes(), path
    assert json.loads(first.prepared_json.read_text())["mini_seeded_by_secret"] is True


def test_no_secret_gives_the_fixed_fixture_every_time(tmp_path: Path):
    a, _ = prepare_task("isles22", data_dir=tmp_path / "a", mini=True, fixture_secret=None)
    b, _ = prepare_task("isles22", data_dir=tmp_path / "b", mini=True, fixture_secret=None)
    assert gold_hashes(a.prepared_json) == gold_hashes(b.prepared_json)
    assert not (a.private / MINI_SECRET_FILE).exists()
    assert fixture_seed(None) == 0
    assert fixture_seed(bytes([1] * 16)) == int("01" * 16, 16)


def test_a_fixture_made_without_secret_is_remade_when_one_is_asked(tmp_path: Path):
    fixed, _ = prepare_task("isles22", data_dir=tmp_path, mini=True, fixture_secret=None)
    before = gold_hashes(fixed.prepared_json)
    again, worked = prepare_task("isles22", data_dir=tmp_path, mini=True, force=True)
    assert worked
    assert gold_hashes(again.prepared_json) != before
    assert (again.private / MINI_SECRET_FILE).is_file()


SECRETS = [bytes([k]) * 16 for k in range(1, 9)]
"""Fixed secrets, so the test is deterministic: a gold with few possible values (a TopCoW test
case's edge lists take one of 4) equals the fixed one for some secrets by chance; it must not for
all of them."""


@pytest.mark.slow
@pytest.mark.parametrize("task_id", sorted(all_tasks()))
def test_every_task_gold_depends_on_the_secret(task_id: str, tmp_path: Path):
    fixed, _ = prepare_task(task_id, data_dir=tmp_path / "a", mini=True, fixture_secret=None)
    fixed_gold = gold_hashes(fixed.prepared_json)
    golds = []
    for k, secret in enumerate(SECRETS):
        seeded, _ = prepare_task(
            task_id, data_dir=tmp_path / f"s{k}", mini=True, fixture_secret=secret
        )
        golds.append(gold_hashes(seeded.prepared_json))
        if golds[-1] != fixed_gold:
            break
    assert any(gold != fixed_gold for gold in golds), f"{len(golds)} secrets gave the fixed gold"
