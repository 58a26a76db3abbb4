"""Map a function over cases in worker processes, with a progress bar on a terminal."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def default_workers() -> int:
    """Worker processes used when ``--workers`` is not given: the CPUs available to this process."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


POOL_MIN_BYTES = 8 << 20
"""Below this many bytes of case files in all, a worker pool costs more than it saves: starting
the workers and moving the cases to them takes longer than reading and scoring the files."""


def workers_worth_it(workers: int, paths: Iterable[Path]) -> int:
    """``workers``, or 1 when the cases are too small for a pool to pay off.

    Definition: 1 when fewer than two files are given or their sizes on disk add up to less
    than ``POOL_MIN_BYTES``; else ``workers``. A file that cannot be read counts as zero bytes
    (the step that opens it reports the problem).
    """
    files = list(paths)
    if workers <= 1 or len(files) < 2:
        return 1
    total = 0
    for path in files:
        try:
            total += path.stat().st_size
        except OSError:
            continue
        if total >= POOL_MIN_BYTES:
            return workers
    return 1


def map_cases(
    fn: Callable[[T], R],
    items: Sequence[T],
    *,
    workers: int,
    label: str = "scoring",
) -> list[R]:
    """Return ``[fn(item) for item in items]`` in input order, using up to ``workers`` processes.

    ``fn`` must be picklable (a module-level function or a ``functools.partial`` of one).
    Exceptions raised by ``fn`` propagate unchanged. One worker, or one item, runs in-process.
    """
    workers = max(1, min(workers, len(items)))
    show = sys.stderr.isatty() and len(items) > 1
    if workers == 1:
        if not show:
            return [fn(item) for item in items]
        from rich.progress import track

        return [fn(item) for item in track(items, description=label, transient=True)]
    from concurrent.futures import ProcessPoolExecutor  # multiprocessing: only for a pool

    with ProcessPoolExecutor(max_workers=workers) as pool:
        iterator = pool.map(fn, items)
        if not show:
            return list(iterator)
        from rich.progress import track

        return list(track(iterator, total=len(items), description=label, transient=True))
