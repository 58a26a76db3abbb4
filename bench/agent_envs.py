"""Agent environment install time: cold, warm package cache, and stamped (nothing to do).

Run: ``.venv/bin/python bench/agent_envs.py [--agents aide ml-master rdagent] [--variant cpu]``.
For each agent, in a fresh agents cache (a temporary folder under the working directory):

* ``cold``: an empty uv package cache (``UV_CACHE_DIR`` fresh): every wheel is downloaded
  (PyPI; the CPU torch wheel from pip's find-links when the machine has one) and installed;
* ``warm``: the same install again with ``--force`` and the now-filled package cache;
* ``stamped``: ``install`` once more: the stamp matches, nothing is done.

Each figure includes the import check of the environment (torch, monai, ... are imported).
Prints one JSON line per agent and step (seconds, size of the env on disk in MB) and the
machine. Needs the network to PyPI for ``cold``. ML-Master's source comes from
``--source`` (a local clone or mirror of rajpurkarlab/ReX-MLE) when GitHub is not reachable.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from rexmle.agents.environments import env_names, install_env, resolve_env


def folder_mb(folder: Path) -> float:
    """Disk usage of ``folder`` in MB (du, so hard links count once)."""
    done = subprocess.run(["du", "-sk", str(folder)], capture_output=True, text=True, check=True)
    return round(int(done.stdout.split()[0]) / 1024, 1)


def main() -> None:
    """Time the installs (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", nargs="+", default=["aide"], choices=env_names())
    parser.add_argument("--variant", default=None, choices=["cpu", "cuda"])
    parser.add_argument("--source", type=Path, default=None, help="ML-Master source override.")
    args = parser.parse_args()
    print(json.dumps({"machine": platform.platform(), "cpus": os.cpu_count()}))
    scratch = Path(tempfile.mkdtemp(prefix=".bench-agent-envs-", dir=Path.cwd()))
    try:
        for name in args.agents:
            source = args.source if name == "ml-master" else None
            env = resolve_env(
                name, variant=args.variant, cache_dir=scratch / "agents", source=source
            )
            uv_cache = scratch / f"uv-cache-{name}"
            os.environ["UV_CACHE_DIR"] = str(uv_cache)
            for step, force in (("cold", False), ("warm", True), ("stamped", False)):
                started = time.perf_counter()
                result = install_env(env, source=source, force=force)
                seconds = time.perf_counter() - started
                line = {
                    "agent": name,
                    "variant": env.variant,
                    "step": step,
                    "installed": result.installed,
                    "seconds": round(seconds, 1),
                    "env_mb": folder_mb(env.root),
                    "lock_hash": env.lock_hash[:16],
                }
                print(json.dumps(line), flush=True)
            shutil.rmtree(uv_cache, ignore_errors=True)
            shutil.rmtree(env.root, ignore_errors=True)
    finally:
        os.environ.pop("UV_CACHE_DIR", None)
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
