"""Issue 9: the same answer as the reference runtime, one test per reported case.

Each case is the smallest disagreement found against the reference; the test name says which
item of the issue it pins."""

from __future__ import annotations

import json

import pytest

from histtrim import (
    Agent,
    AssistantToolCalls,
    ChatMessage,
    PairingProblem,
    ProviderProfile,
    RuntimeProfile,
    ToolCall,
    ToolResultMessage,
    ToolResults,
    drop_oldest_whole_turn,
    estimate_history_tokens,
    index_turns,
    insert_breadcrumb,
    is_loadable_target,
    resolve_runtime,
    sweep_orphans,
    trim_conversation_to_recent_turns,
    trim_to_recent_turn_count,
    trim_to_recent_turns,
    validate_tool_pairing,
)
from histtrim.adapters.openai import from_openai
from histtrim.agent.providers import ScriptedProvider
from histtrim.carriers import json_object, tool_results_carrier
from histtrim.estimate import estimate_image_tokens, estimate_tool_schemas

SYSTEM = ChatMessage.system("system")
OLD_CRUMB = ChatMessage.user("[synthetic] earlier history was trimmed")


def call(*ids: str, text: str | None = None) -> ChatMessage:
    return ChatMessage.assistant_tool_calls(text, [{"id": i, "name": "n"} for i in ids])


def result(call_id: str, content: str = "ok") -> ChatMessage:
    return ChatMessage.tool_result(call_id, content)


def plain(content: str) -> int:
    return -(-len(content.encode()) // 4) + 4


# ---------------------------------------------------------------- 1. the breadcrumb flag


def crumb_case() -> list[ChatMessage]:
    return [
        SYSTEM,
        OLD_CRUMB,
        ChatMessage.user("old request"),
        ChatMessage.assistant("old answer"),
        ChatMessage.user("newest request"),
        ChatMessage.assistant("newest answer"),
    ]


def test_item_1_flag_is_authoritative_for_drop_oldest_whole_turn() -> None:
    rows = crumb_case()
    kept, dropped = drop_oldest_whole_turn(rows, crumb_present=True)
    assert kept == [rows[0], rows[1], rows[4], rows[5]]
    assert dropped == 2


def test_item_1_flag_is_authoritative_for_every_crumb_aware_function() -> None:
    rows = crumb_case()
    index = index_turns(rows, crumb_present=True)
    assert (index.crumb, index.starts, index.turn_count) == (1, (2, 4), 2)
    token = trim_to_recent_turns(rows, 20, crumb_present=True)
    assert token.history == [rows[0], rows[1], rows[4], rows[5]] and token.dropped_messages == 2
    count = trim_to_recent_turn_count(rows, 1, crumb_present=True)
    assert count.history == token.history and count.dropped == rows[2:4]
    structured = trim_conversation_to_recent_turns(rows, 1, crumb_present=True)
    assert structured.history == [rows[0], rows[4], rows[5]]  # the owner re-inserts it
    assert structured.dropped_messages == 2
    assert insert_breadcrumb(rows, crumb_present=True) == rows  # no second crumb
    assert sweep_orphans(rows, crumb_present=True).history == rows


def test_item_1_the_slot_is_removed_from_the_boundaries_by_position() -> None:
    """A slot whose text does not open a turn (a `[Tool results]`-looking older crumb) must
    not take the first real turn's boundary with it."""
    rows = [SYSTEM, ChatMessage.user("[Tool results] omitted"), *crumb_case()[2:]]
    index = index_turns(rows, crumb_present=True)
    assert index.starts == (2, 4)
    kept, dropped = drop_oldest_whole_turn(rows, crumb_present=True)
    assert kept == [rows[0], rows[1], rows[4], rows[5]] and dropped == 2


@pytest.mark.parametrize(
    "rows",
    [[SYSTEM], [SYSTEM, ChatMessage.assistant("hi")], [SYSTEM, result("c1")]],
    ids=["no row", "assistant row", "tool row"],
)
def test_item_1_only_a_flag_naming_no_user_row_is_an_error(rows: list[ChatMessage]) -> None:
    with pytest.raises(ValueError, match="crumb_present"):
        drop_oldest_whole_turn(rows, crumb_present=True)


# ---------------------------------------------------------------- 2. deep JSON

DEEP_TOOL = ChatMessage(role="tool", content='{"attachments":' + "[" * 1500)


def test_item_2_deep_json_is_priced_and_trimmed_as_plain_text() -> None:
    rows = [ChatMessage.user("look"), DEEP_TOOL]
    assert estimate_history_tokens(rows) == plain("look") + plain(DEEP_TOOL.content)
    rows = [ChatMessage.user("a"), ChatMessage.assistant("b"), *rows]
    result_ = trim_to_recent_turns(rows, 10)
    assert result_.history == rows[2:] and result_.dropped == rows[:2]


def test_item_2_deep_json_is_swept_as_plain_text() -> None:
    """The row has no readable call id and follows no native dispatch: pass 2 removes it,
    as the reference does (issue 19), and the validator calls it an error."""
    rows = [ChatMessage.user("look"), DEEP_TOOL]
    assert sweep_orphans(rows).history == rows[:1]
    assert validate_tool_pairing(rows) == [PairingProblem("orphan_result", 1, None)]
    assert validate_tool_pairing(rows)[0].is_error


def test_item_2_depth_limit_is_the_reference_parser_s() -> None:
    """127 nested arrays/objects parse, 128 do not (the reference's parser budget)."""

    def nested(depth: int) -> str:  # the outer object is one level
        return '{"a":' + "[" * (depth - 1) + "]" * (depth - 1) + "}"

    assert json_object(nested(127)) is not None
    assert json_object(nested(128)) is None
    assert json_object('{"a":"' + "[" * 5000 + '"}') is not None  # brackets inside a string
    assert json_object('{"a":"\\"' + "[" * 500 + '"}') is not None  # after an escaped quote
    assert json_object('{"a":"x","b":' + "[" * 200 + '"\\"') is None  # unterminated, too deep


@pytest.mark.parametrize(
    "number", ["NaN", "Infinity", "-Infinity", "1e400", "-1e999", "1" * 400]
)
def test_item_2_non_finite_numbers_are_not_json(number: str) -> None:
    row = ChatMessage(
        role="tool",
        content=f'{{"tool_call_id":"c1","content":"x","n":{number},'
        '"attachments":[{"kind":"image","target":"/a.png"}]}',
    )
    assert json_object(row.content) is None
    assert estimate_history_tokens([ChatMessage.user("u"), row]) == plain("u") + plain(row.content)
    assert json_object('{"n":' + "1" * 300 + "}") is not None  # a big but finite number


# ---------------------------------------------------------------- 3. lone surrogates


def test_item_3_escaped_lone_surrogate_is_not_an_envelope() -> None:
    row = ChatMessage.assistant(
        '{"content":"x\\ud800","tool_calls":[{"id":"c1","name":"n","arguments":"{}"}]}'
    )
    rows = [ChatMessage.user("go"), row]
    swept = sweep_orphans(rows)
    assert swept.history == rows and swept.removed == ()
    assert json_object('{"a":"\\ud83d\\ude00"}') == {"a": "😀"}  # a valid pair is fine


# ---------------------------------------------------------------- 4. image markers


@pytest.mark.parametrize(
    ("target", "loadable"),
    [
        ("\\\\", False),
        ("\\\\server", False),
        ("\\\\server\\", False),
        ("\\\\\\share", False),
        ("\\\\server\\share", True),
        ("\\\\server\\share\\a.png", True),
        ("\\\\?\\C:\\a.png", False),
        ("\\\\.\\pipe\\x", False),
        ("\x1c/a.png", False),
        ("/a.png\x1f", True),  # a trailing U+001F is not trimmed, but the prefix still holds
        (" \t\r\n/a.png \t", True),
    ],
)
def test_item_4_loadability_as_the_reference_decides(target: str, loadable: bool) -> None:
    assert is_loadable_target(target) is loadable


def test_item_4_a_bare_unc_marker_is_text() -> None:
    assert estimate_history_tokens([ChatMessage.user("[IMAGE:\\\\]")]) == 7


def test_item_4_a_wrapped_payload_is_rejoined() -> None:
    row = ChatMessage.user("[IMAGE:ht\n  tp://x/a.png]")
    assert estimate_history_tokens([row]) == 1604
    assert estimate_image_tokens([row]) == 1600


# ---------------------------------------------------------------- 5. declared attachments

ENVELOPE = (
    '{"tool_call_id":"c1","content":"shot","attachments":[{"kind":"image","target":"/a.png"}]}'
)


@pytest.mark.parametrize(
    "content",
    [" \n" + ENVELOPE + "\n ", ENVELOPE.replace('"attachments"', '"\\u0061ttachments"')],
    ids=["whitespace", "escaped key"],
)
def test_item_5_still_an_envelope(content: str) -> None:
    row = ChatMessage(role="tool", content=content)
    rows = [ChatMessage.user("u"), row]
    assert estimate_history_tokens(rows) == plain("u") + 1 + 1600 + 4


def test_item_5_no_real_user_row_makes_every_tool_result_current() -> None:
    rows = [SYSTEM, ChatMessage(role="tool", content=ENVELOPE)]
    assert estimate_image_tokens(rows) == 1600
    assert estimate_history_tokens(rows) == plain("system") + 1 + 1600 + 4


# ---------------------------------------------------------------- 6. the orphan sweep

OPENAI_CALL = ChatMessage.assistant(
    json.dumps(
        {
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        }
    )
)


def test_item_6_openai_shaped_call_keeps_its_result() -> None:
    rows = [ChatMessage.user("go"), OPENAI_CALL, result("c1")]
    swept = sweep_orphans(rows)
    assert swept.history == rows and swept.removed == ()
    assert validate_tool_pairing(rows) == []


def test_item_6_tool_row_without_a_readable_id_is_kept_only_after_a_dispatch() -> None:
    """Issue 19: the strip turns the unanswered dispatch into its text first, so the row
    with no readable id no longer follows a native dispatch and pass 2 removes it."""
    legacy = ChatMessage(role="tool", content="plain output")
    rows = [ChatMessage.user("go"), call("c1", text="Reading."), legacy]
    swept = sweep_orphans(rows)
    assert swept.history == [rows[0], ChatMessage.assistant("Reading.")]
    assert [(r.kind, r.tool_call_id) for r in swept.removed] == [("call", "c1"), ("result", None)]
    answered = [ChatMessage.user("go"), call("c1"), result("c1"), legacy]
    assert sweep_orphans(answered).history == answered
    assert [p.kind for p in validate_tool_pairing(answered)] == ["legacy_result"]


def test_item_6_dispatch_after_an_unresolved_one_goes_with_its_results() -> None:
    rows = [ChatMessage.user("go"), call("c1"), call("c2"), result("c1"), result("c2")]
    swept = sweep_orphans(rows)
    assert swept.history == [rows[0], rows[1], rows[3]]
    assert [(r.kind, r.tool_call_id, r.position) for r in swept.removed] == [
        ("call", "c2", 2),
        ("result", "c2", 4),
    ]


@pytest.mark.parametrize(("text", "kept"), [("  Looking.\n", "Looking."), (" \n\t", None)])
def test_item_6_salvaged_text_is_trimmed(text: str, kept: str | None) -> None:
    rows = [ChatMessage.user("go"), call("c1", text=text)]
    expected = [rows[0]] + ([ChatMessage.assistant(kept)] if kept else [])
    assert sweep_orphans(rows).history == expected


def test_item_6_json_with_whitespace_around_it_is_read_as_json() -> None:
    dispatch = ChatMessage.assistant("\n " + call("c1").content + " \n")
    answer = ChatMessage(role="tool", content=" " + result("c1").content + "\n")
    rows = [ChatMessage.user("go"), dispatch, answer]
    assert sweep_orphans(rows).history == rows
    assert validate_tool_pairing(rows) == []


@pytest.mark.parametrize(
    "between",
    [ChatMessage.assistant("Let me check."), tool_results_carrier([("n", "ok")])],
    ids=["plain assistant row", "tool results carrier"],
)
def test_item_6_a_result_must_follow_its_call_directly(between: ChatMessage) -> None:
    rows = [ChatMessage.user("go"), call("c1", text="Checking."), between, result("c1")]
    swept = sweep_orphans(rows)
    assert swept.history == [rows[0], ChatMessage.assistant("Checking."), between]
    assert validate_tool_pairing(swept.history) == []
    assert [p.kind for p in validate_tool_pairing(rows)] == ["unanswered_call", "orphan_result"]


def test_item_6_structured_history_follows_the_same_rule() -> None:
    items = [
        ChatMessage.user("go"),
        AssistantToolCalls(tool_calls=(ToolCall(id="c1", name="n"),)),
        AssistantToolCalls(tool_calls=(ToolCall(id="c2", name="n"),)),
        ToolResults(
            results=(
                ToolResultMessage(tool_call_id="c1", content="a"),
                ToolResultMessage(tool_call_id="c2", content="b"),
            )
        ),
    ]
    swept = sweep_orphans(items)
    assert swept.history == [
        items[0],
        items[1],
        ToolResults(results=(ToolResultMessage(tool_call_id="c1", content="a"),)),
    ]
    assert validate_tool_pairing(swept.history) == []


def test_item_6_partial_answer_strips_only_the_unanswered_call() -> None:
    rows = [ChatMessage.user("go"), OPENAI_CALL, result("c1")]
    two = json.loads(OPENAI_CALL.content)
    two["tool_calls"].append({**two["tool_calls"][0], "id": "c2"})
    rows[1] = ChatMessage.assistant(json.dumps(two))
    swept = sweep_orphans(rows)
    assert json.loads(swept.history[1].content) == json.loads(OPENAI_CALL.content)
    assert validate_tool_pairing(swept.history) == []


def test_item_6_validator_reports_each_problem() -> None:
    rows = [
        ChatMessage.user("go"),
        call("c1", "c2"),
        result("c1"),
        ChatMessage(role="tool", content="legacy"),
        result("c9"),
    ]
    assert validate_tool_pairing(rows) == [
        PairingProblem("unanswered_call", 1, "c2"),
        PairingProblem("legacy_result", 3, None),
        PairingProblem("orphan_result", 4, "c9"),
    ]
    assert [p.is_error for p in validate_tool_pairing(rows)] == [True, False, True]
    assert str(validate_tool_pairing(rows)[0]).startswith("row 1: a call no tool row")


def test_item_6_agent_restore_refuses_a_history_the_sweep_could_not_pair(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The agent's restore checks the swept history with the validator: should the sweep
    ever leave a broken pairing, the session is refused and the agent is unchanged."""
    from histtrim import SweepResult
    from histtrim.agent import runtime as runtime_module

    rt = resolve_runtime(RuntimeProfile(), ProviderProfile(model="m", context_window=10_000), "m")
    bot = Agent(ScriptedProvider(), rt, system_prompt="s")
    good = [ChatMessage.user("go"), call("c1"), result("c1"), ChatMessage.assistant("done")]
    assert bot.restore(good).removed == ()
    monkeypatch.setattr(
        runtime_module, "sweep_orphans", lambda rows, **_: SweepResult(list(rows), ())
    )
    with pytest.raises(ValueError, match="tool pairing"):
        bot.restore([ChatMessage.user("go"), result("c1")])
    assert bot.history == good


def _nested(depth: int) -> dict[str, object]:
    value: dict[str, object] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    "build",
    [
        lambda deep: ChatMessage.assistant_tool_calls(
            None, [{"id": "c", "name": "n", "arguments": deep}]
        ),
        lambda deep: estimate_tool_schemas([{"name": "t", "parameters": deep}]),
        lambda deep: from_openai([{"role": "user", "content": "hi", "extra": deep}]),
    ],
    ids=["tool call arguments", "tool schema parameters", "OpenAI message"],
)
def test_item_2_deep_structured_input_is_a_value_error(build: object) -> None:
    """Issue 9: no input reaches Python's recursion limit; too deep is a clear ValueError."""
    with pytest.raises(ValueError, match="128 levels"):
        build(_nested(3000))  # type: ignore[operator]
    build(_nested(100))  # type: ignore[operator]  # well within the parser's budget
