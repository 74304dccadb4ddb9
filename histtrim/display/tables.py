"""Plain-text tables that also render as HTML tables (in Jupyter and on the spec site):
what the notebooks print, the CLI's and the review's tables."""

from __future__ import annotations

import html
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import fields
from typing import TYPE_CHECKING

from histtrim.display.columns import display_width, pad

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


def _cell(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "-"
    return str(value)


_NUM = ' class="num"'


class Table(str):
    """A table as aligned plain text (the `str` itself, what nbval and terminals read) that
    also renders as an HTML table in Jupyter and on the spec site: cells stay aligned whatever
    the font, emoji included."""

    headers: tuple[str, ...]
    cells: tuple[tuple[str, ...], ...]
    numeric: tuple[bool, ...]

    def __new__(
        cls, text: str, headers: Sequence[str], cells: Sequence[Sequence[str]],
        numeric: Sequence[bool],
    ) -> Table:
        table = super().__new__(cls, text)
        table.headers = tuple(headers)
        table.cells = tuple(tuple(row) for row in cells)
        table.numeric = tuple(numeric)
        return table

    def _repr_html_(self) -> str:
        def row(tag: str, values: Sequence[str]) -> str:
            return "<tr>" + "".join(
                f"<{tag}{_NUM if num else ''}>{html.escape(v)}</{tag}>"
                for v, num in zip(values, self.numeric, strict=True)
            ) + "</tr>"

        body = "\n".join(row("td", r) for r in self.cells)
        return (f'<table class="histtrim-table">\n<thead>{row("th", self.headers)}</thead>\n'
                f"<tbody>\n{body}\n</tbody>\n</table>")


def text_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> Table:
    """A table: numeric columns right-aligned, text left-aligned, `-` for None, aligned by
    display width (a CJK character or an emoji takes two columns). Its text is the
    plain-text rendering; in Jupyter `print_block` shows it as an HTML table."""
    raw = [list(row) for row in rows]
    cells = [[_cell(v) for v in row] for row in raw]
    numeric = [
        any(_is_number(row[c]) for row in raw)
        and all(_is_number(row[c]) or row[c] is None for row in raw)
        for c in range(len(headers))
    ]
    widths = [max([display_width(h), *(display_width(row[c]) for row in cells)])
              for c, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        parts = [pad(v, w, right=num) for v, w, num in zip(values, widths, numeric, strict=True)]
        return "  ".join(parts).rstrip()

    text = "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, cells)])
    return Table(text, headers, cells, numeric)


def fields_table(headers: Sequence[str], rows: Iterable[DataclassInstance]) -> Table:
    """`text_table` of dataclass rows: one column per field, in field order."""
    return text_table(headers, [[getattr(row, f.name) for f in fields(row)] for row in rows])


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_INVISIBLE = ("Cc", "Cf", "Zl", "Zp")
"""Controls, format characters (bidirectional overrides included) and line separators."""


def escape_controls(text: str) -> str:
    """`text` for a terminal line: every control, format or line-separator character shown as
    its escape (`\\x1b`, `\\n`, `\\u202e`), so text from a config never moves the cursor,
    recolours the terminal or starts a line of its own."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(
        ascii(char)[1:-1] if unicodedata.category(char) in _INVISIBLE else char for char in text
    )
