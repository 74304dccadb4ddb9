"""One record of a history file -> the role and text of its provider-facing row.

The usual shapes take a fast path that makes exactly the text the format's adapter makes
(a test holds them equal); anything else goes through the adapter itself."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal, get_args

from pydantic import TypeAdapter, ValidationError

from histtrim.messages import ChatMessage, ConversationMessage, Role

Format = Literal["histtrim", "openai", "anthropic"]
_ROLES = frozenset(get_args(Role))
_PLAIN = frozenset(("role", "content"))
_TOOL = frozenset(("role", "tool_call_id", "content"))
_CALLS = frozenset(("role", "content", "tool_calls"))
_CALL = frozenset(("id", "type", "function"))
_FUNCTION = frozenset(("name", "arguments"))
_ITEM: TypeAdapter[ConversationMessage] = TypeAdapter(ConversationMessage)


class FormatError(ValueError):
    """A history file that cannot be read: names the line (JSON Lines) or the record, and
    the field."""

    def __init__(
        self,
        problem: str,
        *,
        line: int | None = None,
        record: int | None = None,
        field: str | None = None,
    ) -> None:
        self.problem, self.line, self.record = problem, line, record
        self.field = field.lstrip(".") if field else None
        parts = [f"line {line}" if line is not None else "", f"record {record}"]
        parts[1] = "" if line is not None or record is None else parts[1]
        parts.append(f"field {self.field}" if self.field else "")
        where = " ".join(part for part in parts if part)
        super().__init__(f"{where}: {problem}" if where else problem)


def row_text(fmt: Format, record: object) -> tuple[str, str]:
    """The (role, content) of the row the format's adapter makes for `record`."""
    if not isinstance(record, Mapping):
        raise FormatError(f"expected a JSON object, got {type(record).__name__}")
    if fmt == "openai":
        return _openai(record)
    if fmt == "anthropic":
        return _anthropic(record)
    return _histtrim(record)


def _openai(record: Mapping[str, Any]) -> tuple[str, str]:
    keys = record.keys()
    role, content = record.get("role"), record.get("content")
    if keys == _PLAIN and type(content) is str and not content.startswith("{"):
        if role in ("system", "assistant") or (role == "user" and "[IMAGE:" not in content):
            return role, content
    elif keys == _TOOL and role == "tool" and type(content) is str:
        call_id = record["tool_call_id"]
        if type(call_id) is str and call_id:
            return "tool", _compact({"tool_call_id": call_id, "content": content})
    elif keys == _CALLS and role == "assistant" and (content is None or type(content) is str):
        calls = _plain_calls(record["tool_calls"])
        if calls is not None:
            return "assistant", _compact({"content": content, "tool_calls": calls})
    from histtrim.adapters.openai import from_openai
    from histtrim.adapters.openai_checks import OpenAIFormatError

    try:
        row = from_openai([record])[0]
    except OpenAIFormatError as error:
        raise FormatError(error.problem, field=error.field) from None
    return row.role, row.content


def _plain_calls(calls: object) -> list[dict[str, str]] | None:
    """The calls as the envelope writes them, when each is a plain function call."""
    if type(calls) is not list or not calls:
        return None
    out = []
    for call in calls:
        if type(call) is not dict or call.keys() != _CALL or call["type"] != "function":
            return None
        function, call_id = call["function"], call["id"]
        if type(function) is not dict or function.keys() != _FUNCTION:
            return None
        name, arguments = function["name"], function["arguments"]
        if not (type(call_id) is str and call_id and type(name) is str and name):
            return None
        if type(arguments) is not str:
            return None
        out.append({"id": call_id, "name": name, "arguments": arguments})
    return out


def _anthropic(record: Mapping[str, Any]) -> tuple[str, str]:
    role, content = record.get("role"), record.get("content")
    if type(content) is str and record.keys() == _PLAIN:  # noqa: SIM102
        if role == "user" or (role == "assistant" and not content.startswith("{")):
            return role, content
    from histtrim.adapters.anthropic import message_row
    from histtrim.adapters.anthropic_checks import AnthropicFormatError

    try:
        row = message_row(record)
    except AnthropicFormatError as error:
        raise FormatError(error.problem, field=error.field) from None
    return row.role, row.content


def _histtrim(record: Mapping[str, Any]) -> tuple[str, str]:
    role, content = record.get("role"), record.get("content")
    if (
        type(content) is str
        and type(role) is str
        and role in _ROLES
        and record.keys() <= {"kind", "role", "content"}
        and record.get("kind", "chat") == "chat"
    ):
        return role, content
    try:
        item = _ITEM.validate_python(record)
    except ValidationError as error:
        first = error.errors()[0]
        loc = [str(part) for part in first["loc"]]
        if loc and loc[0] == str(record.get("kind", "chat")):
            loc = loc[1:]  # the union's tag
        raise FormatError(first["msg"], field=".".join(loc) or "kind") from None
    if not isinstance(item, ChatMessage):
        raise FormatError(
            f"a structured {item.kind} item is not a provider-facing row; read it with "
            "`conversation_rows` (it can only be trimmed by turn count)",
            field="kind",
        )
    return item.role, item.content


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
