"""The ``dummy`` agent: copy the sample submission and the files it names.

Run as ``python -m rexmle.agents.dummy`` inside a workspace ($DATA_DIR, $SUBMISSION_DIR). The
result is valid by construction and scores what the sample scores (usually nothing useful); it
checks the pipeline, and grading it gives the reference point every real agent must beat.
"""

from __future__ import annotations

import csv
import os
import shutil
import sys
from pathlib import Path, PurePosixPath

SAMPLE_CSV = "sample_submission.csv"
SUBMISSION_CSV = "submission.csv"


def _relative_file(public_dir: Path, cell: str) -> PurePosixPath | None:
    """``cell`` as a relative path to a file inside ``public_dir``, else None."""
    if not cell or "\\" in cell:
        return None
    candidate = PurePosixPath(cell)
    if candidate.is_absolute() or ".." in candidate.parts:
        return None
    path = public_dir / candidate
    return candidate if path.is_file() and not path.is_symlink() else None


def copy_sample_submission(public_dir: Path, submission_dir: Path) -> int:
    """Copy ``sample_submission.csv`` to ``submission.csv`` and every file it names.

    A cell names a file when it is a relative path (no ``..``) to a regular file in
    ``public_dir``; the file is copied to the same relative path in ``submission_dir``.

    Returns:
        The number of files copied besides the CSV.

    Raises:
        FileNotFoundError: ``public_dir`` has no sample submission.
    """
    sample = public_dir / SAMPLE_CSV
    if not sample.is_file():
        msg = f"{sample} does not exist; the task's public data has no sample submission"
        raise FileNotFoundError(msg)
    submission_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(sample, submission_dir / SUBMISSION_CSV)
    copied: set[PurePosixPath] = set()
    with open(sample, newline="", encoding="utf-8") as handle:
        for row in csv.reader(handle):
            for cell in row:
                relative = _relative_file(public_dir, cell.strip())
                if relative is None or relative in copied:
                    continue
                target = submission_dir / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(public_dir / relative, target)
                copied.add(relative)
    return len(copied)


def main() -> int:
    """Entry point: copy from $DATA_DIR to $SUBMISSION_DIR."""
    public_dir = Path(os.environ["DATA_DIR"])
    submission_dir = Path(os.environ["SUBMISSION_DIR"])
    n_files = copy_sample_submission(public_dir, submission_dir)
    sys.stdout.write(f"dummy: copied {SAMPLE_CSV} and {n_files} file(s) to {submission_dir}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
