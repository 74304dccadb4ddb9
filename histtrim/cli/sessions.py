"""Session files: read (JSON array, object with `messages`, or JSON Lines), detect the format,
validate, and write back in the input's layout; bad input names its file, line and field."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import TypeAdapter, ValidationError

from ..adapters.openai import OpenAIFormatError, from_openai
from ..messages import ChatMessage, ConversationMessage
from ..turns import index_turns, leading_system_count
from .errors import InputError
from .positions import array_offsets, line_numbers, messages_offset, skip_space

Format = Literal["openai", "histtrim"]
_ITEM: TypeAdapter[ConversationMessage] = TypeAdapter(ConversationMessage)
_OPENAI_ONLY_KEYS = ("tool_calls", "tool_call_id", "name", "refusal")


@dataclass
class Session:
    """A session file: its records, the line each starts on, and how to write it back."""

    path: str
    records: list[dict[str, Any]]
    lines: list[int]
    layout: Literal["array", "jsonl", "object"]
    wrapper: dict[str, Any] | None = None
    """For `{"messages": [...], ...}` files: the object around the messages."""
    format: Format = "histtrim"
    rows: list[ChatMessage] | None = None
    """Provider-facing rows (OpenAI messages, or histtrim chat rows)."""
    items: list[ConversationMessage] = field(default_factory=list)
    """The history as validated (structured items included)."""

    def line_of(self, index: int) -> int | None:
        return self.lines[index] if 0 <= index < len(self.lines) else None



def read_session(path: str, format: Format | None = None) -> Session:
    """Read a JSON array, a JSON object with `messages`, or JSON Lines, and validate it."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise InputError(path, f"cannot read: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise InputError(path, "not UTF-8 text") from None
    start = skip_space(text, 0)
    document: Any = None
    if start < len(text) and text[start] in "[{":
        try:
            document = json.loads(text)
        except json.JSONDecodeError as error:
            if text[start] == "[":
                raise InputError(
                    path, f"invalid JSON: {error.msg} (column {error.colno})", line=error.lineno
                ) from None
            # JSON Lines whose first record is an object: parsed line by line below.
    if isinstance(document, list):
        session = Session(path, document, line_numbers(text, array_offsets(text, start)), "array")
    elif isinstance(document, dict) and "messages" in document:
        messages = document["messages"]
        if not isinstance(messages, list):
            line = line_numbers(text, [messages_offset(text, start)])[0]
            raise InputError(path, "expected a list of messages", line=line, field="messages")
        offsets = array_offsets(text, messages_offset(text, start))
        session = Session(path, messages, line_numbers(text, offsets), "object", document)
    else:
        session = _read_jsonl(path, text)
    for record, line in zip(session.records, session.lines, strict=True):
        if not isinstance(record, dict):
            raise InputError(path, f"expected a JSON object, got {_json_type(record)}", line=line)
    session.format = format or _detect_format(session)
    _validate(session)
    return session


def _read_jsonl(path: str, text: str) -> Session:
    records: list[Any] = []
    lines: list[int] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as error:
            raise InputError(
                path, f"invalid JSON: {error.msg} (column {error.colno})", line=number
            ) from None
        lines.append(number)
    return Session(path, records, lines, "jsonl")


def _json_type(value: object) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", int: "a number",
             float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _detect_format(session: Session) -> Format:
    """histtrim if any record has `kind` (or is a tool row without `tool_call_id`), OpenAI if
    any has an OpenAI-only field or non-string content; plain role/content rows read as OpenAI,
    which keeps them exactly as written."""
    histtrim_line = openai_line = None
    for record, line in zip(session.records, session.lines, strict=True):
        ours = "kind" in record or (record.get("role") == "tool" and "tool_call_id" not in record)
        theirs = (
            any(key in record for key in _OPENAI_ONLY_KEYS)
            or not isinstance(record.get("content"), str)
            or record.get("role") == "developer"
        )
        if ours and histtrim_line is None:
            histtrim_line = line
        elif theirs and not ours and openai_line is None:
            openai_line = line
    if histtrim_line is not None and openai_line is not None:
        raise InputError(
            session.path,
            f"mixes histtrim items (line {histtrim_line}) with OpenAI messages; "
            "use one format per file, or --format",
            line=openai_line,
        )
    return "histtrim" if histtrim_line is not None else "openai"


def _validate(session: Session) -> None:
    if session.format == "openai":
        try:
            session.rows = from_openai(session.records)
        except OpenAIFormatError as error:
            raise InputError(
                session.path, error.problem, line=session.line_of(error.index), field=error.field
            ) from None
        session.items = list(session.rows)
        return
    items: list[ConversationMessage] = []
    for record, line in zip(session.records, session.lines, strict=True):
        try:
            items.append(_ITEM.validate_python(record))
        except ValidationError as error:
            first = error.errors()[0]
            loc = [str(part) for part in first["loc"]]
            if loc and loc[0] == str(record.get("kind", "chat")):
                loc = loc[1:]  # the union's tag
            raise InputError(
                session.path, first["msg"], line=line, field=".".join(loc) or "kind"
            ) from None
    session.items = items
    if all(isinstance(item, ChatMessage) for item in items):
        session.rows = [item for item in items if isinstance(item, ChatMessage)]


def render(session: Session, records: Sequence[Any]) -> str:
    """The records as text in the session's own layout (array, object or JSON Lines)."""
    if session.layout == "jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    document: Any = list(records)
    if session.layout == "object":
        document = {**(session.wrapper or {}), "messages": document}
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def write(output: str | None, text: str) -> None:
    """Write to the `output` file, or stdout when it is None or `-`."""
    if output is None or output == "-":
        sys.stdout.write(text)
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as error:
        raise InputError(output, f"cannot write: {error.strerror or error}") from None


def check_crumb(session: Session, crumb_present: bool) -> None:
    """With --crumb-present, the breadcrumb must sit right after the leading system rows."""
    if not crumb_present:
        return
    try:
        index_turns(session.items, crumb_present=True)
    except ValueError:
        slot = leading_system_count(session.items)
        raise InputError(
            session.path,
            "--crumb-present: expected a user message (the breadcrumb slot) right after the "
            "leading system messages",
            line=session.line_of(slot),
            field="content" if slot < len(session.items) else None,
        ) from None
