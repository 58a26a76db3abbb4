"""An agent's environment inside the bwrap sandbox: visible only when the request names it,
and read-only even to an agent that tries to change it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rexmle.runner.sandbox import SandboxRequest
from rexmle.runner.sandbox.bwrap import BwrapSandbox, bwrap_problem

pytestmark = pytest.mark.skipif(
    bwrap_problem() is not None, reason=f"bwrap cannot run here: {bwrap_problem()}"
)

PROBE = """
import pathlib, sys
lib = pathlib.Path(sys.argv[1])
print("read:", (lib / "module.py").read_text().strip())
try:
    (lib / "module.py").write_text("tampered")
    print("write: allowed")
except OSError as error:
    print("write: refused", error.errno)
"""


def run_probe(tmp_path: Path, env_folder: Path, readonly: tuple[Path, ...], name: str) -> str:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    request = SandboxRequest(
        argv=[sys.executable, "-c", PROBE, str(env_folder)],
        env={"PATH": "/usr/bin:/bin"},
        workspace=workspace,
        stdout_path=tmp_path / f"{name}.out",
        stderr_path=tmp_path / f"{name}.err",
        time_limit_s=60,
        readonly=readonly,
    )
    result = BwrapSandbox().run(request)
    assert result.error is None
    return (tmp_path / f"{name}.out").read_text() + (tmp_path / f"{name}.err").read_text()


def test_environment_is_shown_read_only_and_only_when_asked(tmp_path: Path):
    env_folder = tmp_path / "agents" / "aide-cpu-0123"
    env_folder.mkdir(parents=True)
    (env_folder / "module.py").write_text("VALUE = 1")
    shown = run_probe(tmp_path, env_folder, (env_folder,), "shown")
    assert "read: VALUE = 1" in shown
    assert "write: refused 30" in shown  # EROFS
    assert (env_folder / "module.py").read_text() == "VALUE = 1"
    hidden = run_probe(tmp_path, env_folder, (), "hidden")
    assert "read:" not in hidden
    assert "FileNotFoundError" in hidden
