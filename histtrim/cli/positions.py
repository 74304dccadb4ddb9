"""Where each record of a session file starts: offsets into valid JSON, turned into line
numbers, so bad input can name its line."""

from __future__ import annotations

from collections.abc import Sequence

from histtrim.cli.jsontext import DECODER


def skip_space(text: str, pos: int) -> int:
    """The offset of the first non-blank character at or after `pos`."""
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def array_offsets(text: str, pos: int) -> list[int]:
    """Start offsets of the elements of the (valid) JSON array whose `[` is at `pos`."""
    decoder, offsets = DECODER, list[int]()
    pos = skip_space(text, pos + 1)
    if text[pos] == "]":
        return offsets
    while True:
        offsets.append(pos)
        _, pos = decoder.raw_decode(text, pos)
        pos = skip_space(text, pos)
        if text[pos] == "]":
            return offsets
        pos = skip_space(text, pos + 1)  # the comma


def messages_offset(text: str, pos: int) -> int:
    """Offset of the `messages` array of the (valid) JSON object whose `{` is at `pos`."""
    decoder = DECODER
    pos = skip_space(text, pos + 1)
    found = -1
    while text[pos] != "}":
        key, pos = decoder.raw_decode(text, pos)
        pos = skip_space(text, skip_space(text, pos) + 1)  # past the colon
        if key == "messages":
            found = pos
        _, pos = decoder.raw_decode(text, pos)
        pos = skip_space(text, pos)
        if text[pos] == ",":
            pos = skip_space(text, pos + 1)
    return found


def line_numbers(text: str, offsets: Sequence[int]) -> list[int]:
    """The 1-based line of each offset (offsets in increasing order)."""
    lines, line, last = [], 1, 0
    for offset in offsets:
        line += text.count("\n", last, offset)
        last = offset
        lines.append(line)
    return lines
