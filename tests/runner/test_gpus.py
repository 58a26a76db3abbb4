"""The local executor refuses GPU ids this machine does not have, before anything runs, naming
the ids it found and where (a fake ``nvidia-smi`` on ``PATH``, ``CUDA_VISIBLE_DEVICES``, a fake
``/proc/driver/nvidia/gpus``); Slurm takes no GPU ids.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from rexmle.cli import app
from rexmle.errors import SpecError
from rexmle.runner.gpus import GpuInventory, check_gpu_ids, local_gpus

NO_PROC = Path("/nonexistent-proc-driver-nvidia-gpus")


def fake_nvidia_smi(folder: Path, *, gpus: int, exit_code: int = 0) -> Path:
    """A folder holding an ``nvidia-smi`` that lists ``gpus`` GPUs (and one MIG device)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"GPU {i}: NVIDIA H200 (UUID: GPU-{i:08d})" for i in range(gpus)]
    lines.insert(1, "  MIG 1g.18gb     Device  0: (UUID: MIG-00000000)")
    script = folder / "nvidia-smi"
    body = "".join(f"echo '{line}'\n" for line in lines)
    script.write_text(f'#!/bin/sh\n[ "$1" = -L ] || exit 2\n{body}exit {exit_code}\n')
    script.chmod(0o755)
    return folder


def dry_run(tmp_path: Path, gpus: str, env: dict[str, str | None]) -> Result:
    args = [
        "run", "--agent", "dummy", "--task", "isles22", "--mini", "--gpus", gpus,
        "--runs-dir", str(tmp_path / "runs"), "--data-dir", str(tmp_path / "data"), "--dry-run",
    ]  # fmt: skip
    return CliRunner().invoke(app, args, env=env)  # type: ignore[arg-type]


def flat(result: Result) -> str:
    return " ".join(result.output.split())


def test_an_unknown_gpu_id_is_refused_naming_the_ones_nvidia_smi_lists(tmp_path: Path) -> None:
    bin_dir = fake_nvidia_smi(tmp_path / "bin", gpus=4)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "CUDA_VISIBLE_DEVICES": None}
    refused = dry_run(tmp_path, "0,7", env)
    assert refused.exit_code == 2, refused.output
    assert (
        "--gpus: no GPU 7 here: this machine has GPU 0, 1, 2, 3 (from nvidia-smi -L). Give ids "
        "from that list"
    ) in flat(refused)
    assert "drop --gpus to run without GPUs" in flat(refused)
    assert not (tmp_path / "runs").exists()  # refused before anything was made
    accepted = dry_run(tmp_path, "0,3", env)
    assert accepted.exit_code == 0, accepted.output


def test_a_machine_without_gpus_refuses_every_id(tmp_path: Path) -> None:
    if local_gpus({"PATH": os.defpath}).ids:
        pytest.skip("this machine has GPUs")
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    path = os.pathsep.join([str(empty), "/usr/bin", "/bin"])
    if local_gpus({"PATH": path}).ids:
        pytest.skip("this machine has GPUs")
    refused = dry_run(tmp_path, "0", {"PATH": path, "CUDA_VISIBLE_DEVICES": None})
    assert refused.exit_code == 2, refused.output
    assert "--gpus: no GPU 0 here: this machine has no GPU" in flat(refused)


def test_cuda_visible_devices_limits_the_ids_to_its_own(tmp_path: Path) -> None:
    bin_dir = fake_nvidia_smi(tmp_path / "bin", gpus=8)
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    refused = dry_run(tmp_path, "0,3", {"PATH": path, "CUDA_VISIBLE_DEVICES": "2,3"})
    assert refused.exit_code == 2, refused.output
    assert "no GPU 0 here: this machine has GPU 2, 3 (from CUDA_VISIBLE_DEVICES)" in flat(refused)
    assert "unset it to use every GPU" in flat(refused)
    accepted = dry_run(tmp_path, "3", {"PATH": path, "CUDA_VISIBLE_DEVICES": "2,3"})
    assert accepted.exit_code == 0, accepted.output


def test_the_driver_folder_counts_the_gpus_when_nvidia_smi_fails(tmp_path: Path) -> None:
    proc = tmp_path / "gpus"
    for bus in ("0000:17:00.0", "0000:65:00.0"):
        (proc / bus).mkdir(parents=True)
    broken = fake_nvidia_smi(tmp_path / "bin", gpus=8, exit_code=9)
    assert local_gpus({"PATH": str(broken)}, proc_gpus=proc) == GpuInventory(("0", "1"), str(proc))
    working = fake_nvidia_smi(tmp_path / "bin2", gpus=3)
    found = local_gpus({"PATH": str(working)}, proc_gpus=proc)
    assert found == GpuInventory(("0", "1", "2"), "nvidia-smi -L")  # the MIG line is no GPU
    assert local_gpus({"PATH": str(tmp_path)}, proc_gpus=NO_PROC) == GpuInventory((), "nothing")
    with pytest.raises(SpecError, match=r"x: no GPU 2 here: this machine has GPU 0, 1 \(from "):
        check_gpu_ids(["1", "2"], local_gpus({"PATH": ""}, proc_gpus=proc), where="x")


def test_an_experiment_file_names_the_field_and_slurm_takes_no_ids(tmp_path: Path) -> None:
    empty = tmp_path / "empty-bin"
    fake_nvidia_smi(empty, gpus=1)
    env = {"PATH": f"{empty}{os.pathsep}{os.environ['PATH']}", "CUDA_VISIBLE_DEVICES": None}
    study = tmp_path / "study.yaml"
    base = "name: s\nagents: [{agent: dummy}]\ntasks: [isles22]\nseeds: [0]\nmini: true\n"
    runs = ["--runs-dir", str(tmp_path / "runs"), "--dry-run"]
    study.write_text(base + "executor:\n  gpus: ['0', '5']\n")
    local = CliRunner().invoke(app, ["run", "--experiment", str(study), *runs], env=env)  # type: ignore[arg-type]
    assert local.exit_code == 2, local.output
    assert f"{study}, line 7: executor.gpus: no GPU 5 here: this machine has GPU 0" in flat(local)
    study.write_text(base + "executor:\n  kind: slurm\n  gpus: ['0']\n")
    slurm = CliRunner().invoke(app, ["run", "--experiment", str(study), *runs], env=env)  # type: ignore[arg-type]
    assert slurm.exit_code == 2, slurm.output
    assert "executor.gpus: GPU ids are for the local executor; Slurm gives each run" in flat(slurm)
    assert "set gpus_per_run" in flat(slurm)
