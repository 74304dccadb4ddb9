"""The protocol's JSON forms of rows, items and results: provider-facing rows are
`{"role", "content"}`, structured items add `kind` for tool calls and tool results."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from histtrim._files import write_atomically
from histtrim.messages import AssistantToolCalls, ChatMessage, ToolResults

JsonObject = dict[str, Any]


def row_json(item: BaseModel) -> JsonObject:
    """One row or structured item as protocol JSON (a chat row carries no `kind`)."""
    if isinstance(item, ChatMessage):
        return {"role": item.role, "content": item.content}
    if isinstance(item, AssistantToolCalls):
        return {
            "kind": "assistant_tool_calls",
            "text": item.text,
            "tool_calls": [call.model_dump() for call in item.tool_calls],
        }
    if isinstance(item, ToolResults):
        return {
            "kind": "tool_results",
            "results": [_result_json(result) for result in item.results],
        }
    raise TypeError(f"not a history row: {type(item).__name__}")


def _result_json(result: BaseModel) -> JsonObject:
    """A tool result as protocol JSON: `tool_name` only when it names a tool (a result sent
    without it, or with null, is answered without it)."""
    dumped = result.model_dump()
    if dumped.get("tool_name") is None:
        dumped.pop("tool_name", None)
    return dumped


def rows_json(history: Iterable[BaseModel]) -> list[JsonObject]:
    return [row_json(item) for item in history]


def canonical(value: Any) -> str:
    """The one JSON text of a value: sorted keys, no spaces, non-ASCII kept, no NaN."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def is_json_value(value: Any) -> bool:
    """True for what a JSON document can carry (finite numbers, str keys)."""
    try:
        canonical(value)
    except (TypeError, ValueError):
        return False
    return True


class ProtocolError(Exception):
    """A call the reference answers with an error: `kind` is what an implementation must say."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


INVALID_INPUT = "invalid_input"
"""Bad input (a ValueError or ValidationError in histtrim, naming the field)."""


def invalid(error: ValueError | ValidationError) -> ProtocolError:
    """The `invalid_input` error for a refused input, in one line naming the field (for a
    validation error: the first failing location and why)."""
    if isinstance(error, ValidationError) and error.errors():
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or error.title
        return ProtocolError(INVALID_INPUT, f"{where}: {first['msg']}")
    lines = str(error).splitlines()
    return ProtocolError(INVALID_INPUT, lines[0] if lines else type(error).__name__)


def require(arguments: Mapping[str, Any], name: str, kinds: type | tuple[type, ...]) -> Any:
    """An argument of the right JSON type, or an `invalid_input` error naming it."""
    if name not in arguments:
        raise ProtocolError(INVALID_INPUT, f"arguments.{name}: missing")
    value = arguments[name]
    if isinstance(value, bool) and bool not in (kinds if isinstance(kinds, tuple) else (kinds,)):
        raise ProtocolError(INVALID_INPUT, f"arguments.{name}: expected {kinds}, got a boolean")
    if not isinstance(value, kinds):
        raise ProtocolError(INVALID_INPUT, f"arguments.{name}: expected {kinds}")
    return value


def optional(arguments: Mapping[str, Any], name: str, default: Any) -> Any:
    return arguments.get(name, default)


def history_list(history: Any) -> Sequence[Any]:
    if not isinstance(history, list):
        raise ProtocolError(INVALID_INPUT, "history: expected a JSON array")
    return history


def atomic_write(path: Path, text: str) -> None:
    """Write a whole file or nothing: a temp file beside it, fsync, then replace."""
    write_atomically(path, text.encode("utf-8"))
