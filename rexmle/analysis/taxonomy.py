"""Failure taxonomy: why a run did not end with a valid graded submission.

Classes (``FailureClass.kind``), decided in this order from run.json, grade.json and the tail of
``agent.stderr.log``:

- ``valid``: a valid graded submission (not a failure; a timeout that left one is valid too);
- ``unfinished``: still ``running`` or ``cancelled`` (runs again);
- ``infra_error``: the harness failed (never the agent's fault);
- ``budget_stop``: the LLM gateway stopped the agent (``budget_exceeded``);
- ``timeout``: the agent hit its time limit without a valid submission;
- ``crash``: the agent exited non-zero; ``detail`` is the crash class read from its stderr:
  ``out_of_memory``, ``cuda_error``, ``import_error``, ``file_not_found`` or ``other (<Error>)``;
- ``early_exit``: the agent exited 0 within ``EARLY_EXIT_FRACTION`` of its time limit without
  a valid submission;
- ``no_submission``: the agent exited 0 later, but wrote no submission.csv;
- ``invalid_format``: a submission the grader found invalid; ``detail`` is the rule its first
  reason breaks (``INVALID_RULES``). ``header_too_large`` is a file refused from its header alone
  (it declares more values than the grader's pixel budget, so it was never decoded), checked
  before ``wrong_shape``, whose refusal reads the decoded shape.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from rexmle.records.results import RunResult

EARLY_EXIT_FRACTION = 0.1
STDERR_TAIL_BYTES = 64 * 1024
CRASH_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "out_of_memory",
        re.compile(
            r"CUDA out of memory|OutOfMemoryError|\bMemoryError\b|std::bad_alloc|"
            r"Cannot allocate memory|^Killed$|^\[rexmle\] out of memory",
            re.MULTILINE,
        ),
    ),
    ("cuda_error", re.compile(r"CUDA error|cuDNN error|CUDNN_STATUS|no CUDA GPUs|NCCL error")),
    ("import_error", re.compile(r"ModuleNotFoundError|ImportError")),
    ("file_not_found", re.compile(r"FileNotFoundError|No such file or directory")),
)
_EXCEPTION = re.compile(r"^(?:[\w.]+\.)?(\w+(?:Error|Exception|Interrupt|Exit))\b", re.MULTILINE)
INVALID_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("missing_cases", re.compile(r"test id\(s\) missing")),
    ("unknown_ids", re.compile(r"is not a test id|duplicate id")),
    ("missing_file", re.compile(r"does not exist|no such file")),
    ("header_too_large", re.compile(r"the header declares .* allowed; the file was not decoded")),
    ("wrong_shape", re.compile(r"shape")),
    ("bad_values", re.compile(r"not allowed|NaN|non-finite|data type|must be")),
    ("csv_format", re.compile(r"column|header|parsed as CSV|empty cell|cells, but")),
    ("unreadable", re.compile(r"unreadable|cannot be read|cannot read|cannot be resolved")),
)


@dataclass(frozen=True)
class FailureClass:
    """The taxonomy class of one run, with the evidence it rests on."""

    kind: str
    detail: str = ""
    evidence: str = ""
    """The reason, error or stderr line the class was read from (one line, capped)."""

    @property
    def label(self) -> str:
        """``kind`` or ``kind: detail``."""
        return f"{self.kind}: {self.detail}" if self.detail else self.kind


def _one_line(text: str, limit: int = 240) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line[:limit]


def stderr_tail(folder: Path, limit: int = STDERR_TAIL_BYTES) -> str:
    """The last ``limit`` bytes of the run's ``agent.stderr.log`` (decoded leniently), or ''."""
    path = folder / "agent.stderr.log"
    if not path.is_file():
        return ""
    with path.open("rb") as handle:
        handle.seek(0, 2)
        size = handle.tell()
        handle.seek(max(0, size - limit))
        return handle.read().decode("utf-8", errors="replace")


def crash_class(stderr: str) -> tuple[str, str]:
    """(crash class, the matching stderr line) of a crashed agent's stderr tail.

    For an exception of no known class the line is the last exception line with its message
    (``IndexError: list index out of range``).
    """
    for name, pattern in CRASH_PATTERNS:
        found = None
        for found in pattern.finditer(stderr):  # noqa: B007 - the last match is the evidence
            pass
        if found is not None:
            start = stderr.rfind("\n", 0, found.start()) + 1
            end = stderr.find("\n", found.end())
            return name, stderr[start : end if end != -1 else len(stderr)].strip()[:240]
    exceptions = list(_EXCEPTION.finditer(stderr))
    if exceptions:
        last = exceptions[-1]
        end = stderr.find("\n", last.end())
        line = stderr[last.start() : end if end != -1 else len(stderr)].strip()[:240]
        return f"other ({last.group(1)})", line
    lines = [line for line in stderr.splitlines() if line.strip()]
    return "other", lines[-1][:240] if lines else ""


def invalid_rule(reason: str) -> str:
    """The rule an invalid-submission reason breaks (``INVALID_RULES``), else ``other``."""
    for name, pattern in INVALID_RULES:
        if pattern.search(reason):
            return name
    return "other"


def classify(result: RunResult) -> FailureClass:
    """The taxonomy class of one run (see the module docstring for the order of the rules)."""
    if result.valid:
        return FailureClass("valid")
    if not result.finished:
        return FailureClass("unfinished", evidence=result.status)
    if result.status == "infra_error":
        return FailureClass("infra_error", evidence=_one_line(result.error or ""))
    if result.status == "budget_exceeded":
        return FailureClass("budget_stop", evidence=_one_line(result.error or ""))
    if result.status == "timeout":
        return FailureClass("timeout", evidence=_one_line(result.error or ""))
    if result.status == "agent_error":
        detail, line = crash_class(stderr_tail(result.path))
        return FailureClass("crash", detail, line or _one_line(result.error or ""))
    if not result.has_submission:
        limit, used = result.time_limit_s, result.agent_seconds
        if limit and used is not None and used < EARLY_EXIT_FRACTION * limit:
            return FailureClass(
                "early_exit", evidence=f"agent exited after {used:.0f} s of {limit:.0f} s"
            )
        return FailureClass("no_submission", evidence=_one_line(result.reason))
    reason = result.reasons[0] if result.reasons else ""
    return FailureClass("invalid_format", invalid_rule(reason), _one_line(reason))
