"""The long real sessions' recorded usage as ground truth (examples/real/claude-code and
mini-swe-agent): at every provider call, histtrim's estimate of the prompt the call was sent
(EST-1: every message before the call's reply, priced as that call's runtime prices them)
against the prompt the provider counted, and the cache model's predicted cached share
(`histtrim.review.cache`) against the recorded one."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any, Protocol, TypeVar

from histtrim.adapters.anthropic import from_anthropic
from histtrim.adapters.openai import from_openai
from histtrim.estimate import message_costs
from histtrim.messages import ChatMessage
from histtrim.review.cache import (
    ANTHROPIC,
    GEMINI,
    CachedCall,
    CacheModel,
    Prompt,
    price_calls,
    totals,
)

MIN_GROWTH = 5_000
"""A session's growth ratio needs its prompt to have grown by this many recorded tokens."""


@dataclass(frozen=True)
class Call:
    """One provider call: histtrim's estimate of its prompt and the provider's counts."""

    index: int
    """The position of the reply this call produced."""
    estimate: int
    recorded: int
    """The prompt's tokens, as the provider counted them (cached or not)."""
    cached: int
    """Of those, read from the cache."""


@dataclass(frozen=True)
class RecordedSession:
    """A session's calls, with the per-call prompts the cache model prices."""

    name: str
    corpus: str
    calls: tuple[Call, ...]
    prompts: tuple[Prompt, ...]
    cache: CacheModel
    times: tuple[float | None, ...] | None = None
    """When each call was made (seconds; examples/real/call-times.json), None where unknown."""
    lifetimes: tuple[int | None, ...] | None = None
    """The lifetime each call's cache write bought (Claude Code: 3,600 where it bought an
    hour), None where the cache model's own applies."""

    @property
    def hidden(self) -> int:
        """What the provider counted that the file does not hold, from the first call: the
        client's system prompt and tool schemas (Claude Code writes neither to its
        transcript); none for a file that holds its whole prompt."""
        first = self.calls[0]
        return max(0, first.recorded - first.estimate) if self.corpus == "claude-code" else 0

    def growth_ratio(self) -> float | None:
        """Estimate / recorded of what the prompt grew by from the first call to the last:
        EST-1 on the transcript's own content, free of the hidden prefix."""
        first, last = self.calls[0], self.calls[-1]
        grown = last.recorded - first.recorded
        return (last.estimate - first.estimate) / grown if grown >= MIN_GROWTH else None

    def last_ratio(self) -> float:
        """Estimate / recorded at the last call (the largest prompt of a growing session)."""
        last = self.calls[-1]
        return last.estimate / last.recorded

    def recorded_share(self) -> float:
        return sum(c.cached for c in self.calls) / sum(c.recorded for c in self.calls)

    def predicted_share(self, cache: CacheModel | None = None, *, timed: bool = False,
                        warm: bool = False) -> float:
        """The cache model's cached share over the same calls: each prompt the estimated rows
        before the call, after one block for the hidden prefix. `timed`: the cache ages with
        the calls' recorded times and lifetimes; `warm`: the part of the hidden prefix the
        first call read (the client's tool schemas, kept warm by its other sessions) is read
        on every call, cold cache or not."""
        return totals(self.priced(cache, timed=timed, warm=warm)).cached_share

    def priced(self, cache: CacheModel | None = None, *, timed: bool = False,
               warm: bool = False) -> list[CachedCall]:
        """`predicted_share`'s calls, each priced."""
        hidden: Prompt = (("hidden", self.hidden),) if self.hidden else ()
        shared = min(self.calls[0].cached, self.hidden) if warm else 0
        if shared:  # the part of the hidden prefix the first call already read
            hidden = (("warm", shared), ("hidden", self.hidden - shared))
        return price_calls(
            [hidden + p for p in self.prompts], cache or self.cache,
            self.times if timed else None, warm=int(bool(shared)),
            lifetimes=self.lifetimes if timed else None,
        )


def _prompt_opens(messages: Sequence[dict[str, Any]]) -> list[int]:
    """Where each user turn starts: a user message that is not tool results."""
    opens = []
    for i, m in enumerate(messages):
        content = m.get("content")
        results = isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
        if m.get("role") == "user" and not results:
            opens.append(i)
    return opens


def _calls(
    name: str, corpus: str, messages: list[dict[str, Any]],
    rows_of: Callable[[list[dict[str, Any]]], list[ChatMessage]],
    counts: Callable[[dict[str, Any]], tuple[int, int]], cache: CacheModel,
) -> RecordedSession:
    """Each call priced in its own turn: the rows up to the end of that turn are converted
    once, so a tool result's images are priced as the current turn's (EST-2)."""
    ends = [*_prompt_opens(messages)[1:], len(messages)]
    calls: list[Call] = []
    prompts: list[Prompt] = []
    start = 0
    for end in ends:
        costs = message_costs(rows_of(messages[:end]))
        for i in range(start, end):
            if messages[i].get("role") != "assistant" or "usage" not in messages[i]:
                continue
            recorded, cached = counts(messages[i]["usage"])
            calls.append(Call(i, sum(costs[:i]), recorded, cached))
            prompts.append(tuple((k, costs[k]) for k in range(i)))
        start = end
    return RecordedSession(name, corpus, tuple(calls), tuple(prompts), cache)


def _anthropic_counts(usage: dict[str, int]) -> tuple[int, int]:
    recorded = (usage["input_tokens"] + usage["cache_read_input_tokens"]
                + usage["cache_creation_input_tokens"])
    return recorded, usage["cache_read_input_tokens"]


def _openai_counts(usage: dict[str, int]) -> tuple[int, int]:
    return usage["prompt_tokens"], usage.get("cached_tokens") or 0


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _timed(session: RecordedSession, times: dict[str, Any]) -> RecordedSession:
    """`session` with its calls' times and write lifetimes (call-times.json: per call
    [seconds, 1 if the write bought an hour], or null), when the file has as many."""
    calls = times.get(session.corpus, {}).get(session.name)
    if not isinstance(calls, list) or len(calls) != len(session.calls):
        return session
    at = tuple(float(c[0]) if isinstance(c, list) else None for c in calls)
    life = tuple(3600 if isinstance(c, list) and c[1] else None for c in calls)
    return replace(session, times=at, lifetimes=life)


def recorded_sessions(real: Path) -> list[RecordedSession]:
    """Every session of `real`/claude-code (Anthropic messages; Anthropic's cache model) and
    `real`/mini-swe-agent (OpenAI messages; Gemini's), in name order, with the calls' times
    where `real`/call-times.json (tools/call_times.py) holds them."""
    found = [
        _calls(p.stem, "claude-code", _read(p), lambda m: from_anthropic(m).rows,
               _anthropic_counts, ANTHROPIC)
        for p in sorted((real / "claude-code").glob("*.jsonl"))
    ]
    found += [
        _calls(p.stem, "mini-swe-agent", _read(p), from_openai, _openai_counts, GEMINI)
        for p in sorted((real / "mini-swe-agent").glob("*.jsonl"))
    ]
    stamps = real / "call-times.json"
    times = json.loads(stamps.read_text()) if stamps.is_file() else {}
    return [_timed(s, times) for s in found]


class _Named(Protocol):
    @property
    def name(self) -> str: ...


Named = TypeVar("Named", bound=_Named)


def split(sessions: Sequence[Named]) -> tuple[list[Named], list[Named]]:
    """(tuned, held out): every third session by sorted name is held out (recorded sessions
    here; chapter 14's Review 7 replays the held-out third of each real corpus)."""
    ordered = sorted(sessions, key=lambda s: s.name)
    return ([s for i, s in enumerate(ordered) if i % 3 != 2],
            [s for i, s in enumerate(ordered) if i % 3 == 2])


def pooled(sessions: Sequence[RecordedSession], cache: CacheModel | None, *, timed: bool,
           warm: bool) -> tuple[float, float]:
    """(predicted, recorded) cached share over every call of `sessions`."""
    cached = tokens = 0
    for s in sessions:
        for call in s.priced(cache, timed=timed, warm=warm):
            cached, tokens = cached + call.cached, tokens + call.tokens
    recorded = sum(c.cached for s in sessions for c in s.calls)
    total = sum(c.recorded for s in sessions for c in s.calls)
    return cached / tokens, recorded / total


def warm_prefix(tuned: Sequence[RecordedSession], cache: CacheModel) -> bool:
    """Whether reading, on every call, the part of the hidden prefix each first call read
    (what the client's other sessions keep warm) brings the tuned sessions' pooled share
    closer to the recorded one."""
    gaps = {}
    for warm in (False, True):
        predicted, recorded = pooled(tuned, cache, timed=True, warm=warm)
        gaps[warm] = abs(predicted - recorded)
    return gaps[True] < gaps[False]


def hit_rate(tuned: Sequence[RecordedSession], cache: CacheModel) -> Fraction:
    """The share of a live prefix the provider served on the tuned sessions, to hundredths."""
    guaranteed = cache.model_copy(update={"hit_rate": Fraction(1)})
    predicted, recorded = pooled(tuned, guaranteed, timed=True, warm=False)
    return Fraction(round(min(1.0, recorded / predicted) * 100), 100)
