"""R&D-Agent adapter: the run as ``rdagent data_science`` with a local-venv runner.

Run inside R&D-Agent's environment: ``python rdagent.py CONFIG.json`` (see ``adapter_runtime``).

- Data: ``DS_LOCAL_DATA_PATH=agent/rd_data``; ``rd_data/<task>/`` holds a link to each entry of
  the read-only ``data/`` except ``description.md``, which is written there as the full
  instructions (rules + hardware, time and loop limits + the task's description): R&D-Agent
  reads the task from that file as is.
- ``rd_data/eval/<task>/`` holds ``submission_test.csv`` derived from the SAMPLE submission (no
  labels: the reference linked the private test labels there) and ``valid.py``, which R&D-Agent
  runs in its code workspace: it sends ``submission.csv`` and the files it names to the
  validation server (format only) and fails with the reasons when it is invalid. No
  ``grade.py``: there is no score to compute inside the sandbox.
- No Kaggle, no Docker: the scenario below and the ``conda`` runner, fed by a ``conda``
  stand-in on PATH whose ``conda run -n <env> env`` prints this venv's PATH, so generated code
  runs in this same environment.
- LLM: LiteLLM backend, ``CHAT_MODEL=openai/gw/<model>``, ``OPENAI_API_BASE`` = the gateway's
  ``/v1``, ``OPENAI_API_KEY`` = the run's token, ``CHAT_TEMPERATURE`` from the settings,
  ``LITELLM_LOCAL_MODEL_COST_MAP=True`` (no price-map download at import).
- ``--timeout``: the run's time limit minus a margin for collecting (R&D-Agent stops itself);
  ``--loop-n`` only when steps are set (the reference leaves R&D-Agent's default).
- Best submission: each code workspace ``git_ignore_folder/RD-Agent_workspace/<hash>/`` that
  has a ``submission.csv`` and a ``scores.csv`` (written after its run) is offered when it
  appears or changes; R&D-Agent's score file gives no direction, so the newest valid
  submission is kept (no metric comparison).
- Selection ``study`` (the published study's): the submission of R&D-Agent's own SOTA
  experiment, taken unchecked: the newest loop's ``sota_exp_to_submit`` record
  (``log/<session>/Loop_<n>/record/sota_exp_to_submit/<pid>/<time>.pkl``, newest loop first,
  the next older one when its workspace has no ``submission.csv``). The record is read with
  :mod:`pickletools` (its opcodes only: nothing is imported or executed) for the code
  workspace's path; that workspace's files are the submission, as the study copied them.
- Scenario ``kaggle`` (the study's): ``DS_SCEN=...KaggleScen`` with ``DS_IF_USING_MLE_DATA`` and
  ``KG_IF_USING_MLE_DATA`` on. KaggleScen asks the Kaggle API for the leaderboard to learn the
  metric's direction; R&D-Agent is started through :data:`KAGGLE_LAUNCHER`, which answers
  those calls from the task's leaderboard (its headline column, best first, as the harness
  wrote it into the config) and nothing else. ``data-science``: DataScienceScen, MLE-data off.
- Collected into ``agent_output/``: ``log/`` (R&D-Agent's session records) and the code
  (``main.py``, ``scores.csv``) of the workspace whose submission was kept last.
"""

from __future__ import annotations

import itertools
import json
import os
import pickletools
import re
import shlex
import sys
from pathlib import Path

if __package__:
    from rexmle.agents.adapters import adapter_runtime as runtime
else:  # run as a script inside the agent's environment
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import adapter_runtime as runtime  # type: ignore[no-redef]

ALIAS_PREFIX = "openai/gw/"
COLLECT_MARGIN_S = 120.0
CONDA_STANDIN = """\
#!/bin/sh
# conda stand-in: `conda run -n NAME [--no-capture-output] CMD...` runs CMD with this venv first
# on PATH (R&D-Agent's conda runner reads its PATH from `conda run -n NAME env`).
if [ "$1" = "run" ]; then
  shift
  while [ $# -gt 0 ]; do
    case "$1" in
      -n|--name) shift 2 ;;
      --no-capture-output|--live-stream) shift ;;
      *) break ;;
    esac
  done
  PATH={venv_bin}:$PATH exec "$@"
fi
echo "conda stand-in of ReX-MLE: only 'conda run -n NAME CMD' is available" >&2
exit 1
"""
VALID_SCRIPT = '''\
"""Submission format check for R&D-Agent: ReX-MLE's validate.py on submission.csv and the files
it names (never a score). Exit 0 valid; otherwise the reasons are printed."""
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, {adapters!r})
import adapter_runtime

csv_file = Path.cwd() / "submission.csv"
if not csv_file.is_file():
    print("submission.csv not found in the working folder")
    sys.exit(1)
with tempfile.TemporaryDirectory() as scratch:
    adapter_runtime.gather_submission(csv_file, Path(scratch) / "submission")
    sys.exit(subprocess.call([sys.executable, {validate!r}, str(Path(scratch) / "submission")]))
'''


KAGGLE_LAUNCHER = '''\
"""R&D-Agent's CLI with its Kaggle leaderboard calls answered from the task's leaderboard."""
import json
import os
import sys
from importlib.metadata import entry_points

SCORES = [float(v) for v in json.loads(os.environ["RDAGENT_LEADERBOARD_SCORES"])]


def leaderboard_scores(competition):
    return list(SCORES)


def get_metric_direction(competition):
    return SCORES[0] > SCORES[-1]


from rdagent.scenarios.kaggle import kaggle_crawler

kaggle_crawler.leaderboard_scores = leaderboard_scores
kaggle_crawler.get_metric_direction = get_metric_direction
try:
    from rdagent.scenarios.data_science import scen as ds_scen
except ImportError:
    ds_scen = None
for module in (ds_scen, getattr(ds_scen, "kaggle", None)):
    if module is not None and hasattr(module, "get_metric_direction"):
        module.get_metric_direction = get_metric_direction
(entry,) = [e for e in entry_points(group="console_scripts") if e.name == "rdagent"]
sys.argv[0] = "rdagent"
sys.exit(entry.load()())
'''
SCENARIOS = {
    "data-science": "rdagent.scenarios.data_science.scen.DataScienceScen",
    "kaggle": "rdagent.scenarios.data_science.scen.KaggleScen",
}
WORKSPACE_IN_RECORD = re.compile(r"RD-Agent_workspace/([0-9a-f]{32})")
HEX32 = re.compile(r"^[0-9a-f]{32}$")


def record_strings(path: Path) -> list[str]:
    """Every string a pickle holds, in order, read from its opcodes (nothing is unpickled)."""
    found = []
    with open(path, "rb") as handle:
        for _opcode, argument, _position in pickletools.genops(handle):
            if isinstance(argument, str):
                found.append(argument)
            elif isinstance(argument, bytes):
                found.append(argument.decode("utf-8", errors="replace"))
    return found


def workspace_in_record(path: Path) -> str | None:
    """The code workspace (32-hex name) a ``sota_exp_to_submit`` record points to, or None.

    A path is pickled whole (``.../RD-Agent_workspace/<hash>``) or as its parts (one string
    ``RD-Agent_workspace`` followed by the hash); a record of no experiment (None) has neither.
    """
    strings = record_strings(path)
    for text in strings:
        match = WORKSPACE_IN_RECORD.search(text)
        if match:
            return match.group(1)
    for before, text in itertools.pairwise(strings):
        if before == "RD-Agent_workspace" and HEX32.match(text):
            return text
    return None


def _loop_number(folder: Path) -> int:
    suffix = folder.name.partition("_")[2]
    return int(suffix) if suffix.isdigit() else -1


def sota_workspace(work: Path) -> Path | None:
    """The code workspace of the newest loop's ``sota_exp_to_submit`` that has a submission."""
    workspaces = work / "git_ignore_folder" / "RD-Agent_workspace"
    sessions = sorted(p for p in (work / "log").glob("*") if p.is_dir())
    for session in reversed(sessions):
        loops = sorted(session.glob("Loop_*"), key=_loop_number, reverse=True)
        for loop in loops:
            records = sorted(
                (loop / "record" / "sota_exp_to_submit").rglob("*.pkl"),
                key=lambda p: (p.stat().st_mtime_ns, p.name),
                reverse=True,
            )
            for record in records:
                try:
                    name = workspace_in_record(record)
                except (OSError, ValueError, EOFError):
                    continue  # a record still being written
                if name is not None and (workspaces / name / "submission.csv").is_file():
                    return workspaces / name
                break  # the loop's newest record decides for that loop
    return None


def eval_files(config: dict[str, object], rd_data: Path) -> dict[Path, str]:
    """``eval/<task>/submission_test.csv`` (the sample submission) and ``valid.py``."""
    task = str(config["task"])
    sample = Path(str(config["data_dir"])) / "sample_submission.csv"
    folder = rd_data / "eval" / task
    return {
        folder / "submission_test.csv": sample.read_text(encoding="utf-8"),
        folder / "valid.py": VALID_SCRIPT.format(
            adapters=str(Path(__file__).resolve().parent),
            validate=str(Path(str(config["workspace"])) / "validate.py"),
        ),
    }


def build(config: dict[str, object], environ: dict[str, str]) -> runtime.Launch:
    """R&D-Agent's command line, environment additions and files for this run."""
    base_url, token = runtime.gateway(environ)
    work = Path(str(config["work_dir"]))
    task = str(config["task"])
    rd_data = work / "rd_data"
    venv_bin = Path(sys.executable).parent
    models = dict(config["models"])  # type: ignore[call-overload]
    temperatures = dict(config.get("temperatures") or {})  # type: ignore[call-overload]
    timeout_s = max(60, int(float(str(config["time_limit_s"])) - COLLECT_MARGIN_S))
    scenario = str(config.get("scenario") or "data-science")
    if scenario not in SCENARIOS:
        msg = f"scenario must be one of {sorted(SCENARIOS)}, not {scenario!r}"
        raise runtime.AdapterError(msg)
    launcher = work / "rdagent_kaggle.py"
    program = [str(venv_bin / "rdagent")]
    if scenario == "kaggle":
        program = [sys.executable, str(launcher)]
    argv = [*program, "data_science", "--competition", task]
    argv += ["--timeout", f"{timeout_s}s"]
    if config.get("steps") is not None:
        argv += ["--loop-n", str(config["steps"])]
    standin_bin = work / "bin"
    env = {
        "PATH": os.pathsep.join([str(standin_bin), str(venv_bin), environ.get("PATH", "")]),
        "BACKEND": "rdagent.oai.backend.LiteLLMAPIBackend",
        "CHAT_MODEL": f"{ALIAS_PREFIX}{models['chat']}",
        "EMBEDDING_MODEL": f"{ALIAS_PREFIX}{models.get('embedding', 'text-embedding-3-small')}",
        "OPENAI_API_BASE": f"{base_url}/v1",
        "OPENAI_API_KEY": token,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "DS_LOCAL_DATA_PATH": str(rd_data),
        "DS_SCEN": SCENARIOS[scenario],
        "DS_IF_USING_MLE_DATA": str(scenario == "kaggle"),
        "KG_IF_USING_MLE_DATA": str(scenario == "kaggle"),
        "DS_Coder_CoSTEER_ENV_TYPE": "conda",
        "DS_Runner_CoSTEER_ENV_TYPE": "conda",
    }
    if "chat" in temperatures:
        env["CHAT_TEMPERATURE"] = f"{temperatures['chat']:g}"
    extra: dict[Path, str] = {}
    if scenario == "kaggle":
        scores = config.get("leaderboard_scores")
        if not isinstance(scores, list) or len(scores) < 2:
            msg = "the kaggle scenario needs the task's leaderboard scores in the config"
            raise runtime.AdapterError(msg)
        env["RDAGENT_LEADERBOARD_SCORES"] = json.dumps([float(v) for v in scores])
        env["KG_LOCAL_DATA_PATH"] = str(rd_data)
        extra[launcher] = KAGGLE_LAUNCHER
    files = {
        **extra,
        standin_bin / "conda": CONDA_STANDIN.format(venv_bin=shlex.quote(str(venv_bin))),
        rd_data / task / "description.md": runtime.compose_prompt(
            config, "rdagent", step_word="loops"
        ),
        **eval_files(config, rd_data),
    }
    return runtime.Launch(
        argv=argv, env=env, cwd=work, files=files, executables=(standin_bin / "conda",)
    )


def link_data(config: dict[str, object]) -> None:
    """``rd_data/<task>/<entry>`` -> ``data/<entry>`` for every entry but ``description.md``."""
    data = Path(str(config["data_dir"]))
    folder = Path(str(config["work_dir"])) / "rd_data" / str(config["task"])
    folder.mkdir(parents=True, exist_ok=True)
    for entry in sorted(data.iterdir()):
        link = folder / entry.name
        if entry.name != "description.md" and not link.is_symlink():
            link.symlink_to(entry, target_is_directory=entry.is_dir())


class RdAgentResults:
    """Offers each finished R&D-Agent code workspace's submission; collects its records."""

    def __init__(self, config: dict[str, object], best: runtime.BestSubmission):
        """Args: config: the adapter config; best: where valid candidates go."""
        self.work = Path(str(config["work_dir"]))
        self.output = Path(str(config["output_dir"]))
        self.best = best
        self.seen: dict[Path, int] = {}
        self.kept: Path | None = None
        self.policy = runtime.selection_policy(config)
        self.taken: object = None

    def poll(self) -> None:
        """Follow the run's selection policy (see the module docstring)."""
        if self.policy == "study":
            self.poll_sota()
        else:
            self.poll_best_valid()

    def poll_sota(self) -> None:
        """Take the SOTA experiment's workspace files when the choice or its files changed."""
        folder = sota_workspace(self.work)
        if folder is None:
            return
        stamp = (folder.name, runtime.tree_stamp(folder))
        if stamp == self.taken:
            return
        self.taken = stamp
        self.best.take(folder, label=f"rdagent sota_exp_to_submit {folder.name}")
        self.kept = folder

    def poll_best_valid(self) -> None:
        """Offer code workspaces whose ``scores.csv`` is new or changed, oldest first."""
        root = self.work / "git_ignore_folder" / "RD-Agent_workspace"
        if not root.is_dir():
            return
        finished = []
        for folder in root.iterdir():
            scores = folder / "scores.csv"
            if (folder / "submission.csv").is_file() and scores.is_file():
                stamp = scores.stat().st_mtime_ns
                if self.seen.get(folder) != stamp:
                    finished.append((stamp, folder))
        for stamp, folder in sorted(finished):
            self.seen[folder] = stamp
            candidate = self.output / "candidate"
            runtime.gather_submission(folder / "submission.csv", candidate)
            if self.best.offer(candidate, metric=None, lower_is_better=None, label=folder.name):
                self.kept = folder

    def collect(self) -> None:
        """Copy R&D-Agent's ``log/`` and the kept workspace's code into ``agent_output/``."""
        runtime.copy_into(self.work / "log", self.output / "log")
        if self.kept is not None:
            for name in ("main.py", "scores.csv"):
                runtime.copy_into(self.kept / name, self.output / "best_code" / name)


def keeper(
    config: dict[str, object], best: runtime.BestSubmission
) -> tuple[runtime.Callable[[], None], runtime.Callable[[], None]]:
    """(poll, collect) for :func:`adapter_runtime.run_agent`; links the data folder."""
    link_data(config)
    results = RdAgentResults(config, best)
    return results.poll, results.collect


if __name__ == "__main__":
    sys.exit(runtime.main(build, keeper))
