"""CACHE-1..3 in the frameworks: each integration, given a clock (a list of times: every test
runs on a given clock), cuts a cold request over `cut_from` of the budget to the cold
low-water mark now, as the Agent does (`ColdCache.cold_trim`, one mechanism), says so in its
event (`cold_cache`), and then holds that cut: the requests after it extend it row for row.
Warm (or with no clock) nothing changes. Driven by each framework's own fake model."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import pytest
from framework_runs import RUNS

from histtrim.events import HistoryTrimmed, TrimReason
from histtrim.messages import ChatMessage
from histtrim.policy import ColdCache, Policy, ToolContext

COLD = Policy(token_trim_target=Fraction(7, 10),
              cold_cache=ColdCache(lifetime=300, cut_from=Fraction(3, 4)))
TURNS = 14
BUDGET = 2_400
IDLE_FROM = 7
"""From this turn on, the user comes back after 1,000 idle seconds (the cache is cold)."""


def clock(idle: bool) -> Callable[[], float]:
    """A given clock, called once per model call (two a turn): 10 s between calls, and with
    `idle` 1,000 s before the first call of each turn from `IDLE_FROM` on."""
    state = {"calls": 0, "now": 0.0}

    def now() -> float:
        calls = state["calls"]
        state["calls"] = calls + 1
        turn, first = divmod(int(calls), 2)
        state["now"] += 1000.0 if idle and first == 0 and turn >= IDLE_FROM else 10.0
        return state["now"]

    return now


def requests(name: str, policy: Policy, clock: Callable[[], float] | None,
             events: list[HistoryTrimmed], budget: int = BUDGET) -> list[list[ChatMessage]]:
    """The requests framework `name`'s model received over the `TURNS`-turn session."""
    return RUNS[name](policy, clock, events, budget, TURNS)[0]


def first_cut(sent: list[list[ChatMessage]]) -> int:
    """The first request that is not the whole history (its second row is not the first
    question: the breadcrumb or a later turn stands there)."""
    return next(k for k, rows in enumerate(sent) if not rows[1].content.startswith("question 0 "))


def extends(longer: list[ChatMessage], shorter: list[ChatMessage]) -> bool:
    return len(longer) >= len(shorter) and longer[: len(shorter)] == shorter


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_cold_request_cuts_deep_and_the_cut_is_held(name: str) -> None:
    plain: list[HistoryTrimmed] = []
    warm: list[HistoryTrimmed] = []
    cold: list[HistoryTrimmed] = []
    unclocked = requests(name, COLD, None, plain)
    warm_sent = requests(name, COLD, clock(idle=False), warm)
    cold_sent = requests(name, COLD, clock(idle=True), cold)
    # warm, the clock changes nothing: today's cut, no cold event
    assert warm_sent == unclocked and warm == plain and plain
    assert all(e.cold_cache is None for e in warm)
    # cold: the first cut comes earlier, at a turn's first request after the idle gap,
    # before the budget forces it, down to 7/10 of the budget
    at = first_cut(cold_sent)
    assert at < first_cut(warm_sent) and at % 2 == 0 and at >= 2 * IDLE_FROM
    event = next(e for e in cold if e.cold_cache)
    assert event.reason is TrimReason.TOKEN_BUDGET and event.target == "7/10"
    assert event.tokens_before <= BUDGET and event.tokens_after <= BUDGET * 7 // 10
    assert event.budget == BUDGET * 7 // 10
    # the cut is held: the call after the cold cut extends it row for row
    assert extends(cold_sent[at + 1], cold_sent[at])


def test_a_clock_is_a_callable_and_a_failing_clock_is_no_time() -> None:
    from histtrim.integrations._trimmer import Trimmer

    with pytest.raises(ValueError, match="clock"):
        Trimmer(budget_tokens=100, clock=3.0)  # type: ignore[arg-type]
    broken = Trimmer(budget_tokens=100, policy=COLD, clock=lambda: float("nan"))
    assert broken._now() is None  # logged; the cache is never cold then


CLEAR = COLD.model_copy(update={"tool_context": ToolContext(
    mode="clear", keep=1, trigger_tokens=1_600, hold=True, clear_to=Fraction(1, 2),
    clear_at_least=0)})


def cleared(request: list[ChatMessage]) -> int:
    return sum("[cleared]" in row.content for row in request)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_a_cold_request_clears_in_one_batch_and_the_clear_is_held(name: str) -> None:
    warm_events: list[HistoryTrimmed] = []
    events: list[HistoryTrimmed] = []
    warm = requests(name, CLEAR, clock(idle=False), warm_events, 100_000)
    cold = requests(name, CLEAR, clock(idle=True), events, 100_000)
    assert not warm_events and not events  # no whole turn dropped: only the clear acts
    first_warm = next(k for k, rows in enumerate(warm) if cleared(rows))
    first_cold = next(k for k, rows in enumerate(cold) if cleared(rows))
    # the cold request (a turn's first after the idle gap) clears before the trigger
    # forces it, several results at once; the next request extends it row for row
    assert first_cold < first_warm and first_cold % 2 == 0 and first_cold >= 2 * IDLE_FROM
    assert cleared(cold[first_cold]) >= 2
    assert extends(cold[first_cold + 1], cold[first_cold])


@pytest.mark.parametrize("name", sorted(RUNS))
def test_with_the_cut_and_the_clear_the_prefix_moves_only_on_cold_requests(name: str) -> None:
    # the cold cut and the cold clear together (a 2,400-token budget): every request that
    # does not extend the one before is a cold one (a turn's first after the idle gap)
    events: list[HistoryTrimmed] = []
    sent = requests(name, CLEAR, clock(idle=True), events)
    moved = [k for k in range(1, len(sent)) if not extends(sent[k], sent[k - 1])]
    assert moved and all(k % 2 == 0 and k >= 2 * IDLE_FROM for k in moved)
    assert any(cleared(rows) for rows in sent) and any(e.cold_cache for e in events)
