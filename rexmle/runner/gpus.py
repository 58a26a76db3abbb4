"""The GPUs of this machine, and the check of a local run's ``--gpus`` ids against them.

A GPU id is the index CUDA and ``nvidia-smi`` give it (``0``, ``1``, ...). The ids this
machine has come from the first source that answers:

1. ``CUDA_VISIBLE_DEVICES``, when set in the harness's environment: the GPUs it was given
   (its integer entries; an empty value gives none);
2. ``nvidia-smi -L``: one ``GPU N: ...`` line per GPU;
3. ``/proc/driver/nvidia/gpus``: one folder per GPU, so ids ``0`` to ``count - 1``.

No source answering means no GPU. The local executor refuses, before any run, an id not found
(:func:`check_gpu_ids`); Slurm gives its runs their GPUs (``gpus_per_run``), so there is
nothing to check on the submitting machine.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rexmle.errors import SpecError

NVIDIA_SMI_TIMEOUT_S = 20.0
PROC_GPUS = Path("/proc/driver/nvidia/gpus")
_GPU_LINE = re.compile(r"^GPU (\d+):")


@dataclass(frozen=True)
class GpuInventory:
    """The GPU ids found on this machine and where they were read."""

    ids: tuple[str, ...]
    source: str
    """``CUDA_VISIBLE_DEVICES``, ``nvidia-smi -L``, ``/proc/driver/nvidia/gpus``, or
    ``nothing`` (no source answered)."""


def local_gpus(
    env: Mapping[str, str] | None = None, *, proc_gpus: Path = PROC_GPUS
) -> GpuInventory:
    """The GPUs of this machine (see the module docstring); ``nvidia-smi`` is looked up on
    ``env``'s ``PATH`` (default: this process's environment).
    """
    env = os.environ if env is None else env
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        tokens = [t.strip() for t in visible.split(",") if t.strip()]
        return GpuInventory(tuple(t for t in tokens if t.isdigit()), "CUDA_VISIBLE_DEVICES")
    listed = _nvidia_smi_ids(env.get("PATH", os.defpath))
    if listed is not None:
        return GpuInventory(listed, "nvidia-smi -L")
    if proc_gpus.is_dir():
        count = sum(1 for _ in proc_gpus.iterdir())
        return GpuInventory(tuple(str(i) for i in range(count)), str(proc_gpus))
    return GpuInventory((), "nothing")


def _nvidia_smi_ids(path: str) -> tuple[str, ...] | None:
    """The ids ``nvidia-smi -L`` lists, or None when it is missing or fails."""
    exe = shutil.which("nvidia-smi", path=path)
    if exe is None:
        return None
    try:
        done = subprocess.run(
            [exe, "-L"],
            capture_output=True,
            text=True,
            timeout=NVIDIA_SMI_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    found = (_GPU_LINE.match(line.strip()) for line in done.stdout.splitlines())
    return tuple(match.group(1) for match in found if match is not None)


def check_gpu_ids(requested: Sequence[str], inventory: GpuInventory, *, where: str) -> None:
    """Refuse ``requested`` ids that are not GPU indices of this machine.

    Raises:
        SpecError: naming ``where`` (the flag or the file's field), the unknown ids, the ids
            found and their source, and what to do.
    """
    unknown = [gpu for gpu in requested if gpu not in inventory.ids]
    if not unknown:
        return
    if inventory.ids:
        found = f"this machine has GPU {', '.join(inventory.ids)} (from {inventory.source})"
    elif inventory.source == "nothing":
        found = (
            "this machine has no GPU (no nvidia-smi, no /proc/driver/nvidia/gpus, "
            "CUDA_VISIBLE_DEVICES unset)"
        )
    else:
        found = f"this machine has no GPU (from {inventory.source})"
    if inventory.source == "CUDA_VISIBLE_DEVICES":
        found += (
            " (the harness's CUDA_VISIBLE_DEVICES limits it to those: unset it to use every GPU)"
        )
    pick = (
        "Give ids from that list (indices, as nvidia-smi -L numbers them), "
        if inventory.ids
        else ""
    )
    msg = (
        f"{where}: no GPU {', '.join(unknown)} here: {found}. {pick}drop --gpus to run "
        "without GPUs, or run where the GPUs are (--executor slurm gives each run its GPUs)"
    )
    raise SpecError(msg)
