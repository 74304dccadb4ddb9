"""History files in the three formats (histtrim rows, OpenAI messages, Anthropic request
bodies), read from bytes into per-row columns and written back in the layout they came in.

A reader prices every row without keeping it: one pass parses each record, makes its row's
text with the format's adapter (a fast path for the usual shapes) and keeps only the row
facts a trim needs (turn openers, cached prices, EST-1..4). Records are re-read from the
input only when looked at, and JSON Lines are written back as the input's own bytes, so a
million-row file costs a few columns of integers on top of its bytes."""

from __future__ import annotations

import json
import re
from array import array
from bisect import bisect_right
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain, compress, islice
from typing import Any, Literal

from pydantic import TypeAdapter, ValidationError
from pydantic_core import from_json

from histtrim.adapters.records import Format, FormatError, row_sketch, row_text
from histtrim.estimate import dispatched_images, message_cost
from histtrim.messages import (
    BREADCRUMB,
    BYTES_PER_TOKEN,
    FRAME_TOKENS,
    TOOL_RESULTS_PREFIX,
    ChatMessage,
)
from histtrim.pairing import PairingErrors, PairingScan

Layout = Literal["jsonl", "array", "body"]
FORMATS: tuple[Format, ...] = ("histtrim", "openai", "anthropic")
_BOM = b"\xef\xbb\xbf"
_ZEROS = bytes.maketrans(b"123456789", b"000000000")
_NON_SPACE = re.compile(rb"[^ \t\r\n]")
_AT = re.compile(r" at line (\d+) column (\d+)$")
_JSON: TypeAdapter[Any] = TypeAdapter(Any)
_ANTHROPIC_BLOCKS = ("tool_use", "tool_result", "image")
_ASCII_ESCAPE = re.compile(rb"\\u00[4-7][0-9A-Fa-f]")
_HINTS: tuple[tuple[tuple[bytes | re.Pattern[bytes], ...], Format], ...] = (
    ((b'"kind"', _ASCII_ESCAPE), "histtrim"),
    ((b'"tool_use"', b'"tool_result"', b'"image"', _ASCII_ESCAPE), "anthropic"),
)
"""What a record must hold to be told apart: the key or block type as written plainly (JSON
escapes a quote inside a string, so the needle's quotes are the string's own), or a `\\u`
escape of an ASCII letter, which may spell one (`"tool_\\u0075se"`): such a record is decoded
and looked at, never judged by its bytes. Plain needles are found with `bytes.find` (a regular
expression of alternatives scans several times slower)."""


def _find(data: bytes, needle: bytes | re.Pattern[bytes], start: int) -> int:
    if isinstance(needle, bytes):
        return data.find(needle, start)
    found = needle.search(data, start)
    return -1 if found is None else found.start()


@dataclass
class HistoryFile:
    """A history file read for trimming: its rows' columns and where each record lies.

    Row k is record `k - system_rows` (an Anthropic body's `system` is row 0, no record)."""

    format: Format
    layout: Layout
    data: bytes
    """The input (without a UTF-8 BOM)."""
    spans: array[int]
    """JSON Lines and arrays: each record's (start, end) offsets into `data`, flattened."""
    parsed: list[Any] | None
    """Request bodies: the records as parsed."""
    body: dict[str, Any] | None
    """A request body without its messages (they go back under `messages`)."""
    system_rows: int
    prefix_len: int
    """Leading system rows (TURN-5)."""
    opens: bytearray
    """1 where the row opens a turn (TURN-2, TURN-3)."""
    costs: list[int]
    """Each row's estimate (EST-1..4), images priced where they are dispatched."""
    images: dict[int, int]
    """Dispatched images by row, for the rows that have any (EST-2, EST-3)."""
    bom: bool = False
    pairing: PairingErrors = field(default_factory=PairingErrors)
    """The tool-pairing errors of the rows as read (`validate_tool_pairing`), found in the
    pricing pass: the rows are not read again to check them."""
    replies: array[int] = field(default_factory=lambda: array("q"))
    """Each assistant row right after a non-assistant row: where a recorded request ends
    (`low_water.request_points`, for the held cut)."""
    declaring: list[int] = field(default_factory=list)
    """The rows that may declare attachments (priced apart in the current turn, EST-3)."""

    def __len__(self) -> int:
        return len(self.costs)

    @property
    def records(self) -> int:
        return len(self.costs) - self.system_rows

    def record(self, index: int) -> Any:
        """Record `index`, parsed again from the input (JSON Lines, arrays) or as parsed."""
        if self.parsed is not None:
            return self.parsed[index]
        return _loads(self.data[self.spans[2 * index] : self.spans[2 * index + 1]], 0)

    def record_bytes(self, index: int) -> bytes:
        """JSON Lines and arrays: record `index` exactly as the input wrote it."""
        return self.data[self.spans[2 * index] : self.spans[2 * index + 1]]

    def line_of(self, index: int) -> int | None:
        """The 1-based line record `index` starts on (JSON Lines), for error messages."""
        if self.layout != "jsonl" or not 0 <= index < len(self.spans) // 2:
            return None
        return self.data.count(b"\n", 0, self.spans[2 * index]) + 1

    def row(self, index: int) -> ChatMessage:
        """Row `index` as a `ChatMessage`, made on demand (rows are not kept)."""
        if index < self.system_rows:
            assert self.body is not None
            role, text = "system", _anthropic_system(self.body)
        else:
            role, text = row_text(self.format, self.record(index - self.system_rows))
        return ChatMessage(role=role, content=text)  # type: ignore[arg-type]

    def rows(self) -> Iterator[ChatMessage]:
        return (self.row(i) for i in range(len(self)))

    def starts(self) -> list[int]:
        """The rows that open a turn, oldest first."""
        return list(compress(range(len(self.opens)), self.opens))

    @cached_property
    def number_marks(self) -> tuple[frozenset[bytes], frozenset[bytes]]:
        """Marks of numbers that are not plain integers, anywhere in `data` and within its
        records (first record's start to last one's end): `0.`, `0e`, `0E` in the text with
        its digits made `0` (conservative: a string's `v1.5` counts), `Infinity`, `NaN`. One
        pass over one copy, shared by the CLI's huge-exponent guard and the body writer."""
        data, digits = self.data, self.data.translate(_ZEROS)
        low, high = (self.spans[0], self.spans[-1]) if self.spans else (0, len(data))
        anywhere: set[bytes] = set()
        within: set[bytes] = set()
        for text, marks in ((digits, (b"0.", b"0e", b"0E")), (data, (b"Infinity", b"NaN"))):
            for mark in marks:
                if text.find(mark) >= 0:
                    anywhere.add(mark)
                    if text.find(mark, low, high) >= 0:
                        within.add(mark)
        return frozenset(anywhere), frozenset(within)


def detect_format(document: Any) -> Format:
    """The format of a parsed file: a request body (an object with `messages`) or a list of
    records. histtrim if any record has `kind`; else Anthropic if the body has a top-level
    `system` or any message has `tool_use`/`tool_result`/`image` blocks; else OpenAI (plain
    role/content records are the same row in every format, written back as they came)."""
    records = document.get("messages") if isinstance(document, Mapping) else document
    if not isinstance(records, list):
        raise FormatError("expected a list of messages or an object with `messages`")
    found = [_record_format(r) for r in records if isinstance(r, Mapping)]
    if "histtrim" in found:
        return "histtrim"
    if "anthropic" in found or (isinstance(document, Mapping) and "system" in document):
        return "anthropic"
    return "openai"


def _record_format(record: Mapping[str, Any]) -> Format | None:
    if "kind" in record:
        return "histtrim"
    content = record.get("content")
    if isinstance(content, list):
        for block in content:
            kind = block.get("type") if isinstance(block, Mapping) else None
            if kind in _ANTHROPIC_BLOCKS:
                return "anthropic"
    return None


def read_history(data: bytes, format: Format | None = None) -> HistoryFile:
    """Read a history file's bytes: a JSON array, a request body (an object with
    `messages`) or JSON Lines (split on b"\\n" only); a UTF-8 BOM is accepted. `format`
    overrides detection. Bad input raises `FormatError` (a ValueError) naming the line or
    record and the field."""
    bom = data.startswith(_BOM)
    if bom:
        data = data[len(_BOM) :]
    start = _NON_SPACE.search(data)
    first = data[start.start() : start.start() + 1] if start else b""
    # an array of one record a line is split at its lines as they are priced; anything else
    # (or a record the line split cut) is scanned element by element, and read whole when
    # that fails too
    opening = _OPENING_LINE.match(data) if first == b"[" else None
    if opening is not None:
        try:
            chosen = format or _detect_lines(data, None, commas=True)
            return _priced(chosen, "array", data, array("q"), None, None, bom, opening.end())
        except FormatError:
            pass  # not one record a line, or a bad record: the element scan decides
    elements = array_spans(data) if first == b"[" else None
    if elements is not None:
        try:
            chosen = format or _detect_lines(data, elements)
            return _priced(chosen, "array", data, elements, None, None, bom)
        except FormatError:
            pass  # the whole-document parse below names the problem as it always has
    body_found = _body_elements(data) if first == b"{" and _is_body(data) else None
    if body_found is not None:
        head, elements = body_found
        try:
            chosen = format or _detect_body(data, elements, head)
            return _priced(chosen, "body", data, elements, None, head, bom)
        except FormatError:
            pass  # named by the whole-document parse below, as for an array
    document = _whole_document(data, first)
    if document is not None:
        records = document.get("messages") if isinstance(document, dict) else document
        if not isinstance(records, list):
            raise FormatError("expected a list", field="messages")
        chosen = format or detect_format(document)
        body = None
        if isinstance(document, dict):
            body = {k: None if k == "messages" else v for k, v in document.items()}
        layout: Layout = "body" if body is not None else "array"
        return _priced(chosen, layout, data, array("q"), records, body, bom)
    chosen = format or _detect_lines(data, None)
    return _priced(chosen, "jsonl", data, array("q"), None, None, bom)


def sniff_format(data: bytes) -> Format:
    """The format `read_history` detects in `data`, without pricing a row."""
    data = data.removeprefix(_BOM)
    start = _NON_SPACE.search(data)
    first = data[start.start() : start.start() + 1] if start else b""
    elements = array_spans(data) if first == b"[" else None
    if elements is not None:
        return _detect_lines(data, elements)
    document = _whole_document(data, first)
    if document is not None:
        return detect_format(document)
    return _detect_lines(data, None)


def _whole_document(data: bytes, first: bytes) -> list[Any] | dict[str, Any] | None:
    """The file parsed whole when it is one JSON document (an array, or an object with
    `messages`); None for JSON Lines, which a one-line object without `messages` is (one
    record, of any format). An object over several lines without `messages` is a
    `FormatError`."""
    if not (first == b"[" or (first == b"{" and _is_body(data))):
        return None
    document = _loads(data, None)
    if isinstance(document, list):
        return document
    if isinstance(document, dict) and "messages" in document:
        return document
    if isinstance(document, dict) and _spans_lines(data):
        raise FormatError(without_messages(document), line=1, field="messages")
    return None


_WHITE = re.compile(r"[ \t\r\n]*")
_SCAN = json.JSONDecoder().raw_decode


def array_spans(data: bytes) -> array[int] | None:
    """A JSON array's elements as (start, end) byte offsets, found one element at a time (at
    most one element's objects alive, so an array file takes about as much memory as JSON
    Lines); None when the text is not a plain JSON array the scan can read (the caller's
    whole-document parse then reports why)."""
    try:
        text = data.decode("utf-8")
        ascii_only = text.isascii()
        spans: array[int] = array("q")
        at = _WHITE.match(text).end()  # type: ignore[union-attr]
        if text[at : at + 1] != "[":
            return None
        at = _WHITE.match(text, at + 1).end()  # type: ignore[union-attr]
        done = text[at : at + 1] == "]"
        chars = byte = 0
        while not done:
            _, end = _SCAN(text, at)
            if not ascii_only:
                byte += len(text[chars:at].encode("utf-8"))
                start, chars = byte, at
                byte += len(text[at:end].encode("utf-8"))
                spans.extend((start, byte))
                chars = end
            else:
                spans.extend((at, end))
            at = _WHITE.match(text, end).end()  # type: ignore[union-attr]
            separator = text[at : at + 1]
            if separator not in (",", "]"):
                return None
            done = separator == "]"
            at = _WHITE.match(text, at + 1).end()  # type: ignore[union-attr]
        if at != len(text):
            return None
    except (ValueError, RecursionError):
        return None
    return spans


_OPENING_LINE = re.compile(rb"[ \t\r\n]*\[[ \t\r]*\n")
_SPACE = frozenset(b" \t\r")


def _line_records(hf: HistoryFile, start: int) -> Iterator[Any]:
    """The records of a JSON array written one element a line (`[`, each element and its
    comma, `]`, each on its own line; `start` is just past the `[` line), parsed a line at a
    time as JSON Lines are, their (start, end) offsets added to `hf.spans` on the way. Any
    other text is a `FormatError` (the caller then scans the array element by element)."""
    data, spans = hf.data, hf.spans
    size, find, space, add = len(data), data.find, _SPACE, spans.append
    more = True  # the last element had its comma
    while start < size:
        end = find(b"\n", start)
        end = size if end < 0 else end
        a, b = start, end
        start = end + 1
        if more and b - a > 1 and data[b - 1] == 0x2C and data[a] not in space and (
            data[b - 2] not in space
        ):  # the usual line: `record,`
            b -= 1
        else:
            while a < b and data[a] in space:
                a += 1
            while b > a and data[b - 1] in space:
                b -= 1
            if a == b:
                continue
            if b - a == 1 and data[a] == 0x5D:  # `]`
                if more or not spans or _NON_SPACE.search(data, start) is not None:
                    break
                return
            if not more:
                break
            more = data[b - 1] == 0x2C  # `,`
            if more:
                b -= 1
                while b > a and data[b - 1] in space:
                    b -= 1
        add(a)
        add(b)
        try:
            record = from_json(data[a:b])
        except ValueError:
            record = _loads(data[a:b], None)  # a FormatError unless the strict parse reads it
        yield record
    raise FormatError("not a JSON array of one element a line")


_MESSAGES_OPEN = re.compile(rb'"messages"[ \t\r\n]*:[ \t\r\n]*\[[ \t\r]*\n')


def _body_elements(data: bytes) -> tuple[dict[str, Any], array[int]] | None:
    """A request body whose `messages` are written one a line (`"messages": [`, each message
    and its comma on a line of its own, then a line starting with `]`): the body's other
    keys (`messages` a None placeholder, in its place) and the messages' (start, end) byte
    offsets, found without parsing them; None for any other text. The other keys are parsed
    as the body without its messages; a `"messages"` anywhere else in the head or the tail
    (a nested or repeated key, a string) sends the file to the whole-document parse."""
    key = _MESSAGES_OPEN.search(data)
    if key is None or b'"messages"' in data[: key.start()]:
        return None
    spans: array[int] = array("q")
    start, size, find, space = key.end(), len(data), data.find, _SPACE
    more = True  # the last element had its comma
    while True:
        if start >= size:
            return None
        end = find(b"\n", start)
        end = size if end < 0 else end
        a, b = start, end
        start = end + 1
        if more and b - a > 1 and data[b - 1] == 0x2C and data[a] not in space and (
            data[b - 2] not in space and data[a] != 0x5D
        ):  # the usual line: `message,` (no space to strip, not `]`)
            spans.append(a)
            spans.append(b - 1)
            continue
        while a < b and data[a] in space:
            a += 1
        while b > a and data[b - 1] in space:
            b -= 1
        if a == b:
            continue
        if data[a] == 0x5D:  # `]`
            if more or not spans:
                return None
            close = a
            break
        if not more:
            return None
        more = data[b - 1] == 0x2C  # `,`
        if more:
            b -= 1
            while b > a and data[b - 1] in space:
                b -= 1
        spans.append(a)
        spans.append(b)
    head, tail = data[: key.start()], data[close + 1 :]
    if b'"messages"' in tail:
        return None
    try:
        if type(from_json(head + b'"messages":0}')) is not dict:  # the key is the body's own
            return None
        body = from_json(head + b'"messages":[]' + tail)
    except ValueError:
        return None
    if type(body) is not dict or body.get("messages") != []:
        return None
    return {k: None if k == "messages" else v for k, v in body.items()}, spans


def _detect_body(data: bytes, spans: array[int], body: Mapping[str, Any]) -> Format:
    """`detect_format` of a request body read by `_body_elements`."""
    found = _detect_lines(data, spans)
    return "anthropic" if found == "openai" and "system" in body else found


def _is_body(data: bytes) -> bool:
    """An object that spans the file (a request body), not the first of JSON Lines."""
    if not _spans_lines(data):
        return True
    try:
        _JSON.validate_json(data[: data.find(b"\n")])
    except ValidationError:
        return True  # a pretty-printed object: its first line is not JSON on its own
    return False


def _spans_lines(data: bytes) -> bool:
    """Whether the text runs over more than one line (a one-line object is one JSON Line)."""
    end = data.find(b"\n")
    return end >= 0 and _NON_SPACE.search(data, end) is not None


def without_messages(document: Mapping[str, Any]) -> str:
    """What a JSON object without `messages` is, and what was expected instead."""
    keys = [str(key) for key in islice(document, 5)]
    shown = ", ".join(repr(key[:40]) for key in keys) + (", ..." if len(document) > 5 else "")
    return (
        f"a JSON object with keys {shown} but no `messages` (a config file?); expected a "
        "history: a JSON array of messages, an object with `messages`, or JSON Lines"
        if keys else "an empty JSON object; expected a history: a JSON array of messages, an "
        "object with `messages`, or JSON Lines"
    )


def _detect_lines(data: bytes, spans: array[int] | None, commas: bool = False) -> Format:
    """`detect_format` for JSON Lines (`spans` None: each line a record; with `commas`, a
    line without its spaces and its comma, as an array of one record a line writes it) and
    arrays (records at `spans`), parsing only the records a byte search points at."""
    starts = spans[0::2] if spans is not None else None
    for needles, fmt in _HINTS:
        for needle in needles:
            at = _find(data, needle, 0)
            while at >= 0:
                if spans is None or starts is None:
                    start, end = data.rfind(b"\n", 0, at) + 1, data.find(b"\n", at)
                    end = len(data) if end < 0 else end
                else:
                    k = bisect_right(starts, at) - 1
                    if k < 0 or at >= spans[2 * k + 1]:  # between records
                        at = _find(data, needle, at + 1)
                        continue
                    start, end = spans[2 * k], spans[2 * k + 1]
                text = data[start:end]
                if commas:
                    text = text.strip(b" \t\r").removesuffix(b",").rstrip(b" \t\r")
                try:
                    record = _loads(text, None)
                except FormatError:
                    record = None  # reported with its line by the pricing pass
                if isinstance(record, Mapping) and _record_format(record) == fmt:
                    return fmt
                at = _find(data, needle, max(end, at + 1))
    return "openai"


def _loads(text: bytes, line: int | None) -> Any:
    """Parse JSON in Rust (pydantic's parser): deep nesting, huge integers and lone
    surrogates are a FormatError naming the line and column, never a RecursionError."""
    try:
        return from_json(text)
    except ValueError:
        pass  # parsed again below, for the error's words
    try:
        return _JSON.validate_json(text)
    except ValidationError as error:
        problem = str(error.errors()[0].get("ctx", {}).get("error", "not JSON"))
        if "hex escape" in problem or "surrogate" in problem:
            problem = "a \\u escape that is not a character (lone surrogate?): " + problem
        at = _AT.search(problem)
        if at is None:
            raise FormatError(f"invalid JSON: {problem}", line=line) from None
        row, column = int(at.group(1)), int(at.group(2))
        where = row if line is None else line + row - 1
        raise FormatError(
            f"invalid JSON: {problem[: at.start()]} (column {column})", line=where
        ) from None


def _anthropic_system(body: Mapping[str, Any]) -> str:
    """The body's `system` text; a malformed one is a `FormatError` naming the field."""
    from histtrim.adapters.anthropic import from_anthropic
    from histtrim.adapters.anthropic_checks import AnthropicFormatError

    try:
        return from_anthropic({"system": body["system"], "messages": []}).rows[0].content
    except AnthropicFormatError as error:
        raise FormatError(error.problem, line=1, field=error.field) from None


_SYSTEM_ROW = object()
"""Stands for an Anthropic body's `system` row among the records."""


def _priced(
    fmt: Format,
    layout: Layout,
    data: bytes,
    spans: array[int],
    parsed: list[Any] | None,
    body: dict[str, Any] | None,
    bom: bool,
    lines_from: int | None = None,
) -> HistoryFile:
    """One pass over the records: the columns, then the prices that depend on the turn (an
    array of one record a line, past offset `lines_from`, is split as it is read).

    Each row's facts (`messages.row_facts`) are worked out inline from its role and text,
    so a row costs its parse and a few string tests; the rare rows that need more (image
    markers, declared attachments) are made into `ChatMessage`s and priced by the estimate."""
    if fmt not in FORMATS:
        raise FormatError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    system_rows = int(fmt == "anthropic" and body is not None and "system" in body)
    hf = HistoryFile(
        fmt, layout, data, spans, parsed, body, system_rows, 0, bytearray(), [], {}, bom
    )
    opens, costs, images = hf.opens, hf.costs, hf.images
    pending: dict[int, ChatMessage] = {}  # current-turn rows that may declare attachments
    pairs = PairingScan(hf.pairing.add)
    prefix = replying = True  # no request ends at row 0
    add_reply, add_declaring = hf.replies.append, hf.declaring.append
    sketch = row_sketch
    add_open, add_cost = opens.append, costs.append
    records = _records(hf) if lines_from is None else _line_records(hf, lines_from)
    if system_rows:
        records = chain([_SYSTEM_ROW], records)
    for i, record in enumerate(records):
        if record is _SYSTEM_ROW:
            assert body is not None
            role, text, link = "system", _anthropic_system(body), None
        else:
            try:
                role, text, link = sketch(fmt, record)
            except FormatError as error:
                raise _at_record(hf, i - system_rows, error) from None
        if text.isascii():
            size = len(text)
        else:
            try:
                size = len(text.encode("utf-8"))
            except UnicodeEncodeError:
                raise hf_error(
                    hf, i, "content", "not valid UTF-8 text (a lone surrogate)"
                ) from None
        cost = -(-size // BYTES_PER_TOKEN) + FRAME_TOKENS  # EST-1, as `row_facts`
        if role == "user":
            if prefix:
                hf.prefix_len, prefix = i, False
            replying = False
            if text.startswith(TOOL_RESULTS_PREFIX):  # a carrier: no turn (TURN-3)
                add_open(0)
                if "[Tool attachments: " in text:
                    pending[i] = ChatMessage(role="user", content=text)
                    add_declaring(i)
            else:  # a real user row opens a turn (TURN-2)
                add_open(1)
                if pending:
                    pending.clear()
                if "[IMAGE:" in text:
                    row = ChatMessage(role="user", content=text)
                    cost = message_cost(row, current_turn=False)
                    images[i] = dispatched_images(row, current_turn=False)
            if type(link) is tuple:  # an Anthropic results message answers the ids it names
                for k, call_id in enumerate(link):
                    pairs.answer(i, call_id, k)
                pairs.other()  # the API wants every result in the very next message
            elif pairs.dispatching:
                pairs.other()
        elif role == "tool":
            if prefix:
                hf.prefix_len, prefix = i, False
            add_open(0)
            replying = False
            pairs.answer(i, link)  # type: ignore[arg-type]
            if '"attachments"' in text or "\\u" in text:  # an escaped key declares too
                pending[i] = ChatMessage(role="tool", content=text)
                add_declaring(i)
        else:
            if prefix and role != "system":
                hf.prefix_len, prefix = i, False
            add_open(0)
            if role == "assistant":
                if not replying:
                    add_reply(i)
                replying = True
            else:
                replying = False
            if link is not None:
                pairs.dispatch(i, link)  # type: ignore[arg-type]
            elif pairs.dispatching:
                pairs.other()
        add_cost(cost)
    pairs.other()
    if prefix:
        hf.prefix_len = len(costs)
    # After the newest real user row; with none, every tool result is current (EST-2).
    for i, row in pending.items():
        costs[i] = message_cost(row, current_turn=True)
        images[i] = dispatched_images(row, current_turn=True)
    return hf


def _records(hf: HistoryFile) -> Iterator[Any]:
    """Each record as parsed: a body's as parsed, an array's at its spans, and JSON Lines
    one line at a time, their spans found on the way (a line of whitespace is no record)."""
    data, spans = hf.data, hf.spans
    if hf.parsed is not None:
        yield from hf.parsed
        return
    if hf.layout != "jsonl":
        for index in range(len(spans) // 2):
            text = data[spans[2 * index] : spans[2 * index + 1]]
            try:
                record = from_json(text)
            except ValueError:
                try:
                    record = _loads(text, None)
                except FormatError as error:
                    raise _at_record(hf, index, error) from None
            yield record
        return
    start, size, find = 0, len(data), data.find
    while start < size:
        end = find(b"\n", start)
        end = size if end < 0 else end
        line = data[start:end]
        try:
            record = from_json(line)
        except ValueError:
            if not line.strip():
                start = end + 1
                continue
            spans.append(start)
            spans.append(end)
            try:
                record = _loads(line, None)
            except FormatError as error:
                raise _at_record(hf, len(spans) // 2 - 1, error) from None
        else:
            spans.append(start)
            spans.append(end)
        yield record
        start = end + 1


def _at_record(hf: HistoryFile, index: int, error: FormatError) -> FormatError:
    line = hf.line_of(index)
    return FormatError(error.problem, line=line, record=None if line else index, field=error.field)


def hf_error(hf: HistoryFile, row: int, field: str, problem: str) -> FormatError:
    index = row - hf.system_rows
    return FormatError(problem, line=hf.line_of(index), record=index, field=field)


def breadcrumb_record(fmt: Format) -> dict[str, Any]:
    """The breadcrumb (SEEN-1) as a record of the format: a user message."""
    record: dict[str, Any] = {"role": "user", "content": BREADCRUMB}
    return {"kind": "chat", **record} if fmt == "histtrim" else record
