"""Scripted LLM replies for the end-to-end agent runs: code the agent executes, and reviews.

A completion request that offers tools (AIDE's ``submit_review``, ML-Master's review function)
is answered with one call of the first tool, its arguments filled from the tool's JSON schema:
no bug, a submission present, a metric of 0.5, higher is better. Any other request is answered
with a plan and :data:`SOLUTION` in a Python code block. The solution is real code: it writes the
sample submission for the test ids (``submission.csv`` and the files it names) into
``./working/`` (AIDE) and ``./submission/`` (ML-Master) and prints its validation metric.
"""

from __future__ import annotations

from typing import Any

SOLUTION = """\
import csv
import shutil
from pathlib import Path

data = Path("input")
sample = data / "sample_submission.csv"
for out in (Path("working"), Path("submission")):
    out.mkdir(exist_ok=True)
    shutil.copyfile(sample, out / "submission.csv")
    with open(sample, newline="") as handle:
        for row in csv.reader(handle):
            for cell in row:
                source = data / cell
                if cell and cell != "sample_submission.csv" and source.is_file():
                    (out / cell).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(source, out / cell)
print("Validation Dice: 0.5")
"""

REVIEW_VALUES: dict[str, Any] = {
    "is_bug": False,
    "has_csv_submission": True,
    "lower_is_better": False,
    "metric": 0.5,
}


def tool_arguments(tool: dict[str, Any]) -> dict[str, Any]:
    """Arguments for an OpenAI-style tool: known review fields, else by JSON type."""
    schema = tool.get("function", tool).get("parameters", {})
    arguments: dict[str, Any] = {}
    for name, field in schema.get("properties", {}).items():
        kind = field.get("type")
        if name in REVIEW_VALUES:
            arguments[name] = REVIEW_VALUES[name]
        elif kind in ("number", "integer"):
            arguments[name] = 0.5 if kind == "number" else 1
        elif kind == "boolean":
            arguments[name] = False
        else:
            arguments[name] = "The script ran and wrote the submission."
    return arguments


def reply_for(body: dict[str, Any]) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    """(text, tool calls) answering one chat-completions request body."""
    tools = body.get("tools") or []
    if tools:
        tool = tools[0]
        name = tool.get("function", tool)["name"]
        return "", [(name, tool_arguments(tool))]
    text = (
        "Plan: copy the sample submission for every test case, then report the metric.\n\n"
        f"```python\n{SOLUTION}```\n"
    )
    return text, []
