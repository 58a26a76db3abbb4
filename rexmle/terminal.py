"""Consoles of the command line: full-width output when piped, created on first use.

A terminal gets its own width (or ``COLUMNS``). A pipe or file always gets ``PIPED_WIDTH``
columns, so that tables are never cut or wrapped to 80 columns (which rich uses for pipes, and
many tools export as ``COLUMNS``).

The command modules hold their consoles at module level, and every ``rexmle`` command imports
all of them; ``rich.console`` alone costs tens of milliseconds to import. So :func:`console`
returns a stand-in that builds the real :class:`rich.console.Console` the first time anything
is asked of it: a command that prints nothing through rich (``rexmle grade --help``, a JSON
output) never imports rich's console machinery.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from rich.console import Console

PIPED_WIDTH = 4096


def _make_console(*, stderr: bool) -> Console:
    """A rich console on stdout (or stderr): the terminal's width, else ``PIPED_WIDTH``."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    interactive = hasattr(stream, "isatty") and stream.isatty()
    if interactive:
        return Console(stderr=stderr)
    return Console(stderr=stderr, width=PIPED_WIDTH)


class _DeferredConsole:
    """Forwards every attribute to a console made on first access (see the module docstring).

    ``isinstance(deferred, Console)`` holds, and the streams are looked up when the console is
    made, so a console first used under a redirected ``sys.stdout`` (a test's capture) writes
    there.
    """

    def __init__(self, *, stderr: bool) -> None:
        object.__setattr__(self, "_stderr", stderr)
        object.__setattr__(self, "_real", None)

    def _console(self) -> Console:
        real = object.__getattribute__(self, "_real")
        if real is None:
            real = _make_console(stderr=object.__getattribute__(self, "_stderr"))
            object.__setattr__(self, "_real", real)
        return cast("Console", real)

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # type: ignore[override]
        return type(self._console())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._console(), name)

    def __setattr__(self, name: str, value: object) -> None:
        setattr(self._console(), name, value)

    def __enter__(self) -> Console:
        return self._console().__enter__()

    def __exit__(self, *exc: object) -> None:
        self._console().__exit__(*exc)  # type: ignore[arg-type]


def console(*, stderr: bool = False) -> Console:
    """The console on stdout (or stderr), made when first used (see the module docstring)."""
    return cast("Console", _DeferredConsole(stderr=stderr))
