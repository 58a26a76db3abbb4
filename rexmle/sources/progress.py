"""Progress bars for downloads and extractions (rich), or silence."""

from __future__ import annotations

import threading
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)


class TransferProgress:
    """Per-file byte bars plus one overall bar; thread-safe; a no-op when disabled.

    Use as a context manager around the whole fetch.
    """

    def __init__(self, *, enabled: bool, console: Console | None = None) -> None:
        self._enabled = enabled
        self._lock = threading.Lock()
        self._done: dict[str, int] = {}
        self._overall: TaskID | None = None
        self._tasks: dict[str, TaskID] = {}
        self._bytes = Progress(
            TextColumn("{task.description}", justify="left"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=console,
            disable=not enabled,
        )

    def __enter__(self) -> TransferProgress:
        self._bytes.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._bytes.stop()

    def set_overall(self, description: str, total_bytes: int | None) -> None:
        """Create (or reset) the overall bar."""
        with self._lock:
            if self._overall is None:
                self._overall = self._bytes.add_task(description, total=total_bytes)
            else:
                self._bytes.update(self._overall, description=description, total=total_bytes)

    def update_file(self, name: str, done_bytes: int, total_bytes: int | None) -> None:
        """Set a file's bytes on disk (creates its bar on first call)."""
        with self._lock:
            task = self._tasks.get(name)
            if task is None:
                task = self._bytes.add_task(name, total=total_bytes)
                self._tasks[name] = task
            self._bytes.update(task, completed=done_bytes, total=total_bytes)
            self._done[name] = done_bytes
            if self._overall is not None:
                self._bytes.update(self._overall, completed=sum(self._done.values()))

    def finish_file(self, name: str) -> None:
        """Remove a finished file's bar (its bytes stay in the overall bar)."""
        with self._lock:
            task = self._tasks.pop(name, None)
            if task is not None:
                self._bytes.remove_task(task)


def member_progress(*, enabled: bool, console: Console | None = None) -> Progress:
    """A bar counting archive members, for extraction."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=not enabled,
    )
