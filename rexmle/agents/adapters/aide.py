"""AIDE adapter: the run's workspace and settings as ``aide`` arguments (OmegaConf dotlist).

Run inside AIDE's environment: ``python aide.py CONFIG.json`` (see ``adapter_runtime``).

- Instructions: ``instructions.md`` (rules + task) with the hardware, time and step limits,
  written to ``agent/full_instructions.md`` (``desc_file``).
- Models: the gateway's neutral aliases ``gw/<model>``: AIDE sends any name that is not
  ``gpt-*``, ``o<digit>*``, ``claude-*`` or ``gemini-*`` as chat completions to
  ``OPENAI_BASE_URL`` (the gateway's ``/v1``), instead of its hard-coded provider URLs.
- Under ``llm_route: native`` (:mod:`native_llm`) a ``claude-*`` model goes by its bare name
  through AIDE's Anthropic back-end (``ANTHROPIC_BASE_URL`` = the gateway, its Messages route)
  and a ``gemini-*`` model through AIDE's Gemini back-end, whose hard-coded Google URL
  :mod:`aide_gemini` replaces with the gateway's Gemini OpenAI-compatible route.
- ``generate_report=False`` (the report step crashes on the chat-completions path) and
  ``copy_data=False`` (links to the read-only data). AIDE has no time-limit key: the harness's
  wall clock is its time budget.
- Best submission: after each step AIDE writes ``logs/<i>-exp/journal.json``; when its newest
  node is not buggy and has a metric, the ``submission.csv`` in its ``working/`` folder (with
  the files it names) is offered to :class:`BestSubmission` with that metric and direction.
- Selection ``study`` (the published study's): whatever AIDE last wrote is graded, unchecked:
  the contents of its workspace's ``submission/`` folder when that folder exists, else
  ``working/submission.csv`` alone (the study copied that CSV without the files it names).
  The choice is refreshed whenever those files change, so a run stopped at its limit keeps
  the last one written.
- Collected into ``agent_output/``: ``journal.json``, ``best_solution.py``, ``config.yaml``,
  ``tree_plot.html`` and AIDE's log files.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

if __package__:
    from rexmle.agents.adapters import adapter_runtime as runtime
    from rexmle.agents.adapters import native_llm
else:  # run as a script inside the agent's environment
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import adapter_runtime as runtime  # type: ignore[no-redef]
    import native_llm  # type: ignore[no-redef]

EXP_NAME = "exp"
GEMINI_LAUNCHER = Path(__file__).resolve().parent / "aide_gemini.py"


def build(config: dict[str, object], environ: dict[str, str]) -> runtime.Launch:
    """AIDE's command line, environment additions and instructions file for this run."""
    base_url, token = runtime.gateway(environ)
    work = Path(str(config["work_dir"]))
    desc_file = work / "full_instructions.md"
    models = dict(config["models"])  # type: ignore[call-overload]
    temperatures = dict(config.get("temperatures") or {})  # type: ignore[call-overload]
    route = native_llm.llm_route(config)
    backends = {native_llm.native_backend(str(models[role]), route) for role in models}
    if "gemini" in backends:
        program = [sys.executable, str(GEMINI_LAUNCHER)]
    else:
        program = [str(Path(sys.executable).parent / "aide")]
    argv = [
        *program,
        f"data_dir={config['data_dir']}",
        f"desc_file={desc_file}",
        f"exp_name={EXP_NAME}",
        f"log_dir={work / 'logs'}",
        f"workspace_dir={work / 'workspaces'}",
        "copy_data=False",
        "generate_report=False",
    ]
    if config.get("steps") is not None:
        argv.append(f"agent.steps={config['steps']}")
    if config.get("step_timeout_s") is not None:
        argv.append(f"exec.timeout={int(float(str(config['step_timeout_s'])))}")
    for role in ("code", "feedback"):
        argv.append(f"agent.{role}.model={native_llm.model_name(str(models[role]), route)}")
        if role in temperatures:
            argv.append(f"agent.{role}.temp={temperatures[role]:g}")
    for key, value in dict(config.get("options") or {}).items():  # type: ignore[call-overload]
        argv.append(f"{key}={value}")
    env = {"OPENAI_BASE_URL": f"{base_url}/v1", "OPENAI_API_KEY": token}
    if "anthropic" in backends:
        env.update(ANTHROPIC_BASE_URL=base_url, ANTHROPIC_API_KEY=token)
    if "gemini" in backends:
        env.update(REXMLE_GEMINI_OPENAI_BASE_URL=f"{base_url}/v1beta/openai/", GEMINI_API_KEY=token)
    notes = runtime.compose_prompt(config, "aide")
    if not config.get("study_texts"):
        notes += (
            "- Save the test predictions as `submission.csv` in the `./working` folder (files "
            "it names relative to `./working`).\n"
        )
    return runtime.Launch(argv=argv, env=env, cwd=work, files={desc_file: notes})


class AideResults:
    """Reads AIDE's journal and offers each good node's submission (see the module docstring)."""

    def __init__(self, config: dict[str, object], best: runtime.BestSubmission):
        """Args: config: the adapter config; best: where valid candidates go."""
        self.work = Path(str(config["work_dir"]))
        self.output = Path(str(config["output_dir"]))
        self.best = best
        self.seen_nodes = 0
        self.journal_mtime = 0
        self.policy = runtime.selection_policy(config)
        self.taken: object = None

    def poll(self) -> None:
        """Follow the run's selection policy (see the module docstring)."""
        if self.policy == "study":
            self.poll_last_written()
        else:
            self.poll_best_valid()

    def poll_last_written(self) -> None:
        """Take AIDE's ``submission/`` folder, else ``working/submission.csv``, when it changed."""
        workspace = runtime.newest_folder(self.work / "workspaces", f"*-{EXP_NAME}")
        if workspace is None:
            return
        folder = workspace / "submission"
        csv_file = workspace / "working" / "submission.csv"
        if folder.is_dir():
            stamp: tuple[object, ...] = ("submission", runtime.tree_stamp(folder))
            if stamp == self.taken:
                return
            candidate = folder
        elif csv_file.is_file():
            info = csv_file.stat()
            stamp = ("working", info.st_size, info.st_mtime_ns)
            if stamp == self.taken:
                return
            candidate = self.output / "candidate"
            runtime.replace_folder_contents(self.output / "empty", candidate)
            runtime.copy_into(csv_file, candidate / "submission.csv")
        else:
            return
        self.taken = stamp
        self.best.take(candidate, label=f"aide last written ({stamp[0]})")

    def poll_best_valid(self) -> None:
        """Offer the newest node's submission when the journal grew and that node is good."""
        logs = runtime.newest_folder(self.work / "logs", f"*-{EXP_NAME}")
        workspace = runtime.newest_folder(self.work / "workspaces", f"*-{EXP_NAME}")
        if logs is None or workspace is None or not (logs / "journal.json").is_file():
            return
        journal = logs / "journal.json"
        changed = journal.stat().st_mtime_ns
        if changed == self.journal_mtime:
            return
        self.journal_mtime = changed
        nodes = json.loads(journal.read_text(encoding="utf-8")).get("nodes", [])
        if len(nodes) <= self.seen_nodes:
            return
        self.seen_nodes = len(nodes)
        newest = max(nodes, key=lambda node: node.get("step", 0))
        metric = newest.get("metric") or {}
        if newest.get("is_buggy") or metric.get("value") is None:
            return
        csv_file = workspace / "working" / "submission.csv"
        if not csv_file.is_file():
            return
        candidate = self.output / "candidate"
        runtime.gather_submission(csv_file, candidate)
        self.best.offer(
            candidate,
            metric=float(metric["value"]),
            lower_is_better=not metric.get("maximize", True),
            label=f"aide node step {newest.get('step')}",
        )

    def collect(self) -> None:
        """Copy AIDE's journal, best solution and logs into ``agent_output/``."""
        logs = runtime.newest_folder(self.work / "logs", f"*-{EXP_NAME}")
        if logs is not None:
            runtime.copy_into(logs, self.output / "logs")


def keeper(
    config: dict[str, object], best: runtime.BestSubmission
) -> tuple[runtime.Callable[[], None], runtime.Callable[[], None]]:
    """(poll, collect) for :func:`adapter_runtime.run_agent`."""
    results = AideResults(config, best)
    return results.poll, results.collect


if __name__ == "__main__":
    sys.exit(runtime.main(build, keeper))
