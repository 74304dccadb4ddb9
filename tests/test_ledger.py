"""TokenLedger: a running estimate that always equals `estimate_history_tokens` of its rows
(EST-1..4, with the EST-2 repricing when a new turn starts), whose boundary check costs
O(new rows) (RUN-1), and which follows the whole-turn trim exactly (KEEP-1, CAP-1)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from histtrim import (
    BREADCRUMB,
    IMAGE_TOKENS,
    ChatMessage,
    TokenLedger,
    ToolCall,
    estimate_history_tokens,
    index_turns,
    leading_system_count,
    trim_to_recent_turns,
)
from histtrim.carriers import tool_results_carrier
from histtrim.trim import breadcrumb_message
from livingspec.strategies import chat_histories, token_budgets

SYSTEM = ChatMessage.system("You are a careful coding assistant.")
OPS = ("append", "extend", "trim", "trim_rebuild", "trim_advance", "drop", "insert", "crumb")


def crumb_slot_holds_crumb(rows: list[ChatMessage]) -> bool:
    prefix = leading_system_count(rows)
    return prefix < len(rows) and rows[prefix].role == "user" and rows[prefix].content == BREADCRUMB


def check(ledger: TokenLedger, rows: list[ChatMessage], crumb: bool, budget: int) -> None:
    """The ledger holds exactly `rows` and agrees with the estimate and the trim."""
    assert len(ledger) == len(rows)
    assert all(a is b for a, b in zip(ledger, rows, strict=True))
    assert ledger.total == estimate_history_tokens(rows)
    assert ledger.system_rows == leading_system_count(rows)
    assert ledger.turn_count(crumb_present=crumb) == index_turns(
        rows, crumb_present=crumb
    ).turn_count
    expected = trim_to_recent_turns(rows, budget, crumb_present=crumb)
    assert ledger.needs_trim(budget, crumb_present=crumb) == expected.trimmed


@given(start=chat_histories(), extra=chat_histories(max_system=1), data=st.data())
def test_total_equals_the_estimate_after_any_appends_trims_drops_and_inserts(
    start: Any, extra: Any, data: st.DataObject
) -> None:
    """EST-1..4 and EST-2: after every operation `ledger.total == estimate_history_tokens`;
    KEEP-1: `needs_trim` says exactly when `trim_to_recent_turns` would drop a turn."""
    rows: list[ChatMessage] = start.history
    crumb: bool = start.crumb
    pool = [*extra.rows, breadcrumb_message(), SYSTEM]
    ledger = TokenLedger(rows)
    check(ledger, rows, crumb, 0)
    for op in data.draw(st.lists(st.sampled_from(OPS), max_size=8)):
        if op == "append":
            row = data.draw(st.sampled_from(pool))
            ledger.append(row)
            rows.append(row)
        elif op == "extend":
            more = list(extra.rows[data.draw(st.integers(0, len(extra.rows))) :])
            ledger.extend(more)
            rows.extend(more)
        elif op.startswith("trim"):
            budget = data.draw(token_budgets(ledger.total))
            expected = trim_to_recent_turns(rows, budget, crumb_present=crumb)
            if op == "trim":
                result = ledger.trim(budget, crumb_present=crumb)
                assert result.history == expected.history
                if result.kept_turns:  # CAP-1: the kept size, over budget or not
                    assert result.tokens_after == ledger.total
            elif op == "trim_rebuild":
                ledger.rebuild(expected.history)
            else:
                ledger.drop_oldest(expected.dropped_messages, crumb_present=crumb)
            rows = expected.history
        elif op == "drop":
            stop = data.draw(st.integers(0, len(rows)))
            start_at = data.draw(st.integers(0, stop))
            ledger.drop(start_at, stop)
            del rows[start_at:stop]
        elif op == "insert":
            row = data.draw(st.sampled_from(pool))
            at = data.draw(st.integers(0, len(rows)))
            ledger.insert(at, row)
            rows.insert(at, row)
        elif not crumb:  # "crumb": the owner inserts the breadcrumb after a trim (SEEN-1)
            ledger.insert(ledger.system_rows, breadcrumb_message())
            rows.insert(leading_system_count(rows), ledger[ledger.system_rows])
            crumb = True
        crumb = crumb and crumb_slot_holds_crumb(rows)
        check(ledger, rows, crumb, data.draw(token_budgets(ledger.total)))


@given(g=chat_histories(max_turns=8))
def test_appending_one_row_at_a_time_prices_each_row_at_most_twice(g: Any) -> None:
    """RUN-1: growing the ledger row by row costs O(rows): each row is priced when it
    arrives and repriced at most once, when the next real user row closes its turn (EST-2)."""
    ledger = TokenLedger()
    for i, row in enumerate(g.rows, start=1):
        ledger.append(row)
        assert ledger.total == estimate_history_tokens(g.rows[:i])
    assert ledger.priced <= 2 * len(g.rows)


def agent_turn(n: int, *, image: bool) -> list[ChatMessage]:
    """A user row, a native tool call and its result (maybe with a declared screenshot)."""
    call = ToolCall(id=f"call_{n}", name="screenshot", arguments={"page": n})
    return [
        ChatMessage.user(f"Check page {n}"),
        ChatMessage.assistant_tool_calls(None, [call]),
        ChatMessage.tool_result(
            call.id, f"page {n} rendered", attachments=["/tmp/shot.png"] if image else None
        ),
    ]


def test_a_new_turn_reprices_the_previous_turns_tool_images() -> None:
    """EST-2: the current turn's declared tool images cost IMAGE_TOKENS each; once a new
    real user row arrives they are an older tool result, priced by its bytes (EST-4)."""
    ledger = TokenLedger([SYSTEM])
    for row in agent_turn(1, image=True):
        ledger.append(row)
    with_image = ledger.total
    assert with_image == estimate_history_tokens(list(ledger))
    assert with_image > IMAGE_TOKENS
    ledger.append(ChatMessage.user("Thanks, and page 2?"))
    assert ledger.total == estimate_history_tokens(list(ledger))
    assert ledger.total < with_image  # the screenshot is no longer dispatched


def test_a_carrier_with_declared_images_is_repriced_too() -> None:
    """EST-2 for prompt mode: a `[Tool results]` carrier's declared images count only in the
    current turn."""
    carrier = tool_results_carrier([("screenshot", "done")], attachments=["/tmp/a.png"])
    ledger = TokenLedger([ChatMessage.user("Take a screenshot"), carrier])
    assert ledger.total == estimate_history_tokens([ChatMessage.user("Take a screenshot"), carrier])
    before = ledger.total
    ledger.append(ChatMessage.user("next"))
    assert ledger.total == estimate_history_tokens(list(ledger))
    assert ledger.total < before  # the declared screenshot is no longer dispatched


def test_a_boundary_check_does_no_work_proportional_to_the_history() -> None:
    """RUN-1: after k new rows, the check at a provider-call boundary priced k rows, however
    long the history is; `needs_trim` itself prices nothing."""
    history = [SYSTEM]
    for n in range(500):
        history.extend(agent_turn(n, image=n % 7 == 0))
    ledger = TokenLedger(history)
    assert ledger.priced == len(history)
    new_rows = agent_turn(500, image=True)
    before = ledger.priced
    ledger.extend(new_rows)
    assert ledger.priced - before <= 2 * len(new_rows)
    budget = ledger.total // 2
    work = ledger.priced
    assert ledger.needs_trim(budget)
    assert ledger.priced == work
    assert ledger.total == estimate_history_tokens([*history, *new_rows])


def test_the_ledger_trims_like_trim_to_recent_turns_and_keeps_its_total() -> None:
    """KEEP-1 and CAP-1: `ledger.trim` keeps what `trim_to_recent_turns` keeps; the total
    afterwards is its `tokens_after`, even when the newest turn alone is over the budget."""
    history = [SYSTEM]
    for n in range(6):
        history.extend(agent_turn(n, image=False))
    for budget in (0, 50, 120, estimate_history_tokens(history)):
        ledger = TokenLedger(history)
        expected = trim_to_recent_turns(history, budget)
        result = ledger.trim(budget)
        assert result == expected
        assert list(ledger) == expected.history
        assert ledger.total == result.tokens_after
        assert not ledger.needs_trim(budget)
    tiny = TokenLedger(history)
    tiny.trim(1)
    assert tiny.turn_count() == 1 and tiny.total > 1  # the newest turn stays (CAP-1)


def test_the_ledger_is_a_sequence_the_trims_accept() -> None:
    """KEEP-1: a ledger can be passed wherever a history is expected."""
    history = [SYSTEM]
    for n in range(4):
        history.extend(agent_turn(n, image=n == 3))
    ledger = TokenLedger(history)
    assert ledger[0] is SYSTEM and ledger[-1] is history[-1]
    assert ledger[1:3] == history[1:3]
    assert trim_to_recent_turns(ledger, 100) == trim_to_recent_turns(history, 100)
    assert repr(ledger) == f"TokenLedger(rows={len(history)}, total={ledger.total})"


def test_dict_rows_are_validated() -> None:
    ledger = TokenLedger([{"role": "system", "content": "sys"}])
    ledger.append({"role": "user", "content": "hello"})
    assert ledger.total == estimate_history_tokens(list(ledger))
    with pytest.raises(ValidationError, match="role"):
        ledger.append({"role": "robot", "content": "beep"})
    with pytest.raises(ValidationError, match="content"):
        TokenLedger([{"role": "user", "content": 3}])


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda led: led.needs_trim(-1), "budget_tokens"),
        (lambda led: led.needs_trim(True), "budget_tokens"),
        (lambda led: led.drop(-1, 0), "start"),
        (lambda led: led.drop(2, 1), "stop"),
        (lambda led: led.insert(99, SYSTEM), "index"),
        (lambda led: led.drop_oldest(99), "count"),
        (lambda led: TokenLedger([SYSTEM]).drop_oldest(0, crumb_present=True), "crumb_present"),
        (lambda led: TokenLedger([SYSTEM]).turn_count(crumb_present=True), "crumb_present"),
        (
            lambda led: TokenLedger([SYSTEM, ChatMessage.assistant("a")]).turn_count(
                crumb_present=True
            ),
            "crumb_present",
        ),
    ],
)
def test_bad_arguments_name_the_field(call: Any, field: str) -> None:
    ledger = TokenLedger([SYSTEM, *agent_turn(1, image=False)])
    with pytest.raises(ValueError, match=field):
        call(ledger)
