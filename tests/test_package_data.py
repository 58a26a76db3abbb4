"""The built wheel and sdist carry every data file the package reads at run time.

An installed ``rexmle`` reads its declarations through ``importlib.resources``: every task YAML,
leaderboard and description, each challenge's ``solutions.yaml``, the experiment presets, the
LLM configs (``rexmle/llm/standin_llm.yaml`` among them) and the agents' locks. A file the
``[tool.setuptools.package-data]`` globs miss is absent from an install, though every test of a
checkout still passes. The test copies the tracked files of the checkout, builds both
distributions from the copy with the checkout's own setuptools (no network, no build
isolation), and compares their members with ``git ls-files``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

MUST_SHIP = (
    "rexmle/llm/standin_llm.yaml",
    "rexmle/llm/default_llm.yaml",
    "rexmle/runner/experiment_presets/paper-grid.yaml",
)


def _tracked() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout: the tracked files are the reference")
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    return [name for name in listed.split("\0") if name and (ROOT / name).is_file()]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], set[str], set[str]]:
    """(tracked files under rexmle/, wheel members, sdist members relative to its root)."""
    tracked = _tracked()
    source = tmp_path_factory.mktemp("source")
    for name in tracked:
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    out = tmp_path_factory.mktemp("dist")
    names = []
    for hook in ("build_wheel", "build_sdist"):  # one process each: setuptools keeps state
        done = subprocess.run(
            [sys.executable, "-c",
             f"import sys; from setuptools import build_meta; print(build_meta.{hook}(sys.argv[1]))",
             str(out)],
            cwd=source, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-4000:]
        names.append(done.stdout.strip().splitlines()[-1])
    wheel_name, sdist_name = names
    with zipfile.ZipFile(out / wheel_name) as wheel:
        wheel_members = set(wheel.namelist())
    with tarfile.open(out / sdist_name) as sdist:
        top = sdist_name.removesuffix(".tar.gz")
        sdist_members = {m.name.removeprefix(f"{top}/") for m in sdist.getmembers() if m.isfile()}
    package = [name for name in tracked if name.startswith("rexmle/")]
    return package, wheel_members, sdist_members


def test_every_tracked_package_file_is_in_the_wheel(built) -> None:
    package, wheel, _ = built
    missing = [name for name in package if name not in wheel]
    assert not missing, f"package-data globs in pyproject.toml miss: {missing}"


def test_every_tracked_package_file_is_in_the_sdist(built) -> None:
    package, _, sdist = built
    missing = [name for name in package if name not in sdist]
    assert not missing, f"the sdist misses: {missing}"


def test_the_files_read_at_run_time_are_tracked_and_shipped(built) -> None:
    package, wheel, _ = built
    families = ROOT / "rexmle" / "challenges"
    written_up = sorted(p.parent.name for p in families.glob("*/solutions.yaml"))
    assert len(written_up) >= 10  # the ten shipped challenges (a scaffolded one has none yet)
    needed = [f"rexmle/challenges/{family}/solutions.yaml" for family in written_up]
    needed += [f"rexmle/runner/experiment_presets/{p.name}"
               for p in (ROOT / "rexmle" / "runner" / "experiment_presets").glob("*.yaml")]  # fmt: skip
    needed += list(MUST_SHIP)
    assert len(needed) >= 15
    for name in needed:
        assert name in package, f"{name} is not tracked"
        assert name in wheel, f"{name} is not in the wheel"
