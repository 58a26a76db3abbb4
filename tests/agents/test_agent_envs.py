"""Agent environments: lock hashes, the cache location, pip's find-links, real offline installs."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from rexmle.agents import environments
from rexmle.agents.environments import (
    EnvInstallError,
    check_cache_location,
    cpu_torch_sources,
    env_names,
    export_git_tree,
    install_env,
    load_declaration,
    pip_find_links,
    resolve_env,
)
from rexmle.errors import SpecError

ENVS = Path(environments.__file__).parent / "envs"


def test_every_paper_agent_has_a_hashed_lock_per_torch_variant():
    assert env_names() == ["aide", "ml-master", "rdagent"]
    for name in env_names():
        for variant in ("cpu", "cuda"):
            lock = (ENVS / name / f"{variant}.lock").read_text()
            pins = [line for line in lock.splitlines() if line and line[0].isalpha()]
            assert pins, f"{name} {variant}: empty lock"
            # every pinned package is exact and is followed by its sha256 hashes
            assert all("==" in pin and pin.endswith("\\") for pin in pins)
            assert lock.count("--hash=sha256:") >= len(pins)
        cpu = (ENVS / name / "cpu.lock").read_text()
        cuda = (ENVS / name / "cuda.lock").read_text()
        assert "torch==2.13.0+cpu" in cpu
        assert "nvidia-" not in cpu
        assert "\ntorch==2.13.0 " in cuda
        assert "nvidia-cudnn" in cuda
        for module in ("monai==", "nibabel==", "simpleitk==", "scikit-image=="):
            assert module in cpu.lower(), f"{name}: {module} missing from the imaging runtime"
    assert "torchvision==0.28.0" in (ENVS / "aide" / "cuda.lock").read_text()


def test_lock_hash_is_the_sha256_of_the_lock_and_of_the_pinned_source(tmp_path: Path):
    aide = resolve_env("aide", variant="cpu", cache_dir=tmp_path)
    expected = hashlib.sha256((ENVS / "aide" / "cpu.lock").read_bytes()).hexdigest()
    assert aide.lock_hash == expected
    assert aide.root == tmp_path / f"aide-cpu-{expected[:16]}"
    assert aide.source is None
    master = resolve_env("ml-master", variant="cuda", cache_dir=tmp_path)
    pinned = load_declaration("ml-master").source
    assert pinned is not None
    digest = hashlib.sha256((ENVS / "ml-master" / "cuda.lock").read_bytes())
    digest.update(f"\n{pinned.commit}:{pinned.subdirectory}".encode())
    assert master.lock_hash == digest.hexdigest()
    assert master.source == (f"git {pinned.repository}@{pinned.commit}:rex-mle/agents/ML-Master")
    assert master.root.name.startswith("ml-master-cuda-")


def test_unknown_agent_and_variant_are_refused_with_the_known_names(monkeypatch):
    with pytest.raises(SpecError, match="known: aide, ml-master, rdagent"):
        resolve_env("openhands")
    monkeypatch.setenv("REXMLE_TORCH_VARIANT", "rocm")
    with pytest.raises(SpecError, match="'cpu' or 'cuda'"):
        resolve_env("aide")


def test_cache_default_and_refused_locations(monkeypatch, tmp_path: Path):
    monkeypatch.delenv("REXMLE_AGENTS_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert environments.agents_cache_dir() == tmp_path / "xdg" / "rexmle-agents"
    monkeypatch.setenv("REXMLE_AGENTS_DIR", str(tmp_path / "agents"))
    assert environments.agents_cache_dir() == tmp_path / "agents"
    with pytest.raises(SpecError, match="under /tmp: every sandbox has its own /tmp"):
        check_cache_location(Path("/tmp/agents"), hidden=())
    data = Path("/srv/rexmle-data")
    with pytest.raises(SpecError, match="hides that folder"):
        check_cache_location(data / "agents", hidden=(data,))
    check_cache_location(Path("/srv/rexmle-agents"), hidden=(data,))


def test_find_links_are_read_where_pip_reads_them(monkeypatch, tmp_path: Path):
    config = tmp_path / "pip.conf"
    config.write_text("[global]\nfind-links = /opt/wheels-a\n  file:///opt/wheels-b\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(config))
    monkeypatch.setenv("PIP_FIND_LINKS", "/opt/wheels-c /opt/wheels-a")
    monkeypatch.setenv("HOME", str(tmp_path))
    found = pip_find_links()
    for location in ("/opt/wheels-a", "file:///opt/wheels-b", "/opt/wheels-c"):
        assert location in found
    assert len(found) == len(set(found))


def test_cpu_torch_comes_from_a_local_wheel_folder_or_the_cpu_index(monkeypatch, tmp_path: Path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    # the machine's own pip configuration must not decide this test
    monkeypatch.setattr(environments, "pip_find_links", lambda: [str(wheels)])
    assert "--extra-index-url" in cpu_torch_sources()
    (wheels / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(b"")
    assert cpu_torch_sources() == ["--find-links", str(wheels)]


def test_install_is_real_offline_idempotent_and_keyed_by_the_lock(tiny_envs: Path, tmp_path: Path):
    env = resolve_env("tiny", variant="cpu", cache_dir=tmp_path / "cache")
    lines: list[str] = []
    first = install_env(env, index_url=None, progress=lines.append)
    assert first.installed
    assert env.is_installed()
    assert any("tiny-agent==1.0" in line for line in lines)  # uv's own progress came through
    done = subprocess.run(
        [str(env.python), "-c", "import tiny_agent; print(tiny_agent.VALUE)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "42"
    stamp = json.loads(env.stamp.read_text())
    assert stamp["lock_hash"] == env.lock_hash
    assert stamp["agent"] == "tiny"
    assert stamp["variant"] == "cpu"
    again = install_env(env, index_url=None)
    assert not again.installed
    assert env.root in env.readonly_mounts()
    assert env.interpreter_home() is not None
    assert env.interpreter_home().is_dir()
    # another lock is another folder; the first one stays
    lock = tiny_envs / "tiny" / "cpu.lock"
    lock.write_text(lock.read_text() + "# changed\n")
    changed = resolve_env("tiny", variant="cpu", cache_dir=tmp_path / "cache")
    assert changed.root != env.root
    assert not changed.is_installed()
    assert env.is_installed()


def test_a_hash_mismatch_or_failed_import_leaves_no_stamp(tiny_envs: Path, tmp_path: Path):
    lock = tiny_envs / "tiny" / "cpu.lock"
    lock.write_text("tiny-agent==1.0 \\\n    --hash=sha256:" + "0" * 64 + "\n")
    env = resolve_env("tiny", variant="cpu", cache_dir=tmp_path / "cache")
    with pytest.raises(EnvInstallError, match=r"installing cpu\.lock failed"):
        install_env(env, index_url=None)
    assert not env.stamp.exists()
    assert not env.is_installed()
    (tiny_envs / "tiny" / "env.yaml").write_text(
        "name: tiny\ndescription: t\ncheck_imports: [tiny_agent, not_installed_module]\n"
    )
    wheel = next((tmp_path / "wheels").glob("*.whl"))
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    lock.write_text(f"tiny-agent==1.0 \\\n    --hash=sha256:{digest}\n")
    env = resolve_env("tiny", variant="cpu", cache_dir=tmp_path / "cache")
    with pytest.raises(EnvInstallError, match="not_installed_module"):
        install_env(env, index_url=None)
    assert not env.is_installed()


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_pinned_source_export_keeps_modes_and_leaves_out_only_optional_missing_blobs(
    tmp_path: Path,
):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    agent = repo / "agents" / "Master"
    (agent / "assets").mkdir(parents=True)
    (agent / "main.py").write_text("print('hi')\n")
    (agent / "run.sh").write_text("#!/bin/sh\n")
    (agent / "run.sh").chmod(0o755)
    (agent / "assets" / "figure.pdf").write_bytes(b"%PDF big figure")
    (repo / "outside.txt").write_text("not exported\n")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c")
    commit = _git(repo, "rev-parse", "HEAD")
    blob = _git(repo, "rev-parse", f"{commit}:agents/Master/assets/figure.pdf")
    # a mirror without its largest files: the figure's object is absent
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    target = tmp_path / "src"
    left_out = export_git_tree(str(repo), commit, "agents/Master", target, optional=["assets/"])
    assert left_out == ["assets/figure.pdf"]
    assert (target / "main.py").read_text() == "print('hi')\n"
    assert (target / "run.sh").stat().st_mode & 0o111
    assert not (target / "outside.txt").exists()
    with pytest.raises(EnvInstallError, match=r"does not hold agents/Master/assets/figure\.pdf"):
        export_git_tree(str(repo), commit, "agents/Master", tmp_path / "src2", optional=[])
    with pytest.raises(EnvInstallError, match="has no agents/Nothing"):
        export_git_tree(str(repo), commit, "agents/Nothing", tmp_path / "src3", optional=[])
