"""A provider's prompt cache, modelled as data (`CacheModel`, each with its source named), and
what it makes of a session's requests (`price_calls`): for every billed request, the part
read from the cache is the longest common prefix with the previous billed request of the
session (row by row, in estimated tokens, then the provider's minimum and granularity) that
is still alive at the request's time (the model's `lifetime`, renewed on a hit where the
provider renews it); the rest is sent uncached and, where the provider charges for it,
written to the cache.

Not the spec: review machinery, to measure what trimming costs once a provider caches the
prompt prefix. A pure function of its inputs (times are given, never read); what it does not
know (real token counts, which replica a request reaches) is listed in docs/decisions.md."""

from __future__ import annotations

import math
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
        min_length=1, max_length=800, description="Where the numbers come from (a URL, a date)."
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
    lifetime: int | None = Field(
        default=None, strict=True, ge=1, le=31_536_000,
        description="Seconds a cached prefix lives after it was written (or last read, with "
        "`renew_on_hit`); a request after a longer gap reads nothing of it. Unset: it never "
        "expires (every request is assumed to come while the cache is warm).",
    )
    renew_on_hit: bool = Field(
        default=True, description="A read restarts the prefix's lifetime (Anthropic, and "
        "OpenAI's inactivity timeout); False: it dies `lifetime` after it was written.",
    )
    hit_rate: Ratio = Field(
        default=Fraction(1),
        description="The expected share of a live cached prefix the provider really serves: 1 "
        "where a hit is guaranteed; below 1 for a best-effort cache (requests that reach a "
        "replica without the prefix), as measured on recorded sessions.",
    )
    eviction: StrictStr = Field(
        default="", max_length=400,
        description="What the provider says about when a prefix is dropped besides `lifetime`.",
    )
    input_price_per_mtok: Ratio | None = Field(
        default=None, description="Normal input price per million tokens, for costs in money."
    )
    currency: StrictStr = Field(default="USD", min_length=1, max_length=8)

    @field_validator("read", "hit_rate")
    @classmethod
    def _share(cls, value: Fraction) -> Fraction:
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


_ANTHROPIC_DOCS = (
    "docs.anthropic.com/en/docs/build-with-claude/prompt-caching (2025; as quoted by "
    "portkey.ai/docs/integrations/llms/anthropic/prompt-caching): cache reads 0.1x the base "
    "input price, minimum 1,024 tokens for Sonnet and Opus (2,048 or 4,096 for some models); "
    "modelled with a breakpoint on the last block of every request"
)
ANTHROPIC = CacheModel(
    name="anthropic",
    source=_ANTHROPIC_DOCS + "; the default 5-minute lifetime, refreshed each time the "
    "cached content is used, written at 1.25x",
    min_prefix=1024,
    granularity=1,
    read=Fraction(1, 10),
    write=Fraction(5, 4),
    lifetime=300,
    eviction="none documented before the lifetime ends",
)
ANTHROPIC_1H = CacheModel.model_validate({
    **dict(ANTHROPIC),
    "name": "anthropic-1h",
    "source": _ANTHROPIC_DOCS + "; the 1-hour lifetime (`cache_control.ttl` \"1h\"), also "
    "refreshed on use, written at 2x",
    "write": Fraction(2),
    "lifetime": 3600,
})
"""The 5-minute model with the lifetime bought at twice the write price."""
_OPENAI_DOCS = (
    "platform.openai.com/docs/guides/prompt-caching (developers.openai.com, 2025) and "
    "learn.microsoft.com/azure/foundry/openai/how-to/prompt-caching: automatic for prompts of "
    "1,024 tokens or more, hits in 128-token increments, no write fee; the in-memory cache "
    "is cleared after 5 to 10 minutes of inactivity (modelled: 5), always within an hour"
)
OPENAI = CacheModel(
    name="openai",
    source=_OPENAI_DOCS + "; cached input 0.5x for gpt-4o (0.25x gpt-4.1; 0.1x gpt-5: "
    "`openai-gpt-5`; another model: a file with its number)",
    min_prefix=1024,
    granularity=128,
    read=Fraction(1, 2),
    lifetime=300,
    eviction="always within one hour of the last use; `prompt_cache_retention` \"24h\" "
    "keeps it up to 24 hours",
)
OPENAI_GPT5 = CacheModel(
    name="openai-gpt-5",
    source=_OPENAI_DOCS + "; platform.openai.com/docs/pricing (2025): cached input 0.1x for "
    "the gpt-5 family",
    min_prefix=1024,
    granularity=128,
    read=Fraction(1, 10),
    lifetime=300,
    eviction="always within one hour of the last use; `prompt_cache_retention` \"24h\" "
    "keeps it up to 24 hours",
)
GEMINI = CacheModel(
    name="gemini",
    source="ai.google.dev/gemini-api/docs/caching and cloud.google.com Vertex AI context "
    "cache overview (2025): implicit caching on Gemini 2.5 and newer, \"no cost saving "
    "guarantee\", minimum 2,048 tokens for 2.5 Flash and Pro (4,096 for Gemini 3 in the "
    "docs), no write fee, cached tokens discounted 90% (0.1x); lifetime: the explicit "
    "cache's default of 60 minutes. Measured on the recorded mini-swe-agent runs of Gemini "
    "3 Pro (bench/cache_calibration.py, the tuned half): hits in steps of about 2,048 "
    "tokens from 2,048, and 0.95 of a live prefix served",
    min_prefix=2048,
    granularity=2048,
    read=Fraction(1, 10),
    lifetime=3600,
    hit_rate=Fraction(95, 100),
    eviction="implicit: best effort, in memory while capacity lasts, then in durable "
    "storage; every prefix expires within 24 hours of its creation",
)
PROVIDERS: dict[str, CacheModel] = {
    m.name: m for m in (ANTHROPIC, ANTHROPIC_1H, OPENAI, OPENAI_GPT5, GEMINI)
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
    """One request after `previous` (None: nothing in the cache yet), the cache warm."""
    prefix = 0 if previous is None else common_prefix(previous, current)
    return _priced(current, prefix, model)


def _priced(current: Prompt, prefix: int, model: CacheModel) -> CachedCall:
    """`current` with `prefix` of its leading tokens alive in the cache."""
    tokens = sum(size for _, size in current)
    cached = model.cacheable(prefix)
    if model.hit_rate != 1:
        cached = int(cached * model.hit_rate)
    uncached = tokens - cached
    written = uncached if tokens >= model.min_prefix and tokens > 0 else 0
    cost = cached * model.read + written * model.write + (uncached - written)
    return CachedCall(tokens, cached, written, Fraction(cost))


def price_calls(
    prompts: Sequence[Prompt],
    model: CacheModel,
    times: Sequence[float | None] | None = None,
    *,
    warm: int = 0,
    lifetimes: Sequence[int | None] | None = None,
) -> list[CachedCall]:
    """Every billed request of one session, in order, each matched against the one before
    it. `times` (seconds, one per request; None where unknown) age the cache: a block read
    more than its lifetime after it was written (or last read, with `renew_on_hit`) is gone,
    and so is every block after it. A block lives the model's `lifetime`, or the one
    `lifetimes` names for the request that wrote it (or, renewing, last read it: a client
    that buys an hour for some requests). Without times, or without a lifetime, the cache is
    always warm. The first `warm` blocks of every request are what other sessions keep warm
    (a client's system prompt and tool schemas, where the records show them read on a cold
    call): read whenever they match the first request's, cold cache or first call alike."""
    for name, given in (("times", times), ("lifetimes", lifetimes)):
        if given is not None and len(given) != len(prompts):
            raise ValueError(
                f"{name}: expected {len(prompts)} (one per request), got {len(given)}")
    if warm < 0:
        raise ValueError(f"warm: expected a count of blocks >= 0, got {warm}")
    calls: list[CachedCall] = []
    previous: Prompt = ()
    ages: list[tuple[float | None, int | None]] = []  # each block's (last touched, lifetime)
    shared: Prompt = ()
    last: float | None = None
    for at, prompt in enumerate(prompts):
        now = None if times is None else times[at]
        if now is not None:
            if not math.isfinite(now):
                raise ValueError(f"times[{at}]: expected a finite number of seconds, got {now}")
            if last is not None and now < last:
                raise ValueError(f"times[{at}]: {now} is before the request before it ({last})")
            last = now
        life = model.lifetime if lifetimes is None or lifetimes[at] is None else lifetimes[at]
        tokens, alive = 0, 0
        for k, (mine, theirs) in enumerate(zip(previous, prompt, strict=False)):
            when, ttl = ages[k]
            if mine != theirs or (
                    now is not None and when is not None and ttl is not None
                    and now - when > ttl):
                break
            alive += 1
            tokens += theirs[1]
        if warm and not shared and len(prompt) >= warm:
            shared = prompt[:warm]
        if warm and alive < warm and prompt[:warm] == shared:
            tokens, alive = sum(size for _, size in shared), warm
        calls.append(_priced(prompt, tokens, model))
        kept = [] if model.renew_on_hit else ages[:alive]  # renewed: touched now, for `life`
        ages = [*kept, *([(now, life)] * (len(prompt) - len(kept)))]
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
