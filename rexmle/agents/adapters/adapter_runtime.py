"""What every adapter does around its agent: config, instructions, best submission, logs, stop.

Adapters run inside the sandbox with the agent's own interpreter, so this module imports
nothing but the standard library (never rexmle). An adapter is started as::

    <env>/venv/bin/python rexmle/agents/adapters/<agent>.py <workspace>/.adapter/config.json

The config (written by :mod:`rexmle.agents.llm_launch`) names only workspace paths, the
validation URL, the models, steps, timeouts and temperatures. The LLM gateway comes from the
environment: ``REXMLE_LLM_BASE_URL`` (its root) and ``REXMLE_LLM_TOKEN`` (the run's token).

Submission keeping: agents write a submission per attempt in their own folders, and often only
the last one survives (AIDE). :class:`BestSubmission` checks each new candidate with the
validation server (format only, never a score) and, when it is valid and the agent's own
validation metric is at least as good as the best so far, replaces ``submission/`` with it.
So a run stopped at its time limit still leaves the best valid submission found until then.

That is the ``best-valid`` selection policy. Under ``study`` (the published study's choice, see
:data:`rexmle.agents.registry.SelectionPolicy`) each adapter hands its agent's own pick to
:meth:`BestSubmission.take`, which puts it into ``submission/`` unchecked, as the study did.

Exit codes: the agent's own, or 2 when the adapter cannot start it (no gateway, bad config).
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

EXIT_SETUP = 2
SNAPSHOTS = "candidates"
SELECTION_POLICIES = ("study", "best-valid")
"""The ``selection`` values of the adapter config (``best-valid`` when absent)."""


def selection_policy(config: dict[str, object]) -> str:
    """The run's selection policy.

    Raises:
        AdapterError: an unknown value.
    """
    policy = str(config.get("selection") or "best-valid")
    if policy not in SELECTION_POLICIES:
        msg = f"selection must be one of {SELECTION_POLICIES}, not {policy!r}"
        raise AdapterError(msg)
    return policy


class AdapterError(RuntimeError):
    """The adapter cannot start its agent (the message says what is missing)."""


@dataclass(frozen=True)
class Launch:
    """The agent's command: argv, the variables added to the adapter's environment, its cwd,
    and the files written before it starts (path -> text).
    """

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    files: dict[Path, str] = field(default_factory=dict)
    executables: tuple[Path, ...] = ()
    """Files of ``files`` made executable (mode 755)."""


WORKSPACE_PATH_KEYS = (
    "workspace",
    "data_dir",
    "submission_dir",
    "instructions",
    "work_dir",
    "output_dir",
)
"""Config entries that the harness writes relative to the workspace."""


def load_config(path: Path) -> dict[str, object]:
    """The adapter config (JSON), its workspace paths made absolute.

    The config lives at ``<workspace>/.adapter/config.json``; the entries of
    :data:`WORKSPACE_PATH_KEYS` are relative to that workspace, wherever the sandbox shows it.

    Raises:
        AdapterError: the file is missing or not a JSON object.
    """
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        msg = f"cannot read the adapter config {path}: {err}"
        raise AdapterError(msg) from err
    if not isinstance(config, dict):
        msg = f"{path} must hold a JSON object"
        raise AdapterError(msg)
    workspace = path.absolute().parent.parent
    for key in WORKSPACE_PATH_KEYS:
        if isinstance(config.get(key), str):
            config[key] = str(workspace / str(config[key]))
    return config


def gateway(environ: dict[str, str]) -> tuple[str, str]:
    """(root URL, token) of the LLM gateway from the adapter's environment.

    Raises:
        AdapterError: ``REXMLE_LLM_BASE_URL`` or ``REXMLE_LLM_TOKEN`` is not set.
    """
    url = environ.get("REXMLE_LLM_BASE_URL", "").rstrip("/")
    token = environ.get("REXMLE_LLM_TOKEN", "")
    if not url or not token:
        msg = (
            "REXMLE_LLM_BASE_URL and REXMLE_LLM_TOKEN are not set: LLM agents reach their models "
            "only through the harness's LLM gateway"
        )
        raise AdapterError(msg)
    return url, token


def format_seconds(seconds: float) -> str:
    """``12hrs 0mins 0secs`` (the wording the agents' prompts use)."""
    whole = int(seconds)
    return f"{whole // 3600}hrs {(whole % 3600) // 60}mins {whole % 60}secs"


def compose_instructions(config: dict[str, object], *, step_word: str = "steps") -> str:
    """Benchmark rules and task description (``instructions.md``) plus the run's limits.

    The notes state the hardware, the wall-clock limit and the step limit, as the paper's
    agents were told them.
    """
    rules = Path(str(config["instructions"])).read_text(encoding="utf-8")
    steps = config.get("steps")
    notes = [
        "",
        "## Additional notes",
        "",
        f"- Compute: you have {config['hardware']}.",
        f"- Total runtime: at most {format_seconds(float(str(config['time_limit_s'])))} of "
        "wall-clock time; the time your programs run counts towards it.",
    ]
    if steps is not None:
        notes.append(f"- Total {step_word}: at most {steps}.")
    notes += [
        "- Keep improving your solution until the limit: the best valid submission found is "
        "kept and graded.",
        f"- The task's data are in {config['data_dir']} (read-only).",
        "",
    ]
    return "\n".join([rules.rstrip("\n"), *notes])


STUDY_VALIDATE_PORT = 5001
"""The validation port ML-Master's fixed prompt files name; another port is written in its place
when the forwarder could not take it."""
STUDY_LAYOUT = {
    "aide": ("rules", "aide_notes", "description", "score"),
    "ml-master": ("ml_master_prompt",),
    "rdagent": ("description", "score"),
}
"""How each agent's prompt was built from the study's texts under the paper condition (its
start scripts): AIDE the rules, its notes with the run's values, the task description and the
grading code; ML-Master its fixed per-task prompt file; R&D-Agent the task description and the
grading code. A solution write-up, when the run has one, comes last."""


def _workspace_file(config: dict[str, object], relative: object) -> Path:
    return Path(str(config["workspace"])) / str(relative)


def _substitute(text: str, values: dict[str, str]) -> str:
    for name, value in values.items():
        text = text.replace("${" + name + "}", value)
    return text


def score_section(config: dict[str, object]) -> str:
    """``data/score.py`` handed over: how to run it, then its code."""
    usage = _workspace_file(config, config["score_usage"]).read_text(encoding="utf-8")
    script = Path(str(config["data_dir"])) / "score.py"
    code = script.read_text(encoding="utf-8") if script.is_file() else ""
    return "\n".join(
        [
            "## Grading code (`data/score.py`)",
            "",
            usage.rstrip("\n"),
            "",
            "```python",
            code.rstrip("\n"),
            "```",
        ]
    )


def compose_prompt(config: dict[str, object], agent: str, *, step_word: str = "steps") -> str:
    """The agent's prompt: from the study's texts when the run uses them
    (:data:`STUDY_LAYOUT`), else :func:`compose_instructions` (``instructions.md``, which then
    already holds any solution write-up).

    Raises:
        AdapterError: the study's texts are named in the config but missing.
    """
    study = config.get("study_texts")
    if not study:
        return compose_instructions(config, step_word=step_word)
    files = dict(study)  # type: ignore[call-overload]
    steps = config.get("steps")
    values = {
        "HARDWARE": str(config["hardware"]),
        "TIME_LIMIT": format_seconds(float(str(config["time_limit_s"]))),
        "STEP_LIMIT": "" if steps is None else str(steps),
    }
    parts: list[str] = []
    for name in STUDY_LAYOUT[agent]:
        if name == "score":
            parts.append(score_section(config))
            continue
        path = _workspace_file(config, files[name])
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as err:
            msg = f"the study's text {name} ({path}) cannot be read: {err}"
            raise AdapterError(msg) from err
        if name == "rules":
            text = text.replace("/home/", "")
        if name == "aide_notes":  # the study filled in only these notes' variables
            text = _substitute(text, values)
        if name == "ml_master_prompt" and config.get("forwarder_port") != STUDY_VALIDATE_PORT:
            text = text.replace(
                f"localhost:{STUDY_VALIDATE_PORT}", f"localhost:{config.get('forwarder_port')}"
            )
        if name == "description" and agent == "aide":
            text = "## Task description\n\n" + text
        parts.append(text.rstrip("\n"))
    if config.get("solution"):
        parts.append(_workspace_file(config, config["solution"]).read_text(encoding="utf-8"))
    return "\n\n".join(parts).rstrip("\n") + "\n"


def child_environment(
    config: dict[str, object], extra: dict[str, str], base: dict[str, str] | None = None
) -> dict[str, str]:
    """The agent's environment: ``base`` (the adapter's own), the additions, the GPU pin.

    ``CUDA_VISIBLE_DEVICES`` is set to the harness's value (or removed when the harness gave
    none) AFTER the additions, so nothing an adapter or agent script adds can change the GPUs.
    """
    env = {**(dict(os.environ) if base is None else base), **extra}
    pinned = config.get("cuda_visible_devices")
    if pinned is None:
        env.pop("CUDA_VISIBLE_DEVICES", None)
    else:
        env["CUDA_VISIBLE_DEVICES"] = str(pinned)
    return env


def validate_folder(validate_script: Path, folder: Path, *, timeout_s: float = 900.0) -> bool:
    """Whether the validation server finds ``folder`` a valid submission.

    Runs the workspace's ``validate.py`` on it (the same upload an agent makes by hand); its
    answer (valid, or the reasons) goes to this process's output.
    """
    try:
        done = subprocess.run(
            [sys.executable, str(validate_script), str(folder)],
            stdin=subprocess.DEVNULL,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0


def newest_folder(root: Path, pattern: str) -> Path | None:
    """The last (by name) folder under ``root`` matching ``pattern``, or None."""
    found = sorted(p for p in root.glob(pattern) if p.is_dir())
    return found[-1] if found else None


def replace_folder_contents(source: Path, target: Path) -> None:
    """Make ``target`` hold exactly a copy of ``source`` (links inside are copied as files)."""
    target.mkdir(parents=True, exist_ok=True)
    for entry in target.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    for path in sorted(source.rglob("*")):
        destination = target / path.relative_to(source)
        if path.is_dir() and not path.is_symlink():
            destination.mkdir(parents=True, exist_ok=True)
        elif path.is_file():
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, destination)


class BestSubmission:
    """Keeps the best valid candidate in ``submission/`` (see the module docstring).

    A candidate comes with the agent's own validation metric (or None: the agent gives none,
    the newest valid candidate wins) and whether lower is better. Candidates are first copied
    into ``<output>/candidates/<n>/``, so a file the agent rewrites meanwhile is not mixed in.
    """

    def __init__(
        self, config: dict[str, object], *, validate: Callable[[Path], bool] | None = None
    ):
        """Args: config: the adapter config; validate: replaces the validation server call."""
        self.submission_dir = Path(str(config["submission_dir"]))
        self.output_dir = Path(str(config["output_dir"]))
        script = Path(str(config["workspace"])) / "validate.py"
        self._validate = validate or (lambda folder: validate_folder(script, folder))
        self.best_metric: float | None = None
        self.lower_is_better: bool | None = None
        self.n_offered = 0
        self.n_kept = 0
        self._lock = threading.Lock()

    def _better(self, metric: float | None, lower_is_better: bool | None) -> bool:
        if self.n_kept == 0 or metric is None or self.best_metric is None:
            return True
        if lower_is_better:
            return metric <= self.best_metric
        return metric >= self.best_metric

    def offer(
        self, candidate: Path, *, metric: float | None, lower_is_better: bool | None, label: str
    ) -> bool:
        """Check ``candidate`` and keep it when valid and at least as good; True when kept."""
        with self._lock:
            if not (candidate / "submission.csv").is_file():
                return False
            if not self._better(metric, lower_is_better):
                return False
            self.n_offered += 1
            snapshot = self.output_dir / SNAPSHOTS / f"{self.n_offered:04d}"
            replace_folder_contents(candidate, snapshot)
            if not self._validate(snapshot):
                self._log(label, metric, kept=False)
                shutil.rmtree(snapshot, ignore_errors=True)
                return False
            replace_folder_contents(snapshot, self.submission_dir)
            shutil.rmtree(snapshot, ignore_errors=True)
            self.best_metric = metric
            self.lower_is_better = lower_is_better
            self.n_kept += 1
            self._log(label, metric, kept=True)
            return True

    def take(self, candidate: Path, *, label: str) -> None:
        """Make ``submission/`` exactly a copy of ``candidate``, unchecked (the ``study`` policy).

        A candidate without ``submission.csv`` is taken too: the study graded whatever the
        agent's folder held.
        """
        with self._lock:
            self.n_offered += 1
            snapshot = self.output_dir / SNAPSHOTS / f"{self.n_offered:04d}"
            replace_folder_contents(candidate, snapshot)
            replace_folder_contents(snapshot, self.submission_dir)
            shutil.rmtree(snapshot, ignore_errors=True)
            self.n_kept += 1
            self._log(label, None, kept=True, checked=False)

    def _log(self, label: str, metric: float | None, *, kept: bool, checked: bool = True) -> None:
        self.output_dir.mkdir(parents=True, exist_ok=True)
        line = {
            "time": time.time(),
            "candidate": label,
            "metric": metric,
            "kept": kept,
            "checked": checked,
        }
        with open(self.output_dir / "submissions.jsonl", "a", encoding="utf-8") as handle:
            handle.write(json.dumps(line) + "\n")


def _relative_file(folder: Path, cell: str) -> Path | None:
    """``cell`` as a relative path (no ``..``) to a regular file under ``folder``, else None."""
    cell = cell.strip()
    if not cell or "\\" in cell or cell.startswith("/"):
        return None
    relative = Path(cell)
    if ".." in relative.parts:
        return None
    path = folder / relative
    return relative if path.is_file() and not path.is_symlink() else None


def named_files(csv_file: Path, folder: Path) -> list[Path]:
    """The files ``csv_file``'s cells name, relative to ``folder``, in order of first mention.

    A cell names a file when it is a relative path (no ``..``) to a regular file under
    ``folder``.
    """
    found: dict[Path, None] = {}
    with open(csv_file, newline="", encoding="utf-8", errors="replace") as handle:
        for row in csv.reader(handle):
            for cell in row:
                relative = _relative_file(folder, cell)
                if relative is not None:
                    found[relative] = None
    return list(found)


def gather_submission(csv_file: Path, target: Path) -> int:
    """Make ``target`` a submission folder: ``csv_file`` and every file its cells name.

    The files are looked up next to the CSV and copied to the same relative paths. Returns
    their number.
    """
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    shutil.copyfile(csv_file, target / "submission.csv")
    relatives = named_files(csv_file, csv_file.parent)
    for relative in relatives:
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(csv_file.parent / relative, target / relative)
    return len(relatives)


def tree_stamp(root: Path) -> tuple[tuple[str, int, int], ...]:
    """(relative path, size, mtime in ns) of every regular file under ``root``, sorted."""
    if not root.is_dir():
        return ()
    return tuple(
        sorted(
            (path.relative_to(root).as_posix(), info.st_size, info.st_mtime_ns)
            for path in root.rglob("*")
            if path.is_file() and not path.is_symlink()
            for info in (path.stat(),)
        )
    )


def copy_into(source: Path, target: Path) -> None:
    """Copy a file or folder to ``target`` (replaced), skipping links and special files."""
    if source.is_symlink() or not source.exists():
        return
    if source.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        return
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, symlinks=True, ignore_dangling_symlinks=True)


def run_agent(
    launch: Launch,
    config: dict[str, object],
    *,
    poll: Callable[[], None],
    collect: Callable[[], None],
    interval_s: float | None = None,
) -> int:
    """Write the launch's files, run the agent, call ``poll`` every interval, ``collect`` at the end.

    SIGTERM (the harness's time limit) stops the agent, then ``poll`` and ``collect`` run once
    more within the harness's grace period. Returns the agent's exit code.
    """
    for path, text in launch.files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        path.chmod(0o755 if path in launch.executables else 0o644)
    launch.cwd.mkdir(parents=True, exist_ok=True)
    interval = float(str(interval_s or config.get("sync_interval_s", 10)))
    process = subprocess.Popen(
        launch.argv,
        cwd=launch.cwd,
        env=child_environment(config, launch.env),
        stdin=subprocess.DEVNULL,
    )
    stopping = threading.Event()

    def on_term(_signum: int, _frame: object) -> None:
        stopping.set()
        process.terminate()

    signal.signal(signal.SIGTERM, on_term)
    while process.poll() is None and not stopping.is_set():
        stopping.wait(interval)
        try:
            poll()
        except (OSError, ValueError) as error:
            sys.stderr.write(f"adapter: reading the agent's results failed: {error}\n")
    code = process.wait()
    for step in (poll, collect):
        try:
            step()
        except (OSError, ValueError) as error:
            sys.stderr.write(f"adapter: {step.__name__} failed: {error}\n")
    return code


Builder = Callable[[dict[str, object], dict[str, str]], Launch]
Keeper = Callable[
    [dict[str, object], BestSubmission], tuple[Callable[[], None], Callable[[], None]]
]


def port_is_free(port: int) -> bool:
    """Whether nothing listens on ``port`` of 127.0.0.1 now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def main(build: Builder, keeper_for: Keeper) -> int:
    """Entry point shared by the adapters: ``python <adapter>.py CONFIG``.

    ``keeper_for`` runs first (it may start helpers and add their ports to the config), then
    ``build``, then the agent under :func:`run_agent`.
    """
    if len(sys.argv) != 2:
        sys.stderr.write("usage: <adapter>.py CONFIG.json\n")
        return EXIT_SETUP
    try:
        config = load_config(Path(sys.argv[1]))
        best = BestSubmission(config)
        poll, collect = keeper_for(config, best)
        launch = build(config, dict(os.environ))
    except AdapterError as error:
        sys.stderr.write(f"adapter: {error}\n")
        return EXIT_SETUP
    return run_agent(launch, config, poll=poll, collect=collect)
