"""Reading a declaration file: YAML text validated into its typed model, or a SpecError.

A file that does not match its model is refused with one line per problem, in plain words,
each naming the field (``agents[0].agent``) and the line of the file it is on::

    study.yaml: not a valid experiment:
      line 4: agents[0].agnt: unknown field (fields here: agent, models, budget_usd, ...)
      line 7: seeds: required, missing
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from rexmle.errors import SpecError

Model = TypeVar("Model", bound=BaseModel)
Location = tuple[str | int, ...]

_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's safe loader where PyYAML was built with it (ten times faster), else PyYAML's own."""


def parse_declaration(text: str, model: type[Model], where: str, *, what: str) -> Model:
    """``text`` parsed as YAML and validated as ``model``.

    Args:
        text: The file's text.
        model: The pydantic model the file declares.
        where: The file, as messages name it.
        what: What the file declares (``"task"``, ``"LLM config"``), as messages name it.

    Raises:
        SpecError: ``<where>: not valid YAML: ...`` or ``<where>: not a valid <what>:`` followed
            by one line per wrong or missing field (:func:`describe_errors`).
    """
    try:
        raw = yaml.load(text, Loader=_SAFE_LOADER)
    except yaml.YAMLError as err:
        msg = f"{where}: not valid YAML: {err}"
        raise SpecError(msg) from err
    try:
        return model.model_validate(raw)
    except ValidationError as err:
        lines = describe_errors(err.errors(), model, yaml_lines(text))
        msg = f"{where}: not a valid {what}:\n" + "\n".join(f"  {line}" for line in lines)
        raise SpecError(msg) from err


def yaml_lines(text: str) -> dict[Location, int]:
    """The line (1-based) of every mapping value and sequence item of a YAML document, by its
    location (``("agents", 0, "agent")``); empty when the text is not YAML.
    """
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return {}
    found: dict[Location, int] = {}
    stack: list[tuple[Location, yaml.Node]] = [] if root is None else [((), root)]
    while stack:
        location, node = stack.pop()
        found[location] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                name = key.value if isinstance(key, yaml.ScalarNode) else str(key.value)
                found[(*location, name)] = key.start_mark.line + 1
                stack.append(((*location, name), value))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(((*location, i), item) for i, item in enumerate(node.value))
    return found


def line_of(lines: dict[Location, int], location: Sequence[str | int]) -> int | None:
    """The line of ``location``, else of its nearest enclosing entry (None: not in the file)."""
    parts = tuple(location)
    while parts:
        if parts in lines:
            return lines[parts]
        parts = parts[:-1]
    return lines.get(())


def field_name(location: Sequence[str | int]) -> str:
    """``("agents", 0, "agent")`` as ``agents[0].agent``."""
    text = ""
    for part in location:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(the whole file)"


def _fields_of(model: type[BaseModel], location: Sequence[str | int]) -> list[str]:
    """The field names of the model found at ``location`` (empty when unknown)."""
    current: object = model
    for part in location:
        if isinstance(part, int):
            continue
        fields = getattr(current, "model_fields", None)
        if not isinstance(fields, dict) or part not in fields:
            return []
        current = _inner_model(fields[part].annotation)
    fields = getattr(current, "model_fields", None)
    return list(fields) if isinstance(fields, dict) else []


def _inner_model(annotation: object) -> object:
    """The pydantic model inside ``Model``, ``list[Model]``, ``Model | None``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in getattr(annotation, "__args__", ()):
        inner = _inner_model(argument)
        if inner is not None:
            return inner
    return None


def _plain(error: ErrorDetails, model: type[BaseModel]) -> str:
    """One pydantic error in plain words (no URL, no pydantic vocabulary)."""
    kind = error["type"]
    location = tuple(error["loc"])
    if kind == "missing":
        return "required, missing"
    if kind == "extra_forbidden":
        known = _fields_of(model, [p for p in location[:-1] if not _is_tag(p)])
        return "unknown field" + (f" (fields here: {', '.join(known)})" if known else "")
    given = error.get("input")
    shown = repr(given) if isinstance(given, str | int | float | bool) or given is None else ""
    message = str(error["msg"])
    if message.startswith("Value error, "):
        return message.removeprefix("Value error, ")
    message = message.replace("Input should be", "should be").replace("Input", "the value")
    return f"{message}" + (f", got {shown}" if shown else "")


def _is_tag(part: str | int) -> bool:
    """Whether a location part names a type pydantic tried (``function-after[...]``, ``int``)."""
    return isinstance(part, str) and ("[" in part or part in ("int", "float", "str", "bool"))


def describe_errors(
    errors: Sequence[ErrorDetails], model: type[BaseModel], lines: dict[Location, int]
) -> list[str]:
    """Each validation error as ``line N: field: what is wrong`` (no line: not in the file)."""
    described: list[str] = []
    for error in errors:
        location = tuple(p for p in error["loc"] if not _is_tag(p))
        top_level_missing = error["type"] == "missing" and len(location) <= 1
        whole_file = not location  # a rule over several fields: no one line holds it
        line = None if top_level_missing or whole_file else line_of(lines, location)
        prefix = f"line {line}: " if line is not None else ""
        field = f"{field_name(location)}: " if location else ""
        text = f"{prefix}{field}{_plain(error, model)}"
        if text not in described:
            described.append(text)
    return described
