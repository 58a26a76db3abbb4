"""Per-run metering inside the gateway: run tokens, usage lines, cost, budget and call caps.

This module is copied next to the proxy's config and imported there (standard library only, no
``rexmle`` import): the harness registers a run by writing ``runs/<token id>.json`` into the
gateway's state folder (:func:`register`); the proxy's callback looks the token up, admits,
holds back or refuses each call (:meth:`RunMeter.admit`), appends one usage line per call to the
run's ``llm_usage.jsonl`` and the bodies to its trajectory (:meth:`RunMeter.record`), and writes
the run's stop file once its budget is spent or its rate cap trips. The harness watches that
file, and ``runs/<token id>.busy``, which holds the number of the run's calls in flight.

Definitions:
    cost_usd = ((tokens_in - tokens_cached) * input + tokens_cached * cached_input
                + tokens_out * output) / 1e6, prices in USD per 1M tokens; ``tokens_in`` counts
    the cached tokens and ``tokens_out`` the reasoning tokens (OpenAI's usage fields).
    Estimate of a call (reserved while it is in flight): its input tokens taken as the
    characters of its prompt / :data:`CHARS_PER_TOKEN`, rounded up, and its output tokens as
    its ``max_tokens`` (``max_completion_tokens``, ``max_output_tokens``) or, without one, the
    run's ``reserve_output_tokens``; priced like a call without cached tokens.
    Budget: a call is admitted only while spent + reserved + its estimate <= ``budget_usd``
    (spent: the cost of the finished calls; reserved: the estimates of the calls in flight);
    a call that does not fit waits (:class:`HoldBack`) until calls in flight finish. When
    nothing is in flight, a call is admitted while spent < ``budget_usd``, and refused (403,
    the run stops) once spent >= ``budget_usd``. So the overshoot is at most the cost of one
    call beyond its estimate's share (the last call, admitted alone), and in any case at most
    the cost of ``max_calls_in_flight`` calls.
    Calls in flight: at most ``max_calls_in_flight`` per run; one more waits.
    Rate cap: a call is refused when ``max_calls_per_minute`` calls were admitted in the
    60 s before it.
    Size caps: every string of a usage line is cut to :data:`FIELD_MAX_CHARS` characters
    (``error``: :data:`ERROR_MAX_CHARS`), every string of a trajectory entry to
    :data:`TRAJECTORY_STRING_MAX_CHARS`, each cut ending with :data:`CUT_MARK`; the usage log
    stops at ``usage_max_bytes`` with a :data:`USAGE_TRUNCATED_MARK` line, after which the
    calls are summed into ``llm_usage.overflow.json`` (so the run's totals stay exact), and
    the trajectory at ``trajectory_max_bytes`` with :data:`TRUNCATED_MARK`.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RATE_WINDOW_S = 60.0
TRUNCATED_MARK = "[rexmle: trajectory truncated at the size cap]"
USAGE_TRUNCATED_MARK = "[rexmle: usage log truncated at the size cap; later calls are summed in"
OVERFLOW_SUFFIX = ".overflow.json"
"""Beside the usage log once it is full: the sums of the calls not written line by line."""
REDACTED = "[redacted]"
CUT_MARK = "…[rexmle: cut]"
FIELD_MAX_CHARS = 256
ERROR_MAX_CHARS = 2000
DROPPED_MAX = 32
"""At most this many dropped parameter names per usage line."""
TRAJECTORY_STRING_MAX_CHARS = 1 << 20
TRAJECTORY_KEY_MAX_CHARS = 256
CHARS_PER_TOKEN = 4
FINISHED_KEPT = 4096


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


PROMPT_KEYS = ("messages", "input", "prompt", "system", "tools", "instructions", "contents")
OUTPUT_LIMIT_KEYS = ("max_tokens", "max_completion_tokens", "max_output_tokens")


def text_chars(value: Any) -> int:
    """Characters of every string (and dict key) inside ``value``."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(len(str(k)) + text_chars(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return sum(text_chars(v) for v in value)
    return 0


def estimated_tokens(body: dict[str, Any], reserve_output_tokens: int) -> tuple[int, int]:
    """(tokens in, tokens out) of the estimate of a call with request ``body`` (see the module
    docstring).
    """
    chars = sum(text_chars(body.get(key)) for key in PROMPT_KEYS)
    tokens_in = math.ceil(chars / CHARS_PER_TOKEN)
    tokens_out = reserve_output_tokens
    for key in OUTPUT_LIMIT_KEYS:
        limit = body.get(key)
        if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
            tokens_out = limit
            break
    return tokens_in, tokens_out


def estimate_usd(price: Price, body: dict[str, Any], reserve_output_tokens: int) -> float:
    """The estimate of a call with request ``body`` (see the module docstring)."""
    tokens_in, tokens_out = estimated_tokens(body, reserve_output_tokens)
    return cost_usd(price, tokens_in=tokens_in, tokens_cached=0, tokens_out=tokens_out)


UNREPORTED = "rexmle gateway: the upstream reported no usage; charged the call's estimate"
"""The error note of a usage line charged :func:`unreported_usage`."""


def unreported_usage(
    body: dict[str, Any], answer: Any, reserve_output_tokens: int
) -> tuple[int, int, int, int]:
    """(tokens in, out, cached, reasoning) charged for a call the upstream answered without
    its usage: the estimate's, its output at least the answer's own text (``answer``) counted
    at :data:`CHARS_PER_TOKEN`, so that an answer without usage is never free.
    """
    tokens_in, tokens_out = estimated_tokens(body, reserve_output_tokens)
    seen = math.ceil(text_chars(answer) / CHARS_PER_TOKEN)
    return tokens_in, max(tokens_out, seen), 0, 0


def clip(text: str, max_chars: int = FIELD_MAX_CHARS) -> str:
    """``text`` cut to ``max_chars`` characters, the cut marked with :data:`CUT_MARK`."""
    if len(text) <= max_chars:
        return text
    return text[: max(0, max_chars - len(CUT_MARK))] + CUT_MARK


def bounded(value: Any, max_chars: int = TRAJECTORY_STRING_MAX_CHARS) -> Any:
    """A JSON-ready copy of ``value`` whose strings are clipped to ``max_chars`` (keys to
    :data:`TRAJECTORY_KEY_MAX_CHARS`); other objects become their clipped ``str``.
    """
    if isinstance(value, str):
        return clip(value, max_chars)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, dict):
        return {
            clip(str(k), TRAJECTORY_KEY_MAX_CHARS): bounded(v, max_chars) for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [bounded(v, max_chars) for v in value]
    return clip(str(value), max_chars)


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
    usage_max_bytes: int = 64 << 20
    max_calls_in_flight: int | None = 8
    reserve_output_tokens: int = 4096
    stale_after_s: float = 3600.0
    """A call still in flight this long after its admission is dropped from the count (its end
    was never reported); longer than the gateway's upstream timeout."""
    owner: str = ""
    """The lease of the process that registered the run in a shared gateway (empty: none)."""

    @property
    def busy_path(self) -> Path:
        """The file that exists while the run has calls in flight."""
        path = Path(self.stop_path)
        return path.with_name(path.name.removesuffix(".stop") + ".busy")


@dataclass
class UsageLine:
    """One line of ``llm_usage.jsonl``: one call through the gateway."""

    time: str
    alias: str
    upstream_model: str
    status: str
    """``ok``, ``error`` (the upstream or LiteLLM failed) or ``refused`` (budget, rate cap,
    a model that is not served)."""
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cached: int = 0
    tokens_reasoning: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    stream: bool = False
    dropped_params: list[str] = field(default_factory=list)
    error: str | None = None

    @classmethod
    def charged(
        cls,
        price: Price,
        usage: tuple[int, int, int, int],
        *,
        alias: str,
        upstream_model: str,
        status: str,
        latency_s: float,
        stream: bool,
        dropped_params: list[str],
        error: str | None,
    ) -> UsageLine:
        """The line of a call that used ``usage`` (tokens in, out, cached, reasoning), now,
        charged at ``price`` (:func:`cost_usd`).
        """
        tokens_in, tokens_out, cached, reasoning = usage
        return cls(
            time=now_iso(),
            alias=alias,
            upstream_model=upstream_model,
            status=status,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            tokens_cached=cached,
            tokens_reasoning=reasoning,
            cost_usd=cost_usd(
                price, tokens_in=tokens_in, tokens_cached=cached, tokens_out=tokens_out
            ),
            latency_s=latency_s,
            stream=stream,
            dropped_params=dropped_params,
            error=error,
        )

    def capped(self) -> UsageLine:
        """A copy whose strings are clipped (see the module docstring)."""
        return replace(
            self,
            time=clip(self.time),
            alias=clip(self.alias),
            upstream_model=clip(self.upstream_model),
            status=clip(self.status),
            dropped_params=[clip(name) for name in self.dropped_params[:DROPPED_MAX]],
            error=None if self.error is None else clip(self.error, ERROR_MAX_CHARS),
        )


SUMMED_FIELDS = ("tokens_in", "tokens_out", "tokens_cached", "tokens_reasoning", "cost_usd")


class Refusal(Exception):
    """A call refused by the meter; ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class HoldBack(Exception):
    """A call that must wait: the run's calls in flight fill its cap or hold its budget."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def redact(text: str, secrets: list[str]) -> str:
    """``text`` with every secret of at least 8 characters replaced by ``[redacted]``."""
    for secret in secrets:
        if len(secret) >= 8:
            text = text.replace(secret, REDACTED)
    return text


def _replace_atomically(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".part")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


class RunMeter:
    """The counters of one run inside the gateway (thread-safe)."""

    def __init__(self, entry: RunEntry, secrets: list[str]) -> None:
        self.entry = entry
        self.secrets = secrets
        self.spent_usd = 0.0
        self.calls = 0
        self.admitted: deque[float] = deque()
        self.in_flight: dict[str, tuple[float, float]] = {}
        """call id -> (reserved USD, admission time)."""
        self.finished: deque[str] = deque(maxlen=FINISHED_KEPT)
        """The ids of the last calls recorded (a second report of one is ignored)."""
        self.trajectory_bytes = 0
        self.trajectory_truncated = False
        self.usage_bytes = 0
        self.overflow: dict[str, float] | None = None
        """Sums of the calls past the usage log's cap (None until it is full)."""
        self.stopped: str | None = None
        self._lock = threading.Lock()
        self._busy_fd: int | None = None
        self._files: dict[str, Any] = {}
        """Open append handles of the usage log and the trajectory (one open per run)."""

    def _append(self, path: str, text: str) -> None:
        handle = self._files.get(path)
        if handle is None:
            handle = self._files[path] = open(path, "a", encoding="utf-8")  # noqa: SIM115
        handle.write(text)
        handle.flush()

    def close(self) -> None:
        """Close the run's files (the meter is forgotten)."""
        with self._lock:
            for handle in self._files.values():
                handle.close()
            self._files.clear()
            if self._busy_fd is not None:
                os.close(self._busy_fd)
                self._busy_fd = None

    def _stop(self, reason: str) -> None:
        if self.stopped is None:
            self.stopped = reason
            _replace_atomically(Path(self.entry.stop_path), reason + "\n")

    def _budget_reason(self) -> str:
        return f"LLM budget of {self.entry.budget_usd:g} USD spent ({self.spent_usd:.4f} USD)"

    def _drop_stale(self, now: float) -> None:
        stale = [
            key
            for key, (_, since) in self.in_flight.items()
            if now - since > self.entry.stale_after_s
        ]
        for call_id in stale:
            self._release(call_id)

    def admit(self, call_id: str = "", estimate_usd: float = 0.0, now: float | None = None) -> None:
        """Count one call and reserve its estimate, or hold it back, or refuse it.

        Raises:
            Refusal: the budget is spent (403) or the rate cap is reached (429); the run stops.
            HoldBack: the calls in flight fill ``max_calls_in_flight``, or the call's estimate
                does not fit beside theirs in the budget: try again when one finishes.
        """
        now = time.monotonic() if now is None else now
        with self._lock:
            self._drop_stale(now)
            budget = self.entry.budget_usd
            if budget is not None and self.spent_usd >= budget:
                self._stop(self._budget_reason())
                raise Refusal(
                    403, f"rexmle gateway: {self._budget_reason()}; the run is being stopped"
                )
            cap = self.entry.max_calls_in_flight
            if cap is not None and len(self.in_flight) >= cap:
                msg = f"{cap} calls in flight, the run's cap"
                raise HoldBack(msg)
            reserved = sum(usd for usd, _ in self.in_flight.values())
            if (
                budget is not None
                and self.in_flight
                and self.spent_usd + reserved + estimate_usd > budget
            ):
                msg = (
                    f"the calls in flight hold {reserved:.4f} USD of the budget's remaining "
                    f"{budget - self.spent_usd:.4f} USD"
                )
                raise HoldBack(msg)
            rate_cap = self.entry.max_calls_per_minute
            while self.admitted and now - self.admitted[0] >= RATE_WINDOW_S:
                self.admitted.popleft()
            if rate_cap is not None and len(self.admitted) >= rate_cap:
                reason = f"LLM rate cap of {rate_cap} calls per minute reached"
                self._stop(reason)
                raise Refusal(429, f"rexmle gateway: {reason}; the run is being stopped")
            self.admitted.append(now)
            self.calls += 1
            if call_id:
                self.in_flight[call_id] = (estimate_usd, now)
                self._write_busy()

    def release(self, call_id: str) -> None:
        """Forget a call's reservation (it finished, or failed before or after its upstream call)."""
        with self._lock:
            self._release(call_id)

    def _release(self, call_id: str) -> None:
        if self.in_flight.pop(call_id, None) is not None:
            self._write_busy()

    def _write_busy(self) -> None:
        """The busy file holds the number of calls in flight, rewritten in place (one small
        ``pwrite``: the harness reads it when the run ends).
        """
        if self._busy_fd is None:
            self._busy_fd = os.open(self.entry.busy_path, os.O_RDWR | os.O_CREAT, 0o600)
        os.pwrite(self._busy_fd, f"{len(self.in_flight):>12}\n".encode("ascii"), 0)

    def busy(self) -> bool:
        """Whether the run has calls in flight."""
        with self._lock:
            return bool(self.in_flight)

    def is_in_flight(self, call_id: str) -> bool:
        """Whether the call was admitted and has not been recorded yet."""
        with self._lock:
            return call_id in self.in_flight

    def record(
        self, line: UsageLine, trajectory: dict[str, Any] | None = None, call_id: str = ""
    ) -> None:
        """Append the usage line (and the call's bodies, within the size caps), release the
        call's reservation, and stop the run once the budget is spent; a call already recorded
        under ``call_id`` is not recorded again.
        """
        with self._lock:
            if call_id:
                if call_id in self.finished:
                    return
                self.finished.append(call_id)
            self.spent_usd += line.cost_usd
            self._write_usage(line.capped())
            if trajectory is not None:
                self._write_trajectory(trajectory)
            if call_id:
                self._release(call_id)
            budget = self.entry.budget_usd
            if budget is not None and self.spent_usd >= budget:
                self._stop(self._budget_reason())

    def _write_usage(self, line: UsageLine) -> None:
        path = Path(self.entry.usage_path)
        if self.overflow is None:
            text = redact(json.dumps(asdict(line)), self.secrets) + "\n"
            size = len(text.encode("utf-8"))
            if self.usage_bytes + size <= self.entry.usage_max_bytes:
                self._append(self.entry.usage_path, text)
                self.usage_bytes += size
                return
            self.overflow = {"calls": 0, "calls_refused": 0, "calls_failed": 0}
            self.overflow.update(dict.fromkeys(SUMMED_FIELDS, 0))
            overflow_name = path.name + OVERFLOW_SUFFIX
            mark = {"note": f"{USAGE_TRUNCATED_MARK} {overflow_name}]"}
            self._append(self.entry.usage_path, json.dumps(mark) + "\n")
        self.overflow["calls"] += 1
        self.overflow["calls_refused"] += line.status == "refused"
        self.overflow["calls_failed"] += line.status == "error"
        for name in SUMMED_FIELDS:
            self.overflow[name] += getattr(line, name)
        overflow_path = path.with_name(path.name + OVERFLOW_SUFFIX)
        _replace_atomically(overflow_path, json.dumps(self.overflow))

    def _write_trajectory(self, trajectory: dict[str, Any]) -> None:
        if self.trajectory_truncated:
            return
        text = redact(json.dumps(bounded(trajectory)), self.secrets) + "\n"
        size = len(text.encode("utf-8"))
        if self.trajectory_bytes + size > self.entry.trajectory_max_bytes:
            self.trajectory_truncated = True
            self._append(self.entry.trajectory_path, json.dumps({"note": TRUNCATED_MARK}) + "\n")
            return
        self._append(self.entry.trajectory_path, text)
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

    def meter_by_id(
        self, key: str, token: str | None = None, *, registered: bool = True
    ) -> RunMeter | None:
        """The meter of the run registered under ``key`` (a :func:`token_id`), or None.

        With ``registered=False`` a run that was unregistered while calls were in flight keeps
        its meter, so those calls are still written to its usage log.
        """
        if not key.isalnum():
            return None
        path = self.state_dir / "runs" / f"{key}.json"
        with self._lock:
            if not path.is_file():
                meter = self._meters.get(key)
                if meter is not None and meter.busy():
                    return None if registered else meter
                if meter is not None:
                    meter.close()
                    del self._meters[key]
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
    _replace_atomically(path, json.dumps(asdict(entry)))
    return path


def now_iso() -> str:
    """The current UTC time, ISO 8601 with milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")
