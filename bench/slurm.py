"""Slurm executor figures on a real single-node cluster started here (needs root and Slurm).

1. Submit time of a 1000-run array through :func:`rexmle.runner.executor_slurm.submit` (batch
   files, one ``sbatch``, 1000 ``scheduled.json``), the runs held (``--hold``) so none starts,
   and of the bare ``sbatch --array=0-999`` for comparison.
2. Scheduler overhead per run: an array of N trivial jobs (``/bin/true``, one CPU each) on a node
   with C CPUs; overhead per run = wall time from submission to the last job's end x C / N.

Usage: python bench/slurm.py [--runs 1000] [--trivial 40]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rexmle.agents.registry import load_agent
from rexmle.runner.batch import make_job
from rexmle.runner.executor_slurm import SlurmSettings, job_states, submit
from rexmle.runner.experiment import SlurmResources

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from slurm_cluster import LocalSlurmCluster, cluster_problem

FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"}


def bench_submit(root: Path, n_runs: int, env: dict[str, str]) -> None:
    agent = load_agent("dummy")
    jobs = [
        make_job(
            agent,
            "isles22",
            seed,
            time_limit_s=3600,
            mini=True,
            runs_dir=root / "runs",
            group="bench",
        )
        for seed in range(n_runs)
    ]
    settings = SlurmSettings(
        resources=SlurmResources(
            cpus_per_task=1, mem_gb=0.1, max_parallel=50, extra_args=["--hold"]
        ),
        gpus_per_run=0,
        sandbox="local",
        data_dir=root / "data",
        runs_dir=root / "runs",
    )
    submission = submit(jobs, settings, env=env)
    print(
        f"submit() of a {n_runs}-run array: {submission.seconds:.3f} s "
        f"({submission.seconds / n_runs * 1000:.2f} ms per run, batch files included)"
    )
    started = time.perf_counter()
    subprocess.run(
        ["sbatch", "--parsable", f"--array=0-{n_runs - 1}%50", "--hold", "--wrap", "true",
         f"--output={root / 'bare-%A_%a.out'}"],
        env=env, check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    print(f"bare sbatch --array=0-{n_runs - 1}%50: {time.perf_counter() - started:.3f} s")
    subprocess.run(["scancel", "--user", "root"], env=env, check=True, timeout=60)


def bench_overhead(root: Path, n_jobs: int, cpus: int, env: dict[str, str]) -> None:
    started = time.perf_counter()
    out = subprocess.run(
        ["sbatch", "--parsable", f"--array=0-{n_jobs - 1}", "--cpus-per-task=1", "--mem=100M",
         "--wrap", "/bin/true", f"--output={root / 'trivial-%A_%a.out'}"],
        env=env, check=True, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    array = out.stdout.strip().split(";")[0]
    ids = [f"{array}_{i}" for i in range(n_jobs)]
    while True:
        states = job_states(ids, env=env)
        if len(states) == n_jobs and all(s in FINAL for s in states.values()):
            break
        time.sleep(0.05)
    wall = time.perf_counter() - started
    print(
        f"{n_jobs} trivial jobs on {cpus} CPUs: {wall:.2f} s wall, "
        f"{wall * cpus / n_jobs:.3f} s scheduler overhead per run "
        f"({n_jobs / wall:.2f} jobs/s)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--trivial", type=int, default=40)
    args = parser.parse_args()
    problem = cluster_problem()
    if problem is not None:
        print(f"skipped: {problem}")
        return 0
    cpus = os.cpu_count() or 2
    print(f"machine: {platform.platform()}, {cpus} CPUs, Python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="rexmle-bench-slurm-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        with LocalSlurmCluster(root / "cluster", cpus=cpus, memory_mb=4096, gpus=0) as cluster:
            print(f"cluster up in {time.perf_counter() - started:.2f} s")
            env = cluster.env()
            bench_submit(root, args.runs, env)
            bench_overhead(root, args.trivial, cpus, env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
