"""Row history files for `trim` and `estimate` on the fast reader (`adapters.formats`):
histtrim rows, OpenAI messages and Anthropic request bodies, priced in one pass and written
back in their own format. Whatever it does not cover (structured items, values only the
strict reader refuses or keeps as written) goes to `sessions.read_session`."""

from __future__ import annotations

import math
import re
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping

from histtrim.adapters.formats import HistoryFile, read_history, sniff_format
from histtrim.adapters.numbers import RawFloat
from histtrim.adapters.records import Format, FormatError
from histtrim.cli.errors import InputError
from histtrim.cli.jsontext import BOM, check_value, decode, loads
from histtrim.cli.positions import array_offsets, line_numbers, messages_offset, skip_space

_CONSTANT = re.compile(rb"[:,\[]\s*-?(?:NaN|Infinity)")
"""NaN and Infinity as values (`read_session` refuses them; the fast parser reads them)."""
_TEXT = re.compile(rb"[^ \t\r\n]")
_HUGE_NUMBER = re.compile(rb"[0-9][eE][+-]?[0-9]{3}|[0-9]{309}\.")
"""A number maybe past a double's range, in either way JSON can write one: a three-digit
exponent (`1e309`), or 309 digits or more before the point (`1` and 309 zeros, then `.0`;
the largest double has 309). `read_session` writes it back as written, the fast reader would
write a re-serialized body (or array read whole) with `Infinity`."""


def read_rows(source: str, data: bytes, format: Format | None) -> HistoryFile | None:
    """The file on the fast reader, or None when `read_session` must read it (structured
    items, and anything the fast reader refuses: `read_session` names the problem). An
    Anthropic file, which only the fast reader knows, reports its own errors here."""
    # byte searches first: the regular expression runs only when a constant is named
    if (b"NaN" in data or b"Infinity" in data) and _CONSTANT.search(data):
        if (format or sniff(data)) != "anthropic":
            return None
        _check_strictly(source, data)
    try:
        hf = read_history(data, format)
    except FormatError as error:
        if (format or sniff(data)) != "anthropic":
            return None
        raise InputError(
            source, error.problem, line=_line(data, error), field=error.field
        ) from None
    # JSON Lines and arrays split into records keep their own bytes; bodies are written again
    again = hf.layout == "body" or not hf.spans
    # a float's marks (byte searches of a copy, digits made 0) before the much slower regex
    if again and {b"0.", b"0e", b"0E"} & hf.number_marks[0] and _HUGE_NUMBER.search(hf.data):
        if hf.format != "anthropic":
            return None
        _check_strictly(source, data)
    return hf


def _check_strictly(source: str, data: bytes) -> None:
    """An Anthropic file (which `read_session` does not read) parsed by the strict reader:
    NaN, Infinity and numbers past a double's range are refused, naming line and field."""
    text = decode(source, data)
    start = skip_space(text, 0)
    lines = enumerate(text.split("\n"), start=1)
    documents = (
        [(None, loads(source, text))]
        if text[start : start + 1] == "[" or "\n" not in text.strip()
        or (text[start : start + 1] == "{" and _is_whole(text))
        else [(n, loads(source, line, line=n)) for n, line in lines if line.strip(" \t\r")]
    )
    for line, document in documents:
        check_value(source, document, line=line)
        stack = [document]
        while stack:
            item = stack.pop()
            if isinstance(item, RawFloat) and math.isinf(item):
                text = item.text
                if len(text) > 40:  # one short line however many digits it has
                    text = f"{text[:12]}...{text[-12:]} ({len(text)} characters)"
                raise InputError(source, f"the number {text} is past a double's range",
                                 line=line)
            if isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)


def _is_whole(text: str) -> bool:
    try:
        loads("", text)
    except InputError:
        return False
    return True


def sniff(data: bytes) -> Format | None:
    """The file's format, or None when it cannot be told (the strict reader names why)."""
    try:
        return sniff_format(data)
    except FormatError:
        return None


def _line(data: bytes, error: FormatError) -> int | None:
    """The line of the error's record (arrays and request bodies name a record index)."""
    if error.line is not None or error.record is None:
        return error.line
    lines = record_lines(data, [error.record])
    return lines.get(error.record) if lines else None


def record_lines(data: bytes, records: Iterable[int]) -> dict[int, int]:
    """The 1-based line each of `records` (record indexes, increasing) starts on, for a JSON
    array or a request body (its `messages`); counted in one pass."""
    try:
        text = data.removeprefix(BOM).decode("utf-8")
        start = skip_space(text, 0)
        if text[start] == "{":
            start = messages_offset(text, start)
        offsets = array_offsets(text, start)
    except (ValueError, IndexError):
        return {}
    wanted = [r for r in records if 0 <= r < len(offsets)]
    return dict(zip(wanted, line_numbers(text, [offsets[r] for r in wanted]), strict=True))


class RowLines(Mapping[int, int]):
    """Row -> the line it starts on, for rows added in increasing order: two integer arrays
    (16 bytes a row), not a dict of a million integer objects."""

    def __init__(self) -> None:
        self.rows: array[int] = array("q")
        self.lines: array[int] = array("q")

    def add(self, row: int, line: int) -> None:
        self.rows.append(row)
        self.lines.append(line)

    def __getitem__(self, row: int) -> int:
        k = bisect_left(self.rows, row)
        if k < len(self.rows) and self.rows[k] == row:
            return self.lines[k]
        raise KeyError(row)

    def __iter__(self) -> Iterator[int]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)


def row_lines(hf: HistoryFile, rows: Iterable[int]) -> RowLines:
    """The line each of `rows` (row indexes, increasing) starts on; an Anthropic body's
    `system` row is on the body's first line."""
    wanted = list(rows)
    lines = RowLines()
    records = [r - hf.system_rows for r in wanted if r >= hf.system_rows]
    for r in wanted:
        if r < hf.system_rows:
            lines.add(r, 1)
    if hf.layout == "jsonl" or hf.spans:
        data, spans, line, last = hf.data, hf.spans, 1, 0
        count, system = data.count, hf.system_rows
        add_row, add_line = lines.rows.append, lines.lines.append
        for record in records:
            offset = spans[2 * record]
            line += count(b"\n", last, offset)
            last = offset
            add_row(record + system)
            add_line(line)
        return lines
    found = record_lines(hf.data, records)
    for record, line in sorted(found.items()):
        lines.add(record + hf.system_rows, line)
    return lines


def file_crumb_error(source: str, hf: HistoryFile) -> InputError:
    """--crumb-present without the breadcrumb right after the leading system rows."""
    slot = hf.prefix_len
    return InputError(
        source,
        "--crumb-present: expected a user message (the breadcrumb slot) right after the "
        "leading system messages",
        line=row_lines(hf, [slot]).get(slot) if slot < len(hf) else None,
        field="content" if slot < len(hf) else None,
    )


def refuse_anthropic_tokenizer(source: str, data: bytes, format: Format | None) -> None:
    """`--tokenizer` counts on `read_session`, which reads histtrim and OpenAI files only."""
    if (format or sniff(data)) == "anthropic":
        raise InputError(
            source,
            "--tokenizer counts histtrim and OpenAI files; an Anthropic request body is "
            "estimated (EST-1) without it",
            field="--tokenizer",
        )


def fast_rows(
    source: str, data: bytes, format: Format | None, tokenizer: str | None
) -> HistoryFile | None:
    """The row file on the fast reader, or None for the session reader: a `--tokenizer` run
    always takes the session reader (which cannot read Anthropic bodies: refused here). A
    file with nothing but whitespace is refused: it holds no messages, not an empty history."""
    if _TEXT.search(data, len(BOM) if data.startswith(BOM) else 0) is None:  # no copy
        raise InputError(source, "empty: no messages")
    if tokenizer is None:
        return read_rows(source, data, format)
    refuse_anthropic_tokenizer(source, data, format)
    return None
