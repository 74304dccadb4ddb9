"""EST-1..2, RUN-1..2, LIMIT-2..3, BUDGET-1, PAIR-3, CACHE-1..2: `Policy`, every constant the
spec or the decisions fix, in one frozen model. `Policy()` is the spec; a design review loads
another one ("what if images cost less?") and passes it to the same functions (`policy=`), so
a "what if" run executes the real code paths."""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    field_validator,
)

from histtrim._files import parse_document, read_document

_RATIO_TEXT = re.compile(r"\s*[+-]?\d{1,12}(?:\.\d{1,12})?(?:\s*/\s*\d{1,12})?\s*")
"""A ratio as text: "2/3", "7/10" or "0.7"; at most 12 digits a part and no exponent, so
parsing is bounded ("1e999999999" would build a billion-digit integer)."""


def _fraction(value: Any) -> Fraction:
    """A fraction from text ("2/3", "1/2", "0.7") or a Fraction; floats are rejected because
    0.6667 is not 2/3 and the runtime's arithmetic is exact (`estimate * 2 // 3`)."""
    if isinstance(value, Fraction):
        return value
    if isinstance(value, str):
        if len(value) > 64 or not _RATIO_TEXT.fullmatch(value):
            shown = value if len(value) <= 64 else value[:61] + "..."
            raise ValueError(f"expected a fraction like '2/3' or '0.7', got {shown!r}")
        try:
            return Fraction(value.strip())
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"expected a fraction like '2/3', got {value!r}") from None
    if isinstance(value, int) and not isinstance(value, bool):
        return Fraction(value)
    raise ValueError(
        f"expected a fraction written as text, like '2/3' (a float is inexact), got {value!r}"
    )


Ratio = Annotated[Fraction, BeforeValidator(_fraction), PlainSerializer(str, return_type=str)]
"""A fraction, written "n/d" in TOML/JSON."""

_Count = Annotated[int, Field(strict=True)]


class ToolContext(BaseModel):
    """CTX-1..9: what the request keeps of older tool context. `mode="off"` (the default) sends
    every row; "collapse" is the reference's `keep_tool_context_turns` (CTX-1..5); "clear"
    replaces old tool results by a placeholder and keeps their calls (CTX-6..9), the family of
    Anthropic's `clear_tool_uses`, LangChain's `ClearToolUsesEdit`, the OpenAI Agents
    `ToolOutputTrimmer` and pydantic-ai-harness `ClearToolResults`. A request-time edit:
    nothing stored changes (`histtrim.tool_context`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Literal["off", "collapse", "clear"] = "off"
    keep_turns: _Count = Field(
        default=2, ge=0, description="collapse: completed turns before the running one that "
        "keep their tool rows (`keep_tool_context_turns`; the running turn is never collapsed)."
    )
    keep: _Count = Field(
        default=3, ge=0, description="clear: the newest results (or turns, `keep_unit`) kept."
    )
    keep_unit: Literal["results", "turns"] = "results"
    trigger_tokens: _Count = Field(
        default=100_000, ge=0, description="clear: only a request estimated above this many "
        "tokens clears (0: every request)."
    )
    hold: bool = Field(
        default=False, description="clear: the trigger reads the request as sent with the "
        "clears made so far, replayed over the requests the history records (batched: the "
        "prefix stays byte-stable between clears); False reads the full request at every hop "
        "(the stateless middlewares: once over the trigger, every hop clears again)."
    )
    clear_to: Ratio = Field(
        default=Fraction(0), description="clear: a clear stops once the request fits "
        "`trigger_tokens * clear_to` (a low-water mark); 0 clears every eligible result."
    )
    clear_at_least: _Count = Field(
        default=0, ge=0, description="clear: a clear that frees fewer tokens is not made."
    )
    exclude_tools: tuple[str, ...] = Field(
        default=(), description="clear: results of these tools are never cleared."
    )
    clear_inputs: bool = Field(
        default=False, description="clear: a cleared result's call also loses its arguments."
    )
    clear_text: bool = Field(
        default=False, description="clear: a cleared result's call row also loses the text "
        "the assistant wrote with its calls (CTX-11, beyond every framework we read)."
    )
    drop_cleared: bool = Field(
        default=False, description="clear: a request the fit (CTX-10) leaves over the budget "
        "drops the running turn's oldest cleared exchanges whole, calls and results (CTX-12, "
        "beyond every framework we read)."
    )
    min_chars: _Count = Field(
        default=0, ge=0, description="clear: only results longer than this many characters."
    )
    placeholder: str = Field(default="[cleared]", min_length=1, max_length=200)
    preview_chars: _Count = Field(
        default=0, ge=0, description="clear: characters of the result kept after the "
        "placeholder (a preview)."
    )

    @field_validator("clear_to")
    @classmethod
    def _share(cls, value: Fraction) -> Fraction:
        if not 0 <= value <= 1:
            raise ValueError(f"must be between 0 and 1, got {value}")
        return value


class ColdCache(BaseModel):
    """CACHE-1..3 (beyond the spec and the reference): trim knowing when the provider's prompt
    cache is cold. Off (`lifetime` 0) by default. The caller gives the time (`now`, the last
    request's time); nothing here reads a clock."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    lifetime: _Count = Field(
        default=0, ge=0, le=31_536_000, description="CACHE-1: seconds the provider keeps a "
        "prefix after its last use (Anthropic's 300, or 3,600 bought); a request more than "
        "this after the previous one finds the cache cold. 0: off (the spec)."
    )
    cut_from: Ratio = Field(
        default=Fraction(9, 10), description="CACHE-2: a cold request whose history exceeds "
        "`budget * cut_from` cuts now, down to the low-water mark (`token_trim_target`), "
        "instead of waiting for the budget to force the cut when the cache is warm again."
    )

    target: Ratio | None = Field(
        default=None, description="CACHE-2: the low-water mark a cold cut fits, "
        "`budget * target` (a cold cut costs no extra cache write, so it may go deeper than "
        "a warm one); unset: the policy's `token_trim_target`."
    )

    @field_validator("cut_from", "target")
    @classmethod
    def _share(cls, value: Fraction | None) -> Fraction | None:
        if value is not None and not 0 < value <= 1:
            raise ValueError(f"must be greater than 0 and at most 1, got {value}")
        return value

    def is_cold(self, now: float | None, last: float | None) -> bool:
        """CACHE-1: whether a request at `now` (seconds) after one at `last` finds the cache
        cold: on, both times known, and the gap longer than the lifetime."""
        if not self.lifetime or now is None or last is None:
            return False
        return now - last > self.lifetime

    def cut_tokens(self, budget: int) -> int:
        """CACHE-2: the history size above which a cold request cuts."""
        return budget * self.cut_from.numerator // self.cut_from.denominator

    def fit(self, token_trim_target: Fraction) -> Fraction:
        """CACHE-2: the low-water mark of a cold cut, as a share of the budget."""
        return token_trim_target if self.target is None else self.target

    def cold_trim(
        self, budget: int, token_trim_target: Fraction, now: float | None, last: float | None
    ) -> ColdTrim | None:
        """CACHE-1..2, the one mechanism of every path (Agent, integrations, CLI, review): the
        trim a request at `now` after one at `last` makes when the cache is cold, or None
        (warm, off, no time known, or no budget). The caller runs it only when its history is
        over `budget_tokens` and the budget alone does not force a cut."""
        return self.trim(budget, token_trim_target) if self.is_cold(now, last) else None

    def trim(self, budget: int, token_trim_target: Fraction) -> ColdTrim | None:
        """CACHE-2: the cut of a request known to be cold (None: off, or no budget)."""
        if budget <= 0 or not self.lifetime:
            return None
        share = self.fit(token_trim_target)
        return ColdTrim(self.cut_tokens(budget), min(share / self.cut_from, Fraction(1)), share,
                        self.cut_from)


@dataclass(frozen=True)
class ColdTrim:
    """CACHE-2: a cold request's cut: a history over `budget_tokens` is cut by whole turns to
    `budget_tokens * token_target` (the budget's `share`, the low-water mark)."""

    budget_tokens: int
    token_target: Fraction
    share: Fraction
    cut_from: Fraction
    """A clear's trigger is pulled in by the same share (CTX-6..9 on a cold request)."""


class ColdCuts(NamedTuple):
    """CACHE-2 in a replay: the requests (their `end` rows) made with the prompt cache cold,
    as the caller's clock found them, and the trim each makes (`ColdCache.cold_trim`): a
    cold request whose rows are over `trim.budget_tokens` moves the cut to its low-water
    mark, and a clear policy clears in one batch (`histtrim.tool_context`); both are then
    held."""

    ends: frozenset[int]
    trim: ColdTrim


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
    token_trim_target: Ratio = Field(
        default=Fraction(1),
        description="RUN-1 (a low-water mark, not in the spec): when the history exceeds the "
        "budget, drop whole turns until it fits `budget * numerator // denominator`; the spec "
        "is 1 (trim just to fit). 0 < target <= 1.",
    )
    turn_trim_target: Ratio = Field(
        default=Fraction(1),
        description="LIMIT-1..2 (a low-water mark, not in the spec): when the turn limit is "
        "exceeded, keep `max(1, ceil(max_turns * target))` turns; the spec is 1. "
        "0 < target <= 1.",
    )

    reported_ratio_ceiling: Ratio = Field(
        default=Fraction(8),
        description="USAGE-7 (not in the spec): a usage report above `ceiling * (estimate + "
        "tool schema tokens) + reported_headroom_tokens` is refused with a warning, never "
        "applied. At least 1.",
    )
    reported_headroom_tokens: _Count = Field(
        default=131_072,
        ge=0,
        description="USAGE-7 (not in the spec): what a report may count beyond `ceiling * "
        "estimate`: the client's hidden prefix (system prompt, tool schemas) the rows do "
        "not show.",
    )
    hidden_prefix: Literal["off", "calibrated"] = Field(
        default="off",
        description="USAGE-8 (not in the reference): 'calibrated' splits each report into a "
        "fixed hidden prefix and the rows' part, fitted on the session's reports, and scales "
        "only the rows' part; 'off' is the reference's single ratio.",
    )

    tool_context: ToolContext = Field(
        default_factory=ToolContext,
        description="CTX-1..9 (the reference's newer doc and the field's clearing, not in the "
        "Spanish spec): what each request keeps of older tool context; off by default.",
    )

    cold_cache: ColdCache = Field(
        default_factory=ColdCache,
        description="CACHE-1..3 (beyond the spec and the reference): a cold prompt cache is "
        "the moment to cut deep; off by default.",
    )

    def prices_like(self, other: Policy) -> bool:
        """Whether both price rows alike (EST-1..2: bytes per token, framing, image price):
        a file's columns, priced with the spec's, serve any policy that prices like it."""
        return (self.bytes_per_token, self.frame_tokens, self.image_tokens) == (
            other.bytes_per_token, other.frame_tokens, other.image_tokens
        )

    @field_validator("reactive_target")
    @classmethod
    def _shrinks(cls, value: Fraction) -> Fraction:
        if not 0 < value < 1:
            raise ValueError(f"must be strictly between 0 and 1, got {value}")
        return value

    @field_validator("token_trim_target", "turn_trim_target")
    @classmethod
    def _low_water(cls, value: Fraction) -> Fraction:
        if not 0 < value <= 1:
            raise ValueError(f"must be greater than 0 and at most 1, got {value}")
        return value

    @field_validator("reported_ratio_ceiling")
    @classmethod
    def _ceiling(cls, value: Fraction) -> Fraction:
        if value < 1:
            raise ValueError(f"must be at least 1, got {value}")
        return value

    def report_ceiling(self, estimated: int) -> int:
        """USAGE-7: the largest report a request of `estimated` tokens (estimate units, tool
        schemas included) can plausibly get: `ceiling * estimated + headroom`, rounded down."""
        ratio = self.reported_ratio_ceiling
        return estimated * ratio.numerator // ratio.denominator + self.reported_headroom_tokens

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
        mine, theirs = _flat(self.model_dump(mode="json")), _flat(base.model_dump(mode="json"))
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


def _flat(dump: dict[str, Any]) -> dict[str, Any]:
    """A dump with its nested settings (`tool_context`) spelled `tool_context.mode`."""
    flat: dict[str, Any] = {}
    for key, value in dump.items():
        if isinstance(value, dict):
            flat.update({f"{key}.{k}": v for k, v in value.items()})
        else:
            flat[key] = value
    return flat


def _checked_target(target: object) -> Fraction:
    """A low-water mark passed to a trim: an exact ratio in (0, 1]."""
    if isinstance(target, bool) or not isinstance(target, Fraction | int) or not 0 < target <= 1:
        raise ValueError(f"target: expected a Fraction with 0 < target <= 1, got {target!r}")
    return Fraction(target)


def low_water_tokens(budget: int, target: Fraction) -> int:
    """`budget * target` rounded down: the size a token trim fits the history into."""
    ratio = _checked_target(target)
    return budget * ratio.numerator // ratio.denominator


def low_water_turns(max_turns: int, target: Fraction) -> int:
    """`max(1, ceil(max_turns * target))`: the turns a turn-limit trim keeps."""
    ratio = _checked_target(target)
    return max(1, -(-max_turns * ratio.numerator // ratio.denominator))


SPEC = Policy()
"""The spec's policy: the default of every `policy=` parameter."""
