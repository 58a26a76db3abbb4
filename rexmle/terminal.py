"""Consoles of the command line: full-width output when piped.

A terminal gets its own width (or ``COLUMNS``). A pipe or file always gets ``PIPED_WIDTH``
columns, so that tables are never cut or wrapped to 80 columns (which rich uses for pipes, and
many tools export as ``COLUMNS``).
"""

from __future__ import annotations

import sys

from rich.console import Console

PIPED_WIDTH = 4096


def console(*, stderr: bool = False) -> Console:
    """A rich console on stdout (or stderr): the terminal's width, else ``PIPED_WIDTH``."""
    stream = sys.stderr if stderr else sys.stdout
    interactive = hasattr(stream, "isatty") and stream.isatty()
    if interactive:
        return Console(stderr=stderr)
    return Console(stderr=stderr, width=PIPED_WIDTH)
