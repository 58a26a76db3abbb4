"""Scripted LLM replies for R&D-Agent's data-science loop (its prompts ask for JSON answers).

An answer follows the request: a ``json_schema`` response format is filled from its schema;
otherwise the LAST JSON template in the system prompt (a ``{`` ... ``}`` block whose lines are
``"key": description``, nested blocks included) is filled: ``True or False`` descriptions give
``true``, integers ``1``, everything else a short text, and a key that asks for code gets
:data:`SOLUTION`. A request with no template gets the solution in a
Python code block.
"""

from __future__ import annotations

import json
import re
from typing import Any

SOLUTION = """\
import csv
import shutil
from pathlib import Path

data = Path("workspace_input")
sample = data / "sample_submission.csv"
shutil.copyfile(sample, "submission.csv")
with open(sample, newline="") as handle:
    for row in csv.reader(handle):
        for cell in row:
            source = data / cell
            if cell and cell != "sample_submission.csv" and source.is_file():
                Path(cell).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, cell)
with open("scores.csv", "w", newline="") as handle:
    csv.writer(handle).writerows([["", "Dice"], ["sample_copy", 0.5], ["ensemble", 0.5]])
print("Dice on the validation split: 0.5")
"""
"""R&D-Agent's code: reads ``./workspace_input/``, writes ``submission.csv`` (+ the files it
names) and ``scores.csv`` with an ``ensemble`` row, as its prompts ask."""

KEY_LINE = re.compile(r'^\s*"([^"\n]+)"\s*:\s*(.*?),?\s*$')


PROBLEM_NAME = "Scripted baseline"
PROBLEM_KEY = re.compile(r"^problem name \d+ \(")
ONE_OF = re.compile(r"one of \(([^)]*)\)", re.IGNORECASE)


def _key(key: str) -> str:
    """Problem-name placeholders become one fixed name (later prompts must repeat it)."""
    return PROBLEM_NAME if PROBLEM_KEY.match(key) else key


FIXED = {"Metric Name": "Dice", "Metric Direction": True}
"""Scenario answers later checks rely on (``scores.csv`` must name the metric)."""


def _value(key: str, description: str) -> Any:
    if key in FIXED:
        return FIXED[key]
    lowered = description.lower()
    choices = ONE_OF.search(description)
    if choices:
        return choices.group(1).split(",")[0].strip().strip("'\"")
    if key.endswith("_score") or "score" in key.lower():
        return 8
    if key.lower() == "code" and "analysis" not in lowered:
        return SOLUTION
    if "true or false" in lowered or "true/false" in lowered or lowered in ("true", "false"):
        return True
    if "integer" in lowered or re.fullmatch(r"\d+", description.strip()):
        return 1
    if description.startswith("["):
        return []
    return "scripted"


def _template_lines(prompt: str) -> list[str] | None:
    """Lines of the last top-level ``{`` ... ``}`` block of ``prompt``."""
    lines = prompt.splitlines()
    end = max((i for i, line in enumerate(lines) if line.strip() in ("}", "}```")), default=-1)
    if end < 0:
        return None
    depth = 0
    for start in range(end, -1, -1):
        depth += lines[start].count("}") - lines[start].count("{")
        if depth == 0:
            return lines[start : end + 1]
    return None


def fill_template(prompt: str) -> dict[str, Any] | None:
    """The object the last JSON template of ``prompt`` describes (None: there is none)."""
    block = _template_lines(prompt)
    if block is None:
        return None
    root: dict[str, Any] = {}
    stack = [root]
    for line in block[1:-1]:
        match = KEY_LINE.match(line)
        if match and match.group(2).startswith("{") and not match.group(2).endswith("}"):
            child: dict[str, Any] = {}
            stack[-1][_key(match.group(1))] = child
            stack.append(child)
        elif match:
            stack[-1][_key(match.group(1))] = _value(match.group(1), match.group(2))
        elif line.strip().startswith("}") and len(stack) > 1:
            stack.pop()
    return root or None


def _schema_value(schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    if kind == "object":
        return {k: _schema_value(v) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return []
    if kind == "boolean":
        return True
    if kind in ("number", "integer"):
        return 1
    if "enum" in schema:
        return schema["enum"][0]
    return "scripted"


def reply_for(body: dict[str, Any]) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    """(text, tool calls) answering one of R&D-Agent's chat-completions requests."""
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        schema = response_format.get("json_schema", {}).get("schema", {})
        return json.dumps(_schema_value(schema)), []
    prompt = "\n".join(
        str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "system"
    )
    filled = fill_template(prompt)
    if filled is not None:
        return json.dumps(filled), []
    return f"```python\n{SOLUTION}```\n", []
