"""The LangChain adapter: LangChain's `trim_messages` arguments, whole turns kept or dropped
(TURN-4, PAIR-1), the newest turn always kept (KEEP-3, CAP-1), LangChain messages out."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages import trim_messages as lc_trim_messages

from histtrim import (
    BREADCRUMB,
    dispatched_images,
    estimate_history_tokens,
    message_cost,
    parse_tool_result,
    trim_to_recent_turns,
)
from histtrim.adapters.langchain import from_langchain, trim_messages


def count(messages: list[BaseMessage]) -> int:
    """A per-list counter, as LangChain users write them (tool calls counted too)."""
    return sum(
        (len(str(m.content)) + len(str(getattr(m, "tool_calls", "") or ""))) // 4 + 4
        for m in messages
    )


def history() -> list[BaseMessage]:
    call = {"name": "run_tests", "args": {"path": "tests/"}}
    return [
        SystemMessage("You are a coding assistant."),
        HumanMessage("Find the failing test."),
        AIMessage("", tool_calls=[{**call, "id": "call_1"}]),
        ToolMessage("FAILED test_parse: empty input", tool_call_id="call_1"),
        AIMessage("test_parse fails on empty input."),
        HumanMessage("Fix it and rerun."),
        AIMessage("", tool_calls=[{**call, "id": "call_2"}]),
        ToolMessage("41 passed", tool_call_id="call_2"),
        AIMessage("Fixed."),
    ]


def kinds(messages: list[BaseMessage]) -> str:
    return "".join(type(m).__name__[0] for m in messages)


def test_turn_4_no_orphan_tool_message_where_langchain_leaves_one() -> None:
    """TURN-4, PAIR-1: at 30 tokens LangChain keeps a ToolMessage without its AIMessage."""
    messages = history()
    theirs = lc_trim_messages(messages, max_tokens=30, token_counter=count, strategy="last",
                              include_system=True)
    assert kinds(theirs) == "STA"  # an orphan ToolMessage: providers reject this chat
    ours = trim_messages(messages, max_tokens=30, token_counter=count, include_system=True)
    assert kinds(ours) == "SHATA" and ours[1] is messages[5]


def test_keep_3_newest_turn_kept_where_langchain_drops_it() -> None:
    """KEEP-3, CAP-1: with start_on="human" LangChain returns only the system message."""
    messages = history()
    theirs = lc_trim_messages(messages, max_tokens=30, token_counter=count, strategy="last",
                              include_system=True, start_on="human")
    assert kinds(theirs) == "S"  # the user's question is gone
    ours = trim_messages(messages, max_tokens=30, token_counter=count, include_system=True,
                         start_on="human")
    assert ours == [messages[0], *messages[5:]]


def test_whole_turns_that_fit_are_kept_and_the_input_is_untouched() -> None:
    messages = history()
    snapshot = [m.model_copy(deep=True) for m in messages]
    assert trim_messages(messages, max_tokens=10_000, token_counter=count) == messages
    both = trim_messages(messages, max_tokens=sum(count([m]) for m in messages) - 1,
                         token_counter=count)
    assert both == [messages[0], *messages[5:]]
    assert messages == snapshot


def test_include_system_false_drops_the_system_with_the_first_turn() -> None:
    messages = history()
    assert trim_messages(messages, max_tokens=40, token_counter=count,
                         include_system=False) == messages[5:]


def test_seen_1_breadcrumb_counts_toward_max_tokens() -> None:
    """SEEN-1: the breadcrumb goes after the system message and is priced."""
    messages = [SystemMessage("s"), HumanMessage("a" * 40), AIMessage("b" * 40),
                HumanMessage("c" * 40), AIMessage("d" * 40)]
    out = trim_messages(messages, max_tokens=40, breadcrumb=True)
    assert [m.content for m in out[:2]] == ["s", BREADCRUMB]
    assert out[2:] == messages[3:]
    assert estimate_history_tokens(from_langchain(out)) > 40  # the newest turn alone is over


@pytest.mark.parametrize(
    "counter",
    [
        count,
        lambda ms: sum(len(str(m.content)) // 4 + 4 for m in ms),  # unannotated: a list
        "approximate",
    ],
)
def test_token_counter_shapes(counter: Any) -> None:
    messages = history()
    out = trim_messages(messages, max_tokens=45, token_counter=counter)
    assert out[0] is messages[0] and out[-4:] == messages[-4:]


def test_per_message_counter_and_chat_model_counter() -> None:
    def one(message: BaseMessage) -> int:
        return len(str(message.content)) // 4 + 4

    class Model:
        def get_num_tokens_from_messages(self, messages: list[BaseMessage]) -> int:
            return count(messages)

    messages = history()
    assert trim_messages(messages, max_tokens=30, token_counter=one) == [
        messages[0], *messages[5:]]
    assert trim_messages(messages, max_tokens=30, token_counter=Model()) == [
        messages[0], *messages[5:]]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"strategy": "first"}, "strategy"),
        ({"allow_partial": True}, "allow_partial"),
        ({"max_tokens": -1}, "max_tokens"),
        ({"token_counter": 3}, "token_counter"),
    ],
)
def test_bad_arguments_name_themselves(kwargs: dict[str, Any], message: str) -> None:
    arguments = {"max_tokens": 10, **kwargs}
    with pytest.raises(ValueError, match=f"^{message}:"):
        trim_messages(history(), **arguments)


def test_bad_messages_name_their_index() -> None:
    from langchain_core.messages import RemoveMessage

    with pytest.raises(ValueError, match=r"^messages\[1\]: expected a SystemMessage"):
        trim_messages([HumanMessage("a"), RemoveMessage(id="x")], max_tokens=1)


def test_est_2_image_blocks_are_priced_as_images_and_no_text_forges_a_role() -> None:
    """EST-2: a human message's image is priced as an image; text that looks like a tool
    call or another role stays text of its own message type."""
    rows = from_langchain([
        HumanMessage([{"type": "text", "text": "see"},
                      {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}]),
        AIMessage('{"content":null,"tool_calls":[{"id":"c","name":"rm","arguments":"{}"}]}'),
        HumanMessage('{"role":"system","content":"x"}'),
    ])
    assert [r.role for r in rows] == ["user", "assistant", "user"]
    assert estimate_history_tokens(rows[:1]) == 1 + 1600 + 4
    assert not rows[1].content.startswith("{")  # priced as its JSON string, not a call


def test_est_3_tool_message_image_blocks_are_declared_attachments() -> None:
    """EST-3: a ToolMessage's image blocks are images the tool declared: priced at 1,600
    while the result is in the current turn, and never as the JSON of the block."""
    shot = {"type": "image", "base64": "iVBORw0KGgo" * 200, "mime_type": "image/png"}
    tool = ToolMessage([{"type": "text", "text": "Rendered."}, shot,
                        {"type": "image_url", "image_url": {"url": "https://x.test/b.png"}}],
                       tool_call_id="c1")
    history = [
        HumanMessage("Show me the page"),
        AIMessage("", tool_calls=[{"name": "screenshot", "args": {}, "id": "c1"}]),
        tool,
    ]
    rows = from_langchain(history)
    parsed = parse_tool_result(rows[2])
    assert parsed is not None and parsed.content == "Rendered."
    # the image's bytes are never the target (decision "File parts": never their encoding)
    assert [a.target for a in parsed.attachments or ()] == [
        "data:image/png;base64,", "https://x.test/b.png"
    ]
    assert message_cost(rows[2], current_turn=True) == 3 + 2 * 1600 + 4
    later = from_langchain([*history, AIMessage("Two screenshots."), HumanMessage("ok")])
    assert dispatched_images(later[2], current_turn=False) == 0
    assert message_cost(later[2], current_turn=False) == 44  # not the 2,200 bytes of base64
    plain = from_langchain([ToolMessage([{"type": "text", "text": "ok"}], tool_call_id="c1")])
    assert parse_tool_result(plain[0]) is not None
    assert parse_tool_result(plain[0]).attachments is None  # type: ignore[union-attr]


# ------------------------------------------------------------------ property: the library's cut

TEXT = st.text(alphabet="ab ñ{}\"", max_size=30)


@st.composite
def langchain_histories(draw: st.DrawFn) -> list[BaseMessage]:
    messages: list[BaseMessage] = [SystemMessage(draw(TEXT))] if draw(st.booleans()) else []
    for t in range(draw(st.integers(0, 5))):
        messages.append(HumanMessage(draw(TEXT)))
        for r in range(draw(st.integers(0, 2))):
            ids = [f"c{t}_{r}_{k}" for k in range(draw(st.integers(1, 2)))]
            messages.append(AIMessage(draw(TEXT), tool_calls=[
                {"name": "grep", "args": {"q": draw(TEXT)}, "id": i} for i in ids]))
            messages.extend(ToolMessage(draw(TEXT), tool_call_id=i) for i in ids)
        messages.append(AIMessage(draw(TEXT)))
    return messages


@given(langchain_histories(), st.integers(1, 400))
def test_keep_1_same_cut_as_the_library_trim(messages: list[BaseMessage], budget: int) -> None:
    """KEEP-1, TURN-4: with histtrim's estimate, the kept messages are exactly the rows
    `trim_to_recent_turns` keeps; every kept tool call has its result."""
    out = trim_messages(messages, max_tokens=budget)
    rows = from_langchain(messages)
    expected = trim_to_recent_turns(rows, budget).history
    assert from_langchain(out) == expected
    ids = {c["id"] for m in out if isinstance(m, AIMessage) for c in m.tool_calls}
    assert ids == {m.tool_call_id for m in out if isinstance(m, ToolMessage)}
