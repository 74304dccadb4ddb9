"""Hypothesis properties of the turn index, the estimate and the three whole-turn trims.

Histories come from `strategies`, which records where every turn starts while it builds
them; the references below use that record (never `histtrim.turns`) and re-estimate
candidate histories with `estimate_history_tokens` (brute force, fine in tests).
Rules: TURN-2..6, KEEP-1..3, EST-1..4, LIMIT-1, CAP-1, PAIR-1.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from math import ceil
from typing import Any

from hypothesis import given, note
from hypothesis import strategies as st

from histtrim import (
    AssistantToolCalls,
    ChatMessage,
    ConversationMessage,
    ToolResults,
    drop_oldest_whole_turn,
    estimate_history_tokens,
    index_turns,
    message_costs,
    parse_tool_result,
    to_chat_messages,
    trim_conversation_to_recent_turns,
    trim_to_recent_turn_count,
    trim_to_recent_turns,
)
from histtrim.carriers import parse_tool_calls
from livingspec.strategies import (
    GeneratedHistory,
    chat_histories,
    conversation_histories,
    token_budgets,
)

MAX_TURNS = st.integers(0, 8)


# ---- helpers: snapshots, references, pairing ------------------------------------------


def snapshot(rows: Sequence[Any]) -> list[str]:
    return [row.model_dump_json() for row in rows]


def check_untouched(g: GeneratedHistory[Any], history: list[Any], before: list[str]) -> None:
    """The input list still holds the same rows, unchanged."""
    assert len(history) == len(g.rows)
    assert all(a is b for a, b in zip(history, g.rows, strict=True))
    assert snapshot(history) == before


def is_system(row: object) -> bool:
    return isinstance(row, ChatMessage) and row.role == "system"


def is_carrier(row: object) -> bool:
    return (
        isinstance(row, ChatMessage)
        and row.role == "user"
        and row.content.startswith("[Tool results]")
    )


def suffix(g: GeneratedHistory[Any], first_kept: int) -> list[Any]:
    """The system prefix (and crumb) plus turns `first_kept..`: a candidate kept history."""
    return [*g.rows[: g.body_start], *g.rows[g.turn_start(first_kept) :]]


def expected_costs(g: GeneratedHistory[ChatMessage]) -> list[int]:
    """The estimate of the site's Decisions chapter ("The byte estimate", "Declared
    attachments"), row by row, from what the generator recorded.

    The estimate has no breadcrumb flag, so a crumb row is a real user row to it; with no
    user row at all, every tool result is current."""
    crumb_or_none = g.prefix_len if g.crumb else -1
    last_user = g.turn_starts[-1] if g.turn_starts else crumb_or_none
    costs = []
    for i, (row, pricing) in enumerate(zip(g.rows, g.pricing, strict=True)):
        dispatched = pricing is not None and (pricing.scope == "always" or i > last_user)
        if dispatched:
            assert pricing is not None
            costs.append(ceil(len(pricing.text.encode()) / 4) + 1600 * pricing.images + 4)
        else:
            costs.append(ceil(len(row.content.encode()) / 4) + 4)
    return costs


def reference_token_trim(g: GeneratedHistory[ChatMessage], budget: int) -> int:
    """Brute force: how many oldest turns to drop so the rest fits (the newest always stays)."""
    if budget == 0 or g.turn_count <= 1 or estimate_history_tokens(g.history) <= budget:
        return 0
    for first_kept in range(1, g.turn_count):
        if estimate_history_tokens(suffix(g, first_kept)) <= budget:
            return first_kept
    return g.turn_count - 1


def call_ids(row: object) -> set[str]:
    if isinstance(row, AssistantToolCalls):
        return {call.id for call in row.tool_calls}
    if isinstance(row, ChatMessage):
        parsed = parse_tool_calls(row)
        if parsed is not None:
            return {call.id for call in parsed.calls}
    return set()


def result_ids(row: object) -> list[str]:
    if isinstance(row, ToolResults):
        return [result.tool_call_id for result in row.results]
    if isinstance(row, ChatMessage):
        parsed = parse_tool_result(row)
        if parsed is not None:
            return [parsed.tool_call_id]
    return []


def assert_paired(g: GeneratedHistory[Any], kept: set[int]) -> None:
    """TURN-4/PAIR-1: every kept tool result (native or carrier) has its call kept, earlier,
    in the same turn."""
    for p in sorted(kept):
        row = g.rows[p]
        same_turn_before = [q for q in sorted(kept) if q < p and g.owner(q) == g.owner(p)]
        issued = set().union(*(call_ids(g.rows[q]) for q in same_turn_before))
        for call_id in result_ids(row):
            assert call_id in issued, f"kept result {call_id} at row {p} without its call"
        if is_carrier(row):
            assert any(
                isinstance(g.rows[q], ChatMessage) and g.rows[q].role == "assistant"
                for q in same_turn_before
            ), f"kept carrier at row {p} without the assistant call before it"


def provider_kept_positions(g: GeneratedHistory[Any], dropped: int) -> set[int]:
    """Input positions of a provider-facing trim's output: prefix + everything after the cut."""
    cut = g.body_start + dropped
    return set(range(g.body_start)) | set(range(cut, len(g.rows)))


def check_provider_facing(
    g: GeneratedHistory[ChatMessage], history: list[ChatMessage], dropped: list[ChatMessage]
) -> int:
    """Shared properties of the two provider-facing trims; returns the number of dropped turns
    implied by the cut."""
    body = g.body_start
    # kept + dropped == input, exactly, in order.
    assert [*history[:body], *dropped, *history[body:]] == list(g.rows)
    # TURN-5: the leading system block (and the crumb) stay in place.
    assert history[:body] == list(g.rows[:body])
    # TURN-4: the cut falls on a turn boundary.
    cut = body + len(dropped)
    boundaries = [g.turn_start(k) for k in range(g.turn_count)]
    assert not dropped or cut in boundaries[1:]
    dropped_turns = boundaries.index(cut) if dropped else 0
    # KEEP-3: the newest turn is always kept.
    if g.turn_count:
        newest = list(g.rows[g.turn_starts[-1] :])
        assert history[len(history) - len(newest) :] == newest
    assert_paired(g, provider_kept_positions(g, len(dropped)))
    return dropped_turns


# ---- the turn index and the estimate (checked on every generated history) -----------


def check_index(g: GeneratedHistory[Any]) -> None:
    """TURN-2/TURN-3/TURN-5: real user rows open turns; carriers, tool rows and items, late
    system rows and the flagged crumb do not; preamble rows go with turn 0."""
    index = index_turns(g.history, crumb_present=g.crumb)
    assert index.starts == g.turn_starts
    assert index.prefix_len == g.prefix_len
    assert index.crumb == (g.prefix_len if g.crumb else None)
    assert index.body_start == g.body_start
    assert index.turn_of() == [
        -1 if i < g.body_start or not g.turn_count else g.owner(i) for i in range(len(g.rows))
    ]


def check_estimate(g: GeneratedHistory[ChatMessage]) -> None:
    """EST-1..4: the estimate equals the Decisions chapter's per-row formula and the sum of
    message_costs."""
    costs = message_costs(g.history)
    assert costs == expected_costs(g)
    assert estimate_history_tokens(g.history) == sum(costs)


# ---- KEEP-1 / CAP-1: the token budget --------------------------------------------------


@st.composite
def histories_with_budget(draw: st.DrawFn) -> tuple[GeneratedHistory[ChatMessage], int]:
    # Mostly histories with something to trim; the first branch is drawn most often.
    g = draw(st.one_of(chat_histories(min_turns=2), chat_histories()))
    sizes = [estimate_history_tokens(suffix(g, k)) for k in range(g.turn_count)]
    return g, draw(token_budgets(estimate_history_tokens(g.rows), sizes))


@given(histories_with_budget())
def test_token_trim_properties(case: tuple[GeneratedHistory[ChatMessage], int]) -> None:
    """KEEP-1/CAP-1/TURN-4..6/PAIR-1: whole turns, optimal, idempotent, input untouched."""
    g, budget = case
    check_index(g)
    check_estimate(g)
    history = g.history
    before = snapshot(history)
    result = trim_to_recent_turns(history, budget, crumb_present=g.crumb)
    note(f"budget={budget} turns={g.turn_count} dropped_turns={result.dropped_turns}")

    check_untouched(g, history, before)

    dropped_turns = check_provider_facing(g, result.history, result.dropped)
    assert result.dropped_turns == dropped_turns
    assert result.kept_turns == g.turn_count - dropped_turns
    assert result.dropped_messages == len(result.dropped)
    assert result.trimmed == (dropped_turns > 0)
    assert result.budget_tokens == budget

    # The token figures are the estimate of the input and of the output.
    if g.turn_count or not g.crumb:
        # With a crumb flag and no real user row, the trim (which knows the crumb is not a
        # turn) and the flag-less estimate disagree on what the "current turn" is.
        assert result.tokens_before == estimate_history_tokens(g.rows)
        assert result.tokens_after == estimate_history_tokens(result.history)
    # CAP-1: within budget unless only one turn remains (or the trim is disabled).
    assert budget == 0 or result.tokens_after <= budget or result.kept_turns <= 1
    assert result.over_budget == (budget > 0 and result.tokens_after > budget)

    # Optimality: adding back the next older turn would exceed the budget.
    if dropped_turns:
        assert estimate_history_tokens(suffix(g, dropped_turns - 1)) > budget
    # ... and the result is exactly the brute-force longest fitting suffix.
    first_kept = reference_token_trim(g, budget)
    assert dropped_turns == first_kept
    assert result.history == (suffix(g, first_kept) if first_kept else list(g.rows))

    # Idempotent: trimming the output again with the same budget changes nothing.
    again = trim_to_recent_turns(result.history, budget, crumb_present=g.crumb)
    assert again.history == result.history
    assert not again.trimmed


# ---- KEEP-2 / LIMIT-1: the turn limit --------------------------------------------------


@given(chat_histories(), MAX_TURNS)
def test_turn_count_trim_properties(g: GeneratedHistory[ChatMessage], max_turns: int) -> None:
    """KEEP-2/KEEP-3/LIMIT-1/TURN-4..6/PAIR-1 for the provider-facing turn limit."""
    history = g.history
    before = snapshot(history)
    result = trim_to_recent_turn_count(history, max_turns, crumb_present=g.crumb)
    check_untouched(g, history, before)

    dropped_turns = check_provider_facing(g, result.history, result.dropped)
    expected_drop = max(0, g.turn_count - max(max_turns, 1))
    assert dropped_turns == result.dropped_turns == expected_drop
    assert result.kept_turns == g.turn_count - expected_drop
    assert result.dropped_messages == len(result.dropped)
    assert result.trimmed == (expected_drop > 0)
    assert result.history == (suffix(g, expected_drop) if expected_drop else list(g.rows))

    again = trim_to_recent_turn_count(result.history, max_turns, crumb_present=g.crumb)
    assert again.history == result.history
    assert not again.trimmed

    # drop_oldest_whole_turn is the one-turn step of the same cut.
    dropped_one, count = drop_oldest_whole_turn(history, crumb_present=g.crumb)
    if g.turn_count > 1:
        assert dropped_one == suffix(g, 1)
        assert count == g.turn_start(1) - g.body_start
    else:
        assert (dropped_one, count) == (list(g.rows), 0)


@given(conversation_histories(), MAX_TURNS)
def test_structured_trim_properties(
    g: GeneratedHistory[ConversationMessage], max_turns: int
) -> None:
    """KEEP-2/KEEP-3/LIMIT-1/TURN-4..6/PAIR-1 for the structured turn limit."""
    check_index(g)
    history = g.history
    before = snapshot(history)
    result = trim_conversation_to_recent_turns(history, max_turns, crumb_present=g.crumb)
    check_untouched(g, history, before)

    expected_drop = max(0, g.turn_count - max(max_turns, 1))
    assert result.dropped_turns == expected_drop
    assert result.kept_turns == g.turn_count - expected_drop
    assert result.trimmed == (expected_drop > 0)
    if not expected_drop:
        # TURN-6: no trim, no change (no hoisting either).
        assert result.history == list(g.rows)
        assert result.dropped == []
        assert result.dropped_messages == 0
    kept, dropped = result.history, result.dropped

    # kept + dropped == input as multisets; non-system rows keep their order.
    assert Counter(snapshot([*kept, *dropped])) == Counter(before)
    input_body = [row for row in g.rows if not is_system(row)]
    kept_body = [row for row in kept if not is_system(row)]
    assert input_body == [*dropped, *kept_body]
    assert not any(is_system(row) for row in dropped)
    # TURN-5: every system row is kept, in order; when trimming they lead the output.
    systems = [row for row in g.rows if is_system(row)]
    assert [row for row in kept if is_system(row)] == systems
    if expected_drop:
        assert kept[: len(systems)] == systems
        assert result.dropped_messages == len(dropped) - g.crumb
        # The crumb is dropped (its owner re-inserts it); the cut is on a turn boundary.
        cut_body = g.rows[g.prefix_len : g.turn_start(expected_drop)]
        assert dropped == [row for row in cut_body if not is_system(row)]

    # KEEP-3: the newest turn's rows are all kept (its late system rows hoisted).
    if g.turn_count:
        newest = [row for row in g.rows[g.turn_starts[-1] :] if not is_system(row)]
        assert kept_body[len(kept_body) - len(newest) :] == newest

    # TURN-4/PAIR-1 on input positions: non-system rows kept are the input's last ones.
    body_positions = [i for i, row in enumerate(g.rows) if not is_system(row)]
    kept_positions = {i for i, row in enumerate(g.rows) if is_system(row)}
    kept_positions |= set(body_positions[len(body_positions) - len(kept_body) :])
    assert_paired(g, kept_positions)

    # Idempotent: the output has no crumb once trimmed.
    flag = g.crumb and not result.trimmed
    again = trim_conversation_to_recent_turns(kept, max_turns, crumb_present=flag)
    assert again.history == kept
    assert not again.trimmed

    # TURN-1: the provider-facing trim of the same history keeps the same turns.
    facing = trim_to_recent_turn_count(
        to_chat_messages(g.rows), max_turns, crumb_present=g.crumb
    )
    assert (facing.kept_turns, facing.dropped_turns) == (result.kept_turns, result.dropped_turns)
    if not g.crumb:
        facing_body = [row for row in facing.history if not is_system(row)]
        assert to_chat_messages(kept_body) == facing_body
