"""Reading submission CSV files: every cell a string, ids compared exactly (spec README §2.2)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from rexmle.errors import MAX_REASONS, InvalidSubmission, cap_reasons


def read_csv_rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """Read a UTF-8, comma-separated CSV with a header; return (columns, rows of strings).

    Raises:
        InvalidSubmission: the file is missing, not UTF-8, not parseable, has no header or no data
            rows, repeats a column, or has rows with a different number of cells than the header.
    """
    name = path.name
    if not path.exists():
        msg = f"{name}: file not found. Write {name} at the top of the submission folder."
        raise InvalidSubmission([msg])
    if not path.is_file():
        msg = f"{name}: not a regular file (a folder, pipe or device)"
        raise InvalidSubmission([msg])
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as err:
        msg = f"{name}: cannot be read ({err.strerror or err})"
        raise InvalidSubmission([msg]) from err
    except UnicodeDecodeError as err:
        msg = f"{name}: not UTF-8 text ({err.reason} at byte {err.start})"
        raise InvalidSubmission([msg]) from err
    try:
        records = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error as err:
        msg = f"{name}: cannot be parsed as CSV ({err})"
        raise InvalidSubmission([msg]) from err
    records = [r for r in records if r]  # blank lines carry no data
    if not records:
        msg = f"{name}: empty file (expected a header row and one row per test case)"
        raise InvalidSubmission([msg])
    header = [h.strip() for h in records[0]]
    if len(set(header)) != len(header):
        dupes = sorted({h for h in header if header.count(h) > 1})
        msg = f"{name}: column(s) {dupes} appear more than once in the header"
        raise InvalidSubmission([msg])
    body = records[1:]
    if not body:
        msg = f"{name}: has a header but zero data rows"
        raise InvalidSubmission([msg])
    reasons: list[str] = []
    n_bad = 0
    rows: list[dict[str, str]] = []
    for line, record in enumerate(body, start=2):
        if len(record) != len(header):
            n_bad += 1
            if n_bad <= MAX_REASONS:  # the rest is only counted: the reasons stay bounded
                reasons.append(
                    f"{name} line {line}: {len(record)} cells, but the header has "
                    f"{len(header)} columns"
                )
            continue
        if not n_bad:
            rows.append(dict(zip(header, record, strict=True)))
    if n_bad:
        raise InvalidSubmission(cap_reasons(reasons, n_total=n_bad))
    return header, rows


def read_id_column(path: Path, column: str) -> list[str]:
    """Ids of a CSV written by the harness itself (sample submission, gold), in file order."""
    _, rows = read_csv_rows(path)
    return [row[column] for row in rows]


def leading_zero_hints(unknown: list[str], missing: set[str]) -> dict[str, str]:
    """Hints for unknown ids that equal a missing id once leading zeros are stripped.

    Returns unknown id -> hint text, only for ids that have such a match (a hint, never a repair).
    Linear in the number of ids.
    """
    by_stripped: dict[str, str] = {}
    for candidate in sorted(missing):
        by_stripped.setdefault(candidate.lstrip("0") or "0", candidate)
    hints = {}
    for given in unknown:
        match = by_stripped.get(given.lstrip("0") or "0")
        if match is not None and match != given:
            hints[given] = (
                f" (did leading zeros get lost? the test id {match!r} is missing; "
                f"ids are strings and must be written exactly)"
            )
    return hints
