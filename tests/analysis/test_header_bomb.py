"""A decompression bomb among a run's files (a small NIfTI whose header declares 1024^3 voxels):
the grader refuses it from its header, the taxonomy calls that ``header_too_large`` (not a wrong
shape), and ``rexmle analyze`` and ``rexmle report --html`` with ``--data-dir`` never decode it.

Both commands run as real subprocesses; their peak resident memory is read from the kernel's
accounting of each child (``wait4``).
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import nibabel as nib
import numpy as np
import pytest

from rexmle.analysis.analyze import analyze_runs
from rexmle.analysis.cases import case_pairs, mask_column, read_pair
from rexmle.grading import grade_submission
from rexmle.grading.grader import write_report
from rexmle.io import ImageTooLarge, read_image, write_image
from rexmle.report import collect_runs
from tests.run_records import write_run_json

BOMB_SIDE = 1024
PEAK_RSS_LIMIT_MIB = 300
TIMEOUT_S = 300


def write_header_bomb(path: Path, side: int = BOMB_SIDE) -> None:
    """A gzipped NIfTI of ``side``^3 uint8 zeros, written without holding the volume."""
    header = nib.Nifti1Header()
    header.set_data_dtype(np.uint8)
    header.set_data_shape((side, side, side))
    header.set_qform(np.eye(4), code=1)
    header.set_sform(np.eye(4), code=1)
    head = header.binaryblock + b"\0" * (int(header["vox_offset"]) - len(header.binaryblock))
    deflate = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: a gzip stream
    plane = bytes(side * side)
    with path.open("wb") as out:
        out.write(deflate.compress(head))
        for _ in range(side):
            out.write(deflate.compress(plane))
        out.write(deflate.flush())


def _cells(folder: Path, column: str) -> list[str]:
    with (folder / "submission.csv").open() as handle:
        return [row[column] for row in csv.DictReader(handle)]


def _graded_run(runs: Path, agent: str, submission: Path, data_dir: Path) -> Path:
    report = grade_submission("isles22", submission, data_dir=data_dir, workers=1)
    folder = runs / "g" / "isles22" / agent / "seed-0"
    folder.mkdir(parents=True)
    status = "completed" if report.valid else "invalid_submission"
    write_run_json(folder, {"status": status, "config": {"mini": True}})
    write_report(report, folder / "grade.json")
    shutil.copytree(submission, folder / "submission")
    return folder


@pytest.fixture(scope="module")
def bomb_runs(prepared_mini, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(runs, data dir): ``bomber`` has a bomb for its first case; ``swapper`` has its first case
    one slice short (a wrong shape, so its geometry is examined) and a bomb for its last.
    """
    dirs = prepared_mini("isles22")
    data_dir = dirs.root.parent
    work = tmp_path_factory.mktemp("bombs")
    column = mask_column("isles22")[1]
    bomber = shutil.copytree(dirs.gold, work / "bomber")
    cells = _cells(bomber, column)
    write_header_bomb(bomber / cells[0])
    swapper = shutil.copytree(dirs.gold, work / "swapper")
    first = read_image(swapper / cells[0])
    short = np.ascontiguousarray(first.array[:, :, 1:])
    write_image(swapper / cells[0], short, spacing_mm=first.geometry.spacing_mm)
    write_header_bomb(swapper / cells[-1])
    assert (bomber / cells[0]).stat().st_size < 2 << 20  # a small file that declares 1 GiB
    runs = work / "runs"
    _graded_run(runs, "bomber", bomber, data_dir)
    _graded_run(runs, "swapper", swapper, data_dir)
    return runs, data_dir


def test_the_pair_reader_refuses_the_bomb_from_its_header(bomb_runs) -> None:
    runs, data_dir = bomb_runs
    folder = runs / "g" / "isles22" / "bomber" / "seed-0"
    pairs = case_pairs("isles22", folder / "submission", data_dir / "isles22" / "private" / "gold")
    with pytest.raises(ImageTooLarge, match="declares shape \\(1024, 1024, 1024\\)"):
        read_pair(pairs[0])
    gold, pred = read_pair(pairs[1])  # an honest case is read as before
    assert pred.array.shape == gold.array.shape


def test_a_header_refusal_is_its_own_class_and_skips_the_geometry(bomb_runs) -> None:
    runs, data_dir = bomb_runs
    analyses = {a.agent: a for a in analyze_runs(collect_runs(runs), data_dir=data_dir)}
    bomber, swapper = analyses["bomber"], analyses["swapper"]
    assert bomber.failure.label == "invalid_format: header_too_large"
    assert "the file was not decoded" in bomber.failure.evidence
    assert bomber.geometry is None  # geometry is examined for wrong shapes, not for bombs
    assert swapper.failure.label == "invalid_format: wrong_shape"
    assert swapper.geometry is not None
    assert swapper.geometry.kind == "skipped"
    assert "declares shape (1024, 1024, 1024)" in swapper.geometry.detail


_MEASURE = (
    "import os, subprocess, sys\n"
    "child = subprocess.Popen(sys.argv[2:], stdout=open(sys.argv[1], 'wb'), stderr=subprocess.STDOUT)\n"
    "_, status, usage = os.wait4(child.pid, 0)\n"
    "print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)\n"
)
"""Run a command from a small fresh interpreter and print its exit status and peak RSS (KiB).

A child forked straight from the test process would count the test process's own pages (a
forked process shares them until it executes the command) in its peak resident set."""


def _peak_rss_mib(argv: list[str], log: Path) -> tuple[int, float]:
    """Run ``argv``; (exit status, its peak resident set in MiB, from wait4's rusage)."""
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(log), *argv],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=True,
    )
    code, peak_kib = done.stdout.split()
    return int(code), int(peak_kib) / 1024  # ru_maxrss is in KiB on Linux


@pytest.mark.parametrize("command", ["analyze", "report"])
def test_the_operators_commands_stay_small_on_a_header_bomb(
    bomb_runs, tmp_path: Path, command: str
) -> None:
    runs, data_dir = bomb_runs
    argv = [sys.executable, "-m", "rexmle.cli", command, str(runs), "--data-dir", str(data_dir)]
    if command == "report":
        argv += ["--html", str(tmp_path / "report.html")]
    else:
        argv += ["--json", str(tmp_path / "analysis.json")]
    code, peak_mib = _peak_rss_mib(argv, tmp_path / "out.log")
    output = (tmp_path / "out.log").read_text(errors="replace")
    print(f"rexmle {command}: peak RSS {peak_mib:.0f} MiB")
    assert code == 0, output[-3000:]
    assert peak_mib < PEAK_RSS_LIMIT_MIB, f"peak RSS {peak_mib:.0f} MiB"
    if command == "report":
        page = (tmp_path / "report.html").read_text()
        assert "header_too_large" in page
    else:
        payload = json.loads((tmp_path / "analysis.json").read_text())
        by_agent = {r["agent"]: r for r in payload["runs"]}
        assert by_agent["bomber"]["failure"]["detail"] == "header_too_large"
        assert by_agent["swapper"]["geometry"]["kind"] == "skipped"
