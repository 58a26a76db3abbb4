"""Reading a declaration file: YAML text validated into its typed model, or a SpecError."""

from __future__ import annotations

from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from rexmle.errors import SpecError

Model = TypeVar("Model", bound=BaseModel)


def parse_declaration(text: str, model: type[Model], where: str, *, what: str) -> Model:
    """``text`` parsed as YAML and validated as ``model``.

    Args:
        text: The file's text.
        model: The pydantic model the file declares.
        where: The file, as messages name it.
        what: What the file declares (``"task"``, ``"LLM config"``), as messages name it.

    Raises:
        SpecError: ``<where>: not valid YAML: ...`` or ``<where>: not a valid <what>: ...``,
            with pydantic's account of every wrong or missing field.
    """
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as err:
        msg = f"{where}: not valid YAML: {err}"
        raise SpecError(msg) from err
    try:
        return model.model_validate(raw)
    except ValidationError as err:
        msg = f"{where}: not a valid {what}: {err}"
        raise SpecError(msg) from err
