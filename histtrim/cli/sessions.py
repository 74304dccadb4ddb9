"""Session files: read (JSON array, object with `messages`, or JSON Lines; `-` is stdin),
detect the format, validate, and render back in the input's layout; bad input names its
file, line and field."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Literal

from pydantic import TypeAdapter, ValidationError

from histtrim.adapters.formats import without_messages
from histtrim.adapters.numbers import dumps_kept as dumps
from histtrim.adapters.openai import from_openai
from histtrim.adapters.openai_checks import OpenAIFormatError
from histtrim.adapters.rewrite import line_ending
from histtrim.cli.errors import InputError
from histtrim.cli.jsontext import BOM, check_value, decode, display_name, loads, read_bytes
from histtrim.cli.positions import array_offsets, line_numbers, messages_offset, skip_space
from histtrim.messages import ChatMessage, ConversationMessage
from histtrim.turns import TurnIndex, index_turns, leading_system_count

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
    data: bytes = b""
    """The file's bytes, written back unchanged when nothing is dropped."""

    def line_of(self, index: int) -> int | None:
        return self.lines[index] if 0 <= index < len(self.lines) else None



def read_session(path: str, format: Format | None = None, data: bytes | None = None) -> Session:
    """Read a JSON array, a JSON object with `messages`, or JSON Lines, and validate it all:
    records, formats and every value (nothing unwritable gets past here). `data`: the file's
    bytes, when already read (stdin is read once)."""
    source = display_name(path)
    data = read_bytes(path) if data is None else data
    text = decode(source, data)
    start = skip_space(text, 0)
    document: Any = None
    if start < len(text) and text[start] in "[{":
        try:
            document = loads(source, text)
        except InputError:
            if text[start] == "[" or not _is_jsonl(text):
                raise
            # JSON Lines whose first record is an object: parsed line by line below.
    if isinstance(document, list):
        lines = line_numbers(text, array_offsets(text, start))
        session = Session(source, document, lines, "array")
    elif isinstance(document, dict) and "messages" in document:
        messages = document["messages"]
        if not isinstance(messages, list):
            line = line_numbers(text, [messages_offset(text, start)])[0]
            raise InputError(source, "expected a list of messages", line=line, field="messages")
        offsets = array_offsets(text, messages_offset(text, start))
        session = Session(source, messages, line_numbers(text, offsets), "object", document)
        rest = {key: value for key, value in document.items() if key != "messages"}
        check_value(source, rest, line=None)
    elif isinstance(document, dict) and _is_jsonl(text):
        raise InputError(source, without_messages(document), line=1, field="messages")
    else:
        session = _read_jsonl(source, text)
    session.data = data
    for record, line in zip(session.records, session.lines, strict=True):
        if not isinstance(record, dict):
            raise InputError(source, f"expected a JSON object, got {_json_type(record)}", line=line)
        check_value(source, record, line=line)
    session.format = format or _detect_format(session)
    _validate(session)
    return session


def _is_jsonl(text: str) -> bool:
    """More than one non-blank line: worth reading as JSON Lines."""
    return sum(1 for line in text.split("\n") if line.strip(" \t\r")) > 1


def _read_jsonl(path: str, text: str) -> Session:
    """JSON Lines: records split on "\\n" only (U+2028, U+2029 or U+0085 inside a record are
    text, as JSON allows)."""
    records: list[Any] = []
    lines: list[int] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip(" \t\r"):
            continue
        records.append(loads(path, line, line=number))
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


LEGACY_FUNCTION = (
    "role 'function' is the legacy function-calling format, which histtrim does not read: "
    "convert it to a 'tool' message answering a tool call (tool_call_id)"
)


def _validate(session: Session) -> None:
    for record, line in zip(session.records, session.lines, strict=True):
        if record.get("role") == "function":
            raise InputError(session.path, LEGACY_FUNCTION, line=line, field="role")
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


def render(session: Session, records: Sequence[Any]) -> bytes:
    """The records as standard JSON in the session's own layout (array, object or JSON
    Lines), with the input's byte order mark if it had one."""
    newline = line_ending(session.data).decode("ascii")
    if session.layout == "jsonl":
        text = "".join(dumps(r, _compact) + newline for r in records)
    elif session.layout == "array" and _one_per_line(session):
        rows = ("," + newline).join(dumps(r, _compact) for r in records)
        text = f"[{newline}{rows}{newline}]{newline}"
    else:
        document: Any = list(records)
        if session.layout == "object":
            document = {**(session.wrapper or {}), "messages": document}
        text = dumps(document, _indented) + "\n"
    bom = BOM if session.data.startswith(BOM) else b""
    return bom + text.encode("utf-8")


def _one_per_line(session: Session) -> bool:
    """An array written one record per line: each record starts on its own line and the
    file has no more lines than its records, the brackets and a final newline."""
    lines = session.lines
    last = session.data.rstrip().count(b"\n") + 1
    return (
        len(lines) > 1 and all(b == a + 1 for a, b in pairwise(lines))
        and last <= len(lines) + 2
    )


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def _indented(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)


def crumb_error(session: Session) -> InputError:
    """--crumb-present without the breadcrumb right after the leading system rows."""
    slot = leading_system_count(session.items)
    return InputError(
        session.path,
        "--crumb-present: expected a user message (the breadcrumb slot) right after the "
        "leading system messages",
        line=session.line_of(slot),
        field="content" if slot < len(session.items) else None,
    )


def index_session(session: Session, rows: Sequence[Any], crumb_present: bool) -> TurnIndex:
    """The one turn index of a request (the crumb flag checked on the way)."""
    try:
        return index_turns(rows, crumb_present=crumb_present)
    except ValueError:
        raise crumb_error(session) from None
