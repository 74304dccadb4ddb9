"""The three whole-turn trims on small realistic histories (TURN-4..6, KEEP-1..3,
LIMIT-1..2, CAP-1, PAIR-1), the breadcrumb helpers and bad input."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from histtrim import (
    BREADCRUMB,
    AssistantToolCalls,
    ChatMessage,
    ConversationMessage,
    ToolCall,
    ToolResultMessage,
    ToolResults,
    drop_oldest_whole_turn,
    estimate_history_tokens,
    insert_breadcrumb,
    parse_tool_result,
    trim_conversation_to_recent_turns,
    trim_to_recent_turn_count,
    trim_to_recent_turns,
)
from histtrim.carriers import parse_tool_calls, tool_results_carrier
from histtrim.trim import breadcrumb_message

SYSTEM = ChatMessage.system("You are a careful coding assistant.")
CRUMB = breadcrumb_message()


def turn_search() -> list[ChatMessage]:
    """A user asks for a file search; a native tool call and its result."""
    return [
        ChatMessage.user("Find every TODO in src/"),
        ChatMessage.assistant_tool_calls(
            "Searching.",
            [ToolCall(id="call_1", name="search_files", arguments={"pattern": "TODO"})],
        ),
        ChatMessage.tool_result("call_1", "src/app.py:12\nsrc/db.py:40"),
        ChatMessage.assistant("Two TODOs: app.py:12 and db.py:40."),
    ]


def turn_screenshot() -> list[ChatMessage]:
    """Prompt mode: the result comes back as a `[Tool results]` carrier with an image."""
    return [
        ChatMessage.user("Take a screenshot of the failing page [IMAGE:/tmp/before.png]"),
        ChatMessage.assistant('<tool_call>{"name": "screenshot"}</tool_call>'),
        tool_results_carrier([("screenshot", "saved")], attachments=["/tmp/shot.png"]),
        ChatMessage.assistant("The page shows a 500 error."),
    ]


def turn_config() -> list[ChatMessage]:
    """Non-ASCII text, two native calls with their results."""
    return [
        ChatMessage.user("¿Puedes leer el archivo de configuración y el README?"),
        ChatMessage.assistant_tool_calls(
            None,
            [
                ToolCall(id="call_2", name="read_file", arguments={"path": "config.toml"}),
                ToolCall(id="call_3", name="read_file", arguments={"path": "README.md"}),
            ],
        ),
        ChatMessage.tool_result("call_2", "[server]\nport = 8080"),
        ChatMessage.tool_result("call_3", "# histtrim — recorte de historial"),
        ChatMessage.assistant("El puerto es 8080."),
    ]


def history3() -> list[ChatMessage]:
    return [SYSTEM, *turn_search(), *turn_screenshot(), *turn_config()]


# Row positions in history3(): system 0, turn 0 = 1..4, turn 1 = 5..8, turn 2 = 9..13.
TURN_STARTS = (1, 5, 9)


def snapshot(rows: list[ChatMessage]) -> list[str]:
    return [r.model_dump_json() for r in rows]


def orphans(rows: list[ChatMessage]) -> list[str]:
    """Call ids of kept native results whose call is not in an earlier kept assistant row."""
    issued: set[str] = set()
    missing = []
    for row in rows:
        calls = parse_tool_calls(row)
        if calls is not None:
            issued.update(c.id for c in calls.calls)
        result = parse_tool_result(row)
        if result is not None and result.tool_call_id not in issued:
            missing.append(result.tool_call_id)
    return missing


# ---- KEEP-1: the token budget ---------------------------------------------------------


def test_keep_1_token_budget_drops_oldest_whole_turns_exactly() -> None:
    """KEEP-1: the longest suffix of whole turns that fits the budget is kept, exactly."""
    rows = history3()
    total = estimate_history_tokens(rows)
    keep_two = estimate_history_tokens([SYSTEM, *rows[5:]])
    keep_one = estimate_history_tokens([SYSTEM, *rows[9:]])
    assert keep_one < keep_two < total

    fits_two = trim_to_recent_turns(rows, keep_two)
    assert fits_two.history == [SYSTEM, *rows[5:]]
    assert fits_two.dropped == rows[1:5]
    assert (fits_two.dropped_messages, fits_two.dropped_turns, fits_two.kept_turns) == (4, 1, 2)
    assert (fits_two.tokens_before, fits_two.tokens_after) == (total, keep_two)
    assert fits_two.budget_tokens == keep_two
    assert fits_two.trimmed
    assert not fits_two.over_budget

    one_short = trim_to_recent_turns(rows, keep_two - 1)
    assert one_short.history == [SYSTEM, *rows[9:]]
    assert one_short.dropped == rows[1:9]
    assert (one_short.dropped_messages, one_short.dropped_turns, one_short.kept_turns) == (8, 2, 1)
    assert one_short.tokens_after == keep_one

    exact = trim_to_recent_turns(rows, total)
    assert exact.history == rows
    assert not exact.trimmed


def test_keep_1_token_numbers_follow_the_formula() -> None:
    """KEEP-1/EST-1: the trim's token figures follow Decisions "The byte estimate" (by hand)."""
    rows = [
        ChatMessage.system("Be brief."),  # 9 bytes -> 3 + 4 = 7
        ChatMessage.user("abcdefgh"),  # 8 bytes -> 2 + 4 = 6
        ChatMessage.assistant("ñ" * 10),  # 20 bytes -> 5 + 4 = 9
        ChatMessage.user("¿y?"),  # 4 bytes -> 1 + 4 = 5
        ChatMessage.assistant("ok"),  # 2 bytes -> 1 + 4 = 5
    ]
    result = trim_to_recent_turns(rows, 7 + 5 + 5)
    assert (result.tokens_before, result.tokens_after) == (7 + 6 + 9 + 5 + 5, 17)
    assert result.history == [rows[0], rows[3], rows[4]]
    assert trim_to_recent_turns(rows, 32).history == rows
    assert trim_to_recent_turns(rows, 31).history == [rows[0], rows[3], rows[4]]


def test_keep_1_budget_zero_disables_the_trim() -> None:
    """KEEP-1/TURN-6: budget 0 means no proactive trim, whatever the size."""
    rows = history3()
    result = trim_to_recent_turns(rows, 0)
    assert result.history == rows
    assert not result.trimmed
    assert not result.over_budget
    assert result.tokens_after == result.tokens_before == estimate_history_tokens(rows)


def test_keep_1_crumb_stays_in_place_and_is_priced() -> None:
    """KEEP-1: with the breadcrumb flag the crumb is kept after the system rows, counted in
    tokens_after, and never in dropped_messages."""
    rows = [SYSTEM, CRUMB, *turn_search(), *turn_config()]
    keep_last = estimate_history_tokens([SYSTEM, CRUMB, *turn_config()])
    result = trim_to_recent_turns(rows, keep_last, crumb_present=True)
    assert result.history == [SYSTEM, CRUMB, *turn_config()]
    assert result.dropped == turn_search()
    assert result.dropped_messages == 4
    assert result.tokens_after == keep_last


# ---- KEEP-2, LIMIT-1, LIMIT-2: the turn limit -----------------------------------------


def test_keep_2_turn_count_keeps_the_newest_turns() -> None:
    """KEEP-2: trim_to_recent_turn_count keeps the newest max_turns whole turns."""
    rows = history3()
    result = trim_to_recent_turn_count(rows, 2)
    assert result.history == [SYSTEM, *rows[5:]]
    assert result.dropped == rows[1:5]
    assert (result.dropped_messages, result.dropped_turns, result.kept_turns) == (4, 1, 2)
    assert result.max_turns == 2
    assert result.trimmed
    for limit in (3, 4, 50):
        same = trim_to_recent_turn_count(rows, limit)
        assert same.history == rows
        assert not same.trimmed
        assert same.kept_turns == 3


def test_keep_2_structured_turn_count() -> None:
    """KEEP-2: trim_conversation_to_recent_turns applies the limit to Agent.history."""
    rows: list[ConversationMessage] = [
        SYSTEM,
        ChatMessage.user("Find every TODO in src/"),
        AssistantToolCalls(text="Searching.", tool_calls=(ToolCall(id="c1", name="grep"),)),
        ToolResults(results=(ToolResultMessage(tool_call_id="c1", content="app.py:12"),)),
        ChatMessage.assistant("One TODO."),
        ChatMessage.user("Open it"),
        AssistantToolCalls(tool_calls=(ToolCall(id="c2", name="read_file"),)),
        ToolResults(results=(ToolResultMessage(tool_call_id="c2", content="# TODO"),)),
    ]
    result = trim_conversation_to_recent_turns(rows, 1)
    assert result.history == [SYSTEM, *rows[5:]]
    assert result.dropped == rows[1:5]
    assert (result.dropped_messages, result.dropped_turns, result.kept_turns) == (4, 1, 1)


def test_limit_1_the_unit_is_a_whole_turn_not_a_row() -> None:
    """LIMIT-1: tool calls and results use no slots; a 2-turn history of many rows fits 2."""
    busy = [ChatMessage.user("Refactor the parser")]
    for i in range(10):
        busy.append(ChatMessage.assistant_tool_calls(None, [ToolCall(id=f"c{i}", name="edit")]))
        busy.append(ChatMessage.tool_result(f"c{i}", "ok"))
    rows = [SYSTEM, *busy, ChatMessage.user("Run the tests"), ChatMessage.assistant("All green.")]
    assert len(rows) == 24
    two = trim_to_recent_turn_count(rows, 2)
    assert two.history == rows
    assert not two.trimmed
    one = trim_to_recent_turn_count(rows, 1)
    assert one.history == [SYSTEM, *rows[-2:]]
    assert (one.dropped_turns, one.dropped_messages, one.kept_turns) == (1, 21, 1)


def test_limit_2_an_explicit_value_is_authoritative() -> None:
    """LIMIT-2: an explicit value is used as given (55 keeps 55, not a default of 50) and 0
    does not mean "the default": it keeps only the newest turn."""
    rows: list[ChatMessage] = [SYSTEM]
    for i in range(60):
        rows += [ChatMessage.user(f"question {i}"), ChatMessage.assistant(f"answer {i}")]
    kept_55 = trim_to_recent_turn_count(rows, 55)
    assert kept_55.kept_turns == 55
    assert kept_55.history == [SYSTEM, *rows[11:]]
    assert trim_conversation_to_recent_turns(rows, 55).kept_turns == 55
    zero = trim_to_recent_turn_count(rows, 0)
    assert zero.history == [SYSTEM, *rows[-2:]]
    assert (zero.kept_turns, zero.dropped_turns, zero.max_turns) == (1, 59, 0)
    structured_zero = trim_conversation_to_recent_turns(rows, 0)
    assert structured_zero.history == [SYSTEM, *rows[-2:]]


def test_limit_2_breadcrumb_is_not_a_turn() -> None:
    """LIMIT-2: with the flag, the crumb uses no slot; provider-facing keeps it in place,
    the structured trim removes it (its owner re-inserts it); neither counts it."""
    rows = [SYSTEM, CRUMB, *turn_search(), *turn_config()]
    facing = trim_to_recent_turn_count(rows, 1, crumb_present=True)
    assert facing.history == [SYSTEM, CRUMB, *turn_config()]
    assert facing.dropped == turn_search()
    assert facing.dropped_messages == 4
    assert trim_to_recent_turn_count(rows, 2, crumb_present=True).history == rows

    structured = trim_conversation_to_recent_turns(rows, 1, crumb_present=True)
    assert structured.history == [SYSTEM, *turn_config()]
    assert structured.dropped == [CRUMB, *turn_search()]
    assert structured.dropped_messages == 4
    untouched = trim_conversation_to_recent_turns(rows, 2, crumb_present=True)
    assert untouched.history == rows


def test_user_message_equal_to_the_breadcrumb_text_is_a_turn() -> None:
    """Without the flag a user row equal to the breadcrumb text is an ordinary turn."""
    rows = [SYSTEM, ChatMessage.user(BREADCRUMB), ChatMessage.assistant("?"), *turn_config()]
    result = trim_to_recent_turn_count(rows, 1)
    assert result.history == [SYSTEM, *turn_config()]
    assert (result.dropped_turns, result.dropped_messages) == (1, 2)
    structured = trim_conversation_to_recent_turns(rows, 1)
    assert structured.dropped_messages == 2
    budget = estimate_history_tokens([SYSTEM, *turn_config()])
    assert trim_to_recent_turns(rows, budget).dropped_turns == 1


# ---- KEEP-3 and CAP-1: the newest turn always stays -----------------------------------


def test_keep_3_newest_turn_kept_when_the_value_is_0() -> None:
    """KEEP-3: each of the three keeps the newest complete turn even with a value of 0
    (for the token trim, a 0 budget disables trimming; the smallest positive one still
    keeps the newest turn)."""
    rows = history3()
    newest = [SYSTEM, *turn_config()]
    assert trim_to_recent_turn_count(rows, 0).history == newest
    assert trim_conversation_to_recent_turns(rows, 0).history == newest
    assert trim_to_recent_turns(rows, 0).history == rows
    tiny = trim_to_recent_turns(rows, 1)
    assert tiny.history == newest
    assert tiny.kept_turns == 1


def test_cap_1_a_single_turn_far_over_budget_stays() -> None:
    """CAP-1: the budget is a target; the newest turn stays even when it alone is over."""
    paste = ChatMessage.user("Summarise this log:\n" + "x" * 40_000)
    rows = [SYSTEM, *turn_search(), paste, ChatMessage.assistant("It is mostly x.")]
    result = trim_to_recent_turns(rows, 1_000)
    assert result.history == [SYSTEM, paste, rows[-1]]
    assert result.trimmed
    assert result.over_budget
    # 20 + 40_000 bytes -> 10_005 tokens + 4; "It is mostly x." 15 bytes -> 4 + 4.
    assert result.tokens_after == estimate_history_tokens([SYSTEM]) + 10_009 + 8
    assert result.tokens_after > 1_000

    alone = trim_to_recent_turns([SYSTEM, paste], 1_000)
    assert alone.history == [SYSTEM, paste]
    assert not alone.trimmed
    assert alone.over_budget
    assert alone.tokens_after == alone.tokens_before


# ---- TURN-4 and PAIR-1: atomic turns, calls and results together ----------------------


def test_turn_4_pair_1_token_trim_never_splits_a_tool_exchange() -> None:
    """TURN-4/PAIR-1: at every budget the kept body is a whole-turn suffix with no orphan."""
    rows = history3()
    seen = set()
    for budget in range(1, estimate_history_tokens(rows) + 2):
        result = trim_to_recent_turns(rows, budget)
        assert result.history == [SYSTEM, *rows[1 + len(result.dropped) :]]
        assert 1 + len(result.dropped) in (1, *TURN_STARTS)
        assert not orphans(result.history)
        seen.add(result.kept_turns)
    assert seen == {1, 2, 3}


@pytest.mark.parametrize("max_turns", [0, 1, 2])
def test_turn_4_pair_1_turn_count_never_splits_a_tool_exchange(max_turns: int) -> None:
    """TURN-4/PAIR-1: the count trims drop calls and results together."""
    rows = history3()
    result = trim_to_recent_turn_count(rows, max_turns)
    assert result.history == [SYSTEM, *rows[TURN_STARTS[3 - max(max_turns, 1)] :]]
    assert not orphans(result.history)
    assert not orphans(result.dropped)


def test_pair_1_result_fitting_alone_is_not_kept_without_its_call() -> None:
    """PAIR-1: a budget that would fit an older turn's tool result (but not the whole turn)
    keeps neither the result nor its call."""
    rows = [SYSTEM, *turn_config(), ChatMessage.user("ok"), ChatMessage.assistant("bye")]
    newest = estimate_history_tokens([SYSTEM, *rows[-2:]])
    last_result = rows[4]
    budget = newest + estimate_history_tokens([last_result])
    result = trim_to_recent_turns(rows, budget)
    assert last_result not in result.history
    assert result.history == [SYSTEM, *rows[-2:]]
    assert not orphans(result.history)


def test_turn_4_structured_tool_items_go_with_their_turn() -> None:
    """TURN-4: structured AssistantToolCalls/ToolResults are dropped with their turn."""
    call = AssistantToolCalls(tool_calls=(ToolCall(id="c1", name="grep"),))
    results = ToolResults(results=(ToolResultMessage(tool_call_id="c1", content="x"),))
    rows: list[ConversationMessage] = [
        ChatMessage.user("a"),
        call,
        ChatMessage.user("[Tool results]\nextra"),
        results,
        ChatMessage.user("b"),
    ]
    result = trim_conversation_to_recent_turns(rows, 1)
    assert result.history == [rows[-1]]
    assert result.dropped == rows[:4]


def test_turn_3_carrier_is_dropped_with_its_turn() -> None:
    """TURN-3: a `[Tool results]` carrier is part of the previous turn in every trim."""
    rows = history3()
    carrier = rows[7]
    kept = trim_to_recent_turn_count(rows, 2).history
    assert carrier in kept
    assert kept.index(carrier) - kept.index(rows[5]) == 2
    assert carrier in trim_to_recent_turn_count(rows, 1).dropped


# ---- TURN-5: leading system rows ------------------------------------------------------


def test_turn_5_leading_system_rows_kept_late_system_goes_with_its_turn() -> None:
    """TURN-5: provider-facing trims keep the leading system block; a later system row is
    body and is dropped with its turn."""
    late = ChatMessage.system("From now on, answer in Spanish.")
    rows = [SYSTEM, ChatMessage.system("Tools: grep"), *turn_search()[:2], late, *turn_search()[2:]]
    rows += turn_config()
    result = trim_to_recent_turn_count(rows, 1)
    assert result.history == [rows[0], rows[1], *turn_config()]
    assert late in result.dropped
    assert result.dropped_messages == 5
    token = trim_to_recent_turns(rows, 1)
    assert token.history == result.history
    assert token.dropped == result.dropped


def test_turn_5_structured_trim_hoists_every_system_row() -> None:
    """TURN-5: the structured trim keeps every system row, moved to the front in order,
    when it trims (and only then)."""
    late_old = ChatMessage.system("Late instruction in an old turn")
    late_new = ChatMessage.system("Late instruction in the newest turn")
    rows: list[ConversationMessage] = [
        SYSTEM,
        ChatMessage.user("a"),
        late_old,
        ChatMessage.assistant("A"),
        ChatMessage.user("b"),
        late_new,
        ChatMessage.assistant("B"),
    ]
    result = trim_conversation_to_recent_turns(rows, 1)
    assert result.history == [SYSTEM, late_old, late_new, rows[4], rows[6]]
    assert result.dropped == [rows[1], rows[3]]
    assert result.dropped_messages == 2
    assert trim_conversation_to_recent_turns(rows, 2).history == rows  # no trim, no hoist


# ---- TURN-6: no trim, no change -------------------------------------------------------


def test_turn_6_no_trim_returns_an_equal_new_list() -> None:
    """TURN-6: when nothing is dropped the output equals the input (order and structure)."""
    rows = [*history3(), ChatMessage.system("late"), ChatMessage.tool_result("x", "orphan")]
    before = snapshot(rows)
    results = [
        trim_to_recent_turns(rows, 0),
        trim_to_recent_turns(rows, 10**9),
        trim_to_recent_turn_count(rows, 3),
        trim_conversation_to_recent_turns(rows, 3),
        trim_conversation_to_recent_turns(tuple(rows), 50),
    ]
    for result in results:
        assert result.history == rows
        assert result.history is not rows
        assert result.dropped == []
        assert (result.dropped_messages, result.dropped_turns, result.kept_turns) == (0, 0, 3)
        assert not result.trimmed
    assert snapshot(rows) == before


def test_turn_6_single_turn_or_empty_history_is_never_trimmed() -> None:
    """TURN-6: at most one turn (or none) means nothing to drop."""
    for rows in ([], [SYSTEM], [SYSTEM, ChatMessage.assistant("hi")], [SYSTEM, *turn_config()]):
        for result in (
            trim_to_recent_turns(rows, 1),
            trim_to_recent_turn_count(rows, 0),
            trim_conversation_to_recent_turns(rows, 0),
        ):
            assert result.history == rows
            assert not result.trimmed


def test_trims_accept_dicts_and_iterables_and_never_mutate() -> None:
    """Dict rows are validated; any iterable works; the input is left as it was."""
    dicts = [m.model_dump() for m in history3()]
    before = [dict(d) for d in dicts]
    assert trim_to_recent_turn_count(dicts, 1).history == [SYSTEM, *turn_config()]
    assert trim_conversation_to_recent_turns(dicts, 1).history == [SYSTEM, *turn_config()]
    assert trim_to_recent_turns(iter(history3()), 1).history == [SYSTEM, *turn_config()]
    assert dicts == before


# ---- drop_oldest_whole_turn and the breadcrumb ----------------------------------------


def test_drop_oldest_whole_turn() -> None:
    """Drops the oldest turn with any preamble; a single turn is never dropped."""
    greeting = ChatMessage.assistant("Hi! How can I help?")
    rows = [SYSTEM, greeting, *turn_search(), *turn_config()]
    kept, dropped = drop_oldest_whole_turn(rows)
    assert kept == [SYSTEM, *turn_config()]
    assert dropped == 5
    again, none = drop_oldest_whole_turn(kept)
    assert (again, none) == (kept, 0)
    with_crumb, n = drop_oldest_whole_turn([SYSTEM, CRUMB, *rows[1:]], crumb_present=True)
    assert (with_crumb, n) == ([SYSTEM, CRUMB, *turn_config()], 5)


def test_insert_breadcrumb_once_after_the_system_rows() -> None:
    """The crumb goes right after the leading system rows, once, by the owner's flag."""
    rows = [SYSTEM, ChatMessage.system("Tools"), *turn_config()]
    inserted = insert_breadcrumb(rows, crumb_present=False)
    assert inserted == [rows[0], rows[1], CRUMB, *turn_config()]
    assert insert_breadcrumb(inserted, crumb_present=True) == inserted
    assert insert_breadcrumb([], crumb_present=False) == [CRUMB]
    assert len(rows) == 7


@pytest.mark.parametrize(
    "call",
    [
        lambda rows: trim_to_recent_turns(rows, 10, crumb_present=True),
        lambda rows: trim_to_recent_turn_count(rows, 1, crumb_present=True),
        lambda rows: trim_conversation_to_recent_turns(rows, 1, crumb_present=True),
        lambda rows: drop_oldest_whole_turn(rows, crumb_present=True),
        lambda rows: insert_breadcrumb(rows, crumb_present=True),
    ],
)
def test_crumb_flag_without_a_breadcrumb_slot_is_an_error(call: object) -> None:
    """The flag names a crumb slot: a flag naming no row, or a non-user row, is a ValueError
    (issue 9: any user row there is the slot, so only these two are caller errors)."""
    no_row = [SYSTEM]
    assistant_row = [SYSTEM, ChatMessage.assistant("hello"), *turn_config()]
    for rows in (no_row, assistant_row, [SYSTEM, ChatMessage.tool_result("c", "x"), CRUMB]):
        with pytest.raises(ValueError, match="crumb_present"):
            call(rows)  # type: ignore[operator]


# ---- bad input names its field --------------------------------------------------------


@pytest.mark.parametrize("budget", [-1, -32_000, True, False, 1.5, 100.0, "100", None])
def test_bad_budget_names_the_field(budget: object) -> None:
    with pytest.raises(ValueError, match="budget_tokens"):
        trim_to_recent_turns(history3(), budget)  # type: ignore[arg-type]


@pytest.mark.parametrize("max_turns", [-1, True, 2.0, "3", None])
def test_bad_turn_count_names_the_field(max_turns: object) -> None:
    with pytest.raises(ValueError, match="max_turns"):
        trim_to_recent_turn_count(history3(), max_turns)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_turns"):
        trim_conversation_to_recent_turns(history3(), max_turns)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ({"role": "robot", "content": "x"}, "role"),
        ({"role": "user", "content": 42}, "content"),
        ({"role": "user", "content": ["a", "b"]}, "content"),
    ],
)
def test_bad_rows_in_a_trim_name_the_field(row: dict[str, object], field: str) -> None:
    rows = [*history3(), row]
    for trim in (
        lambda: trim_to_recent_turns(rows, 10),  # type: ignore[arg-type]
        lambda: trim_to_recent_turn_count(rows, 1),  # type: ignore[arg-type]
        lambda: trim_conversation_to_recent_turns(rows, 1),  # type: ignore[arg-type]
        lambda: estimate_history_tokens(rows),  # type: ignore[arg-type]
    ):
        with pytest.raises(ValidationError) as error:
            trim()
        assert field in str(error.value)


@pytest.mark.parametrize(
    ("item", "field"),
    [
        ({"kind": "tool_results", "results": []}, "results"),
        ({"kind": "tool_results", "results": [{"tool_call_id": "c"}]}, "content"),
        ({"kind": "assistant_tool_calls", "tool_calls": []}, "tool_calls"),
        ({"kind": "bogus", "role": "user", "content": "x"}, "bogus"),
    ],
)
def test_bad_structured_items_in_a_trim_name_the_field(item: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as error:
        trim_conversation_to_recent_turns([*history3(), item], 1)  # type: ignore[list-item]
    assert field in str(error.value)


def test_turn_5_seen_1_helpers_take_dict_rows_like_the_trims() -> None:
    """TURN-5, SEEN-1: a dict system row is a system row, so the crumb goes after it; dict
    rows and one-shot iterables are validated, as every trim does."""
    rows = [{"role": "system", "content": "s"}, {"role": "user", "content": "a"}]
    assert insert_breadcrumb(rows, crumb_present=False) == [
        ChatMessage.system("s"),
        CRUMB,
        ChatMessage.user("a"),
    ]
    two_turns = [*rows, {"role": "assistant", "content": "x"}, {"role": "user", "content": "b"}]
    kept = [ChatMessage.system("s"), ChatMessage.user("b")]
    assert drop_oldest_whole_turn(two_turns) == (kept, 2)
    assert drop_oldest_whole_turn(iter(two_turns)) == drop_oldest_whole_turn(two_turns)
    with pytest.raises(ValidationError, match="role"):
        drop_oldest_whole_turn([{"role": "robot", "content": "a"}])
