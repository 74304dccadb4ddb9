"""The one reader of the `histtrim` command's configuration files (`--config` agent configs,
`--policy` and `--true-policy` policies): read like a session (bytes, a BOM accepted, strict
JSON), any nesting depth refused in one line, every error one line naming file and field."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from histtrim.cli.errors import InputError
from histtrim.cli.jsontext import CONFIG_DECODER, check_value, decode, loads, read_bytes

Model = TypeVar("Model", bound=BaseModel)


def load_config(path: str, model: type[Model]) -> Model:
    """A `.toml` or `.json` file (chosen by its suffix) validated as `model`."""
    suffix = Path(path).suffix.lower()
    if suffix not in (".toml", ".json"):
        raise InputError(path, f"path: expected a .toml or .json file, got {Path(path).name!r}")
    text = decode(path, read_bytes(path))
    try:
        if suffix == ".toml":
            data = tomllib.loads(text)
        else:
            data = loads(path, text, decoder=CONFIG_DECODER)
            check_value(path, data, line=None)
        return model.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        loc = ".".join(str(part) for part in first["loc"])
        raise InputError(path, first["msg"], field=loc or None) from None
    except tomllib.TOMLDecodeError as error:
        raise InputError(path, f"invalid TOML: {error}") from None
    except RecursionError:
        raise InputError(path, "nested too deeply") from None
