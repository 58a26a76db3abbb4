"""The contract every registered task keeps, checked on its mini preparation (no secret).

One module, parametrised over ``rexmle.tasks.registry.all_tasks()``: a family's own tests keep
only its hand computations and family rules; what holds for every task is checked here.

- structure: the YAML's sections, the leaderboard beside it with exactly the ranked metrics as
  columns, the description file, every named function, family-relative imports;
- gold grades best achievable: per ranked metric, at least as good as every leaderboard row
  (``higher``: >= the column's maximum; ``lower``: <= its minimum), except for the metrics listed
  in :data:`CAPPED_ON_MINI` whose definition caps gold itself on the mini data; for every ranked
  metric, no other graded submission (sample, baseline, gold with one case from the sample)
  scores better than gold;
- the sample submission is valid; the baseline (where one exists) ties or beats the sample on
  the headline metric;
- the generic CSV rules (missing column, duplicate id, unknown id, path escape, empty cell,
  missing file) and bad inputs (a garbage or truncated file in place of the first case's file,
  text in a value column) are rejected with a reason that names the problem.
"""

from __future__ import annotations

import ast
import math
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from rexmle.agents.dummy import copy_sample_submission
from rexmle.grading import grade_submission
from rexmle.grading.report import GradeReport
from rexmle.tasks.csvfile import read_csv_rows
from rexmle.tasks.files import write_csv
from rexmle.tasks.folders import TaskDirs
from rexmle.tasks.registry import (
    FUNCTION_NAMES,
    LEADERBOARD_SUFFIX,
    all_tasks,
    family_folder,
    get_task,
    load_task,
    resolve_function,
)
from rexmle.tasks.spec import TaskSpec

TASKS = sorted(all_tasks())
SUBMISSION_CSV = "submission.csv"

CAPPED_ON_MINI: dict[str, dict[str, str]] = {
    "neurips-cellseg": {
        f"f1_{t}": "one mini test image keeps no GT cell after boundary removal: its F1 is 0"
        for t in ("0.5", "0.6", "0.7")
    },
    "topbrain-track1": {"f1_side_road": "side-road classes absent from every mini test GT"},
    "topbrain-track2": {"f1_side_road": "side-road classes absent from every mini test GT"},
}
"""Ranked metrics whose gold value is below the leaderboard's best on the mini data, and why.

There the metric's own definition caps gold (the best value the metric can take on those cases),
so gold is only required to be unbeaten by every other graded submission. An entry whose gold
reaches the leaderboard again is stale and fails the test."""


def _folder(spec: TaskSpec) -> Path:
    """The family folder of the imported package (a scaffolded copy too, see test_scaffold)."""
    return Path(str(family_folder(spec.family)))


def _grade(task_id: str, dirs: TaskDirs, folder: Path) -> GradeReport:
    return grade_submission(task_id, folder, data_dir=dirs.root.parent, workers=1)


def _better(direction: str, a: float, b: float) -> bool:
    """Whether ``a`` is strictly better than ``b`` under ``direction``."""
    return a > b if direction == "higher" else a < b


def _read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    header, rows = read_csv_rows(path)
    return header, [[row[c] for c in header] for row in rows]


def _gold_copy(dirs: TaskDirs, out: Path) -> tuple[Path, list[str], list[list[str]]]:
    """A copy of gold in ``out``; (folder, header, rows) of its CSV."""
    shutil.copytree(dirs.gold, out)
    header, rows = _read_csv(out / SUBMISSION_CSV)
    return out, header, rows


def _sample(dirs: TaskDirs, out: Path) -> Path:
    copy_sample_submission(dirs.public, out)
    return out


def _reasons(report: GradeReport) -> str:
    assert not report.valid, "the submission was graded as valid"
    assert report.reasons, "an invalid submission without a reason"
    assert report.metrics == {}
    return "\n".join(report.reasons)


# --- structure ----------------------------------------------------------------------------


@pytest.mark.parametrize("task_id", TASKS)
def test_yaml_declares_its_sections(task_id: str) -> None:
    spec = get_task(task_id)
    assert spec.functions is not None, "the YAML names the family's functions (section functions)"
    assert spec.submission is not None, "the YAML declares the submission's columns"
    assert spec.description is not None, "the YAML names its description file"
    task = load_task(task_id)
    columns = task.columns
    assert columns.columns, "a submission has at least one column besides the id"
    names = [columns.id_column, *(c.name for c in columns.columns)]
    assert len(set(names)) == len(names), names
    assert spec.headline.ranked, "the headline metric is a leaderboard column"


@pytest.mark.parametrize("task_id", TASKS)
def test_leaderboard_beside_the_yaml_has_exactly_the_ranked_metrics(task_id: str) -> None:
    spec = get_task(task_id)
    path = _folder(spec) / f"{task_id}{LEADERBOARD_SUFFIX}"
    assert path.is_file(), f"no leaderboard {path.name} beside {task_id}.yaml"
    header, rows = _read_csv(path)
    assert header == ["team", *(m.key for m in spec.ranked_metrics)]
    assert rows, "an empty leaderboard"
    for row in rows:
        assert len(row) == len(header), row
        values = [float(cell) for cell in row[1:]]
        assert all(math.isfinite(v) for v in values), row


@pytest.mark.parametrize("task_id", TASKS)
def test_description_file_exists_and_is_filled(task_id: str) -> None:
    spec = get_task(task_id)
    if spec.description is not None:
        assert (_folder(spec) / spec.description).is_file()
    text = load_task(task_id).description()
    assert len(text) > 200
    assert "{{" not in text, "a placeholder is left unfilled"


@pytest.mark.parametrize("task_id", TASKS)
def test_every_named_function_resolves(task_id: str) -> None:
    spec = get_task(task_id)
    assert spec.functions is not None
    for name in FUNCTION_NAMES:
        dotted = getattr(spec.functions, name)
        if dotted is not None:
            assert callable(resolve_function(spec.family, dotted)), name


def _absolute_family_imports(source: Path, family_package: str) -> list[str]:
    """``import``/``from`` statements of ``source`` that name ``family_package`` absolutely."""
    found = []
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            if name == family_package or name.startswith(f"{family_package}."):
                found.append(f"{source.name}:{node.lineno} imports {name}")
    return found


@pytest.mark.parametrize("task_id", TASKS)
def test_family_names_its_own_modules_relatively(task_id: str) -> None:
    """A copied, renamed family folder must work unedited: no absolute self-import or name."""
    spec = get_task(task_id)
    assert spec.functions is not None
    package = f"rexmle.challenges.{spec.family}"
    named = [getattr(spec.functions, n) for n in FUNCTION_NAMES]
    assert [d for d in named if d is not None and d.startswith(package)] == []
    folder = _folder(spec)
    found = [
        hit for py in sorted(folder.rglob("*.py")) for hit in _absolute_family_imports(py, package)
    ]
    assert found == []


# --- grades -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def graded(prepared_mini: Callable[[str], TaskDirs], tmp_path_factory: pytest.TempPathFactory):
    """Grade reports of gold, sample, baseline and 'mixed' per task, computed once per worker."""
    cache: dict[str, dict[str, GradeReport]] = {}

    def grades(task_id: str) -> dict[str, GradeReport]:
        if task_id in cache:
            return cache[task_id]
        dirs = prepared_mini(task_id)
        work = tmp_path_factory.mktemp(f"contract-{task_id}")
        reports = {"gold": _grade(task_id, dirs, dirs.gold)}
        reports["sample"] = _grade(task_id, dirs, _sample(dirs, work / "sample"))
        mixed, header, rows = _gold_copy(dirs, work / "mixed")
        sample_header, sample_rows = _read_csv(dirs.public / "sample_submission.csv")
        assert sample_header == header
        copy_sample_submission(dirs.public, work / "sample-files")
        first = rows[0]
        from_sample = next(r for r in sample_rows if r[0] == first[0])
        for column, cell in zip(header, from_sample, strict=True):
            source = work / "sample-files" / cell
            if column != header[0] and source.is_file():
                (mixed / cell).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, mixed / cell)
        rows[0] = from_sample
        write_csv(mixed / SUBMISSION_CSV, header, rows)
        reports["mixed"] = _grade(task_id, dirs, mixed)
        task = load_task(task_id)
        if task.has_baseline:
            baseline = work / "baseline"
            baseline.mkdir()
            task.solve_baseline(dirs.public, baseline, seed=0)
            reports["baseline"] = _grade(task_id, dirs, baseline)
        cache[task_id] = reports
        return reports

    return grades


@pytest.mark.parametrize("task_id", TASKS)
def test_gold_is_valid_and_at_least_as_good_as_every_leaderboard_row(task_id, graded) -> None:
    gold = graded(task_id)["gold"]
    assert gold.valid, gold.reasons
    assert gold.warnings == []
    spec = get_task(task_id)
    assert list(gold.metrics) == [m.key for m in spec.metrics]
    header, rows = _read_csv(_folder(spec) / f"{task_id}{LEADERBOARD_SUFFIX}")
    capped = CAPPED_ON_MINI.get(task_id, {})
    behind = {}
    for metric in spec.ranked_metrics:
        column = [float(r[header.index(metric.key)]) for r in rows]
        best = max(column) if metric.direction == "higher" else min(column)
        if _better(metric.direction, best, gold.metrics[metric.key]):
            behind[metric.key] = (gold.metrics[metric.key], best)
    assert sorted(behind) == sorted(capped), (
        f"gold behind the leaderboard's best (gold, best): {behind}; capped: {capped}"
    )


@pytest.mark.parametrize("task_id", TASKS)
def test_no_graded_submission_beats_gold(task_id, graded) -> None:
    reports = graded(task_id)
    gold = reports["gold"]
    for name, report in reports.items():
        assert report.valid, (name, report.reasons)
        for metric in get_task(task_id).ranked_metrics:
            got, best = report.metrics[metric.key], gold.metrics[metric.key]
            assert not _better(metric.direction, got, best), (name, metric.key, got, best)


@pytest.mark.parametrize("task_id", TASKS)
def test_sample_is_valid_and_baseline_ties_or_beats_it(task_id, graded) -> None:
    reports = graded(task_id)
    sample = reports["sample"]
    assert sample.valid, sample.reasons
    assert sample.cases, "a valid grade has per-case rows"
    if "baseline" not in reports:
        pytest.skip(f"{task_id} has no baseline")
    headline = get_task(task_id).headline
    got, floor = reports["baseline"].metrics[headline.key], sample.metrics[headline.key]
    assert not _better(headline.direction, floor, got), (headline.key, got, floor)


# --- the generic rules --------------------------------------------------------------------


def _drop_column(header, rows, column):
    i = header.index(column)
    return [h for j, h in enumerate(header) if j != i], [
        [c for j, c in enumerate(r) if j != i] for r in rows
    ]


def _path_column(task_id: str) -> str | None:
    paths = load_task(task_id).columns.path_columns
    return paths[0] if paths else None


def _value_column(task_id: str) -> str | None:
    values = load_task(task_id).columns.value_columns
    return values[0] if values else None


def _rejected(task_id, dirs, tmp_path, mutate) -> str:
    folder, header, rows = _gold_copy(dirs, tmp_path / "submission")
    header, rows = mutate(folder, header, rows)
    write_csv(folder / SUBMISSION_CSV, header, rows)
    return _reasons(_grade(task_id, dirs, folder))


@pytest.mark.parametrize("task_id", TASKS)
def test_missing_column_is_rejected(task_id, prepared_mini, tmp_path) -> None:
    dirs = prepared_mini(task_id)
    column = load_task(task_id).columns.columns[-1].name
    reasons = _rejected(task_id, dirs, tmp_path, lambda _f, h, r: _drop_column(h, r, column))
    assert "missing required column" in reasons, reasons
    assert column in reasons, reasons


@pytest.mark.parametrize("task_id", TASKS)
def test_duplicate_id_is_rejected(task_id, prepared_mini, tmp_path) -> None:
    reasons = _rejected(
        task_id, prepared_mini(task_id), tmp_path, lambda _f, h, r: (h, [*r, list(r[0])])
    )
    assert "duplicate id" in reasons, reasons


@pytest.mark.parametrize("task_id", TASKS)
def test_unknown_id_is_rejected(task_id, prepared_mini, tmp_path) -> None:
    def add_unknown(_submission, header, rows):
        return header, [*rows, ["not-a-test-id", *rows[0][1:]]]

    reasons = _rejected(task_id, prepared_mini(task_id), tmp_path, add_unknown)
    assert "'not-a-test-id' is not a test id" in reasons, reasons


@pytest.mark.parametrize("task_id", TASKS)
def test_empty_cell_is_rejected(task_id, prepared_mini, tmp_path) -> None:
    column = load_task(task_id).columns.columns[0].name

    def empty_first(_submission, header, rows):
        rows[0][header.index(column)] = ""
        return header, rows

    reasons = _rejected(task_id, prepared_mini(task_id), tmp_path, empty_first)
    assert "empty cell" in reasons, reasons
    assert column in reasons, reasons


def _escape(folder: Path, _cell: str) -> str:
    (folder.parent / "outside.bin").write_bytes(b"x")
    return "../outside.bin"


def _remove(folder: Path, cell: str) -> str:
    (folder / cell).unlink()
    return cell


def _truncate(folder: Path, cell: str) -> str:
    data = (folder / cell).read_bytes()
    (folder / cell).write_bytes(data[: max(1, len(data) // 3)])
    return cell


def _garbage(folder: Path, cell: str) -> str:
    (folder / cell).write_bytes(b"\x00\x01 this is not the expected file format \xff\xfe" * 8)
    return cell


PATH_DAMAGE = {
    "path-escape": (_escape, ("'../outside.bin'", "inside the submission folder")),
    "missing-file": (_remove, ("does not exist",)),
    "truncated-file": (_truncate, ()),
    "garbage-file": (_garbage, ()),
}
"""What is done to the first gold case's file (returning the new cell), and what the reason says
besides that case's id."""


@pytest.mark.parametrize("damage", sorted(PATH_DAMAGE))
@pytest.mark.parametrize("task_id", TASKS)
def test_a_bad_first_file_is_rejected_naming_its_case(
    task_id, damage, prepared_mini, tmp_path
) -> None:
    column = _path_column(task_id)
    if column is None:
        pytest.skip(f"{task_id} has no path column")
    change, fragments = PATH_DAMAGE[damage]

    def damage_first(folder, header, rows):
        i = header.index(column)
        rows[0][i] = change(folder, rows[0][i])
        return header, rows

    dirs = prepared_mini(task_id)
    reasons = _rejected(task_id, dirs, tmp_path, damage_first)
    first_id = _read_csv(dirs.gold / SUBMISSION_CSV)[1][0][0]
    assert first_id in reasons, reasons
    assert all(f in reasons for f in fragments), reasons


@pytest.mark.parametrize("task_id", TASKS)
def test_text_in_a_value_column_is_rejected(task_id, prepared_mini, tmp_path) -> None:
    column = _value_column(task_id)
    if column is None:
        pytest.skip(f"{task_id} has no value column")

    def text_first(_submission, header, rows):
        rows[0][header.index(column)] = "high quality"
        return header, rows

    reasons = _rejected(task_id, prepared_mini(task_id), tmp_path, text_first)
    assert "'high quality'" in reasons or "high quality" in reasons, reasons
