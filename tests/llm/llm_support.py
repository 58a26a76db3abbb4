"""Helpers the gateway tests import by name (a plain module, unique across the test folders)."""

from __future__ import annotations

import json
import time
from typing import Any

from rexmle.llm.gateway import RunLink


def usage_lines(link: RunLink, expected: int) -> list[dict[str, Any]]:
    """The run's usage lines once ``expected`` are written (the callback runs after the answer)."""
    deadline = time.monotonic() + 30
    found: list[str] = []
    while time.monotonic() < deadline:
        if link.usage_path.is_file():
            found = link.usage_path.read_text().splitlines()
            if len(found) >= expected:
                break
        time.sleep(0.05)
    assert len(found) == expected, found
    return [json.loads(x) for x in found]
