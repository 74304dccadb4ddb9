"""Issue 9: hostile rows never make a library function raise anything but a ValueError (or
pydantic's ValidationError, a ValueError), trims still partition their input, and the orphan
sweep's output always passes the pairing validator.

Rows mix every envelope shape (histtrim and OpenAI-shaped calls, tool results with and
without attachments, carriers) with deep nesting past the parser's limit, escaped lone
surrogates, numbers out of range, whitespace around JSON and escaped keys."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from histtrim import (
    ChatMessage,
    TokenLedger,
    drop_oldest_whole_turn,
    estimate_history_tokens,
    insert_breadcrumb,
    leading_system_count,
    parse_tool_result,
    sweep_orphans,
    to_chat_messages,
    trim_conversation_to_recent_turns,
    trim_to_recent_turn_count,
    trim_to_recent_turns,
    validate_tool_pairing,
)
from histtrim.carriers import parse_tool_calls
from histtrim.display.views import history_html
from histtrim.messages import MAX_JSON_DEPTH
from histtrim.turn_sizes import turn_stats

IDS = st.sampled_from(["c1", "c2", "c3", "", "c\\ud800"])
TEXTS = st.sampled_from(["", " ", "ok", "Looking.", "  trimmed \n", "x\\ud800", "ñ 😀"])
TARGETS = st.sampled_from(
    ["/a.png", "http://x/a.png", "\\\\s\\h", "\\\\?\\C:\\a", "\\\\", "\x1c/a", "C:/a", "nope"]
)
NUMBERS = st.sampled_from(["1", "1e400", "-1e999", "NaN", "Infinity", "1" * 400, "-0.5"])
SPACE = st.sampled_from(["", " ", "\n", " \t\r\n"])


@st.composite
def deep(draw: st.DrawFn) -> str:
    """A value nested around the parser's limit, closed or not."""
    depth = draw(st.sampled_from([MAX_JSON_DEPTH - 2, MAX_JSON_DEPTH - 1, MAX_JSON_DEPTH, 1500]))
    opener = draw(st.sampled_from(["[", '{"a":']))
    closer = "]" if opener == "[" else "}"
    return opener * depth + "1" + (closer * depth if draw(st.booleans()) else "")


def _call(call_id: str, openai: bool, arguments: str) -> str:
    if openai:
        return (
            f'{{"id":"{call_id}","type":"function",'
            f'"function":{{"name":"n","arguments":{arguments}}}}}'
        )
    return f'{{"id":"{call_id}","name":"n","arguments":{arguments}}}'


@st.composite
def dispatch(draw: st.DrawFn) -> str:
    calls = draw(st.lists(st.tuples(IDS, st.booleans()), min_size=0, max_size=3))
    arguments = draw(st.one_of(st.just('"{}"'), deep(), NUMBERS, st.just('"\\ud800"')))
    elements = [_call(i, openai, arguments) for i, openai in calls]
    if draw(st.booleans()):
        elements.append(draw(st.sampled_from(['{"name":"n"}', '{"id":7}', "null", "[]"])))
    text = draw(st.one_of(st.just("null"), TEXTS.map(lambda t: f'"{t}"'), NUMBERS))
    key = draw(st.sampled_from(['"tool_calls"', '"\\u0074ool_calls"']))
    return f'{{"content":{text},{key}:[{",".join(elements)}]}}'


def _attachments(targets: list[str]) -> str:
    return json.dumps([{"kind": "image", "target": t} for t in targets])


@st.composite
def tool_result(draw: st.DrawFn) -> str:
    call_id = draw(IDS)
    attachments = draw(
        st.one_of(
            st.none(),
            st.lists(TARGETS, max_size=2).map(_attachments),
            deep(),
            st.just('"not a list"'),
        )
    )
    key = draw(st.sampled_from(['"attachments"', '"\\u0061ttachments"']))
    extra = f",{key}:{attachments}" if attachments is not None else ""
    content, number = draw(TEXTS), draw(NUMBERS)  # a text may hold a lone surrogate escape
    return f'{{"tool_call_id":"{call_id}","content":"{content}","n":{number}{extra}}}'


@st.composite
def hostile_row(draw: st.DrawFn) -> ChatMessage:
    role = draw(st.sampled_from(["system", "user", "assistant", "assistant", "tool", "tool"]))
    if role == "assistant":
        body = draw(st.one_of(dispatch(), TEXTS, deep()))
    elif role == "tool":
        body = draw(st.one_of(tool_result(), TEXTS, deep()))
    elif role == "user":
        target = draw(TARGETS)
        body = draw(
            st.sampled_from(
                [
                    "question",
                    f"look [IMAGE:{target}]",
                    "[IMAGE:ht\n  tp://x/a.png]",
                    f"[Tool results]\n[Tool attachments: 1]\n[IMAGE:{target}]\nok",
                    "[Tool results]\n[Tool attachments: 3]\n",
                    "[earlier turns omitted to fit the context window]",
                ]
            )
        )
    else:
        body = draw(TEXTS)
    return ChatMessage(role=role, content=draw(SPACE) + body + draw(SPACE))


@st.composite
def exchange(draw: st.DrawFn) -> list[ChatMessage]:
    """A dispatch and results for some of its ids (any order, some foreign, some twice)."""
    ids = draw(st.lists(st.sampled_from(["c1", "c2", "c3"]), min_size=1, max_size=3))
    openai = draw(st.booleans())
    elements = ",".join(_call(i, openai, '"{}"') for i in ids)
    text = draw(st.sampled_from(["null", '" Checking. "', '"  "']))
    rows = [ChatMessage.assistant(draw(SPACE) + f'{{"content":{text},"tool_calls":[{elements}]}}')]
    answered = draw(st.lists(st.sampled_from([*ids, "c9"]), max_size=4))
    rows += [
        ChatMessage(role="tool", content=draw(SPACE) + f'{{"tool_call_id":"{i}","content":"r"}}')
        for i in answered
    ]
    return rows


@st.composite
def hostile_history(draw: st.DrawFn) -> list[ChatMessage]:
    chunks = draw(
        st.lists(st.one_of(hostile_row().map(lambda r: [r]), exchange()), max_size=6)
    )
    return [row for chunk in chunks for row in chunk]


def partitions(kept: list[Any], dropped: list[Any], rows: list[Any], body: int) -> bool:
    """Kept + dropped is exactly the input: dropped rows sit between the kept head and tail."""
    return [*kept[:body], *dropped, *kept[body:]] == rows


def slot_is_user(rows: list[ChatMessage]) -> bool:
    prefix = leading_system_count(rows)
    return prefix < len(rows) and rows[prefix].role == "user"


@settings(max_examples=1000, deadline=None)
@given(hostile_history(), st.booleans(), st.integers(0, 3000))
def test_hostile_rows_only_value_errors_and_partitions(
    rows: list[ChatMessage], crumb: bool, budget: int
) -> None:
    before = list(rows)
    body = leading_system_count(rows) + crumb
    for row in rows:  # the envelope readers never raise
        parse_tool_calls(row)
        parse_tool_result(row)
    assert TokenLedger(rows).total == estimate_history_tokens(rows) >= 4 * len(rows)
    turn_stats(rows)
    history_html(rows)
    validate_tool_pairing(rows)
    if crumb and not slot_is_user(rows):
        for trim in (
            lambda: trim_to_recent_turns(rows, budget, crumb_present=True),
            lambda: trim_to_recent_turn_count(rows, 1, crumb_present=True),
            lambda: drop_oldest_whole_turn(rows, crumb_present=True),
            lambda: insert_breadcrumb(rows, crumb_present=True),
            lambda: sweep_orphans(rows, crumb_present=True),
        ):
            with pytest.raises(ValueError, match="crumb_present"):
                trim()
        return
    token = trim_to_recent_turns(rows, budget, crumb_present=crumb)
    assert partitions(token.history, token.dropped, rows, body)
    count = trim_to_recent_turn_count(rows, 1, crumb_present=crumb)
    assert partitions(count.history, count.dropped, rows, body)
    structured = trim_conversation_to_recent_turns(rows, 1, crumb_present=crumb)
    assert sorted(map(id, [*structured.history, *structured.dropped])) == sorted(map(id, rows))
    kept, dropped = drop_oldest_whole_turn(rows, crumb_present=crumb)
    assert len(kept) + dropped == len(rows)
    swept = sweep_orphans(rows, crumb_present=crumb)
    assert [p for p in validate_tool_pairing(swept.history) if p.is_error] == []
    assert sweep_orphans(swept.history).history == swept.history  # a fixed point
    assert len(swept.history) <= len(rows)
    assert rows == before  # never mutated


@settings(max_examples=300, deadline=None)
@given(hostile_history())
def test_hostile_rows_sweep_keeps_every_row_it_does_not_report(rows: list[ChatMessage]) -> None:
    """Every input row is either kept as it is, rebuilt (a stripped dispatch), or named in
    `removed`; rows that are not dispatches or results are never touched."""
    swept = sweep_orphans(rows)
    reported = {r.position for r in swept.removed}
    untouched = [
        row
        for i, row in enumerate(rows)
        if i not in reported and row.role not in ("assistant", "tool")
    ]
    assert [r for r in swept.history if r.role not in ("assistant", "tool")] == untouched
    for i, row in enumerate(rows):
        if row.role == "tool" and i not in reported:
            assert row in swept.history
    assert to_chat_messages(swept.history) == swept.history
