"""EST-1..2, RUN-2, LIMIT-2..3, BUDGET-1, PAIR-3: `Policy`, every constant the spec or the
decisions fix, in one frozen model. `Policy()` is the spec; a design review loads another one
("what if images cost less?") and passes it to the same functions (`policy=`), so a "what if"
run executes the real code paths."""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    field_validator,
)

from histtrim._files import parse_document, read_document

_RATIO_TEXT = re.compile(
    r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?[0-9]+))?(?:/[0-9]+)?"
)
_RATIO_CHARS = 64
_RATIO_EXPONENT = 40
_RATIO_TERM = 2**64 - 1
"""A ratio's numerator and denominator each fit in 64 bits (so every tool, and the reference's
integer arithmetic, can carry it exactly)."""


def _fraction(value: Any) -> Fraction:
    """A fraction from text ("2/3", "1/2") or a Fraction; floats are rejected because
    0.6667 is not 2/3 and the runtime's arithmetic is exact (`estimate * 2 // 3`).

    Text is checked before `Fraction` reads it (a huge exponent, as in "1e-999999999", would
    make it build a power of ten of that many digits), and a value whose numerator or
    denominator does not fit in 64 bits is refused."""
    fraction: Fraction
    if isinstance(value, str):
        text = value.strip()
        found = _RATIO_TEXT.fullmatch(text) if len(text) <= _RATIO_CHARS else None
        exponent = found.group(1) if found is not None else None
        if found is None:
            raise ValueError(f"expected a fraction like '2/3', got {_shown(value)}")
        if exponent is not None and abs(int(exponent)) > _RATIO_EXPONENT:
            raise ValueError(f"{_shown(value)} cannot be represented: its exponent is too large")
        try:
            fraction = Fraction(text)
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"expected a fraction like '2/3', got {_shown(value)}") from None
    elif isinstance(value, int) and not isinstance(value, bool):
        fraction = Fraction(value)
    elif isinstance(value, Fraction):
        fraction = value
    else:
        raise ValueError(
            f"expected a fraction written as text, like '2/3' (a float is inexact), "
            f"got {_shown(value)}"
        )
    if abs(fraction.numerator) > _RATIO_TERM or fraction.denominator > _RATIO_TERM:
        raise ValueError(
            f"{_shown(str(fraction))} cannot be represented: numerator and denominator must each "
            "fit in 64 bits"
        )
    return fraction


def _shown(value: Any) -> str:
    """A value in an error message, cut to a readable length."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


Ratio = Annotated[Fraction, BeforeValidator(_fraction), PlainSerializer(str, return_type=str)]
"""A fraction, written "n/d" in TOML/JSON."""

_Count = Annotated[int, Field(strict=True)]


class Policy(BaseModel):
    """The spec's numbers; `Policy()` reproduces the spec exactly (EST-1, EST-2, RUN-2,
    LIMIT-2, LIMIT-3, BUDGET-1, PAIR-3)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    bytes_per_token: _Count = Field(
        default=4, ge=1, description="EST-1: a text costs ceil(UTF-8 bytes / this)."
    )
    frame_tokens: _Count = Field(
        default=4, ge=0, description="EST-1: framing tokens added to every message."
    )
    image_tokens: _Count = Field(
        default=1600, ge=0, description="EST-2: the fixed price of one dispatched image."
    )
    reactive_target: Ratio = Field(
        default=Fraction(2, 3),
        description="RUN-2: after a provider overflow the history is trimmed to "
        "`estimate * numerator // denominator`; strictly between 0 and 1.",
    )
    default_max_history_turns: _Count = Field(
        default=50, ge=0, description="LIMIT-2: the turn limit when max_history_messages is unset."
    )
    fallback_context_tokens: _Count = Field(
        default=32_000,
        ge=1,
        description="BUDGET-1/3/8: the historical budget and the window of an unknown capacity.",
    )
    max_tool_result_chars: _Count = Field(
        default=50_000,
        ge=0,
        description="PAIR-3: the per-result cap when the runtime profile sets none; 0 is off.",
    )
    tool_result_head: Ratio = Field(
        default=Fraction(2, 3),
        description="PAIR-3: the share of the cap kept from the start of an over-long result "
        "(`cap * numerator // denominator`); the rest is kept from its end.",
    )
    channel_cache_rows: _Count = Field(
        default=50, ge=1, description="LIMIT-3: the channel sender cache size when 0 is configured."
    )

    @field_validator("reactive_target")
    @classmethod
    def _shrinks(cls, value: Fraction) -> Fraction:
        if not 0 < value < 1:
            raise ValueError(f"must be strictly between 0 and 1, got {value}")
        return value

    @field_validator("tool_result_head")
    @classmethod
    def _share(cls, value: Fraction) -> Fraction:
        if not 0 <= value <= 1:
            raise ValueError(f"must be between 0 and 1, got {value}")
        return value

    def reactive_tokens(self, estimate: int) -> int:
        """The reactive trim target for an estimate (RUN-2): exact integer arithmetic, never
        below 1 token (a budget of 0 means "no trim", so a small ratio on a small estimate
        would otherwise turn the trim off and every retry would overflow again)."""
        ratio = self.reactive_target
        return max(1, estimate * ratio.numerator // ratio.denominator)

    def tool_result_split(self, max_chars: int) -> tuple[int, int]:
        """The (head, tail) characters kept of an over-long tool result (PAIR-3)."""
        share = self.tool_result_head
        head = max_chars * share.numerator // share.denominator
        return head, max_chars - head

    def changes(self, base: Policy | None = None) -> dict[str, str]:
        """The fields that differ from `base` (the spec by default), as text: `old -> new`."""
        base = SPEC if base is None else base
        mine, theirs = self.model_dump(mode="json"), base.model_dump(mode="json")
        return {k: f"{theirs[k]} -> {v}" for k, v in mine.items() if theirs[k] != v}

    @classmethod
    def loads(cls, text: str, *, format: Literal["toml", "json"]) -> Policy:
        """Parse a TOML or JSON document; unknown keys and bad values name the field."""
        return cls.model_validate(parse_document(text, format))

    @classmethod
    def load(cls, path: str | Path) -> Policy:
        """Load a `.toml` or `.json` file, chosen by its suffix."""
        text, fmt = read_document(path)
        return cls.loads(text, format=fmt)



SPEC = Policy()
"""The spec's policy: the default of every `policy=` parameter."""
