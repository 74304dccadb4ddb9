"""Text shaped for a column of a fixed width, measured in display columns (what a terminal
or a monospace font shows), not in characters: a wide character (East Asian Width W or F, an
emoji) takes two columns, a combining mark none. Every printed table, summary and message of
the display goes through here, so a CJK or emoji line is cut and aligned where it is seen."""

from __future__ import annotations

import unicodedata

COLUMNS = 100
"""The column the notebooks' and the CLI's text is shaped for: at a 1280px-wide window a
line this wide fits the spec site's output box, and it fits a Jupyter output area."""

HANG = "  ↪ "
"""What starts each continuation of a broken line (after the line's own indent)."""

_ZERO = {"\u200b", "\u200c", "\u200d", "\u2060", "\ufeff"}
_EMOJI_SELECTOR = "\ufe0f"  # VS16: the character before it is shown as an emoji (2 columns)


def char_width(char: str) -> int:
    """The display columns of one character: 2 for wide (W, F), 0 for combining marks,
    joiners and variation selectors and other invisible format characters, else 1."""
    if char in _ZERO or unicodedata.combining(char) or "\ufe00" <= char <= "\ufe0f":
        return 0
    category = unicodedata.category(char)
    if category in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def display_width(text: str) -> int:
    """The display columns of one line of text (an emoji variation selector widens the
    character before it to two columns)."""
    total = 0
    previous = 0
    for char in text:
        if char == _EMOJI_SELECTOR and previous == 1:
            total += 1
            previous = 2
            continue
        previous = char_width(char)
        total += previous
    return total


def _widths(text: str) -> list[int]:
    """The display columns of each character of `text` (a selector's are its base's)."""
    out: list[int] = []
    for char in text:
        if char == _EMOJI_SELECTOR and out and out[-1] == 1:
            out[-1] = 2
            out.append(0)
        else:
            out.append(char_width(char))
    return out


def _cut(widths: list[int], start: int, room: int) -> int:
    """The end of the longest run from `start` that fits `room` columns (a character and
    the zero-width marks after it stay together)."""
    used = 0
    end = start
    while end < len(widths) and used + widths[end] <= room:
        used += widths[end]
        end += 1
    return end


def truncate(text: str, width: int) -> str:
    """`text` cut to at most `width` display columns, ending in `…` when cut."""
    if display_width(text) <= width:
        return text
    widths = _widths(text)
    return text[: _cut(widths, 0, width - 1)] + "…"


def pad(text: str, width: int, *, right: bool = False) -> str:
    """`text` padded with spaces to `width` display columns (right-aligned if `right`)."""
    fill = " " * max(0, width - display_width(text))
    return fill + text if right else text + fill


def fold(text: str, width: int = COLUMNS) -> str:
    """Each line of `text` longer than `width` columns broken into lines that fit: at a
    space, else after a comma (compact JSON), else inside a word. Every continuation starts
    with the line's own indent and `HANG`, so a reader sees it continues the line above."""
    return "\n".join(_fold_line(line, width) for line in text.split("\n"))


_AFTER = frozenset(",;")  # a line may also break after these (compact JSON has no spaces)


def _break(line: str, low: int, end: int) -> int:
    """Where to end a piece that must end by `end`: at the last space (dropped) or after the
    last comma or semicolon, at or after `low`; else at `end` itself (inside a word)."""
    for position in range(end, low - 1, -1):
        if line[position] == " " or line[position - 1] in _AFTER:
            return position
    return max(end, low)


def _fold_line(line: str, width: int) -> str:
    widths = _widths(line)
    if sum(widths) <= width:
        return line
    indent = line[: len(line) - len(line.lstrip(" "))]
    prefix = indent + HANG if display_width(indent + HANG) <= width // 2 else HANG
    room = width - display_width(prefix)
    pieces: list[str] = []
    start = 0
    while start < len(line):
        end = _cut(widths, start, width if not pieces else room)
        if end < len(line):
            end = _break(line, start + (1 if pieces else len(indent) + 1), end)
        piece = line[start:end].rstrip(" ")
        pieces.append(piece if not pieces else prefix + piece)
        start = end
        while start < len(line) and line[start] == " ":
            start += 1
    return "\n".join(pieces)
