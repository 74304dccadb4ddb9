"""The OpenAI chat-completions adapter: a lossless round trip, the natural rows for the usual
shapes, and whole-turn trims that take and return OpenAI dicts."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from histtrim import (
    BREADCRUMB,
    IMAGE_TOKENS,
    ChatMessage,
    ToolCall,
    TrimReason,
    estimate_history_tokens,
    index_turns,
    parse_tool_result,
)
from histtrim.adapters import trim_records
from histtrim.adapters.openai import from_openai, openai_breadcrumb, to_openai, trim_openai
from histtrim.adapters.openai_checks import OpenAIFormatError
from histtrim.carriers import parse_tool_calls


def as_json(value: object) -> str:
    """Compare as JSON documents: `True` and `1`, or `1` and `1.0`, differ."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


# ------------------------------------------------------------------ strategies

TEXT = st.text(
    alphabet="abcXYZ 0123456789.,:;!?{}[]\"'\\\n-_/ñé€😀", max_size=12
) | st.sampled_from(
    [
        "[IMAGE:/tmp/a.png]",
        "see [IMAGE:https://x.test/a.png] here",
        "[IMAGE:photo.png]",
        "[Tool results]\nok",
        BREADCRUMB,
        '{"openai":{"role":"user","content":"x"}}',
        '{"content":null,"tool_calls":[{"id":"c","name":"n","arguments":"{}"}]}',
        '{"tool_call_id":"c","content":"x"}',
        "",
    ]
)
URLS = st.sampled_from(
    [
        "https://cdn.example.com/shot.png",
        "data:image/png;base64,iVBORw0KGgo=",
        "/tmp/local.png",
        "relative.png",
        "https://x.test/a[b.png",  # a `]` cannot be carried: refused (issue 20)
        "[IMAGE:https://x.test/nested.png",
        " https://x.test/padded.png ",
    ]
)
JSON_VALUES = st.sampled_from(
    [None, True, False, 0, 1, 1.0, -2.5, "", "x", "ñ😀", [], {}, [1, "a", None],
     {"a": {"b": [True, 1]}}, {"1": 1}, {"url": "[IMAGE:/tmp/a.png]"}]
) | TEXT
EXTRA_KEYS = st.dictionaries(
    st.sampled_from(["name", "refusal", "annotations", "audio", "metadata", "openai"]),
    JSON_VALUES,
    max_size=2,
)


DETAILS = st.sampled_from(["auto", "low", "high"])
BOOLS = st.booleans()
ONE_IN_FIVE = st.integers(0, 4)


@st.composite
def image_parts(draw: st.DrawFn) -> dict[str, Any]:
    image: dict[str, Any] = {"url": draw(URLS)}
    if draw(BOOLS):
        image["detail"] = draw(DETAILS)
    return {"type": "image_url", "image_url": image}


TEXT_PARTS = st.builds(lambda t: {"type": "text", "text": t}, TEXT)
REFUSAL_PARTS = st.builds(lambda t: {"type": "refusal", "refusal": t}, TEXT)
OTHER_PARTS = st.just({"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}})
USER_CONTENT = TEXT | st.lists(st.one_of(TEXT_PARTS, image_parts(), OTHER_PARTS), max_size=4)
TEXT_CONTENT = TEXT | st.lists(TEXT_PARTS, max_size=2)
ASSISTANT_PARTS = st.lists(TEXT_PARTS | REFUSAL_PARTS, max_size=2)
CALL_IDS = st.sampled_from(["call_1", "call_2", "call_Xa9", "c"])
FUNCTION_NAMES = st.sampled_from(["read_file", "grep", "run_tests"])
ARGUMENTS = st.sampled_from(['{"path":"a.py"}', "{}", "not json", ""])
ROLES = st.sampled_from(["system", "developer", "user", "assistant", "tool"])
ASSISTANT_CONTENT = st.sampled_from(["absent", "none", "text", "parts"])
CALL_SHAPES = st.sampled_from(["none", "calls", "null", "empty"])
SMALL_INDEX = st.integers(0, 3)


@st.composite
def tool_call(draw: st.DrawFn) -> dict[str, Any]:
    call: dict[str, Any] = {
        "id": draw(CALL_IDS),
        "type": "function",
        "function": {"name": draw(FUNCTION_NAMES), "arguments": draw(ARGUMENTS)},
    }
    if draw(ONE_IN_FIVE) == 0:
        del call["type"]
    if draw(ONE_IN_FIVE) == 0:
        call["index"] = draw(SMALL_INDEX)
    return call


TOOL_CALLS = st.lists(tool_call(), min_size=1, max_size=3)


@st.composite
def openai_messages(draw: st.DrawFn) -> dict[str, Any]:
    """Any chat-completions message histtrim reads, with odd but valid shapes mixed in."""
    role = draw(ROLES)
    message: dict[str, Any] = {"role": role}
    if role == "user":
        message["content"] = draw(USER_CONTENT)
    elif role in ("system", "developer"):
        message["content"] = draw(TEXT_CONTENT)
    elif role == "tool":
        message["tool_call_id"] = draw(CALL_IDS)
        message["content"] = draw(TEXT_CONTENT)
    else:
        content = draw(ASSISTANT_CONTENT)
        if content == "none":
            message["content"] = None
        elif content == "text":
            message["content"] = draw(TEXT)
        elif content == "parts":
            message["content"] = draw(ASSISTANT_PARTS)
        calls = draw(CALL_SHAPES)
        if calls == "calls":
            message["tool_calls"] = draw(TOOL_CALLS)
        elif calls == "null":
            message["tool_calls"] = None
        elif calls == "empty":
            message["tool_calls"] = []
    message.update(draw(EXTRA_KEYS))
    return message


ROW_KINDS = st.sampled_from(["system", "user", "assistant", "calls", "result"])
# A text that is itself an adapter envelope converts to what it carries (documented).
ROW_TEXT = TEXT.filter(lambda t: '"openai"' not in t)
OPTIONAL_TEXT = st.none() | ROW_TEXT
ROW_COUNT = st.integers(0, 8)


@st.composite
def canonical_rows(draw: st.DrawFn) -> list[ChatMessage]:
    """Rows built with histtrim's own constructors (no attachments: OpenAI has no place)."""
    rows = []
    for _ in range(draw(ROW_COUNT)):
        kind = draw(ROW_KINDS)
        text = draw(ROW_TEXT)
        if kind == "system":
            rows.append(ChatMessage.system(text))
        elif kind == "user":
            rows.append(ChatMessage.user(text))
        elif kind == "assistant":
            rows.append(ChatMessage.assistant(text))
        elif kind == "calls":
            calls = [ToolCall(id=draw(CALL_IDS), name="grep", arguments='{"q":"x"}')]
            rows.append(ChatMessage.assistant_tool_calls(draw(OPTIONAL_TEXT), calls))
        else:
            rows.append(ChatMessage.tool_result(draw(CALL_IDS), text))
    return rows


# ------------------------------------------------------------------ the round trip


@given(st.lists(openai_messages(), max_size=6))
def test_round_trip_is_lossless(messages: list[dict[str, Any]]) -> None:
    """to_openai(from_openai(m)) == m, compared as JSON, for every message shape read."""
    before = copy.deepcopy(messages)
    rows = from_openai(messages)
    assert len(rows) == len(messages)
    assert as_json(to_openai(rows)) == as_json(messages)
    assert from_openai(to_openai(rows)) == rows
    assert messages == before  # inputs are never mutated


@given(canonical_rows())
def test_histtrim_rows_survive_the_trip_to_openai_and_back(rows: list[ChatMessage]) -> None:
    assert from_openai(to_openai(rows)) == rows


def test_usual_shapes_become_the_rows_the_runtime_keeps() -> None:
    messages = [
        {"role": "system", "content": "You are a coding agent."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Why does it look like this? "},
                {"type": "image_url", "image_url": {"url": "https://cdn.example.com/s.png"}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path":"app.css"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": ".box { width: 480px }"},
        {"role": "assistant", "content": "The box has a fixed width."},
    ]
    rows = from_openai(messages)
    assert rows == [
        ChatMessage.system("You are a coding agent."),
        ChatMessage.user("Why does it look like this? [IMAGE:https://cdn.example.com/s.png]"),
        ChatMessage.assistant_tool_calls(
            None, [ToolCall(id="call_1", name="read_file", arguments='{"path":"app.css"}')]
        ),
        ChatMessage.tool_result("call_1", ".box { width: 480px }"),
        ChatMessage.assistant("The box has a fixed width."),
    ]
    parsed = parse_tool_calls(rows[2])
    result = parse_tool_result(rows[3])
    assert parsed is not None and result is not None
    assert parsed.calls[0].id == result.tool_call_id == "call_1"


def test_image_parts_are_priced_as_images_est_2() -> None:
    """EST-2: an image part of a user message costs IMAGE_TOKENS, however long its data URL."""
    data_url = "data:image/png;base64," + "A" * 40_000
    with_image = [{"role": "user", "content": [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": data_url, "detail": "high"}},
    ]}]
    text_only = [{"role": "user", "content": "look"}]
    difference = estimate_history_tokens(from_openai(with_image)) - estimate_history_tokens(
        from_openai(text_only)
    )
    assert IMAGE_TOKENS <= difference < IMAGE_TOKENS + 40  # the envelope's few JSON bytes


def test_what_a_row_cannot_say_rides_along() -> None:
    message = {
        "role": "assistant",
        "content": "Done.",
        "refusal": None,
        "annotations": [],
        "name": "codey",
    }
    (row,) = from_openai([message])
    assert row.content == "Done."  # the text alone: the extra keys never reach it
    assert row.extras is not None
    assert json.loads(row.extras)["openai"] == {
        "set": {"refusal": None, "annotations": [], "name": "codey"}
    }
    assert to_openai([row]) == [message]


def test_developer_role_is_a_system_row_turn_5() -> None:
    """TURN-5: a `developer` message is part of the leading system block."""
    rows = from_openai(
        [
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": "hi"},
        ]
    )
    assert [row.role for row in rows] == ["system", "user"]
    assert index_turns(rows).prefix_len == 1


def test_tool_rows_that_openai_cannot_carry_are_refused() -> None:
    with pytest.raises(ValueError, match=r"rows\[0\]\.content: a tool row must be"):
        to_openai([ChatMessage(role="tool", content="plain output")])
    with pytest.raises(ValueError, match=r"rows\[1\]\.content: tool-result attachments"):
        to_openai(
            [
                ChatMessage.user("shot"),
                ChatMessage.tool_result("call_1", "saved", attachments=["/tmp/a.png"]),
            ]
        )


BAD_MESSAGES = [
    ("not an object", "", "expected an object"),
    ({"role": "function", "content": "x"}, "role", "legacy function-calling format"),
    ({"content": "x"}, "role", "expected one of"),
    ({"role": "user"}, "content", "required"),
    ({"role": "user", "content": None}, "content", "got null"),
    ({"role": "user", "content": 3}, "content", "got a number"),
    ({"role": "user", "content": ["x"]}, "content[0]", "expected an object"),
    ({"role": "user", "content": [{"text": "x"}]}, "content[0].type", "expected a string"),
    ({"role": "user", "content": [{"type": "text"}]}, "content[0].text", "expected a string"),
    (
        {"role": "user", "content": [{"type": "image_url", "image_url": "u"}]},
        "content[0].image_url",
        "expected an object",
    ),
    (
        {"role": "user", "content": [{"type": "image_url", "image_url": {}}]},
        "content[0].image_url.url",
        "got null",
    ),
    ({"role": "tool", "content": "x"}, "tool_call_id", "non-empty string"),
    ({"role": "tool", "tool_call_id": "", "content": "x"}, "tool_call_id", "non-empty string"),
    ({"role": "assistant", "tool_calls": {}}, "tool_calls", "expected a list"),
    ({"role": "assistant", "tool_calls": [1]}, "tool_calls[0]", "expected an object"),
    (
        {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]},
        "tool_calls[0].id",
        "non-empty string",
    ),
    (
        {"role": "assistant", "tool_calls": [{"id": "c", "type": "custom", "custom": {}}]},
        "tool_calls[0].type",
        "only 'function'",
    ),
    ({"role": "assistant", "tool_calls": [{"id": "c"}]}, "tool_calls[0].function", "object"),
    (
        {"role": "assistant", "tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]},
        "tool_calls[0].function.name",
        "non-empty string",
    ),
    (
        {
            "role": "assistant",
            "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": 1}}],
        },
        "tool_calls[0].function.arguments",
        "JSON string, got a number",
    ),
    ({"role": "user", "content": "x", "extra": {1, 2}}, "", "not JSON-serializable"),
    # An Anthropic body's blocks are not chat-completions parts: refused, never dropped.
    (
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f",
                                           "input": {}}]},
        "content[0].type",
        "'tool_use' is an Anthropic content block",
    ),
    (
        {"role": "user", "content": [{"type": "text", "text": "a"},
                                     {"type": "tool_result", "tool_use_id": "t"}]},
        "content[1].type",
        "'tool_result' is an Anthropic content block",
    ),
    (
        {"role": "user", "content": [{"type": "image", "source": {"type": "url",
                                                                  "url": "https://x/a.png"}}]},
        "content[0].type",
        "'image' is an Anthropic content block",
    ),
]


@pytest.mark.parametrize(("message", "field", "problem"), BAD_MESSAGES)
def test_bad_messages_name_the_index_and_field(message: object, field: str, problem: str) -> None:
    good = {"role": "user", "content": "fine"}
    with pytest.raises(OpenAIFormatError) as caught:
        from_openai([good, message])  # type: ignore[list-item]
    assert caught.value.index == 1
    assert caught.value.field == field
    assert problem in caught.value.problem
    assert str(caught.value).startswith(f"messages[1]{'.' + field if field else ''}: ")


# ------------------------------------------------------------------ trims on OpenAI dicts


def session() -> list[dict[str, Any]]:
    call = {"id": "call_1", "type": "function", "function": {"name": "grep", "arguments": "{}"}}
    return [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Find the TODOs."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a.py:1: TODO " + "x" * 400},
        {"role": "assistant", "content": "One TODO in a.py.", "refusal": None},
        {"role": "system", "content": "The user switched branch."},
        {"role": "user", "content": [
            {"type": "text", "text": "And this page?"},
            {"type": "image_url", "image_url": {"url": "https://x.test/p.png", "detail": "low"}},
        ]},
        {"role": "assistant", "content": "It is the login page."},
        {"role": "user", "content": "Thanks!"},
        {"role": "assistant", "content": "You're welcome."},
    ]


def test_budget_trim_keeps_whole_turns_and_returns_the_input_dicts_keep_1_turn_4() -> None:
    """KEEP-1, TURN-4, TURN-5, SEEN-1, SEEN-2 on OpenAI dicts."""
    messages = session()
    before = copy.deepcopy(messages)
    out = trim_openai(messages, budget_tokens=1700)
    assert messages == before
    # Turn 1 (the tool call with its result, and the late system message that follows it
    # in that turn) is dropped whole; the leading system message stays.
    assert out.records == [messages[0], openai_breadcrumb(), *messages[6:]]
    assert out.records[0] is not messages[0]  # copies, never the caller's dicts
    assert out.event is not None
    assert out.event.reason is TrimReason.TOKEN_BUDGET
    assert (out.event.dropped_messages, out.event.kept_turns) == (5, 2)
    assert out.event.tokens_after == estimate_history_tokens(out.rows)
    assert out.crumb_present and out.crumb_inserted
    assert from_openai(out.records) == out.rows


def test_turn_limit_trim_and_max_turns_zero_keep_2_keep_3() -> None:
    """KEEP-2: the newest N turns; KEEP-3: max_turns = 0 still keeps the newest turn."""
    messages = session()
    two = trim_openai(messages, max_turns=2)
    assert two.records == [messages[0], openai_breadcrumb(), *messages[6:]]
    zero = trim_openai(messages, max_turns=0)
    assert zero.records == [messages[0], openai_breadcrumb(), *messages[8:]]
    assert zero.event is not None and zero.event.reason is TrimReason.TURN_LIMIT
    assert zero.event.kept_turns == 1


def test_no_trim_returns_the_same_messages_turn_6() -> None:
    """TURN-6: when nothing is dropped the output equals the input, and no event."""
    messages = session()
    out = trim_openai(messages, budget_tokens=100_000)
    assert out.records == messages and out.event is None and not out.trimmed


def test_a_second_trim_with_the_flag_adds_no_second_breadcrumb() -> None:
    first = trim_openai(session(), max_turns=2)
    second = trim_openai(first.records, max_turns=1, crumb_present=first.crumb_present)
    assert [m["content"] for m in second.records].count(BREADCRUMB) == 1
    assert second.records[1] == openai_breadcrumb()
    assert second.result.dropped_messages == 2  # the crumb is not a dropped message


def test_breadcrumb_can_be_left_out() -> None:
    out = trim_openai(session(), max_turns=1, breadcrumb=False)
    assert BREADCRUMB not in [m["content"] for m in out.records]
    assert not out.crumb_present and out.event is not None


@given(st.lists(openai_messages(), max_size=8), st.integers(0, 3000))
def test_trimmed_records_are_the_kept_rows(messages: list[dict[str, Any]], budget: int) -> None:
    """The output is the input with one run of whole turns cut out, dicts untouched (TURN-4)."""
    out = trim_openai(messages, budget_tokens=budget, breadcrumb=False)
    assert from_openai(out.records) == out.result.history
    cut = len(messages) - len(out.records)
    assert cut == len(out.result.dropped)
    assert any(
        as_json(out.records) == as_json(messages[:k] + messages[k + cut :])
        for k in range(len(out.records) + 1)
    )


def test_limits_are_exclusive_and_records_pair_with_rows() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        trim_openai(session())
    with pytest.raises(ValueError, match="exactly one"):
        trim_openai(session(), budget_tokens=10, max_turns=1)
    with pytest.raises(ValueError, match="records: 1 records but 0 rows"):
        trim_records(["x"], [], max_turns=1)
    with pytest.raises(ValueError, match="budget_tokens must be >= 0"):
        trim_openai(session(), budget_tokens=-1)


def test_budget_trim_counts_the_inserted_breadcrumb_keep_1_cap_1() -> None:
    """KEEP-1, CAP-1, SEEN-1: the breadcrumb a trim inserts is sent too, so the output fits the
    budget unless only the newest turn is left, and trimming it again changes nothing."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "sys"}]
    for i in range(6):
        messages += [
            {"role": "user", "content": f"question {i} " + "x" * 40},
            {"role": "assistant", "content": "answer " + "y" * 40},
        ]
    # System 5 tokens, each turn 33, the breadcrumb 17. With a budget of 104 the three newest
    # turns fit without the breadcrumb (104) but not with it (121): two turns stay (88).
    out = trim_openai(messages, budget_tokens=104)
    assert out.event is not None
    assert out.records == [messages[0], openai_breadcrumb(), *messages[-4:]]
    assert (out.event.dropped_messages, out.event.kept_turns) == (8, 2)
    assert out.event.tokens_after == estimate_history_tokens(out.rows) == 88
    assert out.event.tokens_before == out.result.tokens_before == 5 + 6 * 33
    assert out.crumb_present and out.crumb_inserted
    again = trim_openai(out.records, budget_tokens=104, crumb_present=True)
    assert not again.trimmed


@given(messages=st.lists(openai_messages(), max_size=12), data=st.data())
def test_a_budget_trim_fits_or_keeps_one_turn_keep_1(
    messages: list[dict[str, Any]], data: st.DataObject
) -> None:
    """KEEP-1, CAP-1: breadcrumb included, the output is over the budget only with one turn."""
    total = estimate_history_tokens(from_openai(messages))
    budget = data.draw(st.integers(1, max(total, 1)), label="budget")
    out = trim_openai(messages, budget_tokens=budget)
    if out.event is not None:
        assert out.event.tokens_after <= budget or out.event.kept_turns == 1
