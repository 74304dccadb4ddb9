"""A source case: one protocol call and the rule IDs it checks, before its expected result
is computed by the reference."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Case:
    """`source` says where the call comes from (a notebook cell, a generator, a hostile row)."""

    source: str
    rules: tuple[str, ...]
    function: str
    history: list[Any] | None
    arguments: dict[str, Any]
