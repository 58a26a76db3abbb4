"""Agent environments: one locked virtualenv per LLM agent, keyed by its lock file's hash.

Each LLM agent (``aide``, ``ml-master``, ``rdagent``) has a folder in ``rexmle/agents/envs/``:

- ``env.yaml``: name, description, the imports checked after an install, and for agents that
  are not on PyPI the pinned source (git repository, commit, subdirectory);
- ``requirements.in``: the agent and the imaging runtime its generated code needs;
- ``overrides.cpu.txt`` / ``overrides.cuda.txt``: the torch variant of each machine kind;
- ``cpu.lock`` / ``cuda.lock``: exact versions and sha256 hashes (``uv pip compile
  --generate-hashes``, see :func:`lock_command`).

An environment is installed under ``<agents cache>/<name>-<variant>-<hash16>/``::

    venv/            the virtualenv (uv venv + uv pip sync --require-hashes of the lock)
    src/             the agent's source at the pinned commit (agents not on PyPI)
    installed.json   the stamp, written last: name, variant, lock hash, source, seconds

The lock hash is the SHA-256 of the lock file's bytes, followed (for a pinned source) by the
commit and subdirectory, or the content hash of a source folder given with ``--source``. An
install whose stamp carries the same hash is not repeated. Sandboxes mount the folder read-only.

The agents cache, uv, the interpreter a venv is made from, the install steps and the stamp are
those of every locked environment (:mod:`rexmle.envs.locked`, shared with the LLM gateway's).
The cache is never under ``/tmp``, ``/var/tmp`` or ``/dev/shm`` (private inside sandboxes) and
never under the data root or the runs root (hidden inside sandboxes):
:func:`check_cache_location` says so, at ``rexmle agents install`` already.

Torch variant: ``$REXMLE_TORCH_VARIANT`` (``cpu`` or ``cuda``), else ``cuda`` where an NVIDIA
device node exists, else ``cpu``. The CPU build of torch is not on PyPI: the installer looks for
it where pip does on this machine (``find-links`` from the pip configuration and
``$PIP_FIND_LINKS``) and on PyTorch's CPU index.
"""

from __future__ import annotations

import configparser
import glob
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from rexmle.declarations import parse_declaration
from rexmle.envs.locked import (
    STAMP,
    EnvInstallError,
    Progress,
    agents_cache_dir,
    base_interpreter,
    is_installed,
    run_step,
    uv_environment,
    uv_executable,
    venv_command,
    write_stamp,
)
from rexmle.errors import SpecError

__all__ = [
    "STAMP",
    "AgentEnv",
    "EnvInstallError",
    "Progress",
    "agents_cache_dir",
    "base_interpreter",
    "uv_executable",
]

TorchVariant = Literal["cpu", "cuda"]
TORCH_VARIANTS: tuple[TorchVariant, ...] = ("cpu", "cuda")
CPU_TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
PYPI_INDEX = "https://pypi.org/simple"
LOCK_PLATFORM = "x86_64-manylinux_2_28"
LOCK_PYTHON = "3.11"


class EnvSource(BaseModel):
    """Where an agent that is not on PyPI comes from: one commit of a git repository."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    repository: str
    commit: str
    subdirectory: str
    override_variable: str
    """Host variable naming a local clone, bare mirror or source folder to use instead."""
    optional_paths: list[str] = []
    """Path prefixes (inside the subdirectory) that may be missing from a partial mirror."""


class EnvDeclaration(BaseModel):
    """The content of ``rexmle/agents/envs/<name>/env.yaml``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str
    check_imports: list[str]
    """Modules imported by the environment's interpreter after an install (a failed import
    fails the install)."""
    source: EnvSource | None = None


def _envs_folder() -> Path:
    return Path(str(resources.files("rexmle.agents").joinpath("envs")))


def env_names() -> list[str]:
    """Names of the agents that have a locked environment, sorted."""
    return sorted(p.name for p in _envs_folder().iterdir() if (p / "env.yaml").is_file())


def load_declaration(name: str) -> EnvDeclaration:
    """The declaration of environment ``name``.

    Raises:
        SpecError: unknown name (the message lists the known ones) or a malformed env.yaml.
    """
    path = _envs_folder() / name / "env.yaml"
    if not path.is_file():
        msg = f"no agent environment {name!r}; known: {', '.join(env_names())}"
        raise SpecError(msg)
    text = path.read_text("utf-8")
    declaration = parse_declaration(text, EnvDeclaration, str(path), what="environment")
    if declaration.name != name:
        msg = f"{path}: name must be {name!r}, not {declaration.name!r}"
        raise SpecError(msg)
    return declaration


def torch_variant() -> TorchVariant:
    """The torch build for this machine: ``$REXMLE_TORCH_VARIANT``, else by NVIDIA devices.

    Raises:
        SpecError: ``$REXMLE_TORCH_VARIANT`` is neither ``cpu`` nor ``cuda``.
    """
    chosen = os.environ.get("REXMLE_TORCH_VARIANT")
    if chosen is not None:
        if chosen not in TORCH_VARIANTS:
            msg = f"REXMLE_TORCH_VARIANT must be 'cpu' or 'cuda', not {chosen!r}"
            raise SpecError(msg)
        return chosen  # type: ignore[return-value]
    return "cuda" if glob.glob("/dev/nvidia[0-9]*") else "cpu"


def check_cache_location(cache_dir: Path, hidden: Sequence[Path]) -> None:
    """Refuse an agents cache that a sandbox could not show to the agent.

    Raises:
        SpecError: the cache is under ``/tmp``, ``/var/tmp`` or ``/dev/shm`` (each sandbox has
            its own), or
            under one of ``hidden`` (the data root and the runs root are hidden from agents).
    """
    resolved = cache_dir.resolve()
    for private, why in (
        (Path("/tmp"), "every sandbox has its own /tmp"),
        (Path("/var/tmp"), "every sandbox has its own /var/tmp"),
        (Path("/dev/shm"), "every sandbox has its own /dev/shm"),
        *((Path(h), "the sandbox hides that folder from agents") for h in hidden),
    ):
        root = private.resolve()
        if resolved == root or root in resolved.parents:
            msg = (
                f"the agents cache {cache_dir} is under {private}: {why}. Set REXMLE_AGENTS_DIR "
                "to a folder outside /tmp, /var/tmp, /dev/shm, the data root and the runs root, "
                "and install again"
            )
            raise SpecError(msg)


def pip_find_links() -> list[str]:
    """The ``find-links`` locations pip uses on this machine (where local wheels lie).

    Read as pip reads them: the configuration files (``/etc/xdg/pip/pip.conf``,
    ``/etc/pip.conf``, the user's ``pip.conf`` files, ``$PIP_CONFIG_FILE``; sections ``global``
    and ``install``), then ``$PIP_FIND_LINKS``. Whitespace separates several locations.
    """
    files = [Path("/etc/xdg/pip/pip.conf"), Path("/etc/pip.conf")]
    for folder in os.environ.get("XDG_CONFIG_DIRS", "").split(os.pathsep):
        if folder:
            files.append(Path(folder) / "pip" / "pip.conf")
    files += [Path.home() / ".pip" / "pip.conf", Path.home() / ".config" / "pip" / "pip.conf"]
    if os.environ.get("PIP_CONFIG_FILE"):
        files.append(Path(os.environ["PIP_CONFIG_FILE"]))
    found: list[str] = []
    for path in files:
        parser = configparser.ConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, OSError, UnicodeDecodeError):
            continue
        for section in ("global", "install"):
            if parser.has_option(section, "find-links"):
                found += parser.get(section, "find-links").split()
    found += os.environ.get("PIP_FIND_LINKS", "").split()
    return list(dict.fromkeys(found))


def tree_sha256(folder: Path) -> str:
    """SHA-256 over the relative paths and bytes of every regular file under ``folder``."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        digest.update(path.relative_to(folder).as_posix().encode("utf-8") + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


@dataclass(frozen=True)
class AgentEnv:
    """One agent environment on this machine (installed or not)."""

    name: str
    variant: TorchVariant
    lock_file: Path
    lock_hash: str
    """SHA-256 of the lock (and of the pinned source): the key of the installed folder."""
    root: Path
    source: str | None
    """``git <repository>@<commit>:<subdirectory>``, ``dir <path>``, or None (PyPI only)."""

    @property
    def venv(self) -> Path:
        """The virtualenv."""
        return self.root / "venv"

    @property
    def python(self) -> Path:
        """The environment's interpreter."""
        return self.venv / "bin" / "python"

    @property
    def source_dir(self) -> Path:
        """The agent's source (for agents that are not on PyPI)."""
        return self.root / "src"

    @property
    def stamp(self) -> Path:
        """Written last by a complete install."""
        return self.root / STAMP

    def is_installed(self) -> bool:
        """Whether a complete install with this lock hash is in place."""
        return is_installed(self.root, self.lock_hash, self.python)

    def interpreter_home(self) -> Path | None:
        """The installation the venv's interpreter links to (``home`` in ``pyvenv.cfg``)."""
        try:
            lines = (self.venv / "pyvenv.cfg").read_text(encoding="utf-8").splitlines()
        except OSError:
            return None
        for line in lines:
            key, _, value = line.partition("=")
            if key.strip() == "home":
                return Path(value.strip()).parent
        return None

    def readonly_mounts(self) -> tuple[Path, ...]:
        """Host folders a sandbox must show read-only for this env to run: itself, its Python."""
        home = self.interpreter_home()
        return (self.root,) if home is None else (self.root, home)


def _source_override(declaration: EnvDeclaration, source: Path | None) -> Path | None:
    if source is not None:
        return source
    if declaration.source is not None:
        value = os.environ.get(declaration.source.override_variable)
        if value:
            return Path(value)
    return None


def is_git_repository(path: Path) -> bool:
    """Whether ``path`` is a git repository (a work tree or a bare one)."""
    done = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "--git-dir"],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def resolve_env(
    name: str,
    *,
    variant: TorchVariant | None = None,
    cache_dir: Path | None = None,
    source: Path | None = None,
) -> AgentEnv:
    """The environment of agent ``name`` for ``variant`` (default: this machine's).

    Args:
        name: an agent with a locked environment (:func:`env_names`).
        variant: the torch build; default :func:`torch_variant`.
        cache_dir: the agents cache; default :func:`agents_cache_dir`.
        source: a local clone, bare mirror or source folder replacing the pinned repository
            (default: the declaration's override variable, when set). A git repository must
            hold the pinned commit; a plain folder is the agent's source itself and its content
            hash replaces the commit in the lock hash.

    Raises:
        SpecError: unknown agent, unknown variant, or a source override that does not exist.
    """
    declaration = load_declaration(name)
    chosen: TorchVariant = variant or torch_variant()
    if chosen not in TORCH_VARIANTS:
        msg = f"torch variant must be one of {TORCH_VARIANTS}, not {chosen!r}"
        raise SpecError(msg)
    lock_file = _envs_folder() / name / f"{chosen}.lock"
    digest = hashlib.sha256(lock_file.read_bytes())
    described: str | None = None
    if declaration.source is not None:
        pinned = declaration.source
        override = _source_override(declaration, source)
        if override is not None and not override.exists():
            msg = f"the source {override} for {name} does not exist"
            raise SpecError(msg)
        if override is None or is_git_repository(override):
            origin = pinned.repository if override is None else str(override.resolve())
            described = f"git {origin}@{pinned.commit}:{pinned.subdirectory}"
            digest.update(f"\n{pinned.commit}:{pinned.subdirectory}".encode())
        else:
            tree = tree_sha256(override)
            described = f"dir {override.resolve()} (sha256 {tree})"
            digest.update(f"\ndir:{tree}".encode())
    lock_hash = digest.hexdigest()
    root = (cache_dir or agents_cache_dir()) / f"{name}-{chosen}-{lock_hash[:16]}"
    return AgentEnv(
        name=name,
        variant=chosen,
        lock_file=lock_file,
        lock_hash=lock_hash,
        root=root,
        source=described,
    )


def _git(repository: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", repository, *args], capture_output=True, check=False)


def export_git_tree(
    repository: str, commit: str, subdirectory: str, target: Path, *, optional: Sequence[str]
) -> list[str]:
    """Write the files of ``commit:subdirectory`` under ``target``; return the paths left out.

    A blob the repository does not hold (a partial clone or mirror without its largest files)
    is left out when its path starts with one of ``optional`` (documentation assets) and is an
    error otherwise. Symbolic links are written as links, file modes (executable) are kept.

    Raises:
        EnvInstallError: the commit or subdirectory does not exist, or a needed blob is missing.
    """
    listing = _git(repository, "ls-tree", "-r", "-z", f"{commit}:{subdirectory}")
    if listing.returncode != 0:
        msg = (
            f"{repository} has no {subdirectory} at commit {commit}: "
            f"{listing.stderr.decode(errors='replace').strip()}"
        )
        raise EnvInstallError(msg)
    left_out: list[str] = []
    for entry in listing.stdout.split(b"\0"):
        if not entry:
            continue
        meta, _, raw_path = entry.partition(b"\t")
        mode, kind, blob = meta.decode().split()
        path = raw_path.decode("utf-8")
        if kind != "blob":
            continue
        content = _git(repository, "cat-file", "blob", blob)
        if content.returncode != 0:
            if any(path.startswith(prefix) for prefix in optional):
                left_out.append(path)
                continue
            msg = f"{repository} does not hold {subdirectory}/{path} (blob {blob}) of {commit}"
            raise EnvInstallError(msg)
        destination = target / path
        destination.parent.mkdir(parents=True, exist_ok=True)
        if mode == "120000":
            destination.symlink_to(content.stdout.decode("utf-8"))
            continue
        destination.write_bytes(content.stdout)
        destination.chmod(0o755 if mode == "100755" else 0o644)
    return left_out


def fetch_commit(repository: str, commit: str, scratch: Path, *, hint: str) -> str:
    """A bare repository under ``scratch`` holding ``commit`` of ``repository`` (depth 1).

    Raises:
        EnvInstallError: git cannot fetch it (the message ends with ``hint``).
    """
    bare = str(scratch / "repo")
    for argv in (
        ["git", "init", "-q", "--bare", bare],
        ["git", "-C", bare, "fetch", "-q", "--depth", "1", repository, commit],
    ):
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            msg = f"fetching {repository}@{commit} failed: {done.stderr.strip()}. {hint}"
            raise EnvInstallError(msg)
    return bare


def git_blob(repository: str, commit: str, path: str) -> bytes | None:
    """The bytes of ``commit:path`` in ``repository``, or None when it does not hold them."""
    done = _git(repository, "cat-file", "blob", f"{commit}:{path}")
    return done.stdout if done.returncode == 0 else None


def _fetch_source(env: AgentEnv, declaration: EnvDeclaration, override: Path | None) -> list[str]:
    """Put the agent's pinned source into ``env.source_dir``; return the paths left out."""
    pinned = declaration.source
    if pinned is None:
        return []
    target = env.source_dir
    shutil.rmtree(target, ignore_errors=True)
    if override is not None and not is_git_repository(override):
        shutil.copytree(override, target, symlinks=True)
        return []
    with tempfile.TemporaryDirectory(prefix="rexmle-src-") as scratch:
        if override is not None:
            repository = str(override.resolve())
        else:
            hint = (
                f"On an offline machine pass --source DIR (a clone or mirror) or set "
                f"{pinned.override_variable}"
            )
            repository = fetch_commit(pinned.repository, pinned.commit, Path(scratch), hint=hint)
        target.mkdir(parents=True)
        return export_git_tree(
            repository, pinned.commit, pinned.subdirectory, target, optional=pinned.optional_paths
        )


def _local_folder(location: str) -> Path | None:
    if location.startswith("file://"):
        location = location[len("file://") :]
    if "://" in location:
        return None
    path = Path(location)
    return path if path.is_dir() else None


def cpu_torch_sources() -> list[str]:
    """Uv arguments that find the CPU build of torch: pip's find-links, else PyTorch's index.

    Each find-links location of pip's configuration is passed on. PyTorch's CPU index is added
    only when no local find-links folder holds a ``torch-*+cpu`` wheel (an unreachable extra
    index fails the whole install, even for packages found elsewhere).
    """
    argv: list[str] = []
    has_local_wheel = False
    for location in pip_find_links():
        argv += ["--find-links", location]
        folder = _local_folder(location)
        if folder is not None and any(folder.glob("torch-*+cpu-*.whl")):
            has_local_wheel = True
    if not has_local_wheel:
        argv += ["--extra-index-url", CPU_TORCH_INDEX, "--index-strategy", "unsafe-best-match"]
    return argv


def sync_command(env: AgentEnv, *, index_url: str | None = PYPI_INDEX) -> list[str]:
    """The ``uv pip sync`` command line that installs ``env``'s lock into its venv.

    ``index_url`` None: no index at all, only pip's find-links folders (offline machines).
    """
    argv = [
        uv_executable(),
        "pip",
        "sync",
        "--no-config",
        "--require-hashes",
        "--python",
        str(env.python),
    ]
    argv += ["--no-index"] if index_url is None else ["--index-url", index_url]
    if index_url is None:
        for location in pip_find_links():
            argv += ["--find-links", location]
    elif env.variant == "cpu":
        argv += cpu_torch_sources()
    return [*argv, str(env.lock_file)]


def lock_command(name: str, variant: TorchVariant) -> list[str]:
    """The ``uv pip compile`` command that (re)writes ``envs/<name>/<variant>.lock``."""
    folder = _envs_folder() / name
    argv = [
        uv_executable(),
        "pip",
        "compile",
        "--quiet",
        "--no-config",
        "--no-header",
        "--generate-hashes",
        "--python-version",
        LOCK_PYTHON,
        "--python-platform",
        LOCK_PLATFORM,
        "--override",
        str(folder / f"overrides.{variant}.txt"),
    ]
    if variant == "cpu":
        argv += cpu_torch_sources()
    return [*argv, str(folder / "requirements.in"), "-o", str(folder / f"{variant}.lock")]


@dataclass(frozen=True)
class InstallResult:
    """What :func:`install_env` did."""

    env: AgentEnv
    installed: bool
    """False when a complete install with the same lock hash was already there."""
    seconds: float


def install_env(
    env: AgentEnv,
    *,
    source: Path | None = None,
    force: bool = False,
    index_url: str | None = PYPI_INDEX,
    progress: Progress = lambda _line: None,
) -> InstallResult:
    """Install ``env`` (idempotent: a matching stamp means nothing to do, unless ``force``).

    ``index_url`` None installs from pip's find-links folders only (no index).

    Steps: remove a partial folder, ``uv venv`` from :func:`base_interpreter`, ``uv pip sync
    --require-hashes`` of the lock, the pinned source (if any), the import check, the stamp.

    Raises:
        EnvInstallError: a step failed (the message ends with its last output lines).
    """
    started = time.perf_counter()
    if env.is_installed() and not force:
        return InstallResult(env=env, installed=False, seconds=time.perf_counter() - started)
    declaration = load_declaration(env.name)
    shutil.rmtree(env.root, ignore_errors=True)
    env.root.mkdir(parents=True)
    uv_env = uv_environment()
    run_step(venv_command(env.venv), "creating the virtualenv", progress, env=uv_env)
    run_step(
        sync_command(env, index_url=index_url),
        f"installing {env.lock_file.name}",
        progress,
        env=uv_env,
    )
    left_out = _fetch_source(env, declaration, _source_override(declaration, source))
    check = "; ".join(f"import {module}" for module in declaration.check_imports)
    run_step(
        [str(env.python), "-c", check],
        "checking the imports",
        progress,
        cwd=env.source_dir if declaration.source is not None else env.root,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )
    seconds = time.perf_counter() - started
    write_stamp(
        env.root,
        env.lock_hash,
        {
            "agent": env.name,
            "variant": env.variant,
            "lock_file": f"rexmle/agents/envs/{env.name}/{env.lock_file.name}",
            "source": env.source,
            "source_left_out": left_out,
            "seconds": round(seconds, 1),
        },
    )
    return InstallResult(env=env, installed=True, seconds=seconds)
