"""The workspace of one run: what an agent sees and the only place it may write.

Layout::

    workspace/
      data/             the task's public/ only (hard links under bwrap, where it is bound
                        read-only; a read-only copy otherwise)
      submission/       the agent writes submission.csv (+ files) here
      instructions.md   benchmark rules + the task's description.md
      validate.py       POSTs submission/ to the validation server, prints valid or reasons
      validation.json   {"url": ..., "max_upload_bytes": ..., "max_requests_per_minute": ...}
      .home/            $HOME of the agent

Nothing in the workspace, in the agent's environment (:func:`agent_env`) or on its command line
names the data root or ``private/``.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from rexmle.runner.trees import (
    copy_file_sparse,
    printable_name,
    remove_tree_iteratively,
    walk_tree,
)

DataMode = Literal["link", "copy"]

BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
PASSED_THROUGH = ("LANG", "LC_ALL", "TZ", "TERM", "OPENBLAS_CORETYPE")
"""Harmless host variables every agent gets when they are set. ``OPENBLAS_CORETYPE`` picks
OpenBLAS's kernels, whose last bits differ: with the grader's choice, ``data/score.py`` in the
sandbox gives the grader's exact values."""

RULES = """\
# ReX-MLE task `{task_id}`

You are an autonomous machine-learning engineer. Train a model on the data in `data/` and write
predictions for every test case into `submission/`. Your submission is graded after your run ends
with the challenge's official metrics and ranked against the human leaderboard.

## Rules

- Read the task's public data from `data/` (`$DATA_DIR`, read-only): training cases with labels,
  test inputs, `description.md` and `sample_submission.csv` (with any files it names).
- Write `submission.csv` and any files it names into `submission/` (`$SUBMISSION_DIR`). Paths in the
  CSV are relative to `submission/` and must stay inside it. Follow the format of
  `data/sample_submission.csv` and the description below exactly: one row per test case.
- Time limit: {time_limit_s:g} seconds of wall-clock time (`$TIME_LIMIT_SECS`). At the limit every
  process of yours is stopped and whatever `submission/` holds then is graded. Write a valid
  submission early, then improve it.
- Check the format at any time with `python validate.py` (or POST a tar or zip archive of
  `submission/` to `$VALIDATION_URL`). It says "valid" or lists what is wrong; it never gives a score.
  At most {max_requests_per_minute} checks per minute; uploads over {max_upload_mb:g} MB are refused.
- Score your own held-out split with `python data/score.py PRED_DIR GOLD_DIR [--json]`: the
  challenge's official metrics (the grader's own code) for two folders shaped like a submission,
  GOLD_DIR built from training cases and their labels (`python data/score.py --help`).
- The test labels are not available to you; do not look for them. Work inside this workspace
  (`/tmp` is scratch space).

---

"""

VALIDATE_SCRIPT = '''\
#!/usr/bin/env python3
"""Check the submission's format with the validation server: python validate.py [FOLDER].

Prints "valid" or the reasons it is not; never a score. Exit 0 valid, 1 invalid, 2 error.
"""
import io
import json
import os
import sys
import tarfile
import urllib.error
import urllib.request
from pathlib import Path

here = Path(__file__).resolve().parent
config = json.loads((here / "validation.json").read_text())
url = os.environ.get("VALIDATION_URL") or config["url"]
folder = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("SUBMISSION_DIR", here / "submission"))
if not (folder / "submission.csv").is_file():
    print(f"invalid: {folder}/submission.csv does not exist")
    sys.exit(1)
root = folder.resolve()
buffer = io.BytesIO()
with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
    for path in sorted(folder.rglob("*")):
        name = path.relative_to(folder).as_posix()
        if path.is_symlink():
            # as when the run ends: a link to a file inside the folder becomes a copy,
            # any other link is left out (grading never follows it)
            target = path.resolve()
            if root in target.parents and target.is_file():
                archive.add(target, arcname=name, recursive=False)
            else:
                print(f"note: {name} is a link out of the submission folder; it is left out")
        elif path.is_dir() or path.is_file():
            archive.add(path, arcname=name, recursive=False)
payload = buffer.getvalue()
if len(payload) > config["max_upload_bytes"]:
    print(f"error: the archive has {len(payload)} bytes, over the limit of {config['max_upload_bytes']}")
    sys.exit(2)
request = urllib.request.Request(url, data=payload, method="POST",
                                 headers={"Content-Type": "application/x-tar"})
try:
    with urllib.request.urlopen(request, timeout=600) as response:
        answer = json.loads(response.read())
except urllib.error.HTTPError as error:
    answer = json.loads(error.read() or b"{}")
    print(f"error {error.code}: {answer.get('error') or answer.get('reasons')}")
    sys.exit(2 if error.code != 400 else 1)
except OSError as error:
    print(f"error: cannot reach the validation server at {url}: {error}")
    sys.exit(2)
for warning in answer.get("warnings", []):
    print(f"warning: {warning}")
if answer["valid"]:
    print(f"valid ({answer['n_cases']} cases)")
    sys.exit(0)
print(f"invalid ({len(answer['reasons'])} problems):")
for reason in answer["reasons"]:
    print(f"  - {reason}")
sys.exit(1)
'''


@dataclass(frozen=True)
class Workspace:
    """Folders and files of one run's workspace under ``root``."""

    root: Path
    data_mode: DataMode
    """How the public data was placed: ``link`` (hard links) or ``copy`` (read-only copies; also
    when ``link`` was asked for but the folders are on different filesystems)."""

    @property
    def data(self) -> Path:
        """The task's public data."""
        return self.root / "data"

    @property
    def submission(self) -> Path:
        """Where the agent writes its submission."""
        return self.root / "submission"

    @property
    def instructions(self) -> Path:
        """Rules and task description."""
        return self.root / "instructions.md"

    @property
    def validate_script(self) -> Path:
        """The validation helper."""
        return self.root / "validate.py"

    @property
    def home(self) -> Path:
        """The agent's $HOME."""
        return self.root / ".home"


def remove_tree(path: Path) -> None:
    """Remove a workspace folder, read-only copies included (hard links are only unlinked).

    A link in place of the folder is removed itself, never followed. Any depth and any name
    are removed (see :mod:`rexmle.runner.trees`).
    """
    remove_tree_iteratively(path)


@dataclass(frozen=True)
class CollectionLimits:
    """Caps on the copy of an agent's ``submission/`` into the run folder.

    A file is charged its allocated blocks (``st_blocks * 512``): the copy keeps holes as
    holes, so that is what it costs on disk; a sparse file's apparent size costs nothing.
    """

    max_bytes: int = 16 << 30
    max_files: int = 100_000
    max_depth: int = 32
    """Folder nesting below ``submission/`` (its own files are at depth 1)."""


def collect_submission(
    source: Path, target: Path, *, limits: CollectionLimits | None = None
) -> list[str]:
    """Copy the agent's submission folder to ``target`` with no link left in it, within limits.

    Grading runs outside the sandbox, where a link could reach the answers. So regular files
    and folders are copied; a symbolic link is replaced by a copy of its target when that target
    resolves to a regular file inside ``source``, and dropped otherwise; anything else (fifos,
    sockets, devices) is dropped. A ``source`` that is itself a link counts as empty. Copies
    are sparse where the source is and never keep setuid/setgid bits (default mode). Entries deeper than
    ``max_depth``, files past ``max_files`` and files that would take the copy past
    ``max_bytes`` are left out. Any name is copied as it is; notes show it with
    :func:`~rexmle.runner.trees.printable_name`.

    Returns:
        One note per dropped entry or reached limit (recorded in run.json).
    """
    limits = limits or CollectionLimits()
    notes: list[str] = []
    target.mkdir(parents=True, exist_ok=True)
    if source.is_symlink() or not source.is_dir():
        if source.is_symlink():
            notes.append(f"submission/ is a link to {printable_name(os.readlink(source))}: ignored")
        return notes
    root = source.resolve()
    n_files = n_bytes = 0
    too_deep = over_count = over_size = 0
    for item in walk_tree(source):
        shown = printable_name(item.relative)
        destination = os.path.join(target, item.relative)
        if item.depth > limits.max_depth:
            too_deep += 1
            continue
        try:
            info = os.lstat(item.path)
        except OSError as error:
            notes.append(f"{shown}: cannot be read ({error.strerror}); dropped")
            continue
        copy_from = item.path
        if stat.S_ISDIR(info.st_mode):
            os.makedirs(destination, exist_ok=True)
            continue
        if stat.S_ISLNK(info.st_mode):
            resolved = Path(item.path).resolve()
            if root in resolved.parents and resolved.is_file() and not resolved.is_symlink():
                copy_from = os.fspath(resolved)
                info = os.stat(copy_from)
            else:
                link = printable_name(os.readlink(item.path))
                notes.append(
                    f"{shown}: link to {link} points outside the "
                    f"submission folder or not to a file; dropped"
                )
                continue
        elif not stat.S_ISREG(info.st_mode):
            notes.append(f"{shown}: not a regular file; dropped")
            continue
        cost = info.st_blocks * 512
        if n_files >= limits.max_files:
            over_count += 1
            continue
        if n_bytes + cost > limits.max_bytes:
            over_size += 1
            continue
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        copy_file_sparse(copy_from, destination)
        n_files += 1
        n_bytes += cost
    if too_deep:
        notes.append(
            f"{too_deep} entries nested deeper than {limits.max_depth} folders were left out"
        )
    if over_count:
        notes.append(f"{over_count} files past the limit of {limits.max_files} files were left out")
    if over_size:
        notes.append(
            f"{over_size} files were left out: the copy would pass the limit of "
            f"{limits.max_bytes} bytes (a file counts its allocated blocks)"
        )
    return notes


def place_public_data(public_dir: Path, target: Path, *, mode: DataMode) -> DataMode:
    """Put every file of ``public_dir`` under ``target``: hard links, or read-only copies.

    ``link`` falls back to ``copy`` when the two folders are on different filesystems.

    Returns:
        The mode actually used.
    """
    used: DataMode = mode
    for folder, _, files in os.walk(public_dir):
        relative = Path(folder).relative_to(public_dir)
        (target / relative).mkdir(parents=True, exist_ok=True)
        for name in sorted(files):
            source = Path(folder) / name
            destination = target / relative / name
            if used == "link":
                try:
                    os.link(source, destination)
                    continue
                except OSError:
                    used = "copy"
            shutil.copyfile(source, destination)
            os.chmod(destination, 0o444)
    return used


def build_workspace(
    root: Path,
    *,
    task_id: str,
    public_dir: Path,
    time_limit_s: float,
    validation: dict[str, object],
    data_mode: DataMode,
) -> Workspace:
    """Create a fresh workspace at ``root`` (an old one there is removed first).

    Args:
        root: the workspace folder (created).
        task_id: the task, named in the instructions.
        public_dir: the prepared task's ``public/`` folder.
        time_limit_s: the agent's wall-clock limit, stated in the instructions.
        validation: ``url``, ``max_upload_bytes`` and ``max_requests_per_minute`` of the server.
        data_mode: ``link`` (bwrap binds data/ read-only) or ``copy`` (read-only copies).
    """
    remove_tree(root)
    planned = Workspace(root, data_mode=data_mode)
    root.mkdir(parents=True)
    planned.submission.mkdir()
    planned.home.mkdir()
    used = place_public_data(public_dir, planned.data, mode=data_mode)
    workspace = replace(planned, data_mode=used)
    description_file = public_dir / "description.md"
    description = description_file.read_text(encoding="utf-8") if description_file.is_file() else ""
    max_upload_bytes = int(str(validation["max_upload_bytes"]))
    rules = RULES.format(
        task_id=task_id,
        time_limit_s=time_limit_s,
        max_requests_per_minute=validation["max_requests_per_minute"],
        max_upload_mb=max_upload_bytes / 1e6,
    )
    workspace.instructions.write_text(rules + description, encoding="utf-8")
    workspace.validate_script.write_text(VALIDATE_SCRIPT, encoding="utf-8")
    workspace.validate_script.chmod(0o755)
    (root / "validation.json").write_text(json.dumps(validation, indent=2) + "\n", encoding="utf-8")
    return workspace


def agent_env(
    workspace: Workspace,
    *,
    task_id: str,
    seed: int,
    time_limit_s: float,
    validation_url: str,
    pass_env: list[str],
    cuda_visible_devices: str | None,
) -> dict[str, str]:
    """The complete environment of an agent: built from scratch, never the harness's own.

    ``HARNESS_PYTHON`` names the harness's interpreter (each sandbox shows it at its own path, or
    the image's), which ``data/score.py`` uses to run the grader's metrics. The host's ``PATH``
    is kept after the interpreter's folder; variables named in ``pass_env``
    (API keys) are copied when set; nothing points to the data root (no ``REXMLE_*``).
    """
    import sys

    python_bin = str(Path(sys.executable).parent)
    env = {
        "PATH": os.pathsep.join([python_bin, os.environ.get("PATH", BASE_PATH)]),
        "HOME": str(workspace.home),
        "TMPDIR": "/tmp",
        "PYTHONUNBUFFERED": "1",
        "WORKSPACE": str(workspace.root),
        "DATA_DIR": str(workspace.data),
        "SUBMISSION_DIR": str(workspace.submission),
        "INSTRUCTIONS": str(workspace.instructions),
        "TIME_LIMIT_SECS": f"{time_limit_s:g}",
        "VALIDATION_URL": validation_url,
        "TASK_ID": task_id,
        "SEED": str(seed),
        "HARNESS_PYTHON": sys.executable,
    }
    for name in (*PASSED_THROUGH, *pass_env):
        value = os.environ.get(name)
        if value is not None and not name.startswith("REXMLE_"):
            env[name] = value
    if cuda_visible_devices is not None:
        env["CUDA_VISIBLE_DEVICES"] = cuda_visible_devices
    elif "CUDA_VISIBLE_DEVICES" in os.environ:
        env["CUDA_VISIBLE_DEVICES"] = os.environ["CUDA_VISIBLE_DEVICES"]
    return env
