"""The long real sessions' recorded usage as ground truth (examples/real/claude-code and
mini-swe-agent): at every provider call, histtrim's estimate of the prompt the call was sent
(EST-1: every message before the call's reply, priced as that call's runtime prices them)
against the prompt the provider counted, and the cache model's predicted cached share
(`histtrim.review.cache`) against the recorded one."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from histtrim.adapters.anthropic import from_anthropic
from histtrim.adapters.openai import from_openai
from histtrim.estimate import message_costs
from histtrim.messages import ChatMessage
from histtrim.review.cache import ANTHROPIC, GEMINI, CacheModel, Prompt, price_calls, totals

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

    def predicted_share(self) -> float:
        """The cache model's cached share over the same calls: each prompt the estimated rows
        before the call, after one block for the hidden prefix."""
        hidden: Prompt = (("hidden", self.hidden),) if self.hidden else ()
        return totals(price_calls([hidden + p for p in self.prompts], self.cache)).cached_share


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


def recorded_sessions(real: Path) -> list[RecordedSession]:
    """Every session of `real`/claude-code (Anthropic messages; Anthropic's cache model) and
    `real`/mini-swe-agent (OpenAI messages; Gemini's), in name order."""
    found = [
        _calls(p.stem, "claude-code", _read(p), lambda m: from_anthropic(m).rows,
               _anthropic_counts, ANTHROPIC)
        for p in sorted((real / "claude-code").glob("*.jsonl"))
    ]
    found += [
        _calls(p.stem, "mini-swe-agent", _read(p), from_openai, _openai_counts, GEMINI)
        for p in sorted((real / "mini-swe-agent").glob("*.jsonl"))
    ]
    return found
