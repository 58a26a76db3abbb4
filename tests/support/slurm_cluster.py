"""A real single-node Slurm cluster under one temporary folder, for tests and benchmarks.

Test support, not part of the product: ``tests/runner`` and ``bench/slurm.py`` use it.

Starts Debian's ``munged``, ``slurmctld`` and ``slurmd`` by hand (no systemd), with every file
they use (config, key, state, spool, logs, sockets) under ``root``, free TCP ports, and fake GPUs:
character devices made with ``mknod`` (Slurm refuses plain files) declared as ``gpu:fake:N``, so
``--gpus=1`` sets ``CUDA_VISIBLE_DEVICES`` as on a real GPU node. Needs root (mknod, and slurmd
runs jobs as the submitting user). Clients find the cluster through ``SLURM_CONF``
(:meth:`LocalSlurmCluster.env`). Process tracking is ``proctrack/linuxproc`` (works on cgroup v1
and v2 alike); jobs without ``--mem`` get ``DefMemPerCPU``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

REQUIRED_PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel")
START_TIMEOUT_S = 60.0
CLIENT_TIMEOUT_S = 30.0


class ClusterError(RuntimeError):
    """The local cluster could not start; the message says which step failed and why."""


def cluster_problem() -> str | None:
    """Why a local cluster cannot start on this machine, or None when it may."""
    missing = [name for name in REQUIRED_PROGRAMS if shutil.which(name) is None]
    if missing:
        return (
            f"Slurm is not installed ({', '.join(missing)} not on PATH); install it with "
            "apt-get install -y slurmctld slurmd slurm-client munge"
        )
    if os.geteuid() != 0:
        return "a local Slurm cluster needs root (mknod of the fake GPUs, slurmd)"
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class LocalSlurmCluster:
    """One node with ``cpus`` CPUs, ``memory_mb`` of memory and ``gpus`` fake GPUs."""

    root: Path
    cpus: int = 2
    memory_mb: int = 4096
    gpus: int = 2
    node: str = field(default_factory=socket.gethostname)
    _processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def conf(self) -> Path:
        """The cluster's ``slurm.conf``."""
        return self.root / "slurm.conf"

    def env(self) -> dict[str, str]:
        """The environment of a Slurm client of this cluster (``SLURM_CONF`` set)."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def _write_config(self) -> None:
        root = self.root
        for name in ("state", "spool", "log", "munge"):
            (root / name).mkdir(parents=True, exist_ok=True)
        devices = []
        for index in range(self.gpus):
            device = root / f"gpu{index}"
            if not device.exists():
                os.mknod(device, 0o666 | 0o020000, os.makedev(195, index))
            devices.append(device)
        key = root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        gres = f"Gres=gpu:fake:{self.gpus}" if self.gpus else ""
        lines = [
            "ClusterName=rexmle",
            f"SlurmctldHost={self.node}(127.0.0.1)",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"SlurmctldPort={_free_port()}",
            f"SlurmdPort={_free_port()}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={root / 'munge' / 'munge.socket'}",
            f"StateSaveLocation={root / 'state'}",
            f"SlurmdSpoolDir={root / 'spool'}",
            f"SlurmctldPidFile={root / 'slurmctld.pid'}",
            f"SlurmdPidFile={root / 'slurmd.pid'}",
            f"SlurmctldLogFile={root / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={root / 'log' / 'slurmd.log'}",
            "MailProg=/bin/true",
            "MpiDefault=none",
            "SwitchType=switch/none",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/filetxt",
            f"JobCompLoc={root / 'log' / 'jobcomp.txt'}",
            "SchedulerParameters=sched_interval=1",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory",
            f"DefMemPerCPU={max(1, self.memory_mb // max(1, self.cpus))}",
            "ReturnToService=2",
            "MinJobAge=3600",
            "KillWait=5",
            "GresTypes=gpu",
            f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs={self.cpus} "
            f"RealMemory={self.memory_mb} {gres} State=UNKNOWN",
            f"PartitionName=main Nodes={self.node} Default=YES MaxTime=INFINITE State=UP",
        ]
        self.conf.write_text("\n".join(lines) + "\n", encoding="utf-8")
        gres_lines = [
            f"NodeName={self.node} Name=gpu Type=fake File={device}" for device in devices
        ]
        (root / "gres.conf").write_text("\n".join(gres_lines) + "\n", encoding="utf-8")
        (root / "cgroup.conf").write_text("CgroupPlugin=autodetect\n", encoding="utf-8")

    def _start(self, argv: list[str], name: str) -> None:
        log = open(self.root / "log" / f"{name}.out", "wb")  # noqa: SIM115 (kept for the process)
        process = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, env=self.env(), start_new_session=True
        )
        self._processes.append(process)

    def start(self) -> LocalSlurmCluster:
        """Start munged, slurmctld and slurmd; return once the node takes jobs.

        Raises:
            ClusterError: a daemon exited or the node did not become idle in time (the message
                holds the end of the daemon's log).
        """
        problem = cluster_problem()
        if problem is not None:
            raise ClusterError(problem)
        self.root.mkdir(parents=True, exist_ok=True)
        self._write_config()
        munge = self.root / "munge"
        self._start(
            [
                shutil.which("munged") or "munged",
                "--foreground",
                "--force",
                f"--socket={munge / 'munge.socket'}",
                f"--key-file={munge / 'munge.key'}",
                f"--pid-file={munge / 'munged.pid'}",
                f"--log-file={munge / 'munged.log'}",
                f"--seed-file={munge / 'munged.seed'}",
            ],
            "munged",
        )
        self._wait(lambda: (munge / "munge.socket").exists(), "munged")
        self._start([shutil.which("slurmctld") or "slurmctld", "-D", "-i"], "slurmctld")
        self._start([shutil.which("slurmd") or "slurmd", "-D", "-N", self.node], "slurmd")
        self._wait(self._node_idle, "the node")
        return self

    def _node_idle(self) -> bool:
        try:
            done = subprocess.run(
                ["sinfo", "-h", "-N", "-o", "%T"],
                env=self.env(),
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return False
        return done.returncode == 0 and done.stdout.strip().startswith("idle")

    def _wait(self, ready: object, what: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready():  # type: ignore[operator]
            dead = [p for p in self._processes if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                logs = []
                for name in ("munged.out", "slurmctld.out", "slurmd.out"):
                    path = self.root / "log" / name
                    if path.is_file():
                        tail = path.read_text(encoding="utf-8", errors="replace")[-1500:]
                        logs.append(f"--- {name}:\n{tail}")
                why = "a daemon exited" if dead else f"not ready after {START_TIMEOUT_S:g} s"
                self.stop()
                msg = f"the local Slurm cluster did not start ({what}: {why})\n" + "\n".join(logs)
                raise ClusterError(msg)
            time.sleep(0.2)

    def stop(self) -> None:
        """Stop the daemons (jobs still running are killed with slurmd)."""
        for process in reversed(self._processes):
            if process.poll() is None:
                process.terminate()
        for process in reversed(self._processes):
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=15)
        self._processes.clear()

    def __enter__(self) -> LocalSlurmCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
