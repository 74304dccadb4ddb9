"""Argument checks shared by the trims, the ledger and the helpers around them."""

from __future__ import annotations


def non_negative(name: str, value: object) -> int:
    """`value` when it is an int >= 0 (a bool is not); else ValueError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return value


def integer_in(name: str, value: object, low: int, high: int) -> int:
    """`value` when it is an int in `low..high`, both included (a bool is not); else
    ValueError naming `name` and the range."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer in {low}..{high}, got {value!r}")
    return value
