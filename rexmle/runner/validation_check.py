"""One validation check, run by the validation server in a child process of its own.

``python -m rexmle.runner.validation_check TASK ARCHIVE SCRATCH [--data-dir D] [--workers N]
[--max-unpacked-bytes B]`` unpacks the uploaded archive (a file on disk) into the empty folder
``SCRATCH``, validates it with the task's public data only and prints one JSON line
``{"status": <HTTP status>, "body": {...}}``. With ``--multipart CONTENT_TYPE`` the upload is
ML-Master's ``multipart/form-data`` body, turned into a tar here first
(:mod:`rexmle.runner.multipart_upload`). The server starts it under its memory limit
(:mod:`rexmle.runner.limits`), so a hostile upload can exhaust only this process; whatever the
archive holds, the answer is a status with reasons, never a score.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def check_archive(
    task_id: str,
    archive: Path,
    scratch: Path,
    *,
    data_dir: Path | None,
    workers: int,
    max_unpacked_bytes: int,
    multipart: str | None = None,
) -> tuple[int, dict[str, object]]:
    """Unpack ``archive`` into ``scratch`` and validate it; returns (HTTP status, JSON body).

    ``multipart``: the Content-Type of a multipart upload held in ``archive`` (see the module).
    """
    from rexmle.errors import RexmleError
    from rexmle.grading import validate_submission
    from rexmle.runner.multipart_upload import multipart_to_tar
    from rexmle.runner.validation_server import UploadError, UploadTooLarge, unpack_submission

    payload: bytes | Path = archive
    if multipart is not None:
        try:
            payload = multipart_to_tar(archive.read_bytes(), multipart)
        except UploadError as err:
            return 400, {
                "error": str(err),
                "details": str(err),
                "valid": False,
                "reasons": [str(err)],
            }
    try:
        folder = unpack_submission(payload, scratch, max_unpacked_bytes=max_unpacked_bytes)
    except UploadTooLarge as err:
        return 413, {"valid": False, "reasons": [str(err)], "warnings": []}
    except UploadError as err:
        return 400, {"valid": False, "reasons": [str(err)], "warnings": []}
    try:
        result = validate_submission(task_id, folder, data_dir=data_dir, workers=workers)
    except RexmleError as err:
        return 500, {"error": f"the validation server failed: {err}"}
    return 200, {
        "valid": result.valid,
        "reasons": result.reasons,
        "warnings": result.warnings,
        "n_cases": result.n_cases,
    }


def main(argv: list[str] | None = None) -> int:
    """Entry point (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m rexmle.runner.validation_check")
    parser.add_argument("task")
    parser.add_argument("archive", type=Path)
    parser.add_argument("scratch", type=Path)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--max-unpacked-bytes", type=int, required=True)
    parser.add_argument("--multipart", default=None, metavar="CONTENT_TYPE")
    args = parser.parse_args(argv)
    status, body = check_archive(
        args.task,
        args.archive,
        args.scratch,
        data_dir=args.data_dir,
        workers=args.workers,
        max_unpacked_bytes=args.max_unpacked_bytes,
        multipart=args.multipart,
    )
    sys.stdout.write(json.dumps({"status": status, "body": body}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
