"""SEEN-1..2, LIMIT-1..2, KEEP-1, CAP-1: the visible trim is one mechanism (`histtrim.visible`),
and every path that trims (the agent, `trim_records`, the column rewrite) reports what it
planned."""

from __future__ import annotations

import json
from fractions import Fraction

from histtrim import (
    BREADCRUMB,
    Agent,
    ChatMessage,
    ProviderProfile,
    RuntimeProfile,
    estimate_history_tokens,
    index_turns,
    message_costs,
    resolve_runtime,
)
from histtrim.adapters import trim_records
from histtrim.adapters.formats import read_history
from histtrim.adapters.rewrite import trim_history
from histtrim.agent.providers import ProviderReply, ScriptedProvider
from histtrim.counting import ESTIMATE, Pricing
from histtrim.estimate import plain_cost
from histtrim.events import TrimReason
from histtrim.integrations._trimmer import Trimmer
from histtrim.trim import (
    breadcrumb_message,
    trim_to_recent_turn_count,
    trim_to_recent_turns,
)
from histtrim.visible import plan_visible_trim


def _history(turns: int, size: int = 40) -> list[ChatMessage]:
    rows = [ChatMessage.system("You are careful.")]
    for n in range(turns):
        rows += [ChatMessage.user(f"q{n} " + "x" * size), ChatMessage.assistant(f"a{n}")]
    return rows


CRUMB = plain_cost(breadcrumb_message())


def test_seen_1_the_breadcrumb_counts_toward_the_budget() -> None:
    """A budget the newest two turns fit exactly without the breadcrumb keeps only one: the
    breadcrumb is sent too (KEEP-1, CAP-1), so the plan counts it."""
    rows = _history(4)
    index = index_turns(rows)
    costs = message_costs(rows, index)
    two_turns = costs[0] + sum(costs[5:])
    plain = plan_visible_trim(index, costs, budget_tokens=two_turns, breadcrumb=False)
    assert plain.turns_after == 2 and not plain.crumb_inserted
    counted = plan_visible_trim(index, costs, budget_tokens=two_turns, crumb_cost=CRUMB)
    assert counted.turns_after == 1 and counted.crumb_inserted
    (event,) = counted.events
    assert event.reason is TrimReason.TOKEN_BUDGET
    assert event.tokens_after == costs[0] + CRUMB + sum(costs[7:])
    kept = counted.kept(rows, breadcrumb_message())
    assert [row.content for row in kept[:2]] == ["You are careful.", BREADCRUMB]
    assert estimate_history_tokens(kept) == counted.tokens_after


def test_seen_2_turn_limit_then_budget_one_event_each() -> None:
    """The runtime's order: the turn limit, then the budget; the breadcrumb goes in once, with
    the first drop, and each drop is one event with the budget in force."""
    rows = _history(6)
    index = index_turns(rows)
    costs = message_costs(rows, index)
    plan = plan_visible_trim(index, costs, max_turns=4, budget_tokens=costs[0] + 60,
                             crumb_cost=CRUMB)
    limit, budget = plan.events
    assert (limit.reason, limit.dropped_messages, limit.kept_turns) == ("turn_limit", 4, 4)
    assert limit.budget == budget.budget == costs[0] + 60
    assert budget.reason == "token_budget" and budget.tokens_before == limit.tokens_after
    assert plan.cut == index.turn_start(plan.first) and plan.crumb_present


def test_seen_1_every_path_plans_the_same_trim() -> None:
    """`trim_records` and the column rewrite report the plan's events, figures included."""
    rows = _history(5)
    index = index_turns(rows)
    costs = ESTIMATE.costs(rows, index)
    budget = costs[0] + sum(costs[-5:])
    plan = plan_visible_trim(index, costs, budget_tokens=budget, crumb_cost=CRUMB)
    records = [row.model_dump(mode="json") for row in rows]
    crumb = {"role": "user", "content": BREADCRUMB}
    by_records = trim_records(records, rows, budget_tokens=budget, breadcrumb_record=crumb)
    assert by_records.event == plan.events[0]
    assert by_records.records == plan.kept(records, crumb)
    data = "".join(json.dumps(record) + "\n" for record in records).encode()
    hf = read_history(data, "openai")
    assert trim_history(hf, budget_tokens=budget).events == list(plan.events)


def test_seen_2_the_agent_reports_its_history_after_moving_system_rows() -> None:
    """The structured trim keeps a later system row (moved to the front) and replaces a
    breadcrumb of other text with its own: the event's `tokens_after` is the price of what
    the agent then sends, and `dropped_messages` counts the items it dropped (LIMIT-1)."""
    runtime = resolve_runtime(RuntimeProfile(max_history_messages=1),
                              ProviderProfile(model="m", context_window=100_000), "m")
    bot = Agent(ScriptedProvider([ProviderReply(text="ok")]), runtime, system_prompt="S")
    saved = [ChatMessage.user("an older note, other words"), *_history(2)[1:3],
             ChatMessage.system("remember the refund policy"), *_history(3)[5:7]]
    bot.restore(saved, crumb_present=True)
    (event,) = bot.turn("newest").events
    sent = bot.working_history()[:-1]  # what the provider got: before the reply is recorded
    assert event.tokens_after == estimate_history_tokens(sent)
    assert event.dropped_messages == 4  # two turns of two items; the system row is kept
    assert [row.content for row in bot.history[:2]] == ["remember the refund policy",
                                                        BREADCRUMB]
    assert Pricing().total(sent) == event.tokens_after


def test_seen_1_a_counter_prices_the_breadcrumb_only_when_a_drop_brings_it() -> None:
    """A trim that drops nothing never asks the counter about the breadcrumb; one that drops
    asks once (a counter may be slow or paid)."""
    asked: list[str] = []

    def words(row: ChatMessage) -> int:
        asked.append(row.content)
        return len(row.content.split())

    rows = _history(3)
    records = [row.model_dump(mode="json") for row in rows]
    crumb = {"role": "user", "content": BREADCRUMB}
    trim_records(records, rows, max_turns=3, breadcrumb_record=crumb, token_counter=words)
    trim_records(records, rows, budget_tokens=10_000, breadcrumb_record=crumb,
                 token_counter=words)
    assert BREADCRUMB not in asked
    trimmed = trim_records(records, rows, max_turns=1, breadcrumb_record=crumb,
                           token_counter=words)
    assert trimmed.crumb_inserted and asked.count(BREADCRUMB) == 1


def test_low_water_targets_are_planned_like_the_library_trims() -> None:
    """LIMIT-1..2 and RUN-1 with main's low-water marks: the plan keeps what
    `trim_to_recent_turn_count(target=)` and `trim_to_recent_turns(target=)` keep (with the
    breadcrumb counted toward the mark), and each event names its mark."""
    rows = _history(10)
    index = index_turns(rows)
    costs = message_costs(rows, index)
    half = Fraction(1, 2)
    by_turns = plan_visible_trim(index, costs, max_turns=6, turn_target=half, breadcrumb=False)
    assert by_turns.turns_after == trim_to_recent_turn_count(rows, 6, target=half).kept_turns
    (event,) = by_turns.events
    assert (event.reason, event.kept_turns, event.target) == (TrimReason.TURN_LIMIT, 3, "1/2")
    budget = sum(costs) - 1
    by_tokens = plan_visible_trim(index, costs, budget_tokens=budget, token_target=half,
                                  breadcrumb=False)
    library = trim_to_recent_turns(rows, budget, target=half)
    assert (by_tokens.first, by_tokens.tokens_after) == (
        library.dropped_turns, library.tokens_after
    )
    (event,) = by_tokens.events
    assert (event.budget, event.target) == (budget // 2, "1/2")
    with_crumb = plan_visible_trim(index, costs, budget_tokens=budget, token_target=half,
                                   crumb_cost=CRUMB)
    assert with_crumb.crumb_tokens == CRUMB and with_crumb.tokens_after <= budget // 2
    spec = plan_visible_trim(index, costs, budget_tokens=budget, crumb_cost=CRUMB)
    assert spec.events[0].target is None and "target" not in spec.events[0].to_wire()


def test_the_plan_prices_the_breadcrumb_it_keeps() -> None:
    """KEEP-3, SEEN-1: `crumb_tokens` is the kept breadcrumb's share of `tokens_after` (the
    command line says when it tips the newest turn over), the input's own when it had one."""
    rows = _history(3)
    index = index_turns(rows)
    costs = message_costs(rows, index)
    assert plan_visible_trim(index, costs, budget_tokens=10**6, crumb_cost=CRUMB).crumb_tokens == 0
    dropped = plan_visible_trim(index, costs, max_turns=1, crumb_cost=lambda: CRUMB)
    assert dropped.crumb_inserted and dropped.crumb_tokens == CRUMB
    crumbed = [rows[0], breadcrumb_message(), *rows[1:]]
    index = index_turns(crumbed, crumb_present=True)
    costs = message_costs(crumbed, index)
    kept = plan_visible_trim(index, costs, max_turns=1)
    assert kept.crumb_tokens == costs[1] and not kept.crumb_inserted


def test_the_integrations_price_through_one_pricing_value() -> None:
    """The frameworks' `Trimmer` prices with `Pricing` (policy + optional counter), the same
    value the trims use."""
    rows = _history(3)
    plain = Trimmer(budget_tokens=100)
    assert plain.pricing == ESTIMATE and plain.estimate(rows) == estimate_history_tokens(rows)
    counted = Trimmer(budget_tokens=100, token_counter=lambda row: 1)
    assert counted.estimate(rows) == counted.pricing.total(rows) == Pricing(
        counted.policy, counted.token_counter
    ).total(rows)


def test_issue_32_a_plan_keeps_its_prefix_sums_at_8_bytes_a_row() -> None:
    """Issue 32: a 1M-row trim built two lists of prefix sums (`plan_visible_trim`'s and
    `first_turn_within`'s), about 40 MB each; one `array('q')` is made and searched."""
    import tracemalloc

    from histtrim.turns import TurnIndex

    rows = 200_000
    costs = [300 + k % 7 for k in range(rows)]  # totals past the small-int cache
    index = TurnIndex(rows, 1, None, tuple(range(1, rows, 2)), [])
    tracemalloc.start()
    try:
        plan = plan_visible_trim(index, costs, budget_tokens=sum(costs) // 2)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert plan.tokens_after <= sum(costs) // 2 < plan.tokens_after + 2 * 306
    assert peak / rows < 16  # was about 80 bytes a row


def test_prefix_sums_past_64_bits_or_not_ints_are_summed_as_before() -> None:
    """`prefix_sums` falls back to a list when an array of 64-bit ints cannot hold them."""
    from histtrim.trim import first_turn_within, prefix_sums
    from histtrim.turns import TurnIndex

    assert list(prefix_sums([2**62, 2**62, 1])) == [0, 2**62, 2**63, 2**63 + 1]
    assert list(prefix_sums([0.5, 1])) == [0, 0.5, 1.5]  # type: ignore[list-item]
    index = TurnIndex(3, 0, None, (0, 1, 2), [])
    assert first_turn_within(index, [2**62, 2**62, 1], 2**62 + 1) == (1, 2**62 + 1)
