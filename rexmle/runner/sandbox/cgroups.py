"""One cgroup per run: a memory limit that counts tmpfs pages and every process, and a process cap.

RLIMIT_AS bounds the address space of each process alone: it does not see files the agent writes
into a RAM-backed ``/tmp`` or ``/dev/shm``, nor the sum over its processes. A memory cgroup
charges every page its processes use, tmpfs pages included, and the pids controller counts every
process and thread, whatever its uid. The run's command is started by the launcher
(:mod:`rexmle.runner.limits` ``--cgroup``), which moves itself into the run's cgroups before it
executes the command, so every process of the run is born inside.

Where the cgroup is made (:func:`open_run_cgroup`), always below the harness's own cgroup, so the
limits the harness itself runs under (a Slurm job, a systemd slice) still hold:

- **cgroup v2**, when the memory and pids controllers can be enabled for the new cgroup: below the
  harness's cgroup when that is the root, else beside the harness (below its parent, which is
  where a delegated subtree has them; a cgroup that holds processes cannot hand controllers on);
- **cgroup v1**, the ``memory`` and ``pids`` hierarchies (each wherever it is mounted, below the
  harness's cgroup of that hierarchy), as root;
- **none**: :func:`open_run_cgroup` says why, and the sandbox falls back to RLIMIT_AS (memory) and
  RLIMIT_NPROC (processes), which run.json records.

The memory limit includes swap (v1 ``memory.memsw.limit_in_bytes``, v2 ``memory.swap.max`` 0)
where the kernel accounts it. At the end of the run every process left in the cgroup is killed and
the cgroup removed (:meth:`RunCgroup.close`). Each run's cgroup folders are listed in a claimed
folder ``$TMPDIR/rexmle-cg-*`` (:class:`rexmle.runner.leftovers.ClaimedDir`) before they are made;
a harness that is killed leaves that folder unclaimed, and the next start removes what it lists
(:func:`remove_stale_cgroups`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from rexmle.runner.leftovers import ClaimedDir, remove_stale_dirs
from rexmle.runner.sandbox import SandboxLimits, SandboxRequest, SandboxResult

CgroupVersion = Literal["v1", "v2"]
CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_NAME_PREFIX = "rexmle-run-"
CLAIM_PREFIX = "rexmle-cg-"
LISTING = "cgroups"
REMOVE_TRIES = 50
OOM_NOTE = (
    "\n[rexmle] out of memory: the run's memory limit of {mib} MiB (its cgroup, tmpfs files "
    "included) was reached and the kernel killed {kills} process(es)\n"
)
REMOVE_PAUSE_S = 0.05


@dataclass(frozen=True)
class _Mount:
    point: Path
    root: str
    """The mount's root inside the hierarchy (field 4 of ``/proc/self/mountinfo``)."""
    version: CgroupVersion
    controllers: frozenset[str]
    """v1: the hierarchy's controllers (from the mount options); v2: empty."""


def _mounts(mountinfo: Path = Path("/proc/self/mountinfo")) -> list[_Mount]:
    found: list[_Mount] = []
    for line in mountinfo.read_text(encoding="utf-8", errors="replace").splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 3:
            continue
        point = Path(fields[4].replace("\\040", " "))
        if tail[0] == "cgroup2":
            found.append(_Mount(point, fields[3], "v2", frozenset()))
        elif tail[0] == "cgroup":
            options = set(tail[2].split(",")) | set(fields[5].split(",") if len(fields) > 5 else ())
            found.append(_Mount(point, fields[3], "v1", frozenset(options)))
    return found


def _own_paths(proc_cgroup: Path = Path("/proc/self/cgroup")) -> dict[str, str]:
    """Controller (``""`` for v2) -> this process's cgroup path in that hierarchy."""
    paths: dict[str, str] = {}
    for line in proc_cgroup.read_text(encoding="utf-8").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        for controller in controllers.split(",") if controllers else [""]:
            paths[controller] = path
    return paths


def _folder(mount: _Mount, own: str) -> Path:
    """This process's cgroup folder in ``mount``."""
    relative = own
    if mount.root != "/" and (own == mount.root or own.startswith(mount.root + "/")):
        relative = own[len(mount.root) :]
    return mount.point / relative.lstrip("/")


def _write(path: Path, value: str) -> None:
    with open(path, "w", encoding="ascii") as handle:
        handle.write(value)


def _read(path: Path) -> str:
    return path.read_text(encoding="ascii").strip()


@dataclass
class RunCgroup:
    """The cgroup folders of one run and what each of them limits."""

    version: CgroupVersion
    folders: tuple[Path, ...]
    memory_folder: Path | None
    """The folder whose memory controller holds the limit (None: no memory controller)."""
    pids_folder: Path | None
    memory_bytes: int | None
    max_processes: int | None
    claim: ClaimedDir | None = None

    @property
    def holder(self) -> str:
        """``cgroup-v1`` or ``cgroup-v2`` (as run.json records it)."""
        return f"cgroup-{self.version}"

    def launcher_args(self) -> list[str]:
        """Options of :mod:`rexmle.runner.limits` that move the command into this cgroup."""
        return [arg for folder in self.folders for arg in ("--cgroup", str(folder))]

    def processes(self) -> set[int]:
        """Pids in the run's cgroups now."""
        pids: set[int] = set()
        for folder in self.folders:
            pids |= _procs(folder)
        return pids

    def memory_peak_bytes(self) -> int | None:
        """The most memory the run's processes held at once (tmpfs pages included), if known."""
        if self.memory_folder is None:
            return None
        name = "memory.max_usage_in_bytes" if self.version == "v1" else "memory.peak"
        try:
            return int(_read(self.memory_folder / name))
        except (OSError, ValueError):
            return None

    def oom_kills(self) -> int | None:
        """Processes the kernel killed for the run's memory limit, if known."""
        if self.memory_folder is None:
            return None
        name = "memory.oom_control" if self.version == "v1" else "memory.events"
        try:
            for line in _read(self.memory_folder / name).splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            return None
        return None

    def close(self) -> int:
        """Kill every process still in the run's cgroups, remove them and drop the claim.

        Returns:
            The number of processes that were still there.
        """
        left = kill_and_remove(list(self.folders))
        if self.claim is not None:
            self.claim.release()
            self.claim = None
        return left


def _procs(folder: Path) -> set[int]:
    try:
        text = (folder / "cgroup.procs").read_text(encoding="ascii")
    except OSError:
        return set()
    return {int(line) for line in text.split() if line.isdigit()}


def kill_and_remove(folders: list[Path]) -> int:
    """SIGKILL every process in ``folders`` until none is left, then remove the folders (deepest
    first; a folder already gone is fine). Returns how many processes were found at the start.
    """
    found = set().union(*(_procs(f) for f in folders)) if folders else set()
    for folder in folders:
        with contextlib.suppress(OSError):
            _write(folder / "cgroup.kill", "1")  # v2 (Linux 5.14+): the whole cgroup at once
    for _ in range(REMOVE_TRIES):
        alive = set().union(*(_procs(f) for f in folders))
        for pid in alive:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        for folder in sorted(folders, key=lambda f: -len(f.parts)):
            with contextlib.suppress(FileNotFoundError):
                try:
                    folder.rmdir()
                except OSError as error:
                    if error.errno != errno.EBUSY:  # busy: processes still exiting
                        raise
        if not any(folder.exists() for folder in folders):
            break
        time.sleep(REMOVE_PAUSE_S)
    return len(found)


def _is_run_cgroup(path: Path) -> bool:
    """Whether ``path`` names a run cgroup this module made (a leftover listing is checked)."""
    resolved = Path(os.path.normpath(path))
    return (
        resolved.is_absolute()
        and CGROUP_ROOT in resolved.parents
        and resolved.name.startswith(CGROUP_NAME_PREFIX)
        and ".." not in resolved.parts
    )


def _remove_listed(folder: Path) -> None:
    try:
        lines = (folder / LISTING).read_text(encoding="utf-8").splitlines()
    except OSError:
        return
    kill_and_remove([Path(line) for line in lines if line and _is_run_cgroup(Path(line))])


def remove_stale_cgroups(temp_dir: Path | None = None) -> list[Path]:
    """Remove the cgroups of runs whose harness was killed (their claim is unheld).

    Returns:
        The claim folders removed (each listed the cgroups it removed).
    """
    return remove_stale_dirs(CLAIM_PREFIX, temp_dir, before_removal=_remove_listed)


def _v2_parent(mount: _Mount, own: str, needed: set[str]) -> tuple[Path | None, str]:
    """The v2 folder to create the run's cgroup in, or (None, why not)."""
    folder = _folder(mount, own)
    candidates = [folder] if own == "/" else [folder.parent]
    for parent in candidates:
        if parent != mount.point and mount.point not in parent.parents:
            continue
        try:
            available = set(_read(parent / "cgroup.controllers").split())
            enabled = set(_read(parent / "cgroup.subtree_control").split())
        except OSError as error:
            return None, f"cgroup v2 at {parent} is not readable: {error}"
        if not needed <= available:
            missing = ", ".join(sorted(needed - available))
            return None, f"cgroup v2 at {parent} lacks the {missing} controller(s)"
        if not needed <= enabled:
            try:
                _write(parent / "cgroup.subtree_control", " ".join(f"+{c}" for c in needed))
            except OSError as error:
                return None, f"cgroup v2: cannot enable {sorted(needed)} in {parent}: {error}"
        return parent, ""
    return None, f"cgroup v2: the harness's cgroup {own} has no parent it may use"


def _claim(paths: list[Path]) -> ClaimedDir:
    claim = ClaimedDir(CLAIM_PREFIX)
    (claim.path / LISTING).write_text("".join(f"{p}\n" for p in paths), encoding="utf-8")
    return claim


def _make_v2(parent: Path, memory_bytes: int | None, max_processes: int | None) -> RunCgroup:
    folder = parent / f"{CGROUP_NAME_PREFIX}{uuid.uuid4().hex[:16]}"
    claim = _claim([folder])
    try:
        folder.mkdir()
        _write(folder / "memory.max", "max" if memory_bytes is None else str(memory_bytes))
        if memory_bytes is not None and (folder / "memory.swap.max").exists():
            _write(folder / "memory.swap.max", "0")
        _write(folder / "pids.max", "max" if max_processes is None else str(max_processes))
    except OSError:
        kill_and_remove([folder])
        claim.release()
        raise
    return RunCgroup("v2", (folder,), folder, folder, memory_bytes, max_processes, claim)


def _make_v1(
    memory_parent: Path | None,
    pids_parent: Path | None,
    memory_bytes: int | None,
    max_processes: int | None,
) -> RunCgroup:
    name = f"{CGROUP_NAME_PREFIX}{uuid.uuid4().hex[:16]}"
    memory = None if memory_parent is None else memory_parent / name
    pids = None if pids_parent is None else pids_parent / name
    folders = [f for f in (memory, pids) if f is not None]
    claim = _claim(folders)
    try:
        for folder in folders:
            folder.mkdir()
        if memory is not None and memory_bytes is not None:
            _write(memory / "memory.limit_in_bytes", str(memory_bytes))
            if (memory / "memory.memsw.limit_in_bytes").exists():  # swap accounted: no swap
                _write(memory / "memory.memsw.limit_in_bytes", str(memory_bytes))
        if pids is not None:
            _write(pids / "pids.max", "max" if max_processes is None else str(max_processes))
    except OSError:
        kill_and_remove(folders)
        claim.release()
        raise
    return RunCgroup(
        "v1",
        tuple(folders),
        memory,
        pids,
        memory_bytes if memory is not None else None,
        max_processes if pids is not None else None,
        claim,
    )


def open_run_cgroup(
    *, memory_bytes: int | None, max_processes: int | None
) -> tuple[RunCgroup | None, str | None]:
    """A fresh cgroup for one run (see the module docstring), or (None, why none can be made).

    The v1 cgroup may lack one of its two controllers (where one hierarchy is not mounted or not
    writable); its ``memory_folder`` or ``pids_folder`` is then None, and the caller falls back to
    the rlimit for that one.
    """
    try:
        mounts, own = _mounts(), _own_paths()
    except OSError as error:
        return None, f"cgroups cannot be read here: {error}"
    problems: list[str] = []
    for mount in mounts:
        if mount.version != "v2" or "" not in own:
            continue
        parent, why = _v2_parent(mount, own[""], {"memory", "pids"})
        if parent is None:
            problems.append(why)
            continue
        try:
            return _make_v2(parent, memory_bytes, max_processes), None
        except OSError as error:
            problems.append(f"cgroup v2: cannot make a cgroup in {parent}: {error}")
    parents: dict[str, Path | None] = {"memory": None, "pids": None}
    for controller in parents:
        hierarchy = (m for m in mounts if m.version == "v1" and controller in m.controllers)
        v1 = next(hierarchy, None)
        if v1 is None or controller not in own:
            problems.append(f"cgroup v1: no {controller} hierarchy")
            continue
        folder = _folder(v1, own[controller])
        if os.access(folder, os.W_OK):
            parents[controller] = folder
        else:
            problems.append(f"cgroup v1: {folder} is not writable (root is needed)")
    if parents["memory"] is not None or parents["pids"] is not None:
        try:
            return _make_v1(parents["memory"], parents["pids"], memory_bytes, max_processes), None
        except OSError as error:
            problems.append(f"cgroup v1: cannot make the run's cgroups: {error}")
    return None, "; ".join(problems) or "no cgroup hierarchy is mounted"


@dataclass
class HeldLimits:
    """How one run's memory and process limits are held: a cgroup, else the rlimits.

    ``limits`` are the request's with ``/tmp`` and ``/dev/shm`` sized within the memory limit.
    """

    cgroup: RunCgroup | None
    limits: SandboxLimits
    memory_bytes: int | None
    rlimit_memory_mb: int | None
    """The memory limit the shim must set as RLIMIT_AS (no memory cgroup), else None."""
    rlimit_processes: bool
    """Whether the shim must set RLIMIT_NPROC (no pids cgroup)."""
    problem: str | None
    """Why no cgroup could be made (None when one was)."""

    def record(self, *, private_tmp: bool) -> dict[str, int | str | None]:
        """What run.json records under ``sandbox.limits`` (before the run's peak is known)."""
        cgroup = self.cgroup
        memory_by = None
        if self.memory_bytes is not None:
            held = cgroup is not None and cgroup.memory_folder is not None
            memory_by = cgroup.holder if held and cgroup is not None else "rlimit-as"
        processes_by = "rlimit-nproc" if self.rlimit_processes else None
        if cgroup is not None and cgroup.pids_folder is not None:
            processes_by = cgroup.holder
        return {
            "memory_bytes": self.memory_bytes,
            "memory_held_by": memory_by,
            "max_processes": self.limits.max_processes if processes_by else None,
            "max_processes_held_by": processes_by,
            "tmp_bytes": self.limits.tmp_bytes if private_tmp else None,
            "shm_bytes": self.limits.shm_bytes if private_tmp else None,
            "log_bytes": self.limits.log_bytes,
            "cgroup_problem": self.problem,
        }

    def finish(
        self, result: SandboxResult, *, private_tmp: bool, stderr_path: Path
    ) -> SandboxResult:
        """The run's result with its limits recorded; the cgroup emptied and removed.

        When the kernel killed processes for the memory limit, the agent's stderr log says so
        in its last line (:data:`OOM_NOTE`).
        """
        record = self.record(private_tmp=private_tmp)
        left = 0
        if self.cgroup is not None:
            record["memory_peak_bytes"] = self.cgroup.memory_peak_bytes()
            kills = record["oom_kills"] = self.cgroup.oom_kills()
            left = self.cgroup.close()
            if kills and self.memory_bytes is not None:
                note = OOM_NOTE.format(mib=self.memory_bytes >> 20, kills=kills)
                with contextlib.suppress(OSError), open(stderr_path, "ab") as log:
                    log.write(note.encode())
        return replace(result, limits=record, killed_processes=result.killed_processes + left)

    def abandon(self) -> None:
        """Empty and remove the cgroup (the run failed before it had a result)."""
        if self.cgroup is not None:
            self.cgroup.close()


def hold_limits(request: SandboxRequest, *, processes: bool) -> HeldLimits:
    """Open the run's cgroup for ``request`` and size its tmpfs (see :class:`HeldLimits`).

    ``processes``: whether the sandbox caps processes without a cgroup (RLIMIT_NPROC; bwrap).
    """
    memory_bytes = None if request.memory_limit_mb is None else request.memory_limit_mb << 20
    limits = request.limits
    if memory_bytes is not None:
        limits = replace(
            limits,
            tmp_bytes=min(limits.tmp_bytes, memory_bytes),
            shm_bytes=min(limits.shm_bytes, memory_bytes),
        )
    cgroup, problem = open_run_cgroup(memory_bytes=memory_bytes, max_processes=limits.max_processes)
    memory_in_cgroup = cgroup is not None and cgroup.memory_folder is not None
    pids_in_cgroup = cgroup is not None and cgroup.pids_folder is not None
    return HeldLimits(
        cgroup=cgroup,
        limits=limits,
        memory_bytes=memory_bytes,
        rlimit_memory_mb=None if memory_in_cgroup else request.memory_limit_mb,
        rlimit_processes=processes and not pids_in_cgroup,
        problem=problem,
    )
