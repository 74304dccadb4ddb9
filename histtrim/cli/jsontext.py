"""Strict JSON text for the `histtrim` command: files read as bytes (`-` is stdin, a UTF-8
BOM is accepted), parsed with clear one-line errors, every value checked before anything is
written, and output that is always standard JSON."""

from __future__ import annotations

import json
import sys
from typing import Any

from histtrim.adapters.numbers import keep_float, keep_int
from histtrim.cli.errors import InputError

STDIN = "-"
BOM = b"\xef\xbb\xbf"
MAX_INT_DIGITS = 4300
"""Python's default limit for int <-> text conversion: longer integers are refused."""


class _Refused:
    """A parsed value histtrim refuses: a NaN/Infinity constant or an over-long integer."""

    def __init__(self, problem: str) -> None:
        self.problem = problem


def _parse_int(text: str) -> int | _Refused:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        return _Refused(f"an integer of {digits} digits (the limit is {MAX_INT_DIGITS})")
    return keep_int(text)


def _parse_constant(name: str) -> _Refused:
    return _Refused(f"{name} is not standard JSON")


DECODER = json.JSONDecoder(
    parse_float=keep_float, parse_int=_parse_int, parse_constant=_parse_constant
)
"""The decoder sessions are read with: what it refuses, `check_value` reports."""
CONFIG_DECODER = json.JSONDecoder(parse_int=_parse_int)
"""Configs are never written back: NaN or Infinity is a ratio treated as unset (BUDGET-4)."""


def display_name(path: str) -> str:
    return "<stdin>" if path == STDIN else path


def read_bytes(path: str) -> bytes:
    """The file's bytes, or stdin's for `-`."""
    if path == STDIN:
        return sys.stdin.buffer.read()
    try:
        with open(path, "rb") as file:
            return file.read()
    except OSError as error:
        raise InputError(path, f"cannot read: {error.strerror or error}") from None


def decode(source: str, data: bytes) -> str:
    """UTF-8 text without its byte order mark, if it has one."""
    try:
        return data.removeprefix(BOM).decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(source, "not UTF-8 text") from None


def loads(
    source: str, text: str, *, line: int | None = None, decoder: json.JSONDecoder = DECODER
) -> Any:
    """Parse one JSON document; every failure is an `InputError` (never a traceback)."""
    try:
        return decoder.decode(text)
    except json.JSONDecodeError as error:
        where = error.lineno if line is None else line + error.lineno - 1
        raise InputError(
            source, f"invalid JSON: {error.msg} (column {error.colno})", line=where
        ) from None
    except RecursionError:
        raise InputError(source, "JSON nested too deeply", line=line) from None


def check_value(source: str, value: Any, *, line: int | None, field: str = "") -> None:
    """Refuse what cannot be written back as standard UTF-8 JSON: a lone surrogate (in a
    key or a string), a NaN/Infinity constant, an over-long integer. Iterative: any depth."""
    stack: list[tuple[str, Any]] = [(field, value)]
    while stack:
        where, item = stack.pop()
        problem: str | None = None
        if isinstance(item, str):
            problem = _text_problem(item)
        elif isinstance(item, _Refused):
            problem = item.problem
        elif isinstance(item, dict):
            for key, child in item.items():
                if (problem := _text_problem(key)) is not None:
                    where = f"{where}.{key!a}" if where else ascii(key)
                    break
                stack.append((f"{where}.{key}" if where else key, child))
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", child) for i, child in enumerate(item))
        if problem is not None:
            raise InputError(source, problem, line=line, field=where or None)


def _text_problem(text: str) -> str | None:
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return f"a lone surrogate ({text[error.start]!a}) is not Unicode text"
    return None
