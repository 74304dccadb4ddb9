"""CACHE-1..3: a trim that knows when the prompt cache is cold. The Agent is given a clock (a
list of times here: every test runs on a given clock); a request more than the policy's
`cold_cache.lifetime` after the previous one finds the cache cold (CACHE-1), and if its
history is over `cut_from` of the budget it cuts to the low-water mark now (CACHE-2); the
event says so (CACHE-3). Off by default: the spec's agent never reads the clock's times."""

from __future__ import annotations

import json
from collections.abc import Callable
from fractions import Fraction

import pytest
from pydantic import ValidationError

from histtrim.agent.providers import ProviderReply, ScriptedProvider
from histtrim.agent.runtime import Agent
from histtrim.config import ProviderProfile, RuntimeProfile
from histtrim.events import HistoryTrimmed, TrimReason
from histtrim.policy import SPEC, ColdCache, Policy
from histtrim.route import ResolvedRuntime, resolve_runtime

COLD = Policy(token_trim_target=Fraction(1, 2), cold_cache=ColdCache(lifetime=300))


def route(budget: int) -> ResolvedRuntime:
    return resolve_runtime(
        RuntimeProfile(max_context_tokens=budget, max_history_messages=1000),
        ProviderProfile(model="m", context_window=100_000),
        "m",
    )


def clock(times: list[float]) -> Callable[[], float]:
    """A given clock: each call returns the next time."""
    ticks = iter(times)
    return lambda: next(ticks)


GAPS = [0.0, 10, 20, 30, 40, 50, 460, 470, 480, 490]
"""The 7th request comes 410 s after the 6th: past Anthropic's 5 minutes."""


def run(policy: Policy, times: list[float] | None, count: int = 10) -> Agent:
    bot = Agent(
        ScriptedProvider([ProviderReply(text="a" * 96)] * count), route(400),
        system_prompt="s" * 12, policy=policy,
        clock=None if times is None else clock(times),
    )
    for n in range(count):
        bot.turn(f"{n:03d}" + "u" * 93)
    return bot


def test_is_cold_reads_the_given_times() -> None:
    rule = ColdCache(lifetime=300)
    assert rule.is_cold(1000.0, 600.0) and not rule.is_cold(900.0, 600.0)
    assert not rule.is_cold(None, 600.0) and not rule.is_cold(1000.0, None)
    assert not ColdCache().is_cold(10_000.0, 0.0)  # off: lifetime 0
    assert rule.cut_tokens(1000) == 900
    with pytest.raises(ValidationError, match="cut_from"):
        ColdCache(cut_from="0")


def test_a_cold_request_over_cut_from_cuts_to_the_low_water_mark() -> None:
    # each turn adds 56 tokens: the history passes 360 (9/10 of the 400 budget) at turn 7;
    # warm (10 s apart) the agent waits for the budget (turn 8), cold (the 7th request comes
    # 410 s after the 6th) it cuts then, down to the 200-token low-water mark
    warm = run(COLD, [10.0 * n for n in range(10)])
    cold = run(COLD, GAPS)
    assert all(e.cold_cache is None for e in warm.events)
    first = cold.events[0]
    assert first.cold_cache is True and first.reason is TrimReason.TOKEN_BUDGET
    assert 360 < first.tokens_before <= 400 and first.tokens_after <= 200
    assert first.target == "1/2"
    assert cold.calls[6].history_tokens <= 200  # the cold request was sent cut
    assert warm.events[0].tokens_before > 400  # warm: the budget forced it, a turn later


def test_unset_the_event_reads_as_before() -> None:
    # the spec's agent, and a policy with a lifetime but no clock: no cold-cache cut, and the
    # event's JSON has no new key
    for bot in (run(SPEC, GAPS), run(COLD, None)):
        assert bot.events and all(e.cold_cache is None for e in bot.events)
        assert all("cold_cache" not in json.loads(e.to_json()) for e in bot.events)
    event = HistoryTrimmed(reason=TrimReason.TOKEN_BUDGET, dropped_messages=2, kept_turns=1,
                           tokens_before=10, tokens_after=5, budget=8, cold_cache=True)
    assert json.loads(event.to_json())["cold_cache"] is True


def test_a_failed_turn_leaves_the_last_request_time_as_it_was() -> None:
    bot = Agent(ScriptedProvider([ProviderReply(text="a")]), route(1000), policy=COLD,
                clock=clock([5.0, 999.0]))
    bot.turn("one")
    with pytest.raises(Exception, match="script"):
        bot.turn("two")  # the script is exhausted: rolled back
    assert bot._last_request == 5.0
