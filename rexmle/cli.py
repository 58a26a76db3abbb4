"""Command-line interface: a thin typer app over the library (no logic of its own)."""

import gc
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rexmle import __version__
from rexmle.cli_help import HelpGroup
from rexmle.config import resolve_runs_dir
from rexmle.errors import RexmleError
from rexmle.runner.commands import RunsArgument
from rexmle.terminal import console

if TYPE_CHECKING:
    from rexmle.tasks.solutions import SolutionWriteup

app = typer.Typer(
    cls=HelpGroup,
    help="ReX-MLE: benchmark autonomous ML agents on real medical-imaging challenges.",
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    add_completion=False,
)
out = console()
err = console(stderr=True)

TaskArgument = Annotated[str, typer.Argument(help="Task id (rexmle list shows them).")]
SubmissionArgument = Annotated[
    Path, typer.Argument(help="Submission folder: submission.csv and the files it names.")
]
DataDirOption = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Data dir (default: $REXMLE_DATA_DIR or ~/.cache/rexmle)."),
]
WorkersOption = Annotated[
    int | None, typer.Option("--workers", help="Worker processes (default: CPU count).", min=1)
]
DefinitionsOption = Annotated[
    str,
    typer.Option(
        "--definitions",
        help="Definition set: official (the challenges') or study (the published study's grader; "
        "docs/study-errata.md).",
    ),
]


def _fail(error: Exception, code: int = 2) -> typer.Exit:
    err.print(f"[bold red]error:[/] {error}", highlight=False)
    return typer.Exit(code)


def _interrupted(task_id: str) -> typer.Exit:
    err.print(
        f"[bold red]{task_id}: interrupted[/] (Ctrl-C); partial downloads are kept and resume "
        "on the next run",
        highlight=False,
    )
    return typer.Exit(130)


@app.command("version")
def version() -> None:
    """Print the rexmle version."""
    out.print(__version__)


NoPublishedOption = Annotated[
    bool,
    typer.Option(
        "--no-published-checksums",
        help=(
            "Do not check the sizes and checksums third parties published (rexmle info lists "
            "them); only after comparing a disagreement with the live record."
        ),
    ),
]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def print_json(payload: object) -> None:
    """Write ``payload`` to stdout as indented JSON (no colours, no wrapping)."""
    sys.stdout.write(json.dumps(payload, indent=2) + "\n")


def _prepared_state(prepared: dict[str, object] | None) -> str:
    return "-" if prepared is None else ("mini" if prepared.get("mini") else "full")


@app.command("list")
def list_tasks(data_dir: DataDirOption = None, as_json: JsonFlag = False) -> None:
    """List every task: id, family, type, modality, headline metric, prepared?"""
    from rexmle.tasks.folders import read_prepared, task_dirs
    from rexmle.tasks.registry import all_tasks

    if as_json:
        print_json(
            [
                {
                    "id": spec.id,
                    "family": spec.family,
                    "type": spec.task_type,
                    "modality": spec.modality,
                    "headline": spec.headline.key,
                    "higher_is_better": spec.headline.higher_is_better,
                    "implemented": spec.is_implemented,
                    "prepared": _prepared_state(read_prepared(task_dirs(spec.id, data_dir))),
                }
                for spec in all_tasks().values()
            ]
        )
        return
    from rich.table import Table

    table = Table(title="ReX-MLE tasks")
    table.add_column("id", no_wrap=True)
    for column in ("family", "type", "modality", "headline", "implemented", "prepared"):
        table.add_column(column)
    for spec in all_tasks().values():
        state = _prepared_state(read_prepared(task_dirs(spec.id, data_dir)))
        direction = "↑" if spec.headline.higher_is_better else "↓"
        table.add_row(
            spec.id,
            spec.family,
            spec.task_type,
            spec.modality,
            f"{spec.headline.key} {direction}",
            "yes" if spec.is_implemented else "no",
            state,
        )
    out.print(table)


@app.command("info")
def info(task: TaskArgument, data_dir: DataDirOption = None, as_json: JsonFlag = False) -> None:
    """Show a task's spec, sources, metrics, leaderboard, winning-solution write-up, data state."""
    from rexmle.sources.published import published_for
    from rexmle.tasks.definitions import ERRATA_DOC
    from rexmle.tasks.folders import read_prepared, task_dirs
    from rexmle.tasks.leaderboard import leaderboard_source, load_leaderboard
    from rexmle.tasks.registry import Task, get_task
    from rexmle.tasks.solutions import solution_writeup_if_written

    try:
        spec = get_task(task)
        board = load_leaderboard(task)
        writeup = solution_writeup_if_written(task)
    except RexmleError as error:
        raise _fail(error) from error
    dirs = task_dirs(task, data_dir)
    prepared = read_prepared(dirs)
    study_differs = Task(spec).has_study_definitions()
    published = {
        f.name: published_for(spec, source, f) for source in spec.sources for f in source.files
    }
    if as_json:
        thresholds = board.thresholds()
        dumped = spec.model_dump(mode="json")
        for source in dumped["sources"]:
            for entry in source["files"]:
                entry["published"] = [row.as_dict() for row in published[entry["name"]]]
        print_json(
            {
                **dumped,
                "leaderboard": {
                    "source": leaderboard_source(task),
                    "n_rows": board.n_rows,
                    "thresholds": {
                        "gold": thresholds.gold,
                        "silver": thresholds.silver,
                        "bronze": thresholds.bronze,
                        "above_median": thresholds.above_median,
                    },
                },
                "data_dir": str(dirs.root),
                "prepared": _prepared_state(prepared),
                "study_definitions": {"differ": study_differs, "errata": ERRATA_DOC},
                "winning_solution": None if writeup is None else writeup.as_dict(),
            }
        )
        return
    out.print(f"[bold]{spec.id}[/] — {spec.name}")
    out.print(f"family: {spec.family}   type: {spec.task_type}   spec version: {spec.spec_version}")
    out.print(f"modality: {spec.modality}   anatomy: {spec.anatomy}")
    for source in spec.sources:
        files = ", ".join(f.name for f in source.files)
        where = f"record {source.record}" if source.record else "direct"
        out.print(f"source: {source.kind} {where}: {files} (licence: {source.licence})")
        for f in source.files:
            pins = [v for v in (f.checksum, f"{f.size_bytes} bytes" if f.size_bytes else None) if v]
            out.print(f"  {f.name}: pinned in the task: {', '.join(pins) or 'nothing'}")
            for row in published[f.name]:
                values = [*row.checksums, *([f"{row.size_bytes} bytes"] if row.size_bytes else [])]
                out.print(
                    f"    published: {', '.join(values)} ({row.evidence_kind}: {row.evidence})",
                    highlight=False,
                )
            if not published[f.name]:
                out.print("    published: no third-party value found")
    out.print(f"split: {spec.split.rule}")
    thresholds = board.thresholds()
    out.print(
        f"leaderboard: {board.n_rows} rows ({leaderboard_source(task)}); "
        "medal thresholds (mean position) gold ≤ "
        f"{thresholds.gold:.4g}, silver ≤ {thresholds.silver:.4g}, bronze ≤ "
        f"{thresholds.bronze:.4g}, above median ≤ {thresholds.above_median:.4g}"
    )
    for metric in spec.metrics:
        mark = " (headline)" if metric.headline else ""
        out.print(f"  metric {metric.key}: {metric.direction} is better{mark}")
    verdict = "differ from" if study_differs else "agree with"
    out.print(
        f"study definitions (--definitions study) {verdict} the official ones: "
        f"{ERRATA_DOC}, entry {spec.id}"
    )
    _print_writeup(spec.family, writeup)
    if not spec.is_implemented:
        out.print("[yellow]prepare and grade are not built for this task yet[/]")
    state = (
        "not prepared"
        if prepared is None
        else f"prepared ({'mini' if prepared['mini'] else 'full'})"
    )
    out.print(f"data: {dirs.root} — {state}")


def _print_writeup(family: str, writeup: "SolutionWriteup | None") -> None:
    """The winning-solution lines of ``rexmle info``: team, score, the write-up's method and
    details, what is not established, and every source.
    """
    from rexmle.tasks.solutions import DETAIL_FIELDS

    if writeup is None:
        out.print(f"winning solution: none written (rexmle/challenges/{family}/solutions.yaml)")
        return
    rank = f", rank {writeup.rank}" if writeup.rank is not None else ""
    out.print(f"winning solution: {writeup.team}{rank} — {writeup.reported_score}", highlight=False)
    fields = [("method", "method"), *DETAIL_FIELDS, ("not_established", "not established")]
    for name, heading in fields:
        text = getattr(writeup, name)
        if text:
            out.print(f"  {heading.lower()}: {text}", highlight=False, markup=False)
    for source in writeup.sources:
        out.print(f"  source: {source.title} ({source.kind}): {source.address}", highlight=False)


@app.command("prepare")
def prepare(
    tasks: Annotated[list[str] | None, typer.Argument(help="Task ids.")] = None,
    all_tasks_flag: Annotated[bool, typer.Option("--all", help="Prepare every task.")] = False,
    mini: Annotated[bool, typer.Option("--mini", help="Use the built-in mini fixtures.")] = False,
    data_dir: DataDirOption = None,
    force: Annotated[bool, typer.Option("--force", help="Prepare again from scratch.")] = False,
    from_dir: Annotated[
        Path | None,
        typer.Option("--from", help="Take already-downloaded source files from DIR (offline)."),
    ] = None,
    allow_unpinned: Annotated[
        bool,
        typer.Option(
            "--allow-unpinned", help="With --from: accept files without pinned checksums."
        ),
    ] = False,
    no_published: NoPublishedOption = False,
) -> None:
    """Download (or generate with --mini) and prepare tasks into public/ and private/."""
    from rexmle.preparation import prepare_task
    from rexmle.tasks.folders import read_prepared
    from rexmle.tasks.registry import all_tasks

    if all_tasks_flag == bool(tasks):
        both = " (not both)" if all_tasks_flag else ""
        raise _fail(ValueError(f"give task ids or --all{both}"))
    ids = list(all_tasks()) if all_tasks_flag else list(tasks or [])
    failed = 0
    for task_id in ids:
        try:
            with err.status(f"preparing {task_id}…"):
                dirs, did_work = prepare_task(
                    task_id,
                    data_dir=data_dir,
                    mini=mini,
                    force=force,
                    from_dir=from_dir,
                    allow_unpinned=allow_unpinned,
                    published_checksums=not no_published,
                )
        except KeyboardInterrupt:
            raise _interrupted(task_id) from None
        except RexmleError as error:
            failed += 1
            err.print(f"[bold red]{task_id}: failed:[/] {error}", highlight=False)
            continue
        verb = "prepared" if did_work else "already prepared (use --force to redo)"
        out.print(f"{task_id}: {verb} in {dirs.root}")
        notes = (read_prepared(dirs) or {}).get("notes") if did_work else None
        for note in notes if isinstance(notes, list) else []:
            out.print(f"  [yellow]note:[/] {note}", highlight=False)
    if failed:
        raise typer.Exit(2)


@app.command("download")
def download(
    tasks: Annotated[list[str], typer.Argument(help="Task ids.")],
    data_dir: DataDirOption = None,
    max_parallel: Annotated[int, typer.Option("--parallel", help="Files at once.", min=1)] = 2,
    no_published: NoPublishedOption = False,
) -> None:
    """Download, verify and extract tasks' raw sources only (shared sources: once)."""
    from rexmle.config import resolve_data_dir
    from rexmle.sources import fetch_task_raw
    from rexmle.tasks.registry import get_task

    root = resolve_data_dir(data_dir)
    failed = 0
    for task_id in tasks:
        try:
            spec = get_task(task_id)
            raw_dir = root / spec.raw_folder / "raw"
            manifest = fetch_task_raw(
                spec,
                raw_dir,
                max_parallel=max_parallel,
                progress=sys.stderr.isatty(),
                published_checksums=not no_published,
            )
        except KeyboardInterrupt:
            raise _interrupted(task_id) from None
        except RexmleError as error:
            failed += 1
            err.print(f"[bold red]{task_id}: failed:[/] {error}", highlight=False)
            continue
        out.print(f"{task_id}: {len(manifest.files)} file(s) verified in {raw_dir}")
    if failed:
        raise typer.Exit(2)


@app.command("validate")
def validate(
    task: TaskArgument,
    submission_dir: SubmissionArgument,
    data_dir: DataDirOption = None,
    workers: WorkersOption = None,
) -> None:
    """Check a submission's format with public data only (never a score). Exit 0 valid, 1 invalid."""
    from rexmle.grading import validate_submission

    try:
        result = validate_submission(task, submission_dir, data_dir=data_dir, workers=workers)
    except RexmleError as error:
        raise _fail(error) from error
    for warning in result.warnings:
        err.print(f"[yellow]warning:[/] {warning}", highlight=False)
    if not result.valid:
        n = len(result.reasons)
        err.print(f"[bold red]submission is invalid ({n} problem{'s' if n != 1 else ''}):[/]")
        for reason in result.reasons:
            err.print(f"  - {reason}", highlight=False)
        raise typer.Exit(1)
    out.print(f"submission is valid ({result.n_cases} cases)")


@app.command("grade")
def grade(
    task: TaskArgument,
    submission_dir: SubmissionArgument,
    data_dir: DataDirOption = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the grade report.")] = None,
    cases_out: Annotated[
        Path | None, typer.Option("--cases", help="Write per-case metrics as CSV.")
    ] = None,
    workers: WorkersOption = None,
    definitions: DefinitionsOption = "official",
) -> None:
    """Grade a submission. Exit 0 graded, 1 invalid submission, 2 usage or harness error."""
    from rexmle.grading import grade_submission
    from rexmle.grading.grader import write_report
    from rexmle.tasks.definitions import parse_definitions

    try:
        chosen = parse_definitions(definitions)
        report = grade_submission(
            task, submission_dir, data_dir=data_dir, workers=workers, definitions=chosen
        )
    except RexmleError as error:
        raise _fail(error) from error
    if json_out is not None:
        write_report(report, json_out)
    if cases_out is not None and report.cases:
        import pandas as pd

        cases_out.parent.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(report.cases).to_csv(cases_out, index=False)
    for warning in report.warnings:
        err.print(f"[yellow]warning:[/] {warning}", highlight=False)
    if not report.valid:
        n = len(report.reasons)
        err.print(f"[bold red]submission is invalid ({n} problem{'s' if n != 1 else ''}):[/]")
        for reason in report.reasons:
            err.print(f"  - {reason}", highlight=False)
        raise typer.Exit(1)
    _print_ranking(task, report.metrics, report.ranking.model_dump())
    if report.definitions != "official":
        out.print(f"definitions: {report.definitions} (see docs/study-errata.md)")
    _warn_if_mini(task, data_dir)
    out.print(f"graded in {report.seconds:.2f} s")


def _warn_if_mini(task: str, data_dir: Path | None) -> None:
    """Say so when the grade was against the synthetic mini data (ranked on real leaderboards)."""
    from rexmle.grading.report import MINI_GRADE_BANNER
    from rexmle.tasks.folders import read_prepared, task_dirs

    prepared = read_prepared(task_dirs(task, data_dir))
    if prepared is not None and prepared.get("mini"):
        err.print(f"[bold yellow]{MINI_GRADE_BANNER}[/]", highlight=False)


def _print_ranking(task: str, metrics: dict[str, float], ranking: dict[str, object]) -> None:
    from rich.table import Table

    table = Table(title=f"{task}: {ranking['n_rows']} leaderboard rows")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("position", justify="right")
    positions = ranking["positions"]
    assert isinstance(positions, dict)
    for key, value in metrics.items():
        position = positions.get(key)
        table.add_row(key, f"{value:.6g}", "-" if position is None else f"{position:g}")
    out.print(table)
    medal = ranking["medal"] or "none"
    out.print(
        f"mean position {ranking['mean_position']:.4g}   percentile {ranking['percentile']:.4f}   "
        f"medal {medal}   above median {ranking['above_median']}"
    )


@app.command("rank")
def rank(
    task: TaskArgument,
    values: Annotated[list[str], typer.Argument(help="key=value for every leaderboard metric.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Rank given metric values against a task's human leaderboard (for auditing numbers)."""
    from rexmle.tasks.leaderboard import load_leaderboard

    try:
        board = load_leaderboard(task)
        metrics: dict[str, float] = {}
        for item in values:
            key, sep, text = item.partition("=")
            if not sep:
                msg = f"expected key=value, got {item!r}"
                raise ValueError(msg)
            if key not in board.directions:
                msg = f"{key!r} is not a leaderboard metric of {task}; metrics: {board.metrics}"
                raise ValueError(msg)
            try:
                metrics[key] = float(text)
            except ValueError:
                msg = f"{item!r}: {key} must be a number, got {text!r}"
                raise ValueError(msg) from None
        ranking = board.rank(metrics)
    except (RexmleError, ValueError) as error:
        raise _fail(error) from error
    if as_json:
        out.print_json(json.dumps(ranking.model_dump()))
        return
    _print_ranking(task, metrics, ranking.model_dump())


@app.command("report")
def report(
    runs_dir: RunsArgument = None,
    html_out: Annotated[
        Path | None,
        typer.Option("--html", help="Write an HTML report (FILE.html) or the run browser (DIR/)."),
    ] = None,
    markdown_out: Annotated[
        Path | None, typer.Option("--markdown", help="Write a Markdown report.")
    ] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write results as JSON.")] = None,
    data_dir: DataDirOption = None,
    table_out: Annotated[
        Path | None,
        typer.Option("--table", help="Write the run-table (.csv, .json or .parquet)."),
    ] = None,
    definitions: Annotated[
        str,
        typer.Option(
            "--definitions",
            help="official (the runs' grades), study (every run regraded with the published "
            "study's definitions) or both (official report, paper comparison with both); study "
            "and both regrade from the private data of --data-dir.",
        ),
    ] = "official",
) -> None:
    """Summarise runs: published-form table per group, seed statistics, plots, failures."""
    from rexmle.config import resolve_data_dir
    from rexmle.report import collect_runs, leaderboard_tables, run_table, write_report
    from rexmle.report.console import leaderboard_console_tables
    from rexmle.report.paper import comparison_appendix, paper_comparisons
    from rexmle.report.render import banners
    from rexmle.report.runtable import write_run_table
    from rexmle.report.tables import key_label
    from rexmle.runner.regrade import regrade_runs

    data_dir = resolve_data_dir(data_dir)
    try:
        if definitions not in ("official", "study", "both"):
            msg = f"--definitions must be official, study or both, got {definitions!r}"
            raise ValueError(msg)
        runs_dir = resolve_runs_dir(runs_dir)
        results = collect_runs(runs_dir)
        if not results:
            raise _fail(ValueError(f"no runs found under {runs_dir}"))
        study = None
        if definitions != "official":
            study = regrade_runs(results, "study", resolve_data_dir(data_dir))
        shown = study if definitions == "study" and study is not None else results
        frame = run_table(shown)
        for banner in banners(frame):
            err.print(f"[bold yellow]{banner.text}[/]", highlight=False)
        suffix = " · study definitions" if definitions == "study" else ""
        comparisons = paper_comparisons(results, study)
        boards = [(f"{key_label(k)}{suffix}", b) for k, b in leaderboard_tables(frame)]
        boards += [(f"Paper comparison: {key_label(k)}", b) for k, b in comparisons]
        for title, board in boards:
            for table in leaderboard_console_tables(board, f"{title} ({runs_dir})"):
                out.print(table)
        if table_out is not None:
            write_run_table(frame, table_out)
        written = write_report(
            shown,
            markdown=markdown_out,
            html_path=html_out,
            json_path=json_out,
            data_dir=data_dir,
            appendix=comparison_appendix(comparisons, study=study is not None),
        )
    except (RexmleError, ValueError) as error:
        raise _fail(error) from error
    if table_out is not None:
        out.print(f"wrote {table_out}")
    browser = html_out is not None and html_out not in written
    for path in written if not browser else [p for p in written if p.name == "index.html"]:
        out.print(f"wrote {path}")
    if browser and html_out is not None:
        pages = len([p for p in written if p.is_relative_to(html_out / "runs")])
        plots = len([p for p in written if p.is_relative_to(html_out / "plots")])
        out.print(f"wrote {pages} run pages and {plots} plots under {html_out}")


@app.command("analyze")
def analyze(
    runs_dir: RunsArgument = None,
    data_dir: DataDirOption = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write every run's analysis as JSON.")
    ] = None,
) -> None:
    """Failure analysis: taxonomy of every run, geometry diagnostics, summary per agent."""
    from rexmle.analysis.analyze import (
        analysis_json,
        analysis_table,
        analyze_runs,
        require_runs,
        summary_per_agent,
    )
    from rexmle.config import resolve_data_dir
    from rexmle.report import collect_runs
    from rexmle.report.console import frame_table

    data_dir = resolve_data_dir(data_dir)
    try:
        runs_dir = resolve_runs_dir(runs_dir)
        results = collect_runs(runs_dir)
        require_runs(results, runs_dir)
        analyses = analyze_runs(results, data_dir=data_dir)
    except RexmleError as error:
        raise _fail(error) from error

    for title, frame in (
        ("runs", analysis_table(analyses).drop(columns=["evidence"])),
        ("per agent", summary_per_agent(analyses)),
    ):
        out.print(frame_table(frame, f"{title} ({runs_dir})"))
    if json_out is not None:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(analysis_json(analyses), encoding="utf-8")
        out.print(f"wrote {json_out}")


# ---- commands of rexmle.runner (run, demo) -------------------------------------------------------
def _register_runner_commands() -> None:
    import importlib.util

    if importlib.util.find_spec("rexmle.runner") and importlib.util.find_spec(
        "rexmle.runner.commands"
    ):
        from rexmle.runner.commands import register

        register(app)


_register_runner_commands()


def _register_agents_commands() -> None:
    from rexmle.agents.commands import register

    register(app)


_register_agents_commands()
# ---- end of runner hook ----------------------------------------------------------------------------

from rexmle.llm.commands import register as _register_llm_commands  # noqa: E402

_register_llm_commands(app)
# ---- end of llm hook ----------------------------------------------------------------------------

from rexmle.scaffold.commands import register as _register_dev_commands  # noqa: E402

_register_dev_commands(app)


def main() -> None:
    """Entry point: usage errors and harness failures exit 2, never 1 (1 = invalid submission).

    Typer already exits 2 on usage errors; exceptions escaping a command are harness errors.
    pydantic's plugins are off unless ``PYDANTIC_DISABLE_PLUGINS`` is set (empty turns them on):
    looking for them reads the metadata of every installed distribution, about 30 ms of each
    start, and the command line uses none.
    When the command is done, the objects alive are moved out of the cyclic garbage collector's
    sight (`gc.freeze`): the interpreter's last collection would otherwise walk all of them
    (the modules of numpy, scipy, pydantic, typer, rich...), which took longer than grading a
    small task. Exit handlers and the release of every object by its reference count still run.
    """
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    try:
        app()
    except RexmleError as error:
        err.print(f"[bold red]error:[/] {error}", highlight=False)
        sys.exit(2)
    except Exception as error:  # a harness bug must not look like an invalid submission
        err.print(f"[bold red]internal error:[/] {type(error).__name__}: {error}", highlight=False)
        sys.exit(2)
    finally:
        gc.freeze()


if __name__ == "__main__":
    main()
