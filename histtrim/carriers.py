"""TURN-3, EST-2..3, PAIR-2: parsers for what rows carry: native tool-call / tool-result
envelopes, the `[Tool results]` prompt carrier, and `[IMAGE:...]` markers."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from histtrim.messages import (
    MAX_JSON_DEPTH,
    TOOL_RESULTS_PREFIX,
    AssistantToolCalls,
    Attachment,
    ChatMessage,
    ConversationMessage,
    ToolCall,
    ToolResults,
)

MARKER_OPEN, MARKER_CLOSE = "[IMAGE:", "]"
ATTACHMENTS_HEADER = re.compile(r"\[Tool attachments: (\d+)\]")
_DRIVE_PATH = re.compile(r"[A-Za-z]:[\\/]")
_LOADABLE_PREFIXES = ("/", "http://", "https://", "data:")
RUST_WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
"""Unicode White_Space: what the reference's `str::trim` removes (Rust's
`char::is_whitespace`), around an image target, after a target's line break and around a
stripped call's text. Python's `str.isspace` also counts U+001C..U+001F: never use it here."""
_TARGET_SPACE = RUST_WHITESPACE
_UNC_SEPARATOR = re.compile(r"[\\/]")
_WRAPPED = re.compile(f"[\n\r][{re.escape(_TARGET_SPACE)}]*")


def is_loadable_target(target: str) -> bool:
    r"""A target the runtime can load and dispatch as an image (EST-2).

    After trimming whitespace (`_TARGET_SPACE`) it starts with `/`, `http://`, `https://`,
    `data:`, a drive (``C:\``, ``C:/``), or is a UNC path: two backslashes, then a rest that
    does not start with `?` or `.` and that splits at its first ``\`` or `/` into a
    non-empty server and a non-empty share (everything after that separator)."""
    target = target.strip(_TARGET_SPACE)
    if target.startswith(_LOADABLE_PREFIXES) or _DRIVE_PATH.match(target) is not None:
        return True
    if not target.startswith("\\\\"):
        return False
    rest = target[2:]
    if rest.startswith(("?", ".")):
        return False
    separator = _UNC_SEPARATOR.search(rest)
    return separator is not None and 0 < separator.start() < len(rest) - 1


def image_target(target: str) -> str | None:
    """The image a target (a marker's payload, or a declared attachment's) dispatches, or
    None when it is plain text.

    A target wrapped across lines is re-joined first (each `\\n` or `\\r` and the
    whitespace after it removed), then trimmed and tested (EST-2, EST-3)."""
    if "\n" in target or "\r" in target:
        target = _WRAPPED.sub("", target)
    return target.strip(_TARGET_SPACE) if is_loadable_target(target) else None


def marker_image(payload: str) -> str | None:
    """The image a marker `[IMAGE:<payload>]` dispatches, or None when it is plain text."""
    return image_target(payload)


ESCAPED_CLOSE = "%5D"
"""How a marker writes a `]` of its target (which would end it early): percent-encoded."""


def image_marker(target: str) -> str:
    """The marker that prices `target` as the one image it is (EST-2), for any target.

    Its payload is the target as the marker reader reads it: wrapped lines re-joined (as
    `image_target` re-joins them) and each `]` written `%5D`, so the marker ends where the
    target does and is read back as one marker, loadable exactly when `target` is. The
    payload is what the row is priced by; the reader that made the row keeps the original
    (an OpenAI row's extras, an Anthropic message, a framework's own object)."""
    if "\n" in target or "\r" in target:
        target = _WRAPPED.sub("", target)
    return f"{MARKER_OPEN}{target.replace(MARKER_CLOSE, ESCAPED_CLOSE)}{MARKER_CLOSE}"


def file_marker(media_type: str, name: str = "") -> str:
    """A file part that is not an image (a PDF, audio, video, any document) as a row carries
    it: one attachment at an image's fixed price, never the text of its encoding (decision
    "File parts")."""
    return image_marker(file_target(media_type, name))


PartKind = str
"""A non-text part's kind as the frameworks name it: "image", or any file kind ("file",
"document", "audio", "video", ...)."""


def part_target(
    kind: PartKind, media_type: str | None = None, *, url: str | None = None, name: str = ""
) -> str:
    """The one rule for a non-text part a framework sends, whoever sent it (the user, a tool,
    the model): the target it is priced by (EST-2, decisions "Images" and "File parts").

    An image is its URL; an image given as bytes (base64, a `data:` URL) is a short `data:`
    target naming its type, never the encoding (4 bytes of text for 3 of image). Any other
    kind is one attachment (`file_target`). Where the row carries the target (a user row's
    marker, a tool's declared attachment, `part_tokens` for the model's own parts), a loadable
    target costs one image's fixed price."""
    if kind == "image":
        if url and not url.startswith("data:"):
            return url
        media = media_type or data_url_media_type(url)
        if media == "application/octet-stream":
            media = "image"
        return f"data:{media};base64,{name[:_FILE_NAME_CHARS]}"
    media = media_type or data_url_media_type(url)
    return file_target(media, name or ("" if url is None or url.startswith("data:") else url))


def part_loads(target: str) -> bool:
    """Whether a part's target is dispatched as an image (the marker reader's test, EST-2)."""
    return image_target(target) is not None


def dispatch_row(text: str | None, calls: Iterable[tuple[str, str, str]]) -> ChatMessage:
    """An assistant row dispatching `calls` (id, name, JSON arguments), written as
    `ChatMessage.assistant_tool_calls` writes it, whatever the ids and names hold: a framework
    may record an empty id (Gemini's OpenAI-compatible endpoint, LM Studio) or an empty tool
    name, and the row is still the reference's row, priced by its bytes and paired by its
    string ids (PAIR-2: any string id is a call)."""
    envelope = {
        "content": text,
        "tool_calls": [{"id": i, "name": n, "arguments": a} for i, n, a in calls],
    }
    return ChatMessage(role="assistant", content=_compact(envelope))


def result_row(
    call_id: str, content: str, attachments: Sequence[str] | None = None
) -> ChatMessage:
    """A tool row answering `call_id` (any string, the empty one too), with the image
    targets the tool declared: `ChatMessage.tool_result`'s envelope, whatever the id holds."""
    envelope: dict[str, Any] = {"tool_call_id": call_id, "content": content}
    if attachments is not None:
        envelope["attachments"] = [{"kind": "image", "target": t} for t in attachments]
    return ChatMessage(role="tool", content=_compact(envelope))


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def file_target(media_type: str, name: str = "") -> str:
    """The target a file is priced by, as a marker's or a tool's declared attachment: a
    `data:` URL naming the file, which loads as one attachment (EST-2)."""
    return f"data:{media_type};file,{name[:_FILE_NAME_CHARS]}"


def data_url_media_type(value: object) -> str:
    """The media type a `data:` URL names (`data:application/pdf;base64,...`), else the
    generic `application/octet-stream`."""
    if isinstance(value, str) and value.startswith("data:"):
        media = value[5 : 5 + _FILE_NAME_CHARS].partition(";")[0].partition(",")[0]
        if media:
            return media
    return "application/octet-stream"


_FILE_NAME_CHARS = 200
_NEUTRAL_OPEN = "(" + MARKER_OPEN[1:]


def framework_user_text(pieces: Iterable[tuple[str, bool]]) -> str:
    """A user row's text from a framework message's pieces, each `(text, is_marker)`.

    A framework sends a text part as text, so in each run of text parts an `[IMAGE:` and a
    leading `[Tool results]` are written with `(` for `[`: the same bytes (the same EST-1
    price), never read as an image marker (EST-2) nor as a carrier that opens no turn
    (TURN-3). Markers (`image_marker`, `file_marker`) stand for the message's real images."""
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            text = "".join(run).replace(MARKER_OPEN, _NEUTRAL_OPEN)
            if not out and text.startswith(TOOL_RESULTS_PREFIX):
                text = "(" + text[1:]
            out.append(text)
            run.clear()

    for piece, is_marker in pieces:
        if is_marker:
            flush()
            out.append(piece)
        else:
            run.append(piece)
    flush()
    return "".join(out)


@dataclass(frozen=True, slots=True)
class Marker:
    """One `[IMAGE:<payload>]` in a text: `text[start:end]` is the whole marker."""

    start: int
    end: int
    payload: str


def image_markers(text: str) -> Iterator[Marker]:
    """Every `[IMAGE:<payload>]` of `text`, left to right, in one linear pass.

    A marker runs from `[IMAGE:` to the first `]` after it (its payload may hold `[`); the
    next search starts after that `]`, and when no `]` follows an opener no later opener can
    close either, so each character is looked at a bounded number of times (a backtracking
    regex retries every opener to the end of the text: quadratic)."""
    start = text.find(MARKER_OPEN)
    while start >= 0:
        close = text.find(MARKER_CLOSE, start + len(MARKER_OPEN))
        if close < 0:
            return
        yield Marker(start, close + 1, text[start + len(MARKER_OPEN) : close])
        start = text.find(MARKER_OPEN, close + 1)


def whole_marker(line: str) -> Marker | None:
    """`line` as exactly one marker (nothing before or after it), else None."""
    if not (line.startswith(MARKER_OPEN) and line.endswith(MARKER_CLOSE)):
        return None
    payload = line[len(MARKER_OPEN) : -len(MARKER_CLOSE)]
    return None if MARKER_CLOSE in payload else Marker(0, len(line), payload)


@dataclass(frozen=True, slots=True)
class MarkedText:
    """Text split into the part priced as text and its loadable image targets."""

    text: str
    images: tuple[str, ...]


def split_image_markers(content: str) -> MarkedText:
    """Remove loadable `[IMAGE:...]` markers; any other marker stays as plain text."""
    images: list[str] = []
    pieces: list[str] = []
    position = 0
    for marker in image_markers(content):
        image = marker_image(marker.payload)
        if image is None:
            continue
        pieces.append(content[position : marker.start])
        images.append(image)
        position = marker.end
    if not images:
        return MarkedText(content, ())
    pieces.append(content[position:])
    return MarkedText("".join(pieces), tuple(images))


@dataclass(frozen=True, slots=True)
class ParsedToolCalls:
    text: str | None
    calls: tuple[ToolCall, ...]


@dataclass(frozen=True, slots=True)
class ParsedToolResult:
    tool_call_id: str
    content: str
    attachments: tuple[Attachment, ...] | None
    """None when the envelope declares no `attachments` array."""


_JSON_SPACE = " \t\r\n"
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)
"""A string (an unterminated one runs to the end, so every match is a single attempt and the
scan stays linear) or a bracket."""


def json_text_too_deep(text: str) -> bool:
    """Whether the JSON text nests deeper than the parser allows, found without recursion."""
    if text.count("[") + text.count("{") < MAX_JSON_DEPTH:
        return False
    depth = 0
    for token in _JSON_TOKEN.finditer(text):
        bracket = token.group()
        if bracket in "[{":
            depth += 1
            if depth >= MAX_JSON_DEPTH:
                return True
        elif bracket in "]}":
            depth -= 1
    return False


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("number out of range")
    return value


def _finite_int(text: str) -> int:
    if len(text) > 300 and not math.isfinite(float(text)):
        raise ValueError("number out of range")
    return int(text)


def _has_lone_surrogate(value: Any) -> bool:
    """Whether a parsed value holds a string with a lone surrogate (only an escape can)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and not item.isascii():
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
    return False


_ENVELOPE_DECODER = json.JSONDecoder(
    parse_constant=_no_constant, parse_float=_finite_float, parse_int=_finite_int
)
"""`json.loads` with these hooks, made once (`loads` makes a decoder per call)."""


def json_object(content: str) -> dict[str, Any] | None:
    """The JSON object `content` holds, or None: the one envelope parser of the library.

    As the reference's parser reads it: whitespace around the object is allowed; text
    nested deeper than `MAX_JSON_DEPTH`, invalid JSON, NaN/Infinity, numbers out of the
    double range and escaped lone surrogates are not JSON (the row is then plain text)."""
    text = content.strip(_JSON_SPACE)
    if not (text.startswith("{") and text.endswith("}")) or json_text_too_deep(text):
        return None
    try:
        value = _ENVELOPE_DECODER.decode(text)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    if "\\u" in text and _has_lone_surrogate(value):
        return None
    return value


def _call_fields(element: Any) -> Any:
    """A `tool_calls` element in histtrim's shape; an OpenAI-shaped call
    (`{"id", "type": "function", "function": {"name", "arguments"}}`) is flattened."""
    if isinstance(element, dict) and isinstance(element.get("function"), dict):
        function = element["function"]
        fields = {k: function[k] for k in ("name", "arguments") if k in function}
        return {"id": element.get("id"), **fields}
    return element


def tool_call_ids(message: ChatMessage) -> tuple[str, ...] | None:
    """The ids an assistant row dispatches, or None when it is not a native dispatch.

    As the reference reads it: a native call is any element of the envelope's
    `tool_calls` array with a string `id`, whatever its other fields (PAIR-2)."""
    return dispatched_ids(message.content) if message.role == "assistant" else None


def dispatched_ids(content: str) -> tuple[str, ...] | None:
    """`tool_call_ids` of an assistant row with this text."""
    envelope = json_object(content)
    calls = envelope.get("tool_calls") if envelope is not None else None
    if not isinstance(calls, list):
        return None
    ids = tuple(c["id"] for c in calls if isinstance(c, dict) and isinstance(c.get("id"), str))
    return ids or None


def tool_result_call_id(message: ChatMessage) -> str | None:
    """The call a `tool` row answers: its envelope's string `tool_call_id`, else None
    (a legacy row with no readable id, kept by the sweep only right after a native
    dispatch)."""
    return answered_id(message.content) if message.role == "tool" else None


def answered_id(content: str) -> str | None:
    """`tool_result_call_id` of a tool row with this text."""
    envelope = json_object(content)
    call_id = envelope.get("tool_call_id") if envelope is not None else None
    return call_id if isinstance(call_id, str) else None


def parse_tool_calls(message: ChatMessage) -> ParsedToolCalls | None:
    """The native tool calls of an assistant row (histtrim- or OpenAI-shaped), or None
    for plain text or an envelope whose calls do not all have an id and a name."""
    if message.role != "assistant":
        return None
    envelope = json_object(message.content)
    if envelope is None or not isinstance(envelope.get("tool_calls"), list):
        return None
    try:
        parsed = AssistantToolCalls.model_validate(
            {
                "text": envelope.get("content"),
                "tool_calls": [_call_fields(call) for call in envelope["tool_calls"]],
            }
        )
    except ValidationError:
        return None
    return ParsedToolCalls(parsed.text, parsed.tool_calls)


def parse_tool_result(message: ChatMessage) -> ParsedToolResult | None:
    """The envelope of a native tool row, or None when it is malformed (priced as text)."""
    if message.role != "tool":
        return None
    envelope = json_object(message.content)
    if envelope is None:
        return None
    call_id, content = envelope.get("tool_call_id"), envelope.get("content")
    if not isinstance(call_id, str) or not isinstance(content, str):
        return None
    raw = envelope.get("attachments")
    if raw is None:
        return ParsedToolResult(call_id, content, None)
    if not isinstance(raw, list):
        return None
    try:
        attachments = tuple(Attachment.model_validate(item) for item in raw)
    except ValidationError:
        return None
    return ParsedToolResult(call_id, content, attachments)


def tool_results_carrier(
    results: Iterable[tuple[str, str]], *, attachments: Sequence[str] = ()
) -> ChatMessage:
    """A prompt-mode `[Tool results]` user row from (tool name, output) pairs.

    Declared image attachments go in a header (`[Tool attachments: N]` and N marker lines)."""
    lines = [TOOL_RESULTS_PREFIX]
    if attachments:
        lines.append(f"[Tool attachments: {len(attachments)}]")
        lines.extend(image_marker(target) for target in attachments)
    for name, output in results:
        lines.append(f'<tool_result name="{name}">\n{output}\n</tool_result>')
    return ChatMessage.user("\n".join(lines))


def split_carrier_attachments(content: str) -> MarkedText | None:
    """A carrier's text without its attachments block, and the declared loadable images.

    None when the carrier declares no attachments or the block is malformed."""
    lines = content.split("\n")
    if len(lines) < 2 or lines[0] != TOOL_RESULTS_PREFIX:
        return None
    header = ATTACHMENTS_HEADER.fullmatch(lines[1])
    if header is None:
        return None
    digits = header.group(1)
    if len(digits.lstrip("0")) > len(str(len(lines))):
        return None  # more markers than there are lines: just text (and never a huge int)
    count = int(digits.lstrip("0") or "0")
    markers = lines[2 : 2 + count]
    if len(markers) < count:
        return None
    images: list[str] = []
    plain: list[str] = []  # non-loadable declared markers are not dispatched: priced as text
    for line in markers:
        marker = whole_marker(line)
        if marker is None:
            return None
        image = marker_image(marker.payload)
        if image is None:
            plain.append(line)
        else:
            images.append(image)
    kept = [lines[0], *plain, *lines[2 + count :]]
    return MarkedText("\n".join(kept), tuple(images))


def to_chat_messages(history: Iterable[ConversationMessage]) -> list[ChatMessage]:
    """The provider-facing rows of a structured history (one tool row per result)."""
    rows: list[ChatMessage] = []
    for item in history:
        if isinstance(item, ChatMessage):
            rows.append(item)
        elif isinstance(item, AssistantToolCalls):
            rows.append(ChatMessage.assistant_tool_calls(item.text, item.tool_calls))
        elif isinstance(item, ToolResults):
            rows.extend(result.row() for result in item.results)
    return rows
