"""What a caller's requests cost once a provider caches the prompt prefix: the requests as
cache blocks, how often the prefix was rewritten (cut moves) and the cache models' price.

Review machinery, not the spec: it measures the same session sent by the `Agent` and by a
caller that passes the whole history on every request (an adapter, an integration, `histtrim
trim`), so the two can be compared on equal terms (no tool schemas, rows as sent)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from histtrim.config import ProviderProfile, RuntimeProfile
from histtrim.estimate import message_costs
from histtrim.low_water import request_points
from histtrim.messages import ChatMessage
from histtrim.policy import SPEC, Policy
from histtrim.review.cache import ANTHROPIC, OPENAI, Prompt, price_calls, totals
from histtrim.review.replay import ReplaySettings, replay
from histtrim.review.sessions import session_from_items

__all__ = [
    "PrefixCost",
    "agent_prompts",
    "cut_moves",
    "prefix_cost",
    "request_prompts",
    "whole_history_requests",
]


def request_prompts(
    requests: Iterable[Sequence[ChatMessage]], policy: Policy = SPEC
) -> list[Prompt]:
    """Each request as cache blocks: one per row, keyed by its serialized JSON (equal keys:
    byte-identical rows), priced by the policy's estimate."""
    keys: dict[str, int] = {}
    prompts: list[Prompt] = []
    for rows in requests:
        costs = message_costs(list(rows), policy=policy)
        prompts.append(tuple(
            (keys.setdefault(row.model_dump_json(), len(keys)), cost)
            for row, cost in zip(rows, costs, strict=True)
        ))
    return prompts


def cut_moves(prompts: Sequence[Prompt]) -> int:
    """How many requests do not start with the whole previous request, block for block: each
    one rewrote the prompt prefix (a trim moved the cut, or the history was edited)."""
    return sum(
        1 for before, after in pairwise(prompts)
        if after[: len(before)] != before
    )


def whole_history_requests(
    rows: Sequence[ChatMessage], trim: Callable[[list[ChatMessage]], list[ChatMessage]]
) -> list[list[ChatMessage]]:
    """What a caller that passes the whole history sends at each recorded request: `trim`
    of `rows[:p]` (an adapter or integration turned into rows -> rows). The history's last
    request point is the whole history, which recorded no reply: it is not sent."""
    return [trim(list(rows[:p])) for p in request_points(rows)[:-1]]


def agent_prompts(
    name: str, rows: Sequence[ChatMessage], budget: int, policy: Policy = SPEC
) -> list[Prompt]:
    """What the `Agent` sends on the same session under `budget` (no turn limit, a window
    that never overflows), each billed request as cache blocks without its tool schemas."""
    settings = ReplaySettings(
        profile=RuntimeProfile(max_context_tokens=budget, max_history_messages=1_000_000),
        provider=ProviderProfile(model="replay-model", context_window=10_000_000),
        record_prompts=True,
    )
    session = session_from_items(name, list(rows))
    prompts = replay(session, policy, settings)[1].prompts
    return [prompt[1:] for prompt in prompts] if session.tools else list(prompts)


@dataclass(frozen=True)
class PrefixCost:
    """One caller on one session: its requests, cut moves, cached share and input cost
    relative to no cache under the Anthropic and OpenAI cache models."""

    requests: int
    cut_moves: int
    cached_share: float
    anthropic: float
    openai: float


def prefix_cost(*sessions: Sequence[Prompt]) -> PrefixCost:
    """The requests' figures under both cache models (`histtrim.review.cache`): each
    session's requests priced on their own (no cache is shared between sessions), summed."""
    anthropic = totals([c for s in sessions for c in price_calls(s, ANTHROPIC)])
    openai = totals([c for s in sessions for c in price_calls(s, OPENAI)])
    return PrefixCost(
        anthropic.calls, sum(cut_moves(s) for s in sessions), anthropic.cached_share,
        anthropic.relative_cost, openai.relative_cost,
    )
