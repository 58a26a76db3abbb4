"""Copies of the harness's Python environment that name no host path, for the bwrap sandbox.

Inside the sandbox an agent can read every file mounted for it and ``/proc/self/mountinfo``,
which shows the host folder each bind mount comes from. The harness's own files name the host
checkout and the virtual environment in several places: an editable install's finder
(``__editable___*_finder.py``, its ``.pth``), ``direct_url.json``, the scripts in the venv's
``bin/`` (their ``#!`` line), ``pyvenv.cfg`` (``command = ...``), and every ``.pyc`` compiled on
the host (the source path it was compiled from). So bwrap binds neither the checkout nor the
venv itself, but a **neutral copy** of each, made once per harness process in a fresh claimed
folder ``$TMPDIR/rexmle-env-*`` (:func:`neutral_env`), removed when the process exits, or by the
next ``rexmle run`` when a killed harness left it (:func:`remove_stale_env_copies`):

- ``venv/``: the virtual environment, every file hard-linked (copied where a link cannot be
  made), without ``__pycache__`` folders and ``.pyc`` files, without setuptools' editable
  finders and their ``.pth`` (``__editable__*``; the sandbox puts the package on ``PYTHONPATH``);
  in the folders that hold metadata (the venv's own top level, ``bin/``, the top level of
  ``site-packages``, each ``*.dist-info`` / ``*.egg-info``) a file or link naming a host path
  (:func:`host_paths`) is left out, and ``pyvenv.cfg`` keeps only its lines that name none; a
  link elsewhere that names one is made relative when it points inside the venv, else left out;
- ``rexmle/``: the package, without ``__pycache__``;
- ``shim.py``: the sandbox's PID 1.

Without the host's bytecode, the sandbox's Python compiles what it imports into
``PYTHONPYCACHEPREFIX`` (:data:`PYCACHE_INSIDE`, on the run's private ``/tmp``): once per run.
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import stat
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import rexmle
from rexmle.runner.leftovers import ClaimedDir, remove_stale_dirs

COPIES_PREFIX = "rexmle-env-"
PYCACHE_INSIDE = "/tmp/.pycache"
"""``PYTHONPYCACHEPREFIX`` inside the sandbox: bytecode compiled there stays in the run."""
SKIPPED_NAMES = frozenset({"__pycache__"})
EDITABLE_PREFIX = "__editable__"
METADATA_SUFFIXES = (".dist-info", ".egg-info")
CHECKED_BYTES = 1 << 20
"""Metadata files larger than this are left out unchecked (none of pip's or uv's is)."""


@dataclass(frozen=True)
class NeutralEnv:
    """The neutral copies (see the module docstring); each path is on the host."""

    root: Path
    venv: Path | None
    """The copy of the harness's virtual environment; None without one."""
    package: Path
    """The copy of the ``rexmle`` package folder."""
    shim: Path


def package_root() -> Path:
    """The ``rexmle`` package folder (never its parent: in an editable install, the checkout)."""
    return Path(rexmle.__file__).resolve().parent


def virtual_env() -> Path | None:
    """The virtual environment the harness runs in, or None."""
    if Path(sys.prefix).resolve() == Path(sys.base_prefix).resolve():
        return None
    return Path(sys.prefix)


def host_paths() -> tuple[str, ...]:
    """The host paths no neutral file may name: the folder holding the package (in an editable
    install, the checkout) and the virtual environment, each as given and resolved.
    """
    found = {os.fspath(package_root().parent)}
    venv = virtual_env()
    if venv is not None:
        found |= {os.fspath(venv.absolute()), os.fspath(venv.resolve())}
    return tuple(sorted(found, key=len, reverse=True))


def _names_host(data: bytes | str, hidden: tuple[str, ...]) -> bool:
    """Whether ``data`` names one of the ``hidden`` paths: the path, not followed by another
    character of a file name (``/w`` is named by ``/w/x`` and ``'/w'``, not by ``/www``).
    """
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    return any(_path_pattern(path).search(raw) for path in hidden)


@functools.cache
def _path_pattern(path: str) -> re.Pattern[bytes]:
    return re.compile(re.escape(os.fsencode(path)) + rb"(?![A-Za-z0-9._+-])")


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target, follow_symlinks=False)
    except OSError:
        shutil.copy2(source, target, follow_symlinks=False)


def _names_no_host(source: str, hidden: tuple[str, ...]) -> bool:
    """Whether the file names no host path (False also when it is too large to check)."""
    try:
        if os.lstat(source).st_size > CHECKED_BYTES:
            return False
        with open(source, "rb") as stream:
            return not _names_host(stream.read(), hidden)
    except OSError:
        return False


def _copy_link(source: str, target: str, top: Path, hidden: tuple[str, ...]) -> None:
    """Copy the link ``source``; one naming a host path is made relative when it points inside
    ``top``, else left out.
    """
    pointed = os.readlink(source)
    if _names_host(pointed, hidden):
        real = Path(os.path.realpath(source))
        top_real = top.resolve()
        if real != top_real and top_real not in real.parents:
            return
        pointed = os.path.relpath(real, Path(os.path.realpath(os.path.dirname(source))))
    os.symlink(pointed, target)


def _is_metadata_folder(relative: Path) -> bool:
    """Whether the files of the venv folder ``relative`` are checked for host paths."""
    if relative in (Path("."), Path("bin")) or relative.name == "site-packages":
        return True
    return relative.name.endswith(METADATA_SUFFIXES)


def copy_venv(source: Path, target: Path, hidden: tuple[str, ...]) -> None:
    """Make ``target`` the neutral copy of the virtual environment ``source`` (module docstring)."""
    top = source.resolve()
    for folder, folders, files in os.walk(top):
        relative = Path(folder).relative_to(top)
        here = target / relative
        here.mkdir(exist_ok=True)
        here.chmod(0o755)  # whatever the harness's umask: the agent's uid must enter it
        checked = _is_metadata_folder(relative)
        in_site_packages = relative.name == "site-packages"
        kept_folders = []
        for name in sorted(folders):
            path = os.path.join(folder, name)
            if os.path.islink(path):
                _copy_link(path, os.fspath(here / name), top, hidden)
            elif name not in SKIPPED_NAMES and not (
                in_site_packages and name.startswith(EDITABLE_PREFIX)
            ):
                kept_folders.append(name)
        folders[:] = kept_folders
        for name in sorted(files):
            path = os.path.join(folder, name)
            if name.endswith(".pyc") or (in_site_packages and name.startswith(EDITABLE_PREFIX)):
                continue
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                _copy_link(path, os.fspath(here / name), top, hidden)
            elif not stat.S_ISREG(mode):
                continue
            elif relative == Path(".") and name == "pyvenv.cfg":
                (here / name).write_bytes(_clean_config(Path(path), hidden))
                (here / name).chmod(0o644)
            elif not checked or _names_no_host(path, hidden):
                _link_or_copy(path, os.fspath(here / name))


def _clean_config(path: Path, hidden: tuple[str, ...]) -> bytes:
    """``pyvenv.cfg`` without the lines that name a host path (``command = ...``)."""
    lines = path.read_bytes().splitlines(keepends=True)
    return b"".join(line for line in lines if not _names_host(line, hidden))


def copy_package(source: Path, target: Path) -> None:
    """Copy the package folder ``source`` to ``target`` without its bytecode."""
    shutil.copytree(
        source,
        target,
        symlinks=True,
        ignore=shutil.ignore_patterns(*SKIPPED_NAMES, "*.pyc"),
    )


_lock = threading.Lock()
_made: list[tuple[NeutralEnv, ClaimedDir]] = []


def neutral_env() -> NeutralEnv:
    """The neutral copies of this process's environment, made on the first call (thread-safe)
    and removed when the process exits.
    """
    with _lock:
        if _made:
            return _made[0][0]
        claim = ClaimedDir(COPIES_PREFIX)
        atexit.register(claim.release)
        root = claim.path
        os.chmod(root, 0o755)  # a private uid inside the sandbox must traverse it
        hidden = host_paths()
        venv = virtual_env()
        venv_copy = None
        if venv is not None:
            venv_copy = root / "venv"
            if os.stat(venv).st_dev != os.stat(root).st_dev:
                sys.stderr.write(
                    f"rexmle: {root.parent} is not on the file system of {venv}: the sandbox's "
                    f"copy of the environment is a full copy, not hard links (time, and memory "
                    f"where it is a tmpfs); set TMPDIR to a folder on that file system to avoid "
                    f"it\n"
                )
            copy_venv(venv, venv_copy, hidden)
        package = root / "rexmle"
        copy_package(package_root(), package)
        shim = root / "shim.py"
        shutil.copy2(package_root() / "runner" / "sandbox" / "shim.py", shim)
        made = NeutralEnv(root=root, venv=venv_copy, package=package, shim=shim)
        _made.append((made, claim))
        return made


def remove_stale_env_copies(temp_dir: Path | None = None) -> list[Path]:
    """Remove the copies killed harnesses left (their claim is unheld); returns them."""
    return remove_stale_dirs(COPIES_PREFIX, temp_dir)
