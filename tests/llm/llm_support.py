"""Helpers the gateway tests import by name (a plain module, unique across the test folders)."""

from __future__ import annotations

import http.client
import json
import time
from pathlib import Path
from typing import Any

from rexmle.llm.gateway import Gateway, RunLink


def jsonl_lines(path: Path, expected: int) -> list[dict[str, Any]]:
    """The JSON lines of ``path`` once ``expected`` are written (the gateway writes a call's
    lines after its answer).
    """
    deadline = time.monotonic() + 30
    found: list[str] = []
    while time.monotonic() < deadline:
        if path.is_file():
            found = path.read_text().splitlines()
            if len(found) >= expected:
                break
        time.sleep(0.05)
    assert len(found) == expected, found
    return [json.loads(x) for x in found]


def usage_lines(link: RunLink, expected: int) -> list[dict[str, Any]]:
    """The run's usage lines once ``expected`` are written."""
    return jsonl_lines(link.usage_path, expected)


def call(
    gateway: Gateway, path: str, body: dict[str, Any], headers: dict[str, str]
) -> tuple[int, str]:
    """POST ``body`` to the gateway; (status, text), the text as far as it came when the
    answer broke off.
    """
    conn = http.client.HTTPConnection("127.0.0.1", gateway.port, timeout=60)
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json", **headers})
    response = conn.getresponse()
    try:
        text = response.read().decode()
    except http.client.IncompleteRead as broken:
        text = broken.partial.decode()
    conn.close()
    return response.status, text
