"""A provider's prompt cache, modelled as data (`CacheModel`, each with its source named), and
what it makes of a session's requests (`price_calls`): for every billed request, the part
read from the cache is the longest common prefix with the previous billed request of the
session (row by row, in estimated tokens, then the provider's minimum and granularity); the
rest is sent uncached and, where the provider charges for it, written to the cache.

Not the spec: review machinery, to measure what trimming costs once a provider caches the
prompt prefix. A pure function of its inputs; what it does not know (real cache lifetimes,
real token counts, routing misses) is listed in docs/decisions.md."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictStr, field_validator

from histtrim._files import parse_document, read_document
from histtrim.policy import Ratio

Block = tuple[Hashable, int]
"""One block of a request, in the order the provider reads it: a key (equal keys: the same
bytes sent) and its estimated tokens. The tool schemas come first, then the rows."""

Prompt = tuple[Block, ...]


class CacheModel(BaseModel):
    """How a provider caches prompt prefixes and prices them, relative to its normal input
    price (1): cached reads cost `read`, uncached tokens of a cacheable request `write`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: StrictStr = Field(min_length=1, max_length=80)
    source: StrictStr = Field(
        min_length=1, max_length=400, description="Where the numbers come from (a URL, a date)."
    )
    min_prefix: int = Field(
        strict=True, ge=0, le=10_000_000,
        description="The smallest prefix the provider caches, in tokens; shorter requests are "
        "neither read from nor written to the cache.",
    )
    granularity: int = Field(
        strict=True, ge=1, le=1_000_000,
        description="Cache hits grow in steps of this many tokens above `min_prefix`.",
    )
    read: Ratio = Field(description="Price of a cached token, relative to normal input.")
    write: Ratio = Field(
        default=Fraction(1),
        description="Price of an uncached token of a cacheable request (a cache write); "
        "1 where writes are free.",
    )
    input_price_per_mtok: Ratio | None = Field(
        default=None, description="Normal input price per million tokens, for costs in money."
    )
    currency: StrictStr = Field(default="USD", min_length=1, max_length=8)

    @field_validator("read")
    @classmethod
    def _discount(cls, value: Fraction) -> Fraction:
        if not 0 <= value <= 1:
            raise ValueError(f"must be between 0 and 1, got {value}")
        return value

    @field_validator("write")
    @classmethod
    def _surcharge(cls, value: Fraction) -> Fraction:
        if not 1 <= value <= 10:
            raise ValueError(f"must be between 1 and 10, got {value}")
        return value

    @field_validator("input_price_per_mtok")
    @classmethod
    def _price(cls, value: Fraction | None) -> Fraction | None:
        if value is not None and not 0 <= value <= 10_000:
            raise ValueError(f"must be between 0 and 10000, got {value}")
        return value

    def cacheable(self, prefix: int) -> int:
        """The part of a common prefix of `prefix` tokens the provider serves from cache."""
        if prefix < self.min_prefix or prefix <= 0:
            return 0
        steps = (prefix - self.min_prefix) // self.granularity
        return self.min_prefix + steps * self.granularity

    @classmethod
    def loads(cls, text: str, *, format: Literal["toml", "json"]) -> CacheModel:
        """Parse a TOML or JSON document; unknown keys and bad values name the field."""
        return cls.model_validate(parse_document(text, format))

    @classmethod
    def load(cls, path: str | Path) -> CacheModel:
        """Load a `.toml` or `.json` file, chosen by its suffix."""
        text, fmt = read_document(path)
        return cls.loads(text, format=fmt)


ANTHROPIC = CacheModel(
    name="anthropic",
    source="docs.anthropic.com/en/docs/build-with-claude/prompt-caching (2025): cache reads "
    "0.1x the base input price, 5-minute cache writes 1.25x (1-hour writes 2x), minimum "
    "1,024 tokens for Sonnet and Opus (2,048 or 4,096 for some models); modelled with a "
    "breakpoint on the last block of every request",
    min_prefix=1024,
    granularity=1,
    read=Fraction(1, 10),
    write=Fraction(5, 4),
)
OPENAI = CacheModel(
    name="openai",
    source="platform.openai.com/docs/guides/prompt-caching and the Prompt Caching 201 "
    "cookbook (2025): automatic for prompts of 1,024 tokens or more, hits in 128-token "
    "increments, no write fee; cached input 0.5x for gpt-4o (0.25x gpt-4.1; 0.1x gpt-5: "
    "`openai-gpt-5`; another model: a file with its number)",
    min_prefix=1024,
    granularity=128,
    read=Fraction(1, 2),
)
OPENAI_GPT5 = CacheModel(
    name="openai-gpt-5",
    source="platform.openai.com/docs/pricing (2025): the same automatic cache as `openai`, "
    "with cached input at 0.1x the input price for the gpt-5 family",
    min_prefix=1024,
    granularity=128,
    read=Fraction(1, 10),
)
GEMINI = CacheModel(
    name="gemini",
    source="ai.google.dev/gemini-api/docs/caching and cloud.google.com Vertex AI context "
    "cache overview (2025): implicit caching on Gemini 2.5 and newer, minimum 2,048 tokens "
    "for 2.5 Flash and Pro (4,096 for Gemini 3), no write fee, cached tokens discounted 90% "
    "(0.1x; 75% when implicit caching launched)",
    min_prefix=2048,
    granularity=1,
    read=Fraction(1, 10),
)
PROVIDERS: dict[str, CacheModel] = {
    m.name: m for m in (ANTHROPIC, OPENAI, OPENAI_GPT5, GEMINI)
}
"""The built-in models, by the name `--cache` takes."""


def cache_model(name_or_path: str) -> CacheModel:
    """A built-in model by name, else a `.toml`/`.json` file of the user's own numbers."""
    if name_or_path in PROVIDERS:
        return PROVIDERS[name_or_path]
    return CacheModel.load(name_or_path)


@dataclass(frozen=True)
class CachedCall:
    """One billed request as the cache model prices it (tokens are estimates)."""

    tokens: int
    cached: int
    """Read from the cache."""
    written: int
    """Uncached tokens written to the cache (0 when the request is below the minimum)."""
    cost: Fraction
    """In input-token equivalents: what the request costs at the normal input price."""

    @property
    def uncached(self) -> int:
        return self.tokens - self.cached


def common_prefix(previous: Prompt, current: Prompt) -> int:
    """The tokens of the longest run of equal leading blocks (equal key and size)."""
    tokens = 0
    for mine, theirs in zip(previous, current, strict=False):
        if mine != theirs:
            break
        tokens += theirs[1]
    return tokens


def price_call(previous: Prompt | None, current: Prompt, model: CacheModel) -> CachedCall:
    """One request after `previous` (None: nothing in the cache yet)."""
    tokens = sum(size for _, size in current)
    prefix = 0 if previous is None else common_prefix(previous, current)
    cached = model.cacheable(prefix)
    uncached = tokens - cached
    written = uncached if tokens >= model.min_prefix and tokens > 0 else 0
    cost = cached * model.read + written * model.write + (uncached - written)
    return CachedCall(tokens, cached, written, Fraction(cost))


def price_calls(prompts: Sequence[Prompt], model: CacheModel) -> list[CachedCall]:
    """Every billed request of one session, in order: each is matched against the one
    before it (the agent loop's calls are seconds apart: the cache is assumed warm)."""
    calls: list[CachedCall] = []
    previous: Prompt | None = None
    for prompt in prompts:
        calls.append(price_call(previous, prompt, model))
        previous = prompt
    return calls


@dataclass(frozen=True)
class CacheTotals:
    """A set of billed requests summed: what the cache saved."""

    calls: int
    tokens: int
    cached: int
    written: int
    cost: Fraction
    """Input-token equivalents."""

    @property
    def cached_share(self) -> float:
        return self.cached / self.tokens if self.tokens else 0.0

    @property
    def relative_cost(self) -> float:
        """The input cost with the cache, relative to the same requests with none."""
        return float(self.cost / self.tokens) if self.tokens else 0.0

    def money(self, model: CacheModel) -> float | None:
        """The input cost in the model's currency, when it has a price."""
        price = model.input_price_per_mtok
        return None if price is None else float(self.cost * price / 1_000_000)


def totals(calls: Sequence[CachedCall]) -> CacheTotals:
    return CacheTotals(
        len(calls),
        sum(c.tokens for c in calls),
        sum(c.cached for c in calls),
        sum(c.written for c in calls),
        sum((c.cost for c in calls), Fraction(0)),
    )
