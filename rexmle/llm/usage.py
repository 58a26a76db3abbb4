"""A run's LLM totals, summed from its ``llm_usage.jsonl`` (what run.json records under ``llm``)."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

USAGE_FILE = "llm_usage.jsonl"
TRAJECTORY_FILE = "llm_trajectory.jsonl"


class LlmTotals(BaseModel):
    """The ``llm`` entry of run.json."""

    calls: int = 0
    """Every call the run made through the gateway (answered, failed or refused)."""
    calls_refused: int = 0
    calls_failed: int = 0
    tokens_in: int = 0
    """Input tokens, cached ones included."""
    tokens_out: int = 0
    """Output tokens, reasoning ones included."""
    tokens_cached: int = 0
    tokens_reasoning: int = 0
    cost_usd: float = 0.0
    budget_usd: float | None = None
    max_calls_per_minute: int | None = None
    stopped: str | None = None
    """Why the gateway stopped the run (budget spent, rate cap), or None."""


def summarize_usage(
    path: Path,
    *,
    budget_usd: float | None = None,
    max_calls_per_minute: int | None = None,
    stopped: str | None = None,
) -> LlmTotals:
    """Sum the usage lines in ``path`` (a missing file: no calls).

    Raises:
        ValueError: a line is not a JSON object of the usage format (names the line).
    """
    totals = LlmTotals(
        budget_usd=budget_usd, max_calls_per_minute=max_calls_per_minute, stopped=stopped
    )
    if not path.is_file():
        return totals
    with open(path, encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                line = json.loads(text)
                status = line["status"]
                totals.calls += 1
                totals.calls_refused += status == "refused"
                totals.calls_failed += status == "error"
                totals.tokens_in += int(line["tokens_in"])
                totals.tokens_out += int(line["tokens_out"])
                totals.tokens_cached += int(line["tokens_cached"])
                totals.tokens_reasoning += int(line["tokens_reasoning"])
                totals.cost_usd += float(line["cost_usd"])
            except (ValueError, KeyError, TypeError) as error:
                msg = f"{path} line {number} is not a usage line: {error}"
                raise ValueError(msg) from error
    totals.cost_usd = round(totals.cost_usd, 9)
    return totals
