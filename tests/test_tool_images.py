"""Tool images in the structured model (EST-2, EST-3): a tool declares files with its result
(`ToolOutput`), the structured `ToolResultMessage` keeps them, the provider-facing row carries
them in its envelope, and they are priced only while the result is in the current turn."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from histtrim import (
    IMAGE_TOKENS,
    Agent,
    AssistantToolCalls,
    Attachment,
    ChatMessage,
    ConversationMessage,
    ProviderProfile,
    ProviderReply,
    RuntimeProfile,
    Tool,
    ToolCall,
    ToolOutput,
    ToolResultMessage,
    ToolResults,
    cap_tool_result,
    conversation_rows,
    estimate_history_tokens,
    message_cost,
    parse_tool_result,
    resolve_runtime,
    sweep_orphans,
    to_chat_messages,
    validate_tool_pairing,
)
from histtrim.adapters.anthropic import from_anthropic, to_anthropic
from histtrim.agent.providers import ScriptedProvider
from histtrim.conformance.codec import row_json
from histtrim.display.views import history_html
from histtrim.estimate import estimate_image_tokens
from histtrim.messages import FRAME_TOKENS
from livingspec.plotting.tables import row_summary

SHOT = "https://files.example.com/shot.png"
LOCAL = "/tmp/checkout.png"


def exchange(attachments: list[str] | None) -> list[ConversationMessage]:
    return [
        ChatMessage.user("Why does checkout fail?"),
        AssistantToolCalls(tool_calls=(ToolCall(id="c1", name="screenshot"),)),
        ToolResults(results=(
            ToolResultMessage(
                tool_call_id="c1", content="page rendered", tool_name="screenshot",
                attachments=attachments,  # type: ignore[arg-type]
            ),
        )),
    ]


def test_targets_become_attachments_and_none_is_left_out_of_dumps() -> None:
    result = ToolResultMessage(tool_call_id="c1", content="ok", attachments=[SHOT])  # type: ignore[arg-type]
    assert result.attachments == (Attachment(target=SHOT),)
    assert result.model_dump()["attachments"] == ({"kind": "image", "target": SHOT},)
    plain = ToolResultMessage(tool_call_id="c1", content="ok")
    assert "attachments" not in plain.model_dump()
    assert "attachments" not in repr(plain)
    assert ToolResultMessage.model_validate(result.model_dump()) == result


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (SHOT, "got one string"),
        ([{"kind": "image"}], "Field required"),
        ([""], "at least 1 character"),
        (7, "valid tuple"),
    ],
)
def test_bad_attachments_name_the_field(value: object, problem: str) -> None:
    with pytest.raises(ValidationError) as caught:
        ToolResultMessage(tool_call_id="c1", content="ok", attachments=value)  # type: ignore[arg-type]
    assert caught.value.errors()[0]["loc"][0] == "attachments"
    assert problem in str(caught.value)


def test_the_row_carries_the_declared_attachments() -> None:
    rows = to_chat_messages(exchange([SHOT, LOCAL]))
    assert rows[-1] == ChatMessage.tool_result("c1", "page rendered", attachments=[SHOT, LOCAL])
    parsed = parse_tool_result(rows[-1])
    assert parsed is not None and [a.target for a in parsed.attachments or ()] == [SHOT, LOCAL]
    assert json.loads(to_chat_messages(exchange(None))[-1].content) == {
        "tool_call_id": "c1", "content": "page rendered"
    }


def test_est_2_est_3_structured_tool_images_priced_only_in_the_current_turn() -> None:
    with_images = exchange([SHOT, LOCAL, "relative/not-loadable.png"])
    rows = to_chat_messages(with_images)
    tool_row = rows[-1]
    # Current turn: the result's text (13 bytes -> 4 tokens) + framing + two loadable images;
    # the envelope's JSON and the non-loadable target are not priced (EST-3).
    assert message_cost(tool_row, current_turn=True) == 4 + FRAME_TOKENS + 2 * IMAGE_TOKENS
    assert estimate_history_tokens(rows) == sum(
        message_cost(row, current_turn=i > 0) for i, row in enumerate(rows)
    )
    # After a new user turn the result is history: its images are not dispatched, and the
    # row is priced as the bytes of its envelope (EST-2, EST-1).
    assert message_cost(tool_row, current_turn=False) == -(
        -len(tool_row.content.encode()) // 4
    ) + FRAME_TOKENS
    later = [*with_images, ChatMessage.assistant("Fixed."), ChatMessage.user("Thanks")]
    later_rows = to_chat_messages(later)
    assert estimate_history_tokens(later_rows) == sum(
        message_cost(row, current_turn=i == len(later_rows) - 1)
        for i, row in enumerate(later_rows)
    )
    assert estimate_history_tokens(later_rows) < estimate_history_tokens(rows)


def test_a_tool_declares_images_through_the_agent_loop() -> None:
    def screenshot(url: str) -> ToolOutput:
        """Render a page."""
        return ToolOutput(content=f"rendered {url} " + "x" * 500, attachments=[SHOT])

    runtime = resolve_runtime(
        RuntimeProfile(max_tool_result_chars=100),
        ProviderProfile(model="m", context_window=100_000),
        "m",
    )
    call = ToolCall(id="c1", name="screenshot", arguments={"url": "https://shop"})
    provider = ScriptedProvider([ProviderReply(tool_calls=(call,)), ProviderReply(text="done")])
    agent = Agent(provider, runtime, tools=[screenshot])
    agent.turn("Look at the shop")
    results = [item for item in agent.history if isinstance(item, ToolResults)]
    (result,) = results[0].results
    assert result.attachments == (Attachment(target=SHOT),)
    # The cap (PAIR-3) cuts the text, never the images.
    assert result.content == cap_tool_result("rendered https://shop " + "x" * 500, 100)
    assert "truncated" in result.content
    (tool_row,) = [row for row in agent.working_history() if row.role == "tool"]
    parsed = parse_tool_result(tool_row)
    assert parsed is not None and parsed.attachments == (Attachment(target=SHOT),)
    second = provider.requests[1]
    assert estimate_image_tokens(second.messages) == IMAGE_TOKENS  # dispatched with the result
    assert agent.calls[1].tokens == second.estimated_tokens  # the ledger priced it the same
    provider.extend([ProviderReply(text="ok")])
    agent.turn("And now?")
    third = provider.requests[2]
    assert tool_row in third.messages
    assert estimate_image_tokens(third.messages) == 0  # a past turn's image is not sent
    assert agent.calls[2].tokens == third.estimated_tokens


def test_a_tool_whose_output_is_bad_gets_an_error_result_without_attachments() -> None:
    def broken() -> ToolOutput:
        """Declare a lone string."""
        return ToolOutput(content="ok", attachments=SHOT)  # type: ignore[arg-type]

    runtime = resolve_runtime(RuntimeProfile(), ProviderProfile(model="m"), "m")
    call = ToolCall(id="c1", name="broken")
    provider = ScriptedProvider([ProviderReply(tool_calls=(call,)), ProviderReply(text="done")])
    agent = Agent(provider, runtime, tools=[Tool(broken, "broken")])
    agent.turn("go")
    (result,) = next(i for i in agent.history if isinstance(i, ToolResults)).results
    assert result.content.startswith("error: ValidationError")
    assert result.attachments is None


def test_a_plain_string_tool_declares_nothing() -> None:
    runtime = resolve_runtime(RuntimeProfile(), ProviderProfile(model="m"), "m")
    call = ToolCall(id="c1", name="echo")
    provider = ScriptedProvider([ProviderReply(tool_calls=(call,)), ProviderReply(text="done")])
    agent = Agent(provider, runtime, tools=[Tool(lambda: "plain", "echo")])
    agent.turn("go")
    (result,) = next(i for i in agent.history if isinstance(i, ToolResults)).results
    assert result.attachments is None
    assert "attachments" not in next(r for r in agent.working_history() if r.role == "tool").content


def test_display_table_codec_and_sweep_keep_the_attachments() -> None:
    history = exchange([SHOT])
    assert "attachment: " in history_html(history)
    assert "(+1 attached image)" in row_summary(history[-1], width=200)
    encoded = [row_json(item) for item in history]
    assert conversation_rows(encoded) == history
    swept = sweep_orphans(history)
    assert swept.history == history
    assert validate_tool_pairing(history) == []


def test_the_anthropic_writer_keeps_tool_images_or_refuses() -> None:
    data = "data:image/png;base64,iVBORw0KGgo="
    rows = to_chat_messages(exchange([SHOT, data]))
    body = to_anthropic(rows)
    (block,) = body["messages"][-1]["content"]
    assert block["content"] == [
        {"type": "text", "text": "page rendered"},
        {"type": "image", "source": {"type": "url", "url": SHOT}},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": "iVBORw0KGgo="}},
    ]
    back = from_anthropic(body).rows
    # Read back, the images are the carrier's declared attachments: the same price.
    assert estimate_history_tokens(back) - estimate_history_tokens(rows) == (
        estimate_history_tokens(back[-1:]) - estimate_history_tokens(rows[-1:])
    )
    assert "[Tool attachments: 2]" in back[-1].content
    with pytest.raises(ValueError, match="URL or base64"):
        to_anthropic(to_chat_messages(exchange([LOCAL])))
    pdf = ToolResultMessage(tool_call_id="c1", content="ok",
                            attachments=(Attachment(kind="pdf", target=SHOT),))
    with pytest.raises(ValueError, match="'pdf' attachment"):
        to_anthropic([*to_chat_messages(exchange(None))[:2], pdf.row()])
