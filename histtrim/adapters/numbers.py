"""JSON numbers kept as written: a record histtrim writes again (a request body re-indented, a
session read whole, a cleared or collapsed record's untouched fields) keeps every number's
text, as a kept record's bytes do. A double cannot: `1e-400` and `0.000…1` read as `0.0`,
`2.5e-324` as `5e-324`, `1e5` as `100000.0`, and the integer `-0` as `0`."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from typing import Any


class RawFloat(float):
    """A float parsed from text it does not write back as (`1e-400`, `1.0e5`, `1e400`), kept
    with that text: `dumps_kept` writes the text."""

    text: str

    def __new__(cls, text: str) -> RawFloat:
        value = super().__new__(cls, text)
        value.text = text
        return value


class RawInt(int):
    """An integer parsed from text it does not write back as (`-0`), kept with that text."""

    text: str

    def __new__(cls, text: str) -> RawInt:
        value = super().__new__(cls, text)
        value.text = text
        return value


def keep_float(text: str) -> float:
    """A JSON number with a fraction or an exponent: a float, or a `RawFloat` when the float
    would be written otherwise."""
    value = float(text)
    return value if repr(value) == text else RawFloat(text)


def keep_int(text: str) -> int:
    """A JSON integer: an int, or a `RawInt` for `-0` (the one integer text `int` changes)."""
    return RawInt(text) if text == "-0" else int(text)


KEEPING = json.JSONDecoder(parse_float=keep_float, parse_int=keep_int)
"""A decoder whose numbers `dumps_kept` writes back as written."""


def dumps_kept(value: Any, dump: Callable[[Any], str]) -> str:
    """`dump(value)` (a `json.dumps`), with every `RawFloat` and `RawInt` written as the
    text it was read from.

    Each such number is dumped as a placeholder string (a random token and its index) and the
    placeholders are swapped back in one pass over the output (a `str.replace` per number was
    quadratic: 67 s for a 960 KB file of them)."""
    raw: list[str] = []
    token = uuid.uuid4().hex

    def swap(item: Any) -> Any:
        if type(item) is RawFloat or type(item) is RawInt:
            raw.append(item.text)
            return f"{token}:{len(raw) - 1}"
        if isinstance(item, dict):
            return {k: swap(v) for k, v in item.items()}
        if isinstance(item, list):
            return [swap(v) for v in item]
        return item

    text = dump(swap(value))
    if not raw:
        return text
    placeholder = re.compile(f'"{token}:([0-9]+)"')
    return placeholder.sub(lambda found: raw[int(found.group(1))], text)
