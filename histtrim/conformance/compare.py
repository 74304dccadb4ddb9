"""How an answer is compared with a vector's expected result (the README's "What is
compared"), and the differences a report shows: the differing fields first, and for a list
of rows the positions that differ."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from histtrim.conformance.schema import JSON_TEXT_FIELDS, OPTIONAL_RESULT_FIELDS


def nesting_depth(value: Any, limit: int) -> int:
    """How deeply arrays and objects nest in `value` (a scalar is 0); stops counting past
    `limit`, so the work is bounded by the value's size."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            if depth > limit:
                return deepest
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return deepest


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def same(expected: Any, actual: Any, key: str | None = None) -> bool:
    """JSON equality: object key order is free, a boolean is not a number, 1 == 1.0, and a
    `content` text that parses as a JSON object on both sides is compared as that object
    (histtrim writes a rewritten envelope's keys in their order, another runtime sorted)."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return expected == actual
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(
            same(expected[k], actual[k], k) for k in expected
        )
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(
            same(e, a, key) for e, a in zip(expected, actual, strict=True)
        )
    if type(expected) is type(actual) and expected == actual:
        return True
    if key in JSON_TEXT_FIELDS and isinstance(expected, str) and isinstance(actual, str):
        parsed = _json_object(expected)
        return parsed is not None and same(parsed, _json_object(actual))
    return False


def required_part(function: str, expected: Any, actual: Any) -> Any:
    """The expected result without the optional fields the answer left out."""
    optional = OPTIONAL_RESULT_FIELDS.get(function, ())
    if not isinstance(expected, dict) or not isinstance(actual, dict):
        return expected
    return {k: v for k, v in expected.items() if k in actual or k not in optional}


def judge_result(function: str, expected: Any, actual: Any) -> bool:
    return same(required_part(function, expected, actual), actual)


SHOWN_CHARS = 2000
"""The most of one differing value a report line shows; a longer one is shown around its
first difference."""


def short(value: Any, width: int = 160) -> str:
    """One line of JSON, cut to `width` characters (the report escapes what cannot print)."""
    text = _one_line(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _one_line(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def shown_pair(expected: Any, actual: Any, width: int = SHOWN_CHARS) -> tuple[str, str]:
    """Both sides of a difference as one line of JSON each: whole when they fit `width`,
    else the stretch of `width` characters around their first differing character, so the
    difference itself is always shown."""
    left, right = _one_line(expected), _one_line(actual)
    if len(left) <= width and len(right) <= width:
        return left, right
    first = next((i for i, (a, b) in enumerate(zip(left, right, strict=False)) if a != b),
                 min(len(left), len(right)))
    start = max(0, first - width // 4)

    def cut(text: str) -> str:
        piece = text[start : start + width]
        before = f"...(from character {start}) " if start else ""
        after = f" ...({len(text) - start - width} more characters)" \
            if len(text) > start + width else ""
        return before + piece + after

    return cut(left), cut(right)


def _positions(numbers: Sequence[int], shown: int = 8) -> str:
    text = ", ".join(map(str, numbers[:shown]))
    return text + (f" (+{len(numbers) - shown} more)" if len(numbers) > shown else "")


def differences(function: str, expected: Any, actual: Any, max_lines: int = 12) -> list[str]:
    """What differs, field by field: scalar fields first, then lists (which positions differ,
    and the first differing row on both sides), then nested objects."""
    expected = required_part(function, expected, actual)
    lines: list[str] = []
    _differences("result", expected, actual, None, lines, 0)
    if len(lines) > max_lines:
        lines = [*lines[:max_lines], f"... ({len(lines) - max_lines} more lines)"]
    return lines


def _rank(value: Any) -> int:
    return 2 if isinstance(value, dict) else 1 if isinstance(value, list) else 0


def _differences(path: str, expected: Any, actual: Any, key: str | None,
                 lines: list[str], depth: int) -> None:
    if same(expected, actual, key):
        return
    if isinstance(expected, dict) and isinstance(actual, dict) and depth < 4:
        names = [*expected, *(k for k in actual if k not in expected)]
        names.sort(key=lambda k: _rank(expected.get(k, actual.get(k))))
        for name in names:
            where = f"{path}.{name}"
            if name not in actual:
                shown = short(expected[name], SHOWN_CHARS)
                lines.append(f"{where}: missing (expected {shown})")
            elif name not in expected:
                lines.append(f"{where}: not expected (got {short(actual[name], SHOWN_CHARS)})")
            else:
                _differences(where, expected[name], actual[name], name, lines, depth + 1)
        return
    if isinstance(expected, list) and isinstance(actual, list):
        differ = [i for i in range(max(len(expected), len(actual)))
                  if i >= len(expected) or i >= len(actual) or not same(expected[i], actual[i],
                                                                          key)]
        lines.append(f"{path}: {len(expected)} expected, {len(actual)} got; differ at "
                     f"position{'s' * (len(differ) != 1)} {_positions(differ)}")
        first = differ[0]
        if first < len(expected) and first < len(actual):
            left, right = shown_pair(expected[first], actual[first])
        else:
            left = short(expected[first]) if first < len(expected) else "(none)"
            right = short(actual[first]) if first < len(actual) else "(none)"
        lines += [f"  [{first}] expected {left}", f"  [{first}] got      {right}"]
        return
    left, right = shown_pair(expected, actual)
    lines.append(f"{path}: expected {left}, got {right}")
