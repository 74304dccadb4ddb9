"""One record of a history file -> the role and text of its provider-facing row.

The usual shapes take a fast path that makes exactly the text the format's adapter makes
(a test holds them equal); anything else goes through the adapter itself."""

from __future__ import annotations

from collections.abc import Mapping
from json.encoder import encode_basestring
from typing import Any, Literal, get_args

from pydantic import TypeAdapter, ValidationError
from pydantic_core import from_json

from histtrim.adapters.anthropic import message_sketch, result_ids
from histtrim.carriers import answered_id, dispatched_ids
from histtrim.messages import ChatMessage, ConversationMessage, Role

Format = Literal["histtrim", "openai", "anthropic"]
_ROLES = frozenset(get_args(Role))
_PLAIN = frozenset(("role", "content"))
_TOOL = frozenset(("role", "tool_call_id", "content"))
_CALLS = frozenset(("role", "content", "tool_calls"))
_CALL = frozenset(("id", "type", "function"))
_FUNCTION = frozenset(("name", "arguments"))
_JSON_SPACE = " \t\r\n"
_ENVELOPE_STARTS = frozenset("{" + _JSON_SPACE)
"""The first characters of a text an envelope (a JSON object) may be read from."""
_CHAT_KEYS = frozenset(("kind", "role", "content"))
_string = encode_basestring
"""A str as compact JSON writes it (`ensure_ascii=False`), in C."""
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


Link = tuple[str, ...] | str | None
"""What the tool-pairing check reads from a row (`pairing.PairingScan`): a tool row's
answered call id (None: no readable one); an assistant row's dispatched ids (None: no
native dispatch); an Anthropic results message's answered ids (`anthropic.result_ids`);
None for any other row."""


def row_text(fmt: Format, record: object) -> tuple[str, str]:
    """The (role, content) of the row the format's adapter makes for `record`."""
    role, text, _ = row_sketch(fmt, record)
    return role, text


def row_sketch(fmt: Format, record: object) -> tuple[str, str, Link]:
    """`row_text` and the row's pairing link, read from the record where its shape says it
    (the link is what `carriers.tool_call_ids` / `tool_result_call_id` read from the text)."""
    if type(record) is not dict and not isinstance(record, Mapping):
        raise FormatError(f"expected a JSON object, got {type(record).__name__}")
    if fmt == "openai":
        return _openai(record)
    if fmt == "anthropic" and type(record.get("content")) is list:
        sketch = message_sketch(record)
        if sketch is not None:
            return sketch[0], sketch[1], sketch[2] or None
    role, text = _anthropic(record) if fmt == "anthropic" else _histtrim(record)
    if fmt == "anthropic" and role == "user":
        return role, text, result_ids(record) or None
    if role == "user" or role == "system" or text[:1] not in _ENVELOPE_STARTS:
        return role, text, None  # no envelope can be read from such text
    return role, text, text_link(role, text)


def text_link(role: str, text: str) -> Link:
    """The pairing link of a row, read from its text: an envelope of strings (the usual
    one) is parsed in Rust, anything else by the library's one envelope parser."""
    if role == "tool":
        envelope = _string_envelope(text)
        if envelope is None:
            return answered_id(text)
        call_id = envelope.get("tool_call_id")
        return call_id if type(call_id) is str else None
    if role == "assistant" and text.lstrip(_JSON_SPACE)[:1] == "{":
        envelope = _string_envelope(text)
        if envelope is None:
            return dispatched_ids(text)
        calls = envelope.get("tool_calls")
        if type(calls) is not list:
            return None
        ids = tuple(c["id"] for c in calls if type(c.get("id")) is str)
        return ids or None
    return None


def _string_envelope(text: str) -> dict[str, Any] | None:
    """The JSON object `text` holds when every value in it is a string or null, but for a
    `tool_calls` list of such objects; else None. For such text `carriers.json_object` reads
    the same object: with no number, constant or nesting to refuse, the two parsers agree
    (a lone surrogate escape fails here too), so the caller uses it or falls back."""
    try:
        value = from_json(text, allow_inf_nan=False)
    except ValueError:
        return None
    if type(value) is not dict:
        return None
    for key, item in value.items():
        if type(item) is str or item is None:
            continue
        if key != "tool_calls" or type(item) is not list:
            return None
        for call in item:
            if type(call) is not dict:
                return None
            for field in call.values():
                if type(field) is not str and field is not None:
                    return None
    return value


def _openai(record: Mapping[str, Any]) -> tuple[str, str, Link]:
    keys = record.keys()
    role, content = record.get("role"), record.get("content")
    if keys == _PLAIN and type(content) is str and not content.startswith("{"):
        if role == "assistant":
            return role, content, text_link(role, content)
        if role == "system" or role == "user":  # markers included: the adapter's text
            return role, content, None
    elif keys == _TOOL and role == "tool" and type(content) is str:
        call_id = record["tool_call_id"]
        if type(call_id) is str and call_id:
            text = f'{{"tool_call_id":{_string(call_id)},"content":{_string(content)}}}'
            return "tool", text, call_id
    elif keys == _CALLS and role == "assistant" and (content is None or type(content) is str):
        calls = _plain_calls(record["tool_calls"])
        if calls is not None:
            said = "null" if content is None else _string(content)
            text = f'{{"content":{said},"tool_calls":[{",".join(calls)}]}}'
            return "assistant", text, tuple(call["id"] for call in record["tool_calls"])
    from histtrim.adapters.openai import from_openai
    from histtrim.adapters.openai_checks import OpenAIFormatError

    try:
        row = from_openai([record])[0]
    except OpenAIFormatError as error:
        raise FormatError(error.problem, field=error.field) from None
    return row.role, row.content, text_link(row.role, row.content)


def _plain_calls(calls: object) -> list[str] | None:
    """Each call as the envelope writes it (compact JSON), when each is a plain function
    call."""
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
        out.append(
            f'{{"id":{_string(call_id)},"name":{_string(name)},"arguments":{_string(arguments)}}}'
        )
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
        and record.keys() <= _CHAT_KEYS
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
