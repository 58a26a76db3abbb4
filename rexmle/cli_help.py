"""How ``--help`` shows option types: a value's kind in plain words, nothing for a flag.

typer prints the Python annotation of every parameter (``<bool>`` beside a flag that takes no
value, ``<list[str]>`` beside a repeatable option). :class:`HelpGroup`, the class of the
``rexmle`` app, fixes that for every command below it when the command tree is built: a flag
shows no type, a repeatable option or argument its element's type followed by ``...``.
"""

from __future__ import annotations

from typing import Any, get_args

from typer.core import TyperGroup


def _element_type(param: Any) -> str:
    """The element type's name of a repeatable parameter (``list[Path]``: ``path``)."""
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    inner = get_args(annotation)
    element = inner[0] if inner else str
    name = getattr(element, "__name__", "str")
    return "path" if name.endswith("Path") else name


def tidy_command(command: Any) -> None:
    """Fix how the parameters of ``command`` and every subcommand show their types.

    ``command`` is a click command of typer's own click (read by duck typing: typer carries a
    copy of click, whose classes are not the ``click`` package's).
    """
    stack = [command]
    while stack:
        current = stack.pop()
        _tidy_help_option(current)
        for param in current.params:
            is_option = getattr(param, "param_type_name", "") == "option"
            if is_option and (param.is_flag or getattr(param, "is_bool_flag", False)):
                setattr(param, "display_type_rich", lambda ctx: None)  # noqa: ARG005, B010
            elif getattr(param, "multiple", False) or param.nargs == -1:
                shown = f"<{_element_type(param)}>..."
                setattr(param, "display_type_rich", lambda ctx, s=shown: s)  # noqa: ARG005, B010
        stack.extend(getattr(current, "commands", {}).values())


def _tidy_help_option(command: Any) -> None:
    """``--help`` is made when help is asked for: it too shows no type."""
    made = command.get_help_option

    def get_help_option(ctx: Any) -> Any:
        option = made(ctx)
        if option is not None:
            setattr(option, "display_type_rich", lambda ctx: None)  # noqa: ARG005, B010
        return option

    setattr(command, "get_help_option", get_help_option)  # noqa: B010


class HelpGroup(TyperGroup):
    """The ``rexmle`` command group: its commands' help shows types as the module says."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        tidy_command(self)
