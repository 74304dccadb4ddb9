"""The notebook figures return the numbers they plot, and those numbers agree with the trims
and the estimate; the text tables and the shared example sessions."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from collections.abc import Iterator, Sequence
from math import ceil
from typing import Any

import matplotlib.pyplot as plt
import pytest
from hypothesis import given
from hypothesis import strategies as st

from histtrim import (
    BREADCRUMB,
    AssistantToolCalls,
    ChatMessage,
    ToolCall,
    ToolResultMessage,
    ToolResults,
    estimate_history_tokens,
    message_costs,
    parse_tool_result,
    to_chat_messages,
    trim_conversation_to_recent_turns,
    trim_to_recent_turn_count,
    trim_to_recent_turns,
)
from histtrim.carriers import parse_tool_calls, tool_results_carrier
from histtrim.display.tables import text_table
from histtrim.trim import breadcrumb_message
from livingspec import examples as ex
from livingspec.plotting.cut import budget_cut, cumulative_from_newest
from livingspec.plotting.estimate import estimate_rows, estimate_vs_bytes
from livingspec.plotting.tables import history_table, item_costs, row_summary
from livingspec.plotting.turns import axis_cut, kept_rows, turn_map, turn_map_rows
from livingspec.strategies import GeneratedHistory, chat_histories, conversation_histories


@pytest.fixture(autouse=True)
def _close_figures() -> Iterator[None]:
    yield
    plt.close("all")


# ---------------------------------------------------------------------------- text tables


def test_text_table_aligns_numbers_right_and_text_left() -> None:
    table = text_table(["name", "n", "ok"], [("a", 1, True), ("bbb", 22, None), ("c", None, False)])
    assert table.splitlines() == [
        "name   n  ok",
        "----  --  ---",
        "a      1  yes",
        "bbb   22  -",
        "c      -  no",
    ]


def test_text_table_accepts_any_iterable_of_rows() -> None:
    rows = ((k, k * k) for k in range(3))
    assert text_table(["k", "k²"], rows).splitlines()[-1] == "2   4"


def test_row_summary_names_calls_results_and_attachments() -> None:
    call = ChatMessage.assistant_tool_calls(
        "Looking.", [ToolCall(id="call_1", name="search_files", arguments='{"q":"x"}')]
    )
    result = ChatMessage.tool_result("call_1", "a\nb", attachments=["/tmp/a.png"])
    assert row_summary(call) == 'Looking. · calls call_1 search_files {"q":"x"}'
    assert row_summary(result) == "result call_1 (+1 attached image): a ⏎ b"
    structured_call = AssistantToolCalls(tool_calls=(ToolCall(id="c", name="grep"),))
    assert row_summary(structured_call) == "calls c grep {}"
    results = ToolResults(results=(ToolResultMessage(tool_call_id="c", content="ok"),))
    assert row_summary(results) == "results c: ok"
    carrier = tool_results_carrier([("grep", "3 hits")])
    assert row_summary(carrier).startswith("[Tool results] ⏎ ")
    assert row_summary(ChatMessage.user("x" * 100), 10) == "x" * 9 + "…"


def test_history_table_labels_system_crumb_turns_and_orphans() -> None:
    history = [ex.system_prompt(), breadcrumb_message(), *ex.spanish_turn()]
    lines = history_table(history, crumb_present=True).splitlines()
    assert [line.split()[2] for line in lines[2:]] == ["sys", "crumb", "1", "1"]
    # Without the owner's flag the crumb text is an ordinary user turn (TURN-2).
    lines = history_table(history).splitlines()
    assert [line.split()[2] for line in lines[2:]] == ["sys", "1", "2", "2"]
    # Rows before any real user row belong to no turn.
    lines = history_table(ex.agent_session()[-2:]).splitlines()
    assert [line.split()[2] for line in lines[2:]] == ["-", "-"]


# ---------------------------------------------------------------------------- costs


def test_item_costs_equal_message_costs_for_provider_rows() -> None:
    session = ex.agent_session()
    assert item_costs(session) == message_costs(session)


def test_item_costs_price_structured_items_as_their_provider_rows() -> None:
    structured = ex.structured_session()
    costs = item_costs(structured)
    assert len(costs) == len(structured)
    assert sum(costs) == estimate_history_tokens(to_chat_messages(structured))
    for item, cost in zip(structured, costs, strict=True):
        if isinstance(item, ChatMessage):
            assert cost == ceil(len(item.content.encode()) / 4) + 4  # EST-1: no images here


# ---------------------------------------------------------------------------- kept rows


def _kept(history: Sequence[Any], flags: Sequence[bool]) -> list[Any]:
    return [row for row, keep in zip(history, flags, strict=True) if keep]


def test_kept_rows_of_a_token_trim_and_a_count_trim() -> None:
    session = ex.agent_session()
    token = trim_to_recent_turns(session, 2_000)
    count = trim_to_recent_turn_count(session, 3)
    assert _kept(session, kept_rows(session, token)) == token.history
    assert _kept(session, kept_rows(session, count)) == count.history
    assert kept_rows(session, token).count(False) == token.dropped_messages == 12


def test_kept_rows_of_the_structured_trim_keep_the_late_system_row() -> None:
    """TURN-5: the structured trim keeps every system row (hoisted to the front)."""
    structured = ex.structured_session()
    result = trim_conversation_to_recent_turns(structured, 1)
    flags = kept_rows(structured, result)
    assert flags[6] and structured[6] == ex.late_system_message()
    assert sum(flags) == len(result.history)


def test_kept_rows_rejects_a_result_of_another_history() -> None:
    result = trim_to_recent_turn_count(ex.agent_session(), 1)
    with pytest.raises(ValueError, match="result"):
        kept_rows(ex.session_with_late_system(), result)


@given(conversation_histories(), st.integers(0, 8))
def test_kept_rows_match_the_structured_trim(
    generated: GeneratedHistory[Any], max_turns: int
) -> None:
    history = generated.history
    result = trim_conversation_to_recent_turns(
        history, max_turns, crumb_present=generated.crumb
    )
    flags = kept_rows(history, result, crumb_present=generated.crumb)
    assert sorted(map(id, _kept(history, flags))) == sorted(map(id, result.history))


# ---------------------------------------------------------------------------- turn map


def test_turn_map_rows_and_figure_of_a_token_trim() -> None:
    """TURN-4: the map shows whole turns kept or dropped; its bars are the row estimates."""
    session = ex.agent_session()
    result = trim_to_recent_turns(session, 2_000)
    picture = turn_map(session, result, title="token trim")
    assert picture.rows == turn_map_rows(session, result)
    assert [r.tokens for r in picture.rows] == message_costs(session)
    assert [r.part for r in picture.rows[:2]] == ["sys", "1"]
    for turn in {r.turn for r in picture.rows if r.turn is not None}:
        fates = {r.kept for r in picture.rows if r.turn == turn}
        assert len(fates) == 1
    kept_turns = {r.turn for r in picture.rows if r.kept and r.turn is not None}
    assert kept_turns == {4, 5} and len(kept_turns) == result.kept_turns
    axes = picture.figure.axes[0]
    assert axes.get_title() == "token trim"
    costs = message_costs(session)
    cut = axis_cut(costs)
    assert cut is not None and cut < max(costs)  # two 1,600-token images would flatten the rest
    assert [round(p.get_width()) for p in axes.patches] == [min(c, cut) for c in costs]
    labels = [t.get_text() for t in axes.texts]
    assert labels == [f"{c:,}" + (" (bar cut)" if c > cut else "") for c in costs]
    assert axes.get_xscale() == "linear"
    assert picture.table().count(" no ") == 12
    short = picture.turn_table()
    assert short.cells == (
        ("sys", "0", "37", "yes"), ("1", "1-4", "116", "no"), ("2", "5-10", "190", "no"),
        ("3", "11-12", "1641", "no"), ("4", "13-16", "67", "yes"), ("5", "17-20", "1678", "yes"),
    )


def test_axis_cut_only_for_outliers() -> None:
    assert axis_cut([]) is None
    assert axis_cut([10, 20, 30, 40]) is None
    assert axis_cut([10, 20, 30, 40, 1_000]) == 60


def test_turn_map_of_a_structured_count_trim() -> None:
    structured = ex.structured_session()
    result = trim_conversation_to_recent_turns(structured, 2)
    picture = turn_map(structured, result, title="count trim")
    assert [r.kept for r in picture.rows] == kept_rows(structured, result)
    assert picture.rows[2].role == "assistant*" and picture.rows[3].role == "tool*"


def test_turn_map_of_an_empty_history() -> None:
    picture = turn_map([], trim_to_recent_turns([], 10), title="empty")
    assert picture.rows == []


# ---------------------------------------------------------------------------- budget cut


def test_budget_cut_marks_where_the_token_trim_cuts() -> None:
    """KEEP-1: the kept turns are the longest newest run whose running total fits."""
    session = ex.agent_session()
    cut = budget_cut(session, 2_000, title="cut")
    assert [r.turn for r in cut.rows] == [5, 4, 3, 2, 1]
    assert [r.kept for r in cut.rows] == [True, True, False, False, False]
    assert cut.fixed_tokens == message_costs(session)[0]
    assert cut.rows[-1].cumulative == estimate_history_tokens(session)
    assert cut.rows[1].cumulative == cut.result.tokens_after <= 2_000 < cut.rows[2].cumulative
    line = cut.figure.axes[0].get_lines()[0]
    assert list(line.get_ydata()) == [r.cumulative for r in cut.rows]


def test_budget_cut_keeps_a_newest_turn_over_budget() -> None:
    """CAP-1: the newest turn stays even when it alone exceeds the budget."""
    cut = budget_cut(ex.session_ending_with_oversized_turn(), 500, title="over")
    newest = cut.rows[0]
    assert newest.kept and not newest.fits and newest.cumulative > 500
    assert not any(r.kept for r in cut.rows[1:])
    assert cut.result.over_budget


def test_budget_cut_tick_labels_do_not_run_into_each_other() -> None:
    """The newest turn's "(newest)" note sits on its own line; a long session rotates labels."""
    cut = budget_cut(ex.agent_session(), 2_000, title="cut")
    labels = [t.get_text() for t in cut.figure.axes[0].get_xticklabels()]
    assert labels[0] == "turn 5\n(newest)"
    assert all(len(label) <= len("turn 10") for label in labels[1:])
    long_session = [ex.agent_session()[0]] + [
        m for n in range(15) for m in (ChatMessage.user(f"q{n}"), ChatMessage.assistant(f"a{n}"))
    ]
    rotated = budget_cut(long_session, 50, title="long")
    assert {t.get_rotation() for t in rotated.figure.axes[0].get_xticklabels()} == {45.0}


@given(chat_histories(), st.integers(0, 8), st.integers(0, 6000))
def test_figure_numbers_agree_with_every_provider_facing_trim(
    generated: GeneratedHistory[ChatMessage], max_turns: int, budget: int
) -> None:
    """The turn-map flags are exactly the rows each trim kept, and the cumulative rows put
    the cut where the token trim put it (KEEP-1: the longest newest run that fits)."""
    history, crumb = generated.history, generated.crumb
    for result in (
        trim_to_recent_turns(history, budget, crumb_present=crumb),
        trim_to_recent_turn_count(history, max_turns, crumb_present=crumb),
    ):
        flags = kept_rows(history, result, crumb_present=crumb)
        assert _kept(history, flags) == result.history
        assert [r for r, k in zip(history, flags, strict=True) if not k] == result.dropped

    rows, fixed, result = cumulative_from_newest(history, budget, crumb_present=crumb)
    assert [r.turn for r in rows] == list(range(generated.turn_count, 0, -1))
    if rows:
        assert sum(r.messages for r in rows) == len(history) - generated.body_start
        assert rows[-1].cumulative == estimate_history_tokens(history)
        assert fixed == rows[0].cumulative - rows[0].tokens
    kept = [r.kept for r in rows]
    assert kept == sorted(kept, reverse=True)  # a newest-first run of kept turns
    assert sum(kept) == result.kept_turns
    if result.trimmed:
        last_kept = rows[result.kept_turns - 1]
        assert last_kept.cumulative == result.tokens_after
        assert rows[result.kept_turns].cumulative > budget  # the next turn would not fit
        assert result.kept_turns == 1 or last_kept.fits


# ---------------------------------------------------------------------------- estimate vs bytes


def test_estimate_rows_follow_utf8_bytes() -> None:
    """EST-1: ceil(bytes / 4) + 4, bytes not characters."""
    rows = estimate_rows(ex.sample_texts(), (1, 3))
    assert [(r.sample, r.repeats) for r in rows] == [
        ("ASCII", 1), ("ASCII", 3), ("accented", 1), ("accented", 3), ("emoji", 1), ("emoji", 3),
    ]  # fmt: skip
    for r in rows:
        text = ex.sample_texts()[r.sample] * r.repeats
        assert (r.chars, r.utf8_bytes) == (len(text), len(text.encode("utf-8")))
        assert r.tokens == ceil(r.utf8_bytes / 4) + 4
    emoji, ascii_ = rows[5], rows[1]
    assert emoji.tokens / emoji.chars > 3 * ascii_.tokens / ascii_.chars


def test_estimate_vs_bytes_plots_its_rows() -> None:
    picture = estimate_vs_bytes({"a": "abc", "ñ": "ñññ"}, (1, 2), title="bytes")
    assert picture.rows == estimate_rows({"a": "abc", "ñ": "ñññ"}, (1, 2))
    by_chars, by_bytes = picture.figure.axes
    assert list(by_chars.get_lines()[1].get_xdata()) == [3, 6]
    assert list(by_bytes.get_lines()[1].get_xdata()) == [6, 12]
    assert list(by_bytes.get_lines()[1].get_ydata()) == [6, 7]
    assert picture.table().splitlines()[0].split() == [
        "sample", "repeats", "chars", "utf8_bytes", "tokens",
    ]  # fmt: skip


# ---------------------------------------------------------------------------- examples


def test_examples_return_fresh_lists() -> None:
    first = ex.agent_session()
    first.clear()
    assert len(ex.agent_session()) == 21
    assert ex.sample_texts() is not ex.sample_texts()


def test_every_native_call_in_the_examples_has_its_result_in_the_same_turn() -> None:
    """PAIR-1 holds in the example sessions themselves."""
    for history in (ex.agent_session(), ex.session_with_late_system(), ex.oversized_turn()):
        calls = [c.id for m in history if (p := parse_tool_calls(m)) for c in p.calls]
        results = [r.tool_call_id for m in history if (r := parse_tool_result(m))]
        assert calls == results


def test_example_edge_cases_are_what_their_names_say() -> None:
    assert ex.breadcrumb_lookalike_session()[1].content == BREADCRUMB
    assert ex.session_with_late_system()[5] == ex.late_system_message()
    assert ex.prompt_mode_turn()[2].content.startswith("[Tool results]")
    big = ex.session_ending_with_oversized_turn()
    assert estimate_history_tokens(big[-4:]) > 10 * estimate_history_tokens(big[:-4])
    assert len(ex.many_turns_session(3)) == 7
    with pytest.raises(ValueError, match="turns"):
        ex.many_turns_session(-1)


def test_row_estimate_splits_each_rows_price_into_text_framing_and_images() -> None:
    """Issue 31 §4: chapter 03's figure of a row's estimate draws these parts."""
    from livingspec.plotting.rows import row_estimate, row_estimate_rows

    session = ex.agent_session()
    rows = row_estimate_rows(session)
    assert [r.total for r in rows] == message_costs(session)
    for row, message in zip(rows, session, strict=True):
        assert row.framing == 4 and row.text >= 0
        assert row.images in (0, 1_600)
        if not row.images:
            assert row.text == ceil(len(message.content.encode("utf-8")) / 4)
    assert sum(r.images for r in rows) == 3_200  # the pasted screenshot and the tool's
    picture = row_estimate(session, title="t")
    assert picture.rows == rows
    plt.close(picture.figure)


def test_sweep_map_marks_what_the_sweep_removed_where() -> None:
    """Issue 31 §4: chapter 08's figure of the sweep labels each row it touched."""
    from histtrim.pairing import sweep_orphans
    from livingspec.plotting.rows import sweep_map

    items = [
        ToolResults(results=[ToolResultMessage(tool_call_id="c0", content="stale")]),
        ChatMessage.user("go"),
        AssistantToolCalls(tool_calls=[ToolCall(id="c1", name="run", arguments={})]),
        ChatMessage.assistant("done"),
    ]
    swept = sweep_orphans(items)
    picture = sweep_map(items, swept, title="t")
    assert [r.removed for r in picture.rows] == ["result c0", "-", "call c1", "-"]
    assert [r.tokens for r in picture.rows] == item_costs(items)
    plt.close(picture.figure)


def test_sweep_passes_say_what_each_stage_removes() -> None:
    """Issue 31 §4: chapter 08's figure of the sweep's passes draws these states."""
    from histtrim.pairing import sweep_stages
    from livingspec.plotting.rows import sweep_passes

    history = [
        ChatMessage.user("go"),
        ChatMessage.assistant_tool_calls(None, [{"id": "c1", "name": "run", "arguments": {}},
                                                {"id": "c2", "name": "run", "arguments": {}}]),
        ChatMessage.tool_result("c1", "ok"),
        ChatMessage.assistant("Reading it."),
        ChatMessage(role="tool", content="no id"),
    ]
    steps = sweep_stages(history)
    picture = sweep_passes(history, steps, labels=["U", "A", "T", "A", "T?"], title="t")
    states = {(c.row, c.stage): c.state for c in picture.rows}
    assert states[(1, "strip")] == "stripped"  # c2 is never answered
    assert [states[(0, s.stage)] for s in steps] == ["kept"] * len(steps)
    removed = [k for k, v in states.items() if v == "removed"]
    assert len(removed) == 1 and removed[0][0] == 4
    assert states[(4, steps[-1].stage)] in ("removed", "gone")
    plt.close(picture.figure)
