"""Plan a batch of runs: which tasks, which are prepared, which runs are done and which to (re)do.

Used by ``rexmle run`` and ``rexmle demo``. Suites: ``mini`` (every task on its mini data) and
``all`` (every task, on the data kind asked for). A task without an implementation, or without a
baseline solver when the agent is ``baseline``, is reported as not implemented and not run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rexmle.agents.registry import AgentSpec
from rexmle.errors import DataError, NotPrepared, SpecError, TaskNotImplemented
from rexmle.records.runs import RunConfig, needs_run, run_dir
from rexmle.runner.executor import RunJob
from rexmle.tasks.registry import all_tasks, get_task, load_task

SUITES = ("mini", "all")


@dataclass
class Plan:
    """The runs of a batch: to run, already done, and tasks left out with the reason."""

    jobs: list[RunJob] = field(default_factory=list)
    done: list[RunJob] = field(default_factory=list)
    not_implemented: dict[str, str] = field(default_factory=dict)

    @property
    def all_jobs(self) -> list[RunJob]:
        """Every run of the batch, done or not, in plan order."""
        return sorted([*self.jobs, *self.done], key=lambda j: (j.config.task, j.config.seed))


def select_tasks(tasks: Sequence[str], suite: str | None) -> tuple[list[str], bool]:
    """Task ids from ``--task`` or ``--suite``, and whether the suite forces mini data.

    Raises:
        SpecError: both or neither given, an unknown suite, or an unknown task id.
    """
    if bool(tasks) == (suite is not None):
        both = ", not both" if tasks else ""
        msg = f"give --task TASK (one or more) or --suite SUITE{both}"
        raise SpecError(msg)
    if suite is not None:
        if suite not in SUITES:
            msg = f"unknown suite {suite!r}; suites: {', '.join(SUITES)}"
            raise SpecError(msg)
        return list(all_tasks()), suite == "mini"
    for task_id in tasks:
        get_task(task_id)
    return list(dict.fromkeys(tasks)), False


def implemented_tasks(
    task_ids: Sequence[str], agent: AgentSpec
) -> tuple[list[str], dict[str, str]]:
    """Split ``task_ids`` into runnable ones and {task: why not} for the others."""
    runnable: list[str] = []
    left_out: dict[str, str] = {}
    for task_id in task_ids:
        try:
            task = load_task(task_id)
        except TaskNotImplemented:
            left_out[task_id] = "not implemented: the task has no prepare/grade code yet"
            continue
        if agent.kind == "baseline" and not task.has_baseline:
            left_out[task_id] = "not implemented: the task has no baseline solver yet"
            continue
        runnable.append(task_id)
    return runnable, left_out


def ensure_prepared(task_ids: Sequence[str], data_dir: Path, *, mini: bool) -> dict[str, str]:
    """Prepare mini tasks that are not prepared; check full ones are. Returns {task: problem}.

    Full data is never downloaded here (``rexmle prepare`` does that); a task prepared with the
    other data kind is a problem, not silently replaced.
    """
    from rexmle.preparation import prepare_task
    from rexmle.tasks.folders import read_prepared, task_dirs

    problems: dict[str, str] = {}
    for task_id in task_ids:
        try:
            if mini:
                prepare_task(task_id, data_dir=data_dir, mini=True)
                continue
            prepared = read_prepared(task_dirs(task_id, data_dir))
            if prepared is None:
                msg = (
                    f"{task_id} is not prepared in {data_dir}; run: rexmle prepare {task_id} "
                    f"--data-dir {data_dir} (or run with --mini)"
                )
                raise NotPrepared(msg)
            if prepared.get("mini"):
                msg = f"{task_id} is prepared from mini data in {data_dir}; run with --mini"
                raise DataError(msg)
        except (DataError, NotPrepared, TaskNotImplemented) as error:
            problems[task_id] = str(error)
    return problems


def plan_runs(
    agent: AgentSpec,
    task_ids: Sequence[str],
    *,
    seeds: int,
    time_limit_s: float,
    mini: bool,
    runs_dir: Path,
    group: str,
    retry_failed: bool,
) -> Plan:
    """One job per (task, seed), split into runs to do and runs already done.

    Raises:
        RunConflict: a run folder holds a run with another config.
    """
    jobs = [
        make_job(
            agent,
            task_id,
            seed,
            time_limit_s=time_limit_s,
            mini=mini,
            runs_dir=runs_dir,
            group=group,
        )
        for task_id in task_ids
        for seed in range(seeds)
    ]
    return split_done(jobs, retry_failed=retry_failed)


def make_job(
    agent: AgentSpec,
    task_id: str,
    seed: int,
    *,
    time_limit_s: float,
    mini: bool,
    runs_dir: Path,
    group: str,
    llm_budget_usd: float | None = None,
    condition: str | None = None,
    experiment: str | None = None,
    llm_uncapped: bool = False,
    prompts: str = "rexmle",
    solution_informed: bool = False,
) -> RunJob:
    """The job of one run: its config (whose hash is the run id), group and folder.

    An agent with its own code (``dir``) gets the code's content hash into the config.
    ``llm_uncapped``, ``prompts`` and ``solution_informed`` enter the config only when they
    differ from ReX-MLE's defaults (no cap given, its own texts, no write-up), so runs made
    before they existed keep their ids.

    Raises:
        AgentDirError: the agent's folder cannot be shipped (:mod:`rexmle.runner.agent_code`).
    """
    from rexmle.runner.agent_code import pin_agent_code

    agent = pin_agent_code(agent)
    config = RunConfig(
        task=task_id,
        task_spec_version=get_task(task_id).spec_version,
        agent=agent,
        seed=seed,
        time_limit_s=time_limit_s,
        mini=mini,
        llm_budget_usd=llm_budget_usd,
        condition=condition,
        llm_uncapped=True if llm_uncapped else None,
        prompts="study" if prompts == "study" else None,
        solution_informed=True if solution_informed else None,
    )
    folder = run_dir(runs_dir, group, task_id, agent.id, seed)
    return RunJob(config=config, group=group, folder=folder, experiment=experiment)


def split_done(
    jobs: Sequence[RunJob], *, retry_failed: bool, replace_other_config: bool = False
) -> Plan:
    """Split ``jobs`` into runs to do and runs already done (by their records); a run of
    another config is one to do with ``replace_other_config`` (``--force-config``).

    Raises:
        RunConflict: a run folder holds a run with another config.
    """
    plan = Plan()
    for job in jobs:
        if needs_run(
            job.folder,
            job.config,
            retry_failed=retry_failed,
            replace_other_config=replace_other_config,
        ):
            plan.jobs.append(job)
        else:
            plan.done.append(job)
    return plan
