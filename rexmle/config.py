"""Where ReX-MLE keeps data and runs.

Data dir: the ``--data-dir`` option, else the ``REXMLE_DATA_DIR`` environment variable, else
``~/.cache/rexmle``. Runs dir: ``--runs-dir``, else ``REXMLE_RUNS_DIR``, else ``./runs``.
"""

from __future__ import annotations

import os
from pathlib import Path

DATA_DIR_ENV = "REXMLE_DATA_DIR"
RUNS_DIR_ENV = "REXMLE_RUNS_DIR"


def resolve_data_dir(override: Path | None = None) -> Path:
    """Return the data dir: ``override`` if given, else $REXMLE_DATA_DIR, else ~/.cache/rexmle."""
    if override is not None:
        return Path(override).expanduser().resolve()
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env).expanduser().resolve()
    return (Path.home() / ".cache" / "rexmle").resolve()


def resolve_runs_dir(override: Path | None = None) -> Path:
    """Return the runs dir: ``override`` if given, else $REXMLE_RUNS_DIR, else ./runs."""
    if override is not None:
        return Path(override).expanduser().resolve()
    env = os.environ.get(RUNS_DIR_ENV)
    if env:
        return Path(env).expanduser().resolve()
    return (Path.cwd() / "runs").resolve()
