"""Checks ``rexmle run`` makes before anything starts (``--dry-run`` included), each refusal
saying what to fix.

- every agent is known (a close name is suggested) and every task is registered;
- an agent's own code folder (``--agent-dir``, ``dir:``) can be shipped
  (:mod:`rexmle.runner.agent_code`), holds neither the runs dir nor the data dir, the command
  does not name its host path, and the local executor's sandbox can hold its copy read-only
  (not the local sandbox under a root harness);
- the local executor's GPU ids (``--gpus``, ``executor.gpus``) are GPUs of this machine
  (:mod:`rexmle.runner.gpus`); the Slurm executor takes none (it gives each run
  ``gpus_per_run`` GPUs);
- every model an LLM agent would call is in the LLM config (the configured ones are listed);
- no run folder holds a run of another config, unless ``--force-config`` replaces it: the
  message says what differs (the agent's code, its command, ...).

For an experiment file, each refusal names the field and its line in the file.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rexmle.declarations import Location, field_name, line_of, yaml_lines
from rexmle.errors import SpecError

if TYPE_CHECKING:
    from rexmle.runner.executor import RunJob
    from rexmle.runner.experiment import Experiment
    from rexmle.runner.settings import RunSettings


class StudySource:
    """Where the study came from: flags, or an experiment file whose lines messages name."""

    def __init__(self, experiment: str | None) -> None:
        self.file = experiment
        self.lines: dict[Location, int] = {}
        if experiment is None:
            return
        from rexmle.runner.experiment import PRESETS

        if experiment in PRESETS:
            from importlib import resources

            folder = resources.files("rexmle.runner").joinpath("experiment_presets")
            text = folder.joinpath(f"{experiment}.yaml").read_text(encoding="utf-8")
        else:
            text = Path(experiment).read_text(encoding="utf-8")
        self.lines = yaml_lines(text)

    def where(self, location: Location, flag: str) -> str:
        """``FILE, line N: field`` for a file, the flag otherwise."""
        if self.file is None:
            return flag
        line = line_of(self.lines, location)
        at = f", line {line}" if line is not None else ""
        return f"{self.file}{at}: {field_name(location)}"


def check_study(chosen: Experiment, settings: RunSettings, source: StudySource) -> None:
    """Refuse a study that cannot run as written (see the module docstring), before any run.

    Raises:
        SpecError: the first problem found, naming the flag or the file's field and line.
    """
    from rexmle.agents.registry import load_agent
    from rexmle.runner.agent_code import scan

    for index, entry in enumerate(chosen.agents):
        try:
            spec = load_agent(entry.agent)
        except SpecError as error:
            where = source.where(("agents", index, "agent"), "--agent")
            text = str(error).replace("; built-in", f"{_close_agent(entry.agent)}; built-in", 1)
            msg = f"{where}: {text}"
            raise SpecError(msg) from error
        code_dir = entry.dir or spec.dir
        if code_dir is not None:
            try:
                _refuse_harness_folders(Path(code_dir), settings)
                scan(Path(code_dir))
            except SpecError as error:
                where = source.where(("agents", index, "dir"), "--agent-dir")
                sep = " " if source.file is None else ": "
                msg = f"{where}{sep}{error}"
                raise SpecError(msg) from error
            _refuse_host_path(entry.command or spec.command, code_dir, source, index)
            _refuse_writable_copy(
                chosen, settings, source.where(("agents", index, "dir"), "--agent-dir")
            )
    _check_tasks(chosen, source)
    _check_gpus(chosen, source)
    _check_models(chosen, settings, source)


def _refuse_harness_folders(code_dir: Path, settings: RunSettings) -> None:
    """Refuse an agent folder that holds the runs dir or the data dir: its copy would change
    with every run and would show the agent other runs' results or the private answers.
    """
    root = code_dir.resolve()
    for what, flag, folder in (
        ("runs", "--runs-dir", settings.runs_dir),
        ("data", "--data-dir", settings.data_dir),
    ):
        if folder.resolve().is_relative_to(root):
            msg = (
                f"{code_dir}: holds the {what} dir {folder.resolve()}, whose content would reach the agent "
                f"and change with every run: give {flag} outside it, or an agent folder that "
                "holds only the agent's code"
            )
            raise SpecError(msg)


def _refuse_writable_copy(chosen: Experiment, settings: RunSettings, where: str) -> None:
    """Refuse an agent folder whose copy the local executor's sandbox would leave writable."""
    from rexmle.runner.sandbox.bwrap import bwrap_problem
    from rexmle.runner.sandbox.local import LocalSandbox

    if chosen.executor.kind != "local":
        return  # the node's sandbox refuses it there (the run ends infra_error)
    local = settings.sandbox == "local" or (
        settings.sandbox == "auto" and bwrap_problem() is not None
    )
    problem = LocalSandbox().agent_code_problem() if local else None
    if problem is not None:
        msg = f"{where}: {problem}"
        raise SpecError(msg)


def _close_agent(name: str) -> str:
    from rexmle.agents.registry import all_agents

    close = difflib.get_close_matches(name, list(all_agents()), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _refuse_host_path(
    command: str | list[str] | None, code_dir: str, source: StudySource, index: int
) -> None:
    text = command if isinstance(command, str) else " ".join(command or [])
    folder = str(Path(code_dir).absolute())
    if folder in text:
        where = source.where(("agents", index, "command"), "--agent-cmd")
        msg = (
            f"{where} names the host folder {folder}, which no sandbox shows: write $AGENT_DIR "
            f"instead (the read-only copy of the agent's code), e.g. "
            f"'python $AGENT_DIR/run.py'"
        )
        raise SpecError(msg)


def _check_tasks(chosen: Experiment, source: StudySource) -> None:
    from rexmle.tasks.registry import all_tasks

    known = list(all_tasks())
    for index, task in enumerate(chosen.tasks):
        if task not in known:
            close = difflib.get_close_matches(task, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            where = source.where(("tasks", index), "--task")
            msg = f"{where}: unknown task {task!r}{hint}; tasks: {', '.join(known)}"
            raise SpecError(msg)


def _check_gpus(chosen: Experiment, source: StudySource) -> None:
    """Refuse GPU ids this machine lacks (local executor), or any (Slurm gives the GPUs)."""
    from rexmle.runner.gpus import check_gpu_ids, local_gpus

    requested = chosen.executor.gpus
    if not requested:
        return
    where = source.where(("executor", "gpus"), "--gpus")
    if chosen.executor.kind == "slurm":
        msg = (
            f"{where}: GPU ids are for the local executor; Slurm gives each run its GPUs: "
            "drop the ids and set gpus_per_run (GPUs per run, 0 for none)"
        )
        raise SpecError(msg)
    check_gpu_ids(requested, local_gpus(), where=where)


def _check_models(chosen: Experiment, settings: RunSettings, source: StudySource) -> None:
    """Refuse a model the LLM config does not hold (the agent would fail on its first call)."""
    from rexmle.llm.config import load_llm_config
    from rexmle.runner.experiment import resolve_agents

    resolved = resolve_agents(chosen)
    if not any(spec.llm is not None for spec in resolved.values()):
        return
    config = load_llm_config(settings.llm_config)
    named = "the built-in LLM config" if settings.llm_config is None else str(settings.llm_config)
    entries = {entry.agent: i for i, entry in enumerate(chosen.agents)}
    for (_, agent, model), spec in resolved.items():
        if spec.llm is None:
            continue
        for role, chosen_model in spec.llm.models.items():
            if chosen_model in config.models:
                continue
            index = entries[agent]
            models = chosen.agents[index].models
            if model is not None and model in models:
                where = source.where(("agents", index, "models", models.index(model)), "--model")
            else:
                where = source.where(("agents", index, "agent"), "--agent")
            msg = (
                f"{where}: model {chosen_model!r} ({spec.id}, role {role}) is not in {named}; "
                f"its models: {', '.join(config.models)}. Pick one of them, or add "
                f"{chosen_model!r} to an LLM config (providers, models with prices) and pass it "
                "with --llm-config FILE"
            )
            raise SpecError(msg)


def config_differences(old: dict[str, object], new: dict[str, object]) -> list[str]:
    """The fields in which two run configs differ, as readable phrases."""
    flat_old, flat_new = _flatten(old), _flatten(new)
    phrases: list[str] = []
    for key in sorted(set(flat_old) | set(flat_new)):
        before, after = flat_old.get(key), flat_new.get(key)
        if before == after:
            continue
        if key == "agent.dir_sha256":
            phrases.append(
                f"the agent's code changed (sha256 {str(before)[:12]}… → {str(after)[:12]}…)"
            )
        else:
            phrases.append(f"{key}: {_short(before)} → {_short(after)}")
    return phrases


def _flatten(value: object, prefix: str = "") -> dict[str, object]:
    if isinstance(value, dict):
        flat: dict[str, object] = {}
        for key, inner in value.items():
            flat.update(_flatten(inner, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    return {prefix: value}


def _short(value: object) -> str:
    text = "unset" if value is None else json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_conflicts(jobs: Sequence[RunJob], *, force_config: bool) -> list[RunJob]:
    """The jobs whose folder holds a run of another config (replaced: ``force_config``).

    Raises:
        SpecError: without ``force_config``, naming the first folder, what differs and the ways
            out (``--force-config``, another ``--agent-name``, ``--group`` or ``--runs-dir``).
    """
    from rexmle.records.runs import read_record

    conflicting: list[tuple[RunJob, list[str]]] = []
    for job in jobs:
        record = read_record(job.folder)
        if record is None or record.run_id == job.config.run_id():
            continue
        old = record.config.model_dump(mode="json")
        conflicting.append((job, config_differences(old, job.config.model_dump(mode="json"))))
    if not conflicting or force_config:
        return [job for job, _ in conflicting]
    job, differences = conflicting[0]
    more = (
        f" (and {len(conflicting) - 1} more run folder(s) like it)" if len(conflicting) > 1 else ""
    )
    why = "; ".join(differences) or "another config"
    msg = (
        f"{job.folder} holds a run of another config: {why}{more}. Rerun with --force-config "
        "to replace those runs with this config (their results are overwritten), or keep "
        "both: another --agent-name (an experiment file: the agent entry's name), --group or "
        "--runs-dir"
    )
    raise SpecError(msg)


def preflight(
    chosen: Experiment,
    settings: RunSettings,
    *,
    experiment: str | None,
    recorded_name: str | None,
    force_config: bool,
) -> None:
    """Every check of the module docstring, for ``rexmle run`` (``experiment``: the file or
    preset given with ``--experiment``, None for a study given by flags).

    Raises:
        SpecError: the first problem found (the message says what to do).
    """
    from rexmle.runner.experiment import experiment_jobs

    check_study(chosen, settings, StudySource(experiment))
    jobs = experiment_jobs(chosen, settings.runs_dir, recorded_name=recorded_name)
    check_conflicts(jobs, force_config=force_config)
