"""Fixtures for the agent tests: a tiny agent environment locked to a local wheel, a task
workspace for the adapters.
"""

from __future__ import annotations

import base64
import hashlib
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from rexmle.agents import environments
from rexmle.runner.workspace import Workspace, build_workspace, remove_tree

VALIDATION_URL = "http://127.0.0.1:4321/validate"
"""The validation URL the adapters' workspaces name (nothing listens there)."""


@pytest.fixture
def workspace(prepared_mini, tmp_path: Path) -> Workspace:
    """The workspace of an isles22 mini run, as an adapter sees it."""
    dirs = prepared_mini("isles22")
    return build_workspace(
        tmp_path / "ws",
        task_id="isles22",
        public_dir=dirs.public,
        time_limit_s=43200,
        validation={
            "url": VALIDATION_URL,
            "max_upload_bytes": 10**8,
            "max_requests_per_minute": 30,
        },
        data_mode="copy",
    )


def _wheel(folder: Path, name: str, version: str, module_source: str) -> Path:
    """A minimal, valid pure-Python wheel (PEP 427) with RECORD hashes."""
    dist = f"{name.replace('-', '_')}-{version}"
    files = {
        f"{name.replace('-', '_')}/__init__.py": module_source.encode(),
        f"{dist}.dist-info/METADATA": (
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        ).encode(),
        f"{dist}.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = []
    for path, content in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(content).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(content)}")
    record.append(f"{dist}.dist-info/RECORD,,")
    files[f"{dist}.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, content in files.items():
            archive.writestr(path, content)
    return wheel


@pytest.fixture
def tiny_envs(monkeypatch, tmp_path: Path) -> Path:
    """An envs folder with one agent 'tiny' locked to a local wheel, pip finding it offline."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    wheel = _wheel(wheels, "tiny-agent", "1.0", "VALUE = 42\n")
    envs = tmp_path / "envs"
    (envs / "tiny").mkdir(parents=True)
    (envs / "tiny" / "env.yaml").write_text(
        "name: tiny\ndescription: test agent\ncheck_imports: [tiny_agent]\n"
    )
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    (envs / "tiny" / "cpu.lock").write_text(f"tiny-agent==1.0 \\\n    --hash=sha256:{digest}\n")
    monkeypatch.setattr(environments, "_envs_folder", lambda: envs)
    monkeypatch.setattr(environments, "pip_find_links", lambda: [str(wheels)])
    return envs


@pytest.fixture
def agents_cache_outside_tmp() -> Iterator[Path]:
    """An agents cache folder outside /tmp (``agents install`` refuses one under it), in the
    checkout's ignored ``build/``, or under ``~/.cache`` for a checkout that lies in /tmp;
    removed afterwards.
    """
    from rexmle.agents.environments import check_cache_location
    from rexmle.errors import SpecError

    candidates = (
        Path(__file__).resolve().parents[2] / "build",
        Path.home() / ".cache" / "rexmle-tests",
    )
    for root in candidates:
        try:
            check_cache_location(root, hidden=())
        except SpecError:
            continue
        break
    else:
        pytest.skip(f"no folder outside /tmp for an agents cache among {candidates}")
    root.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="test-agents-", dir=root))
    yield folder / "agents"
    remove_tree(folder)
