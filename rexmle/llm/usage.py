"""A run's LLM totals, summed from its ``llm_usage.jsonl`` (what run.json records under ``llm``)."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from rexmle.llm.metering import OVERFLOW_SUFFIX, SUMMED_FIELDS, USAGE_TRUNCATED_MARK

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
    max_calls_in_flight: int | None = None
    reserve_output_tokens: int | None = None
    """Output tokens reserved for a call without ``max_tokens`` while it is in flight."""
    stopped: str | None = None
    """Why the gateway stopped the run (budget spent, rate cap), or None."""
    calls_unfinished: int = 0
    """Calls still in flight when the totals were taken (their cost is not in ``cost_usd``)."""
    usage_truncated: bool = False
    """The usage log reached its size cap; the later calls are summed from its overflow file."""


def _is_truncation_mark(line: object) -> bool:
    return (
        isinstance(line, dict)
        and list(line) == ["note"]
        and str(line["note"]).startswith(USAGE_TRUNCATED_MARK)
    )


def summarize_usage(path: Path, **settings: object) -> LlmTotals:
    """Sum the usage lines in ``path`` and its overflow file (a missing file: no calls);
    ``settings`` are the other fields of :class:`LlmTotals` (limits, ``stopped``).

    Raises:
        ValueError: a line is not a JSON object of the usage format, or the overflow file is
            broken (names the line or the file).
    """
    totals = LlmTotals.model_validate(settings)
    if not path.is_file():
        return totals
    with open(path, encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                line = json.loads(text)
                if _is_truncation_mark(line):
                    totals.usage_truncated = True
                    continue
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
    overflow = path.with_name(path.name + OVERFLOW_SUFFIX)
    if totals.usage_truncated and overflow.is_file():
        try:
            sums = json.loads(overflow.read_text(encoding="utf-8"))
            for name in ("calls", "calls_refused", "calls_failed", *SUMMED_FIELDS):
                value = float(sums[name]) if name == "cost_usd" else int(sums[name])
                setattr(totals, name, getattr(totals, name) + value)
        except (ValueError, KeyError, TypeError) as error:
            msg = f"{overflow} is not a usage overflow file: {error}"
            raise ValueError(msg) from error
    totals.cost_usd = round(totals.cost_usd, 9)
    return totals
