"""The real data's case counts checked against the task's declaration, naming the line to fix.

A fraction split declares one count, ``expected_cases`` (all groups together); its train/test
sizes follow from the rule (:meth:`rexmle.tasks.spec.SplitSpec.expected_sizes`). Official sets
declare one count per set (``expected_train``, ``expected_test``). Either way a count that the
source really holds differently is corrected on one line per count, and a mismatch names that
line by file and number.
"""

from __future__ import annotations

from rexmle.errors import DataError
from rexmle.split import Split, split_sizes
from rexmle.tasks.registry import family_folder
from rexmle.tasks.spec import TaskSpec


def declaration_file(spec: TaskSpec) -> str:
    """The task's declaration in the repository: ``rexmle/challenges/<family>/<id>.yaml``."""
    return f"rexmle/challenges/{spec.family}/{spec.id}.yaml"


def split_line(text: str, key: str) -> int | None:
    """The 1-based number of the line declaring ``key`` inside the top-level ``split:`` block of
    a task YAML's ``text``; None when that block has no such line.
    """
    inside = False
    for number, line in enumerate(text.splitlines(), start=1):
        if line[:1] not in ("", " ", "\t", "#"):
            inside = line.split("#", 1)[0].rstrip() == "split:"
        elif inside and line.lstrip().startswith(f"{key}:"):
            return number
    return None


def _where(spec: TaskSpec, key: str) -> str:
    """``<file>:<line>`` of ``key`` in the task's split block (the file alone if not found)."""
    text = family_folder(spec.family).joinpath(f"{spec.id}.yaml").read_text(encoding="utf-8")
    number = split_line(text, key)
    file = declaration_file(spec)
    return file if number is None else f"{file}:{number}"


def check_declared_counts(spec: TaskSpec, split: Split) -> None:
    """Compare the split's sizes with the declared counts (nothing declared: nothing checked).

    Raises:
        DataError: they differ; the message gives the cases found per group (``split.found``),
            the sizes the unchanged rule gives on them, and the one line (file and number) to
            set when the source really holds this many cases; for official sets, one such line
            per set that differs. Also when the sizes contradict the declared rule on a matching
            total (the family's prepare does not follow its declaration).
    """
    declared = spec.split
    expected = declared.expected_sizes()
    got = (len(split.train), len(split.test))
    if expected is None or got == expected:
        return
    found = ", ".join(f"{group} {n}" for group, n in split.found.items())
    found_text = f"; cases found: {found} (total {sum(split.found.values())})" if found else ""
    check = "Check the download first (a missing or changed file?); if the source really holds"
    if declared.test_fraction is not None:
        total = sum(got)
        if total >= 2 and split_sizes(total, declared.test_fraction) != got:
            rule_sizes = "/".join(map(str, split_sizes(total, declared.test_fraction)))
            msg = (
                f"{spec.id}: prepare gave {got[0]} train / {got[1]} test cases, but the declared "
                f"rule (test_fraction {declared.test_fraction}, test = ceil(fraction x cases)) "
                f"gives {rule_sizes} on {total} cases: the family's prepare does not follow its "
                f"declaration"
            )
            raise DataError(msg)
        msg = (
            f"{spec.id}: the real data holds {total} cases ({got[0]} train / {got[1]} test by "
            f"the split rule), the declaration expects {declared.expected_cases} ({expected[0]} "
            f"/ {expected[1]}){found_text}. {check} {total} cases, change the one line "
            f"{_where(spec, 'expected_cases')} to 'expected_cases: {total}' (the split rule "
            f"'{split.rule}' stays as it is)"
        )
        raise DataError(msg)
    lines = [
        f"{_where(spec, key)} to '{key}: {n}'"
        for key, n, want in (
            ("expected_train", got[0], expected[0]),
            ("expected_test", got[1], expected[1]),
        )
        if n != want
    ]
    one = "the one line" if len(lines) == 1 else "one line per official set:"
    msg = (
        f"{spec.id}: the real data holds {got[0]} train / {got[1]} test cases (official sets), "
        f"the declaration expects {expected[0]} / {expected[1]}{found_text}. {check} this many "
        f"cases, change {one} {' and '.join(lines)} (the split rule '{split.rule}' stays)"
    )
    raise DataError(msg)
