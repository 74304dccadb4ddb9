"""Argument checks shared by the trims, the ledger and the helpers around them."""

from __future__ import annotations

import operator


def _integer(value: object) -> int | None:
    """`value` as an int when it is an integer (numpy integers included); a bool is not."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float | complex | str | bytes):
        return None
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return None


def non_negative(name: str, value: object) -> int:
    """`value` as an int when it is an integer >= 0 (numpy integers too; a bool is not);
    else ValueError naming `name`."""
    number = _integer(value)
    if number is None:
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if number < 0:
        raise ValueError(f"{name} must be >= 0, got {number}")
    return number


def integer_in(name: str, value: object, low: int, high: int) -> int:
    """`value` as an int when it is an integer in `low..high`, both included (a bool is not);
    else ValueError naming `name` and the range."""
    number = _integer(value)
    if number is None or not low <= number <= high:
        raise ValueError(f"{name} must be an integer in {low}..{high}, got {value!r}")
    return number


def flag(name: str, value: object) -> bool:
    """`value` when it is a bool (a strict flag: "no", 1 or None are mistakes); else
    ValueError naming `name`."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be a bool (True or False), got {value!r}")
    return value
