"""Gold integrity: the private files must be exactly those ``prepare`` wrote (``prepared.json``)."""

from __future__ import annotations

import json

from rexmle.errors import HarnessError
from rexmle.tasks.files import sha256_file
from rexmle.tasks.folders import TaskDirs


def check_private_files(task_id: str, dirs: TaskDirs) -> None:
    """Check every file listed under ``files.private`` in ``prepared.json`` against its sha256.

    Definition: each listed path, relative to ``private/``, must be a regular file (not a link)
    whose sha256 equals the recorded one. Files that are not listed are not read by grading (the
    gold ``submission.csv``, which is listed, names every gold file) and are not checked.

    Raises:
        HarnessError: ``prepared.json`` lists no private files, or a listed file is missing, a
            link, or changed since prepare; the message names the file (exit code 2).
    """
    manifest = json.loads(dirs.prepared_json.read_text(encoding="utf-8"))
    listed = manifest.get("files", {}).get("private")
    if not isinstance(listed, dict) or not listed:
        msg = f"{task_id}: {dirs.prepared_json} lists no private files; prepare the task again"
        raise HarnessError(msg)
    redo = f"prepare it again: rexmle prepare {task_id} --force --data-dir {dirs.root.parent}"
    for relative, expected in sorted(listed.items()):
        path = dirs.private / relative
        if path.is_symlink() or not path.is_file():
            msg = f"{task_id}: private/{relative} is missing or not a regular file; {redo}"
            raise HarnessError(msg)
        found = sha256_file(path)
        if found != expected:
            msg = (
                f"{task_id}: private/{relative} does not match prepared.json (sha256 {found}, "
                f"expected {expected}): the private data changed after prepare; {redo}"
            )
            raise HarnessError(msg)
