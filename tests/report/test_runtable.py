"""The run-table and every table computed from it, against hand computations on synthetic
run folders (run.json + grade.json written here, as the executor and grader write them).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from rexmle.errors import RexmleError
from rexmle.report import collect_runs, leaderboard_table, leaderboard_tables, run_table
from rexmle.report.render import render_html, render_json, render_markdown
from rexmle.report.runtable import RUN_TABLE_COLUMNS, write_run_table
from rexmle.report.stats import hierarchical_bootstrap
from rexmle.report.tables import key_label, performance_overview, seed_statistics
from tests.grade_reports import grade_report_json
from tests.run_records import write_run_json


def _run(
    runs: Path,
    group: str,
    task: str,
    agent: str,
    seed: int,
    status: str,
    *,
    grade: dict | None = None,
    mini: bool = True,
    isolated: bool = True,
    error: str | None = None,
    condition: str | None = None,
) -> Path:
    folder = runs / group / task / agent / f"seed-{seed}"
    folder.mkdir(parents=True)
    record = {
        "status": status,
        "config": {"mini": mini, "time_limit_s": 600.0},
        "sandbox": {"kind": "bwrap" if isolated else "local", "isolated": isolated},
        "error": error,
    }
    if condition is not None:
        record["condition"] = condition
    write_run_json(folder, record)
    if grade is not None:
        (folder / "grade.json").write_text(grade_report_json(task, **grade))
        (folder / "submission").mkdir()
        (folder / "submission" / "submission.csv").write_text("case_id\n")
    return folder


def _valid(key: str, value: float, percentile: float) -> dict:
    return {"valid": True, "metrics": {key: value}, "percentile": percentile}


def _invalid(reason: str) -> dict:
    return {"valid": False, "reasons": [reason]}


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    # group g1 (mini data): agent A on isles22 (3 seeds) and dentex (2 seeds); B on isles22 only
    _run(root, "g1", "isles22", "A", 0, "completed", grade=_valid("dice", 0.6, 0.5))
    _run(root, "g1", "isles22", "A", 1, "completed", grade=_valid("dice", 0.4, 0.3))
    _run(root, "g1", "isles22", "A", 2, "invalid_submission", grade=_invalid("row 3: missing"))
    _run(root, "g1", "dentex", "A", 0, "agent_error", error="the agent exited with code 1")
    _run(root, "g1", "dentex", "A", 1, "timeout", grade=_valid("ap_mean", 0.2, 0.3))
    _run(root, "g1", "isles22", "B", 0, "completed", grade=_valid("dice", 0.8, 1.0), isolated=False)
    _run(root, "g1", "isles22", "B", 1, "running")
    _run(root, "g1", "isles22", "B", 2, "infra_error", error="the grader failed (exit 2)")
    # group g2 (full data): the same agent and task, seed 0 again: never pooled with g1
    _run(root, "g2", "isles22", "A", 0, "completed", grade=_valid("dice", 0.9, 0.9), mini=False)
    return root


def test_run_table_has_one_typed_row_per_run(runs: Path) -> None:
    frame = run_table(collect_runs(runs))
    assert len(frame) == 9
    assert dict(frame.dtypes.astype(str)) == RUN_TABLE_COLUMNS
    by_status = frame.set_index(["group", "agent", "task", "seed"])
    assert not by_status.loc[("g1", "B", "isles22", 1), "finished"]  # running
    assert not by_status.loc[("g1", "B", "isles22", 2), "scored"]  # infra_error
    assert by_status.loc[("g1", "A", "dentex", 0), "failed"]  # agent_error, no submission
    assert by_status.loc[("g1", "A", "dentex", 0), "reason"] == "the agent exited with code 1"
    assert by_status.loc[("g1", "A", "isles22", 2), "reason"] == "row 3: missing"
    assert set(frame["data"]) == {"mini", "full"}


def test_published_table_values_fail_cells_and_overall_by_hand(runs: Path) -> None:
    tables = dict(leaderboard_tables(collect_runs(runs)))
    assert set(tables) == {("g1", "", "mini"), ("g2", "", "full")}
    g1 = tables[("g1", "", "mini")].set_index("task")
    # A isles22: value = mean of valid seeds (0.6 + 0.4) / 2 = 0.50;
    #   rank = mean over scored seeds (0.5 + 0.3 + 0) / 3 = 26.67 % -> "27%"
    assert (g1.loc["isles22", "A value"], g1.loc["isles22", "A rank"]) == ("0.50", "27%")
    # B isles22: one scored seed (running and infra_error are not scored), local sandbox -> †
    assert (g1.loc["isles22", "B value"], g1.loc["isles22", "B rank"]) == ("0.80†", "100%")
    # A dentex: seeds agent_error (FAIL, 0) and timeout-with-valid (0.3): value 0.20, rank 15%
    assert (g1.loc["dentex", "A value"], g1.loc["dentex", "A rank"]) == ("0.20", "15%")
    # B never ran dentex: empty, not FAIL
    assert (g1.loc["dentex", "B value"], g1.loc["dentex", "B rank"]) == ("", "")
    assert (g1.loc["Tasks run", "A rank"], g1.loc["Tasks run", "B rank"]) == ("2", "1")
    # overall A = (0.26667 + 0.15) / 2 = 20.83 %; B = 100 % over its one task
    assert g1.loc["Overall mean percentile", "A rank"] == "20.83%"
    assert g1.loc["Overall mean percentile", "B rank"] == "100.00%"
    g2 = tables[("g2", "", "full")].set_index("task")
    assert g2.loc["Overall mean percentile", "A rank"] == "90.00%"
    assert "dentex" not in g2.index


def test_a_fail_cell_needs_a_scored_run_without_valid_submission(runs: Path) -> None:
    g1 = [r for r in collect_runs(runs) if r.group == "g1" and r.task == "isles22"]
    only_invalid = [r for r in g1 if r.agent == "A" and r.seed == 2]
    table = leaderboard_table(only_invalid).set_index("task")
    assert (table.loc["isles22", "A value"], table.loc["isles22", "A rank"]) == ("FAIL", "--")
    only_running = [r for r in g1 if r.agent == "B" and r.status == "running"]
    assert "B value" not in leaderboard_table(only_running).columns


def test_two_groups_are_never_pooled(runs: Path) -> None:
    with pytest.raises(RexmleError, match="several groups"):
        leaderboard_table(collect_runs(runs))
    _, per_agent = seed_statistics(collect_runs(runs), n_bootstrap=200)
    a = per_agent[per_agent["agent"] == "A"].set_index("group")
    assert a.loc["g2", "runs"] == 1
    assert a.loc["g1", "runs"] == 5


def test_seed_statistics_sem_and_overview_by_hand(runs: Path) -> None:
    results = [r for r in collect_runs(runs) if r.group == "g1"]
    per_task, per_agent = seed_statistics(results, n_bootstrap=500, seed=3)
    row = per_task.set_index(["agent", "task"]).loc[("A", "isles22")]
    # percentiles 0.5, 0.3, 0: mean 0.26667; squared deviations .054444 + .001111 + .071111
    assert row["percentile_mean"] == pytest.approx(0.8 / 3)
    assert row["percentile_std"] == pytest.approx(math.sqrt(0.126667 / 2), abs=1e-5)
    assert row["headline_std"] == pytest.approx(math.sqrt(0.02 / 1))  # 0.6, 0.4: 2 x 0.1^2
    single = per_task.set_index(["agent", "task"]).loc[("B", "isles22")]
    assert math.isnan(single["percentile_std"])  # one seed: n/a, not 0
    a = per_agent.set_index("agent").loc["A"]
    assert a["mean_percentile"] == pytest.approx((0.8 / 3 + 0.15) / 2)
    # per seed index: seed 0 (0.5 + 0) / 2 = 0.25, seed 1 (0.3 + 0.3) / 2 = 0.3, seed 2: 0
    # mean 0.18333; squared deviations .004444 + .013611 + .033611 = .051667
    assert a["sem"] == pytest.approx(math.sqrt(0.051667 / 2) / math.sqrt(3), abs=1e-5)
    assert "tasks, then" in a["method"] or "then each" in a["method"]
    assert math.isnan(per_agent.set_index("agent").loc["B", "sem"])
    overview = performance_overview(results).set_index("agent")
    # A segmentation: isles22 (0.6 + 0.4 + 0) / 3; detection: dentex (0 + 0.2) / 2
    assert overview.loc["A", "segmentation"] == pytest.approx(1.0 / 3)
    assert overview.loc["A", "detection"] == pytest.approx(0.1)
    assert overview.loc["B", "segmentation"] == pytest.approx(0.8)
    assert pd.isna(overview.loc["B", "detection"])


def test_hierarchical_bootstrap_by_hand() -> None:
    # one task, seeds 0 and 1: seed means 0, 0.5, 1 with probabilities 1/4, 1/2, 1/4:
    # the 2.5 % and 97.5 % quantiles are 0 and 1 (a tasks-only bootstrap would give width 0)
    assert hierarchical_bootstrap([[0.0, 1.0]], n_bootstrap=4000, seed=0) == (0.0, 1.0)
    # two tasks with one seed each (0.2, 0.6): draw means 0.2, 0.4, 0.6 -> interval [0.2, 0.6]
    low, high = hierarchical_bootstrap([[0.2], [0.6]], n_bootstrap=4000, seed=0)
    assert (low, high) == (pytest.approx(0.2), pytest.approx(0.6))
    assert hierarchical_bootstrap([[0.7]], n_bootstrap=50) == (0.7, 0.7)
    with pytest.raises(ValueError, match="at least one seed"):
        hierarchical_bootstrap([[0.1], []])


def test_reports_flag_mini_data_isolation_and_give_reasons(runs: Path) -> None:
    results = collect_runs(runs)
    markdown = render_markdown(results)
    assert "MINI DATA: 8 run(s)" in markdown
    assert "NOT ISOLATED: 1 run(s)" in markdown
    assert "row 3: missing" in markdown
    assert "the agent exited with code 1" in markdown
    assert "1 run(s) have not finished" in markdown
    failed = markdown.split("## Failed runs")[1].split("## Not scored")[0]
    not_scored = markdown.split("## Not scored")[1].split("## Failure analysis")[0]
    assert "| running |" not in failed
    assert "| infra_error |" not in failed
    assert "| running |" in not_scored
    assert "the grader failed (exit 2)" in not_scored
    assert "| crash: other |" in failed  # agent_error with an empty stderr
    assert "| isles22 | 10 | rexmle/challenges/isles22/isles22.leaderboard.csv |" in markdown
    page = render_html(results)
    assert "class='banner mini'" in page
    assert "id='failures'" in page
    assert page.count("<svg") == 6  # three plots for each of the two tables
    payload = json.loads(render_json(results))
    assert len(payload["runs"]) == 9
    assert len(payload["leaderboards"]) == 2


def test_a_run_json_planted_in_a_workspace_is_not_collected(runs: Path) -> None:
    workspace = runs / "g1" / "isles22" / "A" / "seed-0" / "workspace"
    _run(workspace, "x", "isles22", "Z", 0, "completed", grade=_valid("dice", 1.0, 1.0))
    assert "Z" not in {r.agent for r in collect_runs(runs)}


def test_run_table_round_trips_through_csv_and_json(runs: Path, tmp_path: Path) -> None:
    frame = run_table(collect_runs(runs))
    write_run_table(frame, tmp_path / "t.csv")
    write_run_table(frame, tmp_path / "t.json")
    back = pd.read_csv(tmp_path / "t.csv")
    assert back["percentile"].tolist() == pytest.approx(frame["percentile"].tolist())
    assert len(pd.read_json(tmp_path / "t.json")) == 9
    with pytest.raises(RexmleError, match=r"\.csv, \.json or \.parquet"):
        write_run_table(frame, tmp_path / "t.xlsx")


def test_plots_show_the_table_values(runs: Path) -> None:
    from rexmle.report.plots import agent_colours, percentile_heatmap

    results = [r for r in collect_runs(runs) if r.group == "g1"]
    per_task, _ = seed_statistics(results, n_bootstrap=100)
    svg = percentile_heatmap(per_task, "t")
    # A isles22: (0.5 + 0.3 + 0) / 3 = 26.7 % over 3 seeds, 2 valid; B never ran dentex
    assert "A on isles22: mean percentile 26.7% over 3 seed(s), 2 valid" in svg
    assert "B did not run dentex" in svg
    colours = agent_colours([f"agent{i}" for i in range(30)])
    assert len(set(colours.values())) == 30  # never a repeated colour


def test_llm_totals_are_read_when_present(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    folder = _run(root, "g", "isles22", "A", 0, "completed", grade=_valid("dice", 0.5, 0.5))
    record = json.loads((folder / "run.json").read_text())
    record["llm"] = {"calls": 3, "tokens_in": 1200, "tokens_out": 300, "cost_usd": 0.75}
    write_run_json(folder, record)
    _run(root, "g", "isles22", "A", 1, "completed", grade=_valid("dice", 0.5, 0.5))
    frame = run_table(collect_runs(root))
    assert frame.loc[0, "llm_total_tokens"] == 1500.0  # 1200 + 300
    assert frame.loc[0, "llm_cost_usd"] == 0.75
    assert math.isnan(frame.loc[1, "llm_total_tokens"])  # no gateway: n/a, not 0
    _, per_agent = seed_statistics(frame, n_bootstrap=10)
    assert per_agent.loc[0, "llm_tokens"] == 1500.0
    assert per_agent.loc[0, "llm_cost_usd"] == 0.75


def test_conditions_of_one_group_get_their_own_tables(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    grade = _valid("dice", 0.5, 0.4)
    _run(root, "g", "isles22", "A", 0, "completed", grade=grade, condition="gpt-5")
    _run(
        root,
        "g",
        "dentex",
        "A",
        0,
        "completed",
        grade=_valid("ap_mean", 0.1, 0.2),
        condition="gpt-5",
    )
    _run(
        root,
        "g",
        "isles22",
        "A",
        1,
        "completed",
        grade=_valid("dice", 0.7, 0.8),
        condition="claude",
    )
    tables = dict(leaderboard_tables(collect_runs(root)))
    assert set(tables) == {("g", "gpt-5", "mini"), ("g", "claude", "mini")}
    # gpt-5: (0.4 + 0.2) / 2 = 30 %; claude: its one task, 80 %
    assert tables[("g", "gpt-5", "mini")].iloc[-1]["A rank"] == "30.00%"
    assert tables[("g", "claude", "mini")].iloc[-1]["A rank"] == "80.00%"


def test_a_grade_json_that_is_not_a_grade_report_is_named(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    folder = _run(root, "g", "isles22", "A", 0, "completed", grade=_valid("dice", 0.5, 0.5))
    (folder / "grade.json").write_text('{"valid": true, "metrics": {"dice": 0.5}}')
    with pytest.raises(RexmleError, match=r"grade\.json is not a grade report \(task: Field"):
        collect_runs(root)


def test_the_data_a_run_was_graded_on_comes_from_its_grade_report(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    # config asked for full data, but the data dir held a mini prepare: grade.json says mini
    _run(
        root,
        "g",
        "isles22",
        "A",
        0,
        "completed",
        grade=_valid("dice", 0.5, 0.5) | {"data": "mini"},
        mini=False,
    )
    # a report without the field and a run never graded: the config's data
    _run(root, "g", "isles22", "A", 1, "completed", grade=_valid("dice", 0.5, 0.5), mini=False)
    _run(root, "g", "isles22", "A", 2, "agent_error", mini=True)
    assert [r.data for r in collect_runs(root)] == ["mini", "full", "mini"]
    assert "data mode not recorded" in key_label(("g", "", "unknown"))


def test_a_run_json_that_is_not_a_run_record_is_refused_with_its_file_and_field(
    tmp_path: Path,
) -> None:
    root = tmp_path / "runs"
    folder = _run(root, "g", "isles22", "A", 0, "completed", grade=_valid("dice", 0.5, 0.5))
    record = json.loads((folder / "run.json").read_text())
    del record["config"]["mini"]
    record["status"] = "finished"
    (folder / "run.json").write_text(json.dumps(record))
    with pytest.raises(RexmleError, match="is not a run record") as raised:
        collect_runs(root)
    message = str(raised.value)
    assert str(folder / "run.json") in message
    assert "status" in message
    assert "config.mini" in message
