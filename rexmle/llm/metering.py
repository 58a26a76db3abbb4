"""Per-run metering inside the gateway: run tokens, usage lines, cost, budget and rate cap.

This module is copied next to the proxy's config and imported there (standard library only, no
``rexmle`` import): the harness registers a run by writing ``runs/<token id>.json`` into the
gateway's state folder (:func:`register`); the proxy's callback looks the token up, admits or
refuses each call (:meth:`RunMeter.admit`), appends one usage line per call to the run's
``llm_usage.jsonl`` and the bodies to its trajectory (:meth:`RunMeter.record`), and writes the
run's stop file once its budget is spent or its rate cap trips. The harness watches that file.

Definitions:
    cost_usd = ((tokens_in - tokens_cached) * input + tokens_cached * cached_input
                + tokens_out * output) / 1e6, prices in USD per 1M tokens; ``tokens_in`` counts
    the cached tokens and ``tokens_out`` the reasoning tokens (OpenAI's usage fields).
    Budget: a call is refused once the run's spent cost >= ``budget_usd``; calls already in
    flight finish, so the overshoot is at most one call per concurrent request.
    Rate cap: a call is refused when ``max_calls_per_minute`` calls were admitted in the
    60 s before it.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RATE_WINDOW_S = 60.0
TRUNCATED_MARK = "[rexmle: trajectory truncated at the size cap]"
REDACTED = "[redacted]"


def token_id(token: str) -> str:
    """The name a run token is registered under (sha256 prefix: the token is never on disk)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class Price:
    """USD per 1M tokens."""

    input: float
    cached_input: float
    output: float


def cost_usd(price: Price, *, tokens_in: int, tokens_cached: int, tokens_out: int) -> float:
    """The cost of one call (see the module docstring for the definition)."""
    uncached = max(0, tokens_in - tokens_cached)
    total = uncached * price.input + tokens_cached * price.cached_input + tokens_out * price.output
    return total / 1e6


@dataclass(frozen=True)
class RunEntry:
    """What the harness registers for one run."""

    run_id: str
    usage_path: str
    trajectory_path: str
    stop_path: str
    budget_usd: float | None
    max_calls_per_minute: int | None
    trajectory_max_bytes: int


@dataclass
class UsageLine:
    """One line of ``llm_usage.jsonl``: one call through the gateway."""

    time: str
    alias: str
    upstream_model: str
    status: str
    """``ok``, ``error`` (the upstream or LiteLLM failed) or ``refused`` (budget, rate cap)."""
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cached: int = 0
    tokens_reasoning: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    stream: bool = False
    dropped_params: list[str] = field(default_factory=list)
    error: str | None = None


class Refusal(Exception):
    """A call refused by the meter; ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def redact(text: str, secrets: list[str]) -> str:
    """``text`` with every secret of at least 8 characters replaced by ``[redacted]``."""
    for secret in secrets:
        if len(secret) >= 8:
            text = text.replace(secret, REDACTED)
    return text


class RunMeter:
    """The counters of one run inside the gateway (thread-safe)."""

    def __init__(self, entry: RunEntry, secrets: list[str]) -> None:
        self.entry = entry
        self.secrets = secrets
        self.spent_usd = 0.0
        self.calls = 0
        self.admitted: deque[float] = deque()
        self.trajectory_bytes = 0
        self.trajectory_truncated = False
        self.stopped: str | None = None
        self._lock = threading.Lock()

    def _stop(self, reason: str) -> None:
        if self.stopped is None:
            self.stopped = reason
            path = Path(self.entry.stop_path)
            partial = path.with_name(path.name + ".part")
            partial.write_text(reason + "\n", encoding="utf-8")
            os.replace(partial, path)

    def admit(self, now: float | None = None) -> None:
        """Count one call, or refuse it.

        Raises:
            Refusal: the budget is spent (403) or the rate cap is reached (429).
        """
        now = time.monotonic() if now is None else now
        with self._lock:
            budget = self.entry.budget_usd
            if budget is not None and self.spent_usd >= budget:
                reason = f"LLM budget of {budget:g} USD spent ({self.spent_usd:.4f} USD)"
                self._stop(reason)
                raise Refusal(403, f"rexmle gateway: {reason}; the run is being stopped")
            cap = self.entry.max_calls_per_minute
            while self.admitted and now - self.admitted[0] >= RATE_WINDOW_S:
                self.admitted.popleft()
            if cap is not None and len(self.admitted) >= cap:
                reason = f"LLM rate cap of {cap} calls per minute reached"
                self._stop(reason)
                raise Refusal(429, f"rexmle gateway: {reason}; the run is being stopped")
            self.admitted.append(now)
            self.calls += 1

    def record(self, line: UsageLine, trajectory: dict[str, Any] | None = None) -> None:
        """Append the usage line (and the call's bodies, within the size cap); stop the run
        once the budget is spent.
        """
        with self._lock:
            self.spent_usd += line.cost_usd
            text = redact(json.dumps(asdict(line)), self.secrets)
            with open(self.entry.usage_path, "a", encoding="utf-8") as handle:
                handle.write(text + "\n")
            if trajectory is not None:
                self._write_trajectory(trajectory)
            budget = self.entry.budget_usd
            if budget is not None and self.spent_usd >= budget:
                self._stop(f"LLM budget of {budget:g} USD spent ({self.spent_usd:.4f} USD)")

    def _write_trajectory(self, trajectory: dict[str, Any]) -> None:
        if self.trajectory_truncated:
            return
        text = redact(json.dumps(trajectory, default=str), self.secrets) + "\n"
        size = len(text.encode("utf-8"))
        with open(self.entry.trajectory_path, "a", encoding="utf-8") as handle:
            if self.trajectory_bytes + size > self.entry.trajectory_max_bytes:
                self.trajectory_truncated = True
                handle.write(json.dumps({"note": TRUNCATED_MARK}) + "\n")
                return
            handle.write(text)
        self.trajectory_bytes += size


class Registry:
    """The runs registered in a gateway state folder, looked up by token (cached meters)."""

    def __init__(self, state_dir: Path, secrets: list[str]) -> None:
        self.state_dir = state_dir
        self.secrets = secrets
        self._meters: dict[str, RunMeter] = {}
        self._lock = threading.Lock()

    def meter(self, token: str) -> RunMeter | None:
        """The run's meter, or None for a token that is not registered."""
        return self.meter_by_id(token_id(token), token)

    def meter_by_id(self, key: str, token: str | None = None) -> RunMeter | None:
        """The meter of the run registered under ``key`` (a :func:`token_id`), or None."""
        if not key.isalnum():
            return None
        path = self.state_dir / "runs" / f"{key}.json"
        with self._lock:
            if not path.is_file():
                self._meters.pop(key, None)
                return None
            if key in self._meters:
                return self._meters[key]
            entry = RunEntry(**json.loads(path.read_text(encoding="utf-8")))
            meter = RunMeter(entry, [*self.secrets, *([token] if token else [])])
            self._meters[key] = meter
            return meter


_SHARED: dict[Path, Registry] = {}


def shared_registry(state_dir: Path, secrets: list[str]) -> Registry:
    """One registry per state folder in this process (the proxy loads its hook module twice:
    once for the auth function, once for the callback).
    """
    return _SHARED.setdefault(state_dir, Registry(state_dir, secrets))


def register(state_dir: Path, token: str, entry: RunEntry) -> Path:
    """Write the run's registration (atomically); returns its path."""
    folder = state_dir / "runs"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{token_id(token)}.json"
    partial = path.with_name(path.name + ".part")
    partial.write_text(json.dumps(asdict(entry)), encoding="utf-8")
    os.replace(partial, path)
    return path


def now_iso() -> str:
    """The current UTC time, ISO 8601 with milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")
