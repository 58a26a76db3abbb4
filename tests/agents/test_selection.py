"""Submission selection: the study's per-agent pick (unchecked) versus ReX-MLE's best valid one.

The agents' folders are written here as each agent writes them (AIDE's workspace, ML-Master's
``best_submission/``, R&D-Agent's log records and code workspaces); the adapters' keepers run
against a real validation server.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import types
from pathlib import Path, PurePosixPath

import pytest

from rexmle.agents.adapters import adapter_runtime as runtime
from rexmle.agents.adapters import aide, ml_master, rdagent
from rexmle.agents.dummy import copy_sample_submission
from rexmle.agents.llm_launch import leaderboard_scores
from rexmle.agents.registry import load_agent
from rexmle.errors import SpecError
from rexmle.runner.validation_server import ValidationServer
from rexmle.tasks.leaderboard import load_leaderboard
from rexmle.tasks.registry import get_task
from tests.agents.test_adapters import keeper_config as adapter_keeper_config

GATEWAY = {"REXMLE_LLM_BASE_URL": "http://127.0.0.1:4000", "REXMLE_LLM_TOKEN": "rx-token-1"}


@pytest.fixture
def server(prepared_mini, mini_data_dir):
    prepared_mini("isles22")
    with ValidationServer("isles22", data_dir=mini_data_dir, max_requests_per_minute=1000) as live:
        yield live


def keeper_config(tmp_path: Path, server: ValidationServer, public: Path, policy: str) -> dict:
    """The keepers' config over a real workspace, with the selection policy."""
    return {**adapter_keeper_config(tmp_path, server, public), "selection": policy}


def files_of(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def broken_copy(public: Path, folder: Path) -> None:
    """The sample submission with its last test case missing (invalid)."""
    copy_sample_submission(public, folder)
    lines = (folder / "submission.csv").read_text().splitlines()
    (folder / "submission.csv").write_text("\n".join(lines[:-1]) + "\n")


def test_the_policy_is_declared_validated_and_overridable():
    for agent in ("aide", "ml-master", "rdagent"):
        spec = load_agent(agent)
        assert spec.llm is not None
        assert spec.llm.selection == "best-valid"
        assert spec.with_overrides(selection="study").llm.selection == "study"  # type: ignore[union-attr]
    with pytest.raises(SpecError, match="selection"):
        load_agent("aide").with_overrides(selection="newest")  # type: ignore[arg-type]
    with pytest.raises(SpecError, match="llm agents only"):
        load_agent("dummy").with_overrides(selection="study")
    with pytest.raises(SpecError, match="scenario"):
        load_agent("aide").with_overrides(scenario="kaggle")
    with pytest.raises(runtime.AdapterError, match="selection must be one of"):
        runtime.selection_policy({"selection": "newest"})


def test_aide_study_takes_the_last_written_submission_unchecked(server, prepared_mini, tmp_path):
    public = prepared_mini("isles22").public
    config = keeper_config(tmp_path, server, public, "study")
    best = runtime.BestSubmission(config, validate=lambda _folder: pytest.fail("checked"))
    results = aide.AideResults(config, best)
    workspace = tmp_path / "agent" / "workspaces" / "0-exp"
    working = workspace / "working"
    broken_copy(public, working)  # an invalid CSV with its masks next to it
    results.poll()
    submission = tmp_path / "submission"
    # working/submission.csv alone, as the study copied it (not the files it names)
    assert files_of(submission) == {"submission.csv": (working / "submission.csv").read_bytes()}
    results.poll()
    assert best.n_kept == 1  # unchanged: not taken again
    copy_sample_submission(public, workspace / "submission")  # AIDE's submission/ folder wins
    results.poll()
    assert files_of(submission) == files_of(workspace / "submission")
    masks = workspace / "submission" / sorted(files_of(workspace / "submission"))[0]
    masks.write_bytes(masks.read_bytes() + b"")
    os.utime(masks, ns=(1, 1))  # rewritten: taken again
    results.poll()
    assert best.n_kept == 3
    log = [json.loads(line) for line in (tmp_path / "agent_output" / "submissions.jsonl").open()]
    assert {entry["checked"] for entry in log} == {False}


def test_aide_best_valid_ignores_what_study_would_take(server, prepared_mini, tmp_path):
    public = prepared_mini("isles22").public
    config = keeper_config(tmp_path, server, public, "best-valid")
    best = runtime.BestSubmission(config)
    results = aide.AideResults(config, best)
    workspace = tmp_path / "agent" / "workspaces" / "0-exp"
    broken_copy(public, workspace / "submission")
    (tmp_path / "agent" / "logs" / "0-exp").mkdir(parents=True)
    results.poll()  # no journal node: nothing offered
    assert not (tmp_path / "submission").exists()


def test_ml_master_study_takes_best_submission_as_it_is(server, prepared_mini, tmp_path):
    public = prepared_mini("isles22").public
    folder = tmp_path / "agent" / "workspaces" / "rexmle" / "best_submission"
    broken_copy(public, folder)
    (folder / "node_id.txt").write_text("node-7\n")
    for policy, kept in (("study", True), ("best-valid", False)):
        config = keeper_config(tmp_path / policy, server, public, policy)
        config["work_dir"] = str(tmp_path / "agent")
        best = runtime.BestSubmission(config)
        ml_master.MlMasterResults(config, best).poll()
        submission = Path(config["submission_dir"])
        assert (submission.is_dir() and files_of(submission) == files_of(folder)) is kept
        assert best.n_kept == int(kept)


class Workspace:
    """Stands in for R&D-Agent's FBWorkspace (its path is a pickled PosixPath)."""

    def __init__(self, path: PurePosixPath):
        self.workspace_path = path


def write_record(loop: Path, record: object, *, module: str = "rdagent_core_experiment") -> Path:
    """One ``sota_exp_to_submit`` pickle, its classes named after a module nobody can import."""
    fake = types.ModuleType(module)
    fake.Workspace = Workspace  # type: ignore[attr-defined]
    saved = Workspace.__module__
    Workspace.__module__ = module
    sys.modules[module] = fake
    try:
        data = pickle.dumps(record)
    finally:
        Workspace.__module__ = saved
        del sys.modules[module]
    path = loop / "record" / "sota_exp_to_submit" / "4242" / "2026-01-01_00-00-00-000000.pkl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_rdagent_study_takes_the_newest_loops_sota_experiment(server, prepared_mini, tmp_path):
    public = prepared_mini("isles22").public
    work = tmp_path / "agent"
    root = work / "git_ignore_folder" / "RD-Agent_workspace"
    older, newer, empty = "a" * 32, "b" * 32, "c" * 32
    broken_copy(public, root / older)  # study takes it unchecked
    (root / older / "main.py").write_text("print('older')\n")
    (root / empty).mkdir(parents=True)  # no submission.csv
    session = work / "log" / "2026-01-01_00-00-00-000000"
    path_of = {
        name: PurePosixPath(f"/ws/agent/git_ignore_folder/RD-Agent_workspace/{name}")
        for name in (older, newer, empty)
    }
    record = write_record(session / "Loop_0", {"exp": Workspace(path_of[older])})
    assert rdagent.workspace_in_record(record) == older
    write_record(session / "Loop_1", None)  # no SOTA yet in that loop
    write_record(session / "Loop_10", [str(path_of[empty])])  # its workspace has no submission
    assert rdagent.sota_workspace(work) == root / older
    config = keeper_config(tmp_path, server, public, "study")
    best = runtime.BestSubmission(config, validate=lambda _folder: pytest.fail("checked"))
    results = rdagent.RdAgentResults(config, best)
    results.poll()
    assert files_of(tmp_path / "submission") == files_of(root / older)
    copy_sample_submission(public, root / newer)
    write_record(session / "Loop_11", {"exp": Workspace(path_of[newer])})
    results.poll()
    assert files_of(tmp_path / "submission") == files_of(root / newer)
    assert best.n_kept == 2
    results.collect()
    assert results.kept == root / newer


def test_leaderboard_scores_put_the_best_first():
    for task_id in ("isles22", "ldct-iqa", "usenhance"):
        headline = get_task(task_id).headline
        values = load_leaderboard(task_id).column(headline.key).tolist()
        scores = leaderboard_scores(task_id)
        assert sorted(scores) == sorted(values)
        best = max(values) if headline.higher_is_better else min(values)
        assert scores[0] == best
        assert (scores[0] > scores[-1]) is headline.higher_is_better


def fake_rdagent(root: Path) -> Path:
    """A package named rdagent: KaggleScen's Kaggle calls, and a console script that prints
    the metric direction the scenario module sees.
    """
    crawler = root / "rdagent" / "scenarios" / "kaggle"
    scen = root / "rdagent" / "scenarios" / "data_science" / "scen"
    for folder in (crawler, scen, root / "rdagent" / "app"):
        folder.mkdir(parents=True, exist_ok=True)
    for folder in (
        root / "rdagent",
        root / "rdagent" / "scenarios",
        crawler.parent / "data_science",
    ):
        (folder / "__init__.py").write_text("")
    (crawler / "__init__.py").write_text("")
    (crawler / "kaggle_crawler.py").write_text(
        "def leaderboard_scores(competition):\n    raise RuntimeError('Kaggle API called')\n"
        "def get_metric_direction(competition):\n"
        "    s = leaderboard_scores(competition)\n    return s[0] > s[-1]\n"
    )
    (scen / "__init__.py").write_text(
        "from rdagent.scenarios.kaggle.kaggle_crawler import get_metric_direction\n"
    )
    (root / "rdagent" / "app" / "__init__.py").write_text("")
    (root / "rdagent" / "app" / "cli.py").write_text(
        "import sys\n"
        "def app():\n"
        "    from rdagent.scenarios.data_science import scen\n"
        "    from rdagent.scenarios.kaggle import kaggle_crawler\n"
        "    print(sys.argv[1:], scen.get_metric_direction('x'), kaggle_crawler.leaderboard_scores('x'))\n"
        "    return 0\n"
    )
    info = root / "rdagent-0.8.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: rdagent\nVersion: 0.8.0\n")
    (info / "entry_points.txt").write_text("[console_scripts]\nrdagent = rdagent.app.cli:app\n")
    return root


@pytest.mark.parametrize(("scores", "higher"), [([0.9, 0.5, 0.1], True), ([1.0, 4.0], False)])
def test_rdagent_kaggle_scenario_answers_kaggle_from_the_leaderboard(tmp_path, scores, higher):
    work = tmp_path / "agent"
    data = tmp_path / "data"
    data.mkdir()
    (data / "sample_submission.csv").write_text("case_id,value\nc1,0\n")
    config = {
        "work_dir": str(work),
        "task": "isles22",
        "data_dir": str(data),
        "workspace": str(tmp_path),
        "instructions": str(tmp_path / "instructions.md"),
        "hardware": "a CPU (no GPU)",
        "time_limit_s": 3600,
        "models": {"chat": "gpt-5"},
        "temperatures": {"chat": 1.0},
        "scenario": "kaggle",
        "leaderboard_scores": scores,
    }
    (tmp_path / "instructions.md").write_text("rules\n")
    launch = rdagent.build(config, {**GATEWAY, "PATH": "/usr/bin:/bin"})
    assert launch.env["DS_SCEN"] == "rdagent.scenarios.data_science.scen.KaggleScen"
    assert launch.env["DS_IF_USING_MLE_DATA"] == "True"
    assert launch.env["KG_IF_USING_MLE_DATA"] == "True"
    assert launch.argv[:2] == [sys.executable, str(work / "rdagent_kaggle.py")]
    assert launch.argv[2:5] == ["data_science", "--competition", "isles22"]
    launcher = work / "rdagent_kaggle.py"
    launcher.parent.mkdir(parents=True)
    launcher.write_text(launch.files[launcher])
    env = {**launch.env, "PYTHONPATH": str(fake_rdagent(tmp_path / "site"))}
    done = subprocess.run(
        [sys.executable, *launch.argv[1:]], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        f"['data_science', '--competition', 'isles22', '--timeout', '3480s'] {higher} "
        f"{[float(v) for v in scores]}"
    )
    with pytest.raises(runtime.AdapterError, match="leaderboard scores"):
        rdagent.build({**config, "leaderboard_scores": None}, GATEWAY)
