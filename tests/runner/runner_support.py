"""Helpers the runner tests import by name (a plain module: several folders hold a conftest)."""

from __future__ import annotations

import os

import pytest

from rexmle.runner.sandbox.bwrap import bwrap_problem


def needs_bwrap() -> pytest.MarkDecorator:
    """Skip (with the probe's reason) where bubblewrap cannot run."""
    problem = bwrap_problem()
    return pytest.mark.skipif(problem is not None, reason=f"bwrap cannot run here: {problem}")


def marker_processes(marker: str) -> list[int]:
    """Pids of live processes whose command line contains ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat", encoding="utf-8") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state not in ("Z", "X"):
            found.append(int(entry))
    return found


COPY_SAMPLE = (
    'cp -r "$DATA_DIR/predictions" "$SUBMISSION_DIR/" && '
    'cp "$DATA_DIR/sample_submission.csv" "$SUBMISSION_DIR/submission.csv"'
)
"""Shell that writes the (valid) isles22 sample submission."""
