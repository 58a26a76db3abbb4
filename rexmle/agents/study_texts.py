"""The published study's own prompt texts, fetched from its pinned commit into the agents cache.

The paper condition gives the agents the texts the study gave them: its rules
(``environment/instructions.txt``), AIDE's notes (``agents/aide/additional_notes.txt``), each
task's description (``rexmle/challenges/<task>/description.md``) and ML-Master's fixed prompt per
task (``agents/ML-Master/dataset/full_instructions/<task>/full_instructions.txt``), all under
``rex-mle/`` of the authors' repository. Those sentences are theirs: they are never part of this
package. :data:`PINS_FILE` pins the repository, the commit and the SHA-256 of every file;
:func:`fetch_study_texts` fetches that commit (or reads a local clone or mirror), refuses any file
whose bytes differ from its pin, and writes the files under
``<agents cache>/study-texts-<commit 12>/`` (``fetched.json`` last, as the stamp).

:func:`place_study_texts` copies one task's texts into a run's workspace (``.adapter/study/``)
and says what it placed, or, when they are not fetched or no longer match their pins, the
deviation the run records (the agents then get ReX-MLE's own texts).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from rexmle.agents.environments import (
    agents_cache_dir,
    fetch_commit,
    git_blob,
    is_git_repository,
)
from rexmle.errors import RexmleError

PINS_FILE = "study_texts.json"
STAMP = "fetched.json"
STUDY_DIR = Path(".adapter") / "study"
"""Inside a workspace: where :func:`place_study_texts` puts one task's texts."""
SHA256 = r"^[0-9a-f]{64}$"


class StudyTextsError(RexmleError):
    """The study's texts cannot be fetched, or a file differs from its pin."""

    exit_code = 2


class PinnedFile(BaseModel):
    """One file of the study's repository and the SHA-256 of its bytes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    """Relative to the study's folder (``rex-mle/``)."""
    sha256: str = Field(pattern=SHA256)


class TaskTexts(BaseModel):
    """The texts of one task."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    description: PinnedFile
    ml_master_prompt: PinnedFile


class StudyPins(BaseModel):
    """The content of :data:`PINS_FILE`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    repository: str
    commit: str = Field(pattern=r"^[0-9a-f]{40}$")
    folder: str
    override_variable: str
    """Host variable naming a local clone or mirror to read instead of the repository."""
    shared: dict[str, PinnedFile]
    """``rules`` and ``aide_notes``."""
    tasks: dict[str, TaskTexts]

    def files(self) -> list[PinnedFile]:
        """Every pinned file, shared ones first, then per task in id order."""
        found = list(self.shared.values())
        for task in sorted(self.tasks):
            found += [self.tasks[task].description, self.tasks[task].ml_master_prompt]
        return found


def load_pins() -> StudyPins:
    """The pins shipped with the package."""
    text = resources.files("rexmle.agents").joinpath(PINS_FILE).read_text(encoding="utf-8")
    return StudyPins.model_validate_json(text)


def texts_dir(pins: StudyPins, cache_dir: Path | None = None) -> Path:
    """``<agents cache>/study-texts-<commit 12>``."""
    return (cache_dir or agents_cache_dir()) / f"study-texts-{pins.commit[:12]}"


@dataclass(frozen=True)
class FetchResult:
    """What :func:`fetch_study_texts` did."""

    folder: Path
    n_files: int
    fetched: bool
    """False: a verified copy was already there."""
    source: str
    seconds: float


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fetch_study_texts(
    *,
    pins: StudyPins | None = None,
    source: Path | str | None = None,
    cache_dir: Path | None = None,
    force: bool = False,
) -> FetchResult:
    """Fetch the pinned files of the study's repository into the agents cache, verified.

    Args:
        pins: the pins (default: the package's).
        source: a local clone or mirror holding the pinned commit, or a git URL (default: the
            pins' override variable when set, else the pinned repository).
        cache_dir: the agents cache (default: :func:`agents_cache_dir`).
        force: fetch again even when a verified copy exists.

    Raises:
        StudyTextsError: git cannot fetch the commit, a file is missing, or a file's SHA-256
            differs from its pin (nothing is written then).
    """
    started = time.perf_counter()
    pins = pins or load_pins()
    target = texts_dir(pins, cache_dir)
    if not force and study_texts_problem(pins=pins, cache_dir=cache_dir) is None:
        return FetchResult(target, len(pins.files()), False, _described(target), 0.0)
    chosen = source if source is not None else os.environ.get(pins.override_variable)
    origin = str(chosen) if chosen else pins.repository
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rexmle-study-") as scratch:
        local = Path(origin) if chosen and Path(origin).exists() else None
        if local is not None and is_git_repository(local):
            repository = str(local.resolve())
        elif local is not None:
            msg = f"{local} is not a git repository (a clone or mirror of {pins.repository})"
            raise StudyTextsError(msg)
        else:
            hint = (
                f"On an offline machine pass --source DIR (a clone or mirror of "
                f"{pins.repository}) or set {pins.override_variable}"
            )
            try:
                repository = fetch_commit(origin, pins.commit, Path(scratch), hint=hint)
            except RexmleError as error:
                raise StudyTextsError(str(error)) from error
        building = Path(tempfile.mkdtemp(prefix=".building-", dir=target.parent))
        try:
            stamp: dict[str, object] = {"repository": origin, "commit": pins.commit, "files": {}}
            for pinned in pins.files():
                where = f"{pins.folder}/{pinned.path}"
                data = git_blob(repository, pins.commit, where)
                if data is None:
                    msg = f"{origin} has no {where} at commit {pins.commit}"
                    raise StudyTextsError(msg)
                digest = _sha256(data)
                if digest != pinned.sha256:
                    msg = (
                        f"{where} at {pins.commit[:12]} of {origin} has SHA-256 {digest}, but "
                        f"{PINS_FILE} pins {pinned.sha256}: refused (a different or altered "
                        "file; nothing was written)"
                    )
                    raise StudyTextsError(msg)
                path = building / pinned.path
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
                stamp["files"][pinned.path] = digest  # type: ignore[index]
            stamp["seconds"] = round(time.perf_counter() - started, 3)
            (building / STAMP).write_text(json.dumps(stamp, indent=1) + "\n", encoding="utf-8")
            shutil.rmtree(target, ignore_errors=True)
            building.rename(target)
        finally:
            shutil.rmtree(building, ignore_errors=True)
    return FetchResult(
        target, len(pins.files()), True, origin, round(time.perf_counter() - started, 3)
    )


def _described(folder: Path) -> str:
    try:
        return str(json.loads((folder / STAMP).read_text(encoding="utf-8"))["repository"])
    except (OSError, ValueError, KeyError):
        return str(folder)


def study_texts_problem(
    *, pins: StudyPins | None = None, cache_dir: Path | None = None, task_id: str | None = None
) -> str | None:
    """Why the fetched texts cannot be used (all of them, or one task's), or None when they can.

    Every file is hashed again: a copy altered after the fetch is refused too.
    """
    pins = pins or load_pins()
    folder = texts_dir(pins, cache_dir)
    if not (folder / STAMP).is_file():
        return (
            f"the study's texts are not fetched ({folder}): run `rexmle agents fetch-study-texts`"
        )
    if task_id is not None and task_id not in pins.tasks:
        return f"the study has no texts for task {task_id!r}"
    wanted = (
        pins.files()
        if task_id is None
        else [
            *pins.shared.values(),
            pins.tasks[task_id].description,
            pins.tasks[task_id].ml_master_prompt,
        ]
    )
    for pinned in wanted:
        path = folder / pinned.path
        if not path.is_file():
            return f"{path} is missing: fetch again with `rexmle agents fetch-study-texts --force`"
        if _sha256(path.read_bytes()) != pinned.sha256:
            return (
                f"{path} no longer matches its pin: fetch again with "
                "`rexmle agents fetch-study-texts --force`"
            )
    return None


@dataclass(frozen=True)
class StudyTextsPlacement:
    """What :func:`place_study_texts` did, for run.json."""

    placed: bool
    files: dict[str, str] = field(default_factory=dict)
    """Workspace-relative path -> SHA-256 of each placed file."""
    commit: str | None = None
    deviation: dict[str, str] | None = None
    """When nothing was placed: ``item``, ``study``, ``ours``, ``why``."""


PLACED_NAMES = {
    "rules": "instructions.txt",
    "aide_notes": "additional_notes.txt",
    "description": "description.md",
    "ml_master_prompt": "ml_master_full_instructions.txt",
}
"""File names under :data:`STUDY_DIR`, by text."""


def place_study_texts(
    workspace: Path,
    task_id: str,
    *,
    pins: StudyPins | None = None,
    cache_dir: Path | None = None,
) -> StudyTextsPlacement:
    """Copy the study's texts of ``task_id`` into ``<workspace>/.adapter/study/``.

    Returns what was placed, or (when the texts are not fetched, altered or lack the task) a
    placement with ``placed=False`` and the deviation the run records; nothing is raised, the
    run goes on with ReX-MLE's own texts.
    """
    pins = pins or load_pins()
    problem = study_texts_problem(pins=pins, cache_dir=cache_dir, task_id=task_id)
    if problem is not None:
        return StudyTextsPlacement(
            placed=False,
            commit=pins.commit,
            deviation={
                "item": "prompts",
                "study": "its rules text, AIDE's notes, its task description and ML-Master's "
                f"fixed prompt file ({pins.repository} at {pins.commit[:12]})",
                "ours": "ReX-MLE's own rules and task description",
                "why": problem,
            },
        )
    folder = texts_dir(pins, cache_dir)
    target = workspace / STUDY_DIR
    target.mkdir(parents=True, exist_ok=True)
    chosen = {
        **pins.shared,
        "description": pins.tasks[task_id].description,
        "ml_master_prompt": pins.tasks[task_id].ml_master_prompt,
    }
    files: dict[str, str] = {}
    for key, pinned in chosen.items():
        destination = target / PLACED_NAMES[key]
        shutil.copyfile(folder / pinned.path, destination)
        files[(STUDY_DIR / PLACED_NAMES[key]).as_posix()] = pinned.sha256
    return StudyTextsPlacement(placed=True, files=files, commit=pins.commit)
