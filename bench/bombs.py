"""Peak memory and time of the grader and the validation server on hostile input.

Run: ``.venv/bin/python bench/bombs.py``. Scenarios, each in fresh processes on mini data:

* grader, one decompression bomb per format (``tests/grading/bomb_files.py``: ~2 MB files whose
  headers declare 512 MiB of uint8 voxels) in place of the first gold case: exit code, wall-clock
  seconds and peak RSS of the ``rexmle grade`` process;
* grader, a 1,000,000-line ``submission.csv`` (every line with the wrong number of cells):
  seconds, grade.json size, peak RSS;
* validation server, the NIfTI bomb uploaded as a tar.gz to a real server: HTTP status, seconds,
  and peak RSS of the process that runs the server (the validation check runs in a child with its
  own memory limit, whose peak is reported as well).
"""

from __future__ import annotations

import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "grading"))

from bomb_files import BOMB_TASKS, bomb_submission, peak_rss_mib, upload_peak_rss

from rexmle.preparation import prepare_task
from rexmle.tasks.registry import load_task


def _grade_argv(task_id: str, folder: Path, data_dir: Path, report: Path) -> list[str]:
    return [sys.executable, "-m", "rexmle.cli", "grade", task_id, str(folder), "--workers", "1",
            "--data-dir", str(data_dir), "--json", str(report)]  # fmt: skip


def grader_bombs(data_dir: Path, work: Path) -> None:
    """One row per format: exit code, seconds, peak RSS of the grader."""
    for suffix, task_id in BOMB_TASKS.items():
        dirs, _ = prepare_task(task_id, data_dir=data_dir, mini=True)
        impl = load_task(task_id).columns
        (column,) = impl.path_columns
        folder = bomb_submission(
            dirs.gold, suffix, work / task_id, id_column=impl.id_column, path_column=column
        )
        size = (folder / f"predictions/bomb{suffix}").stat().st_size
        started = time.perf_counter()
        code, peak, _ = peak_rss_mib(_grade_argv(task_id, folder, data_dir, work / "g.json"))
        seconds = time.perf_counter() - started
        print(
            f"grader  {suffix:8s} {task_id:18s} file {size / 2**20:4.1f} MiB  exit {code}  "
            f"{seconds:5.1f} s  peak RSS {peak:6.0f} MiB"
        )


def grader_million_lines(data_dir: Path, work: Path) -> None:
    """Seconds, grade.json size and peak RSS on a 1,000,000-line submission.csv."""
    dirs, _ = prepare_task("isles22", data_dir=data_dir, mini=True)
    folder = work / "million"
    folder.mkdir()
    with open(folder / "submission.csv", "w", encoding="utf-8") as handle:
        handle.write("case_id,predicted_mask_path\n")
        handle.writelines(f"x{i},a,b\n" for i in range(1_000_000))
    report = work / "million.json"
    started = time.perf_counter()
    code, peak, _ = peak_rss_mib(_grade_argv("isles22", folder, dirs.root.parent, report))
    seconds = time.perf_counter() - started
    size = report.stat().st_size if report.exists() else 0
    print(
        f"grader  1M-line CSV  exit {code}  {seconds:5.1f} s  grade.json {size / 1024:.1f} KiB  "
        f"peak RSS {peak:6.0f} MiB"
    )


def validation_server_bomb(data_dir: Path, work: Path) -> None:
    """The NIfTI bomb uploaded to a real validation server: status, seconds, peak RSS."""
    dirs, _ = prepare_task("isles22", data_dir=data_dir, mini=True)
    impl = load_task("isles22").columns
    (column,) = impl.path_columns
    folder = bomb_submission(
        dirs.gold, ".nii.gz", work / "upload", id_column=impl.id_column, path_column=column
    )
    with tarfile.open(work / "upload.tar.gz", mode="w:gz") as archive:
        archive.add(folder, arcname="submission")
    started = time.perf_counter()
    row = upload_peak_rss("isles22", data_dir, work / "upload.tar.gz")
    seconds = time.perf_counter() - started
    print(
        f"server  .nii.gz upload  HTTP {row['status']}  {seconds:5.1f} s (with start-up)  "
        f"peak RSS: server process {row['server']:6.0f} MiB, check child {row['check']:6.0f} MiB"
    )


def main() -> int:
    """Entry point (see the module docstring)."""
    with tempfile.TemporaryDirectory(prefix="rexmle-bombs-") as tmp:
        data_dir, work = Path(tmp) / "data", Path(tmp) / "work"
        work.mkdir()
        grader_bombs(data_dir, work)
        grader_million_lines(data_dir, work)
        validation_server_bomb(data_dir, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
