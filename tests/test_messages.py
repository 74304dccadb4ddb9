"""Rows, their constructors and envelopes (TURN-1), and bad input naming its field."""

from __future__ import annotations

import copy
import json
import pickle

import pytest
from pydantic import ValidationError

from histtrim import (
    BREADCRUMB,
    TOOL_RESULTS_PREFIX,
    AssistantToolCalls,
    Attachment,
    ChatMessage,
    ToolCall,
    ToolResultMessage,
    ToolResults,
    conversation_rows,
    estimate_history_tokens,
    index_turns,
    parse_tool_result,
    to_chat_messages,
)
from histtrim.carriers import (
    parse_tool_calls,
    split_carrier_attachments,
    split_image_markers,
    tool_results_carrier,
)
from histtrim.messages import chat_rows
from histtrim.trim import breadcrumb_message


def test_constants() -> None:
    assert BREADCRUMB == "[earlier turns omitted to fit the context window]"
    assert TOOL_RESULTS_PREFIX == "[Tool results]"
    assert breadcrumb_message() == ChatMessage(role="user", content=BREADCRUMB)


def test_turn_1_chat_constructors() -> None:
    """TURN-1: provider-facing rows are (role, content) with `kind` "chat"."""
    assert ChatMessage.system("s").model_dump() == {
        "kind": "chat",
        "role": "system",
        "content": "s",
    }
    assert ChatMessage.user("u").role == "user"
    assert ChatMessage.assistant("a").role == "assistant"


def test_turn_1_native_tool_call_envelope() -> None:
    """TURN-1: a native tool-call row is the compact JSON `{"content", "tool_calls"}`."""
    call = ToolCall(id="call_1", name="search_files", arguments={"pattern": "TODO", "path": "ñ/"})
    message = ChatMessage.assistant_tool_calls("Searching.", [call])
    assert message.role == "assistant"
    assert message.content == (
        '{"content":"Searching.","tool_calls":[{"id":"call_1","name":"search_files",'
        '"arguments":"{\\"pattern\\":\\"TODO\\",\\"path\\":\\"ñ/\\"}"}]}'
    )
    parsed = parse_tool_calls(message)
    assert parsed is not None
    assert parsed.text == "Searching."
    assert parsed.calls == (call,)
    assert json.loads(parsed.calls[0].arguments) == {"pattern": "TODO", "path": "ñ/"}
    no_text = ChatMessage.assistant_tool_calls(None, [{"id": "c2", "name": "ls"}])
    assert json.loads(no_text.content) == {
        "content": None,
        "tool_calls": [{"id": "c2", "name": "ls", "arguments": "{}"}],
    }


def test_turn_1_native_tool_result_envelope() -> None:
    """TURN-1: a native tool result is `{"tool_call_id", "content"[, "attachments"]}`."""
    bare = ChatMessage.tool_result("call_1", "src/app.py:12")
    assert bare.role == "tool"
    assert bare.content == '{"tool_call_id":"call_1","content":"src/app.py:12"}'
    parsed = parse_tool_result(bare)
    assert parsed is not None
    assert (parsed.tool_call_id, parsed.content, parsed.attachments) == (
        "call_1",
        "src/app.py:12",
        None,
    )
    with_images = ChatMessage.tool_result(
        "call_2", "saved", attachments=["/tmp/a.png", Attachment(kind="file", target="/r.pdf")]
    )
    assert json.loads(with_images.content)["attachments"] == [
        {"kind": "image", "target": "/tmp/a.png"},
        {"kind": "file", "target": "/r.pdf"},
    ]
    parsed = parse_tool_result(with_images)
    assert parsed is not None
    assert parsed.attachments == (
        Attachment(target="/tmp/a.png"),
        Attachment(kind="file", target="/r.pdf"),
    )
    empty = parse_tool_result(ChatMessage.tool_result("c", "x", attachments=[]))
    assert empty is not None
    assert empty.attachments == ()


@pytest.mark.parametrize(
    "message",
    [
        ChatMessage.assistant("plain text"),
        ChatMessage.assistant('{"content": "x"}'),
        ChatMessage.assistant('{"content": null, "tool_calls": []}'),
        ChatMessage.assistant('{"tool_calls": [{"id": "", "name": "x"}]}'),
        ChatMessage.assistant("{broken"),
        ChatMessage.user(
            ChatMessage.assistant_tool_calls(None, [{"id": "c", "name": "x"}]).content
        ),
    ],
)
def test_parse_tool_calls_rejects_non_envelopes(message: ChatMessage) -> None:
    assert parse_tool_calls(message) is None


@pytest.mark.parametrize(
    "content",
    [
        "plain output",
        "{broken",
        "[1, 2]",
        '{"tool_call_id": 7, "content": "x"}',
        '{"tool_call_id": "c", "content": 5}',
        '{"tool_call_id": "c", "content": "x", "attachments": "nope"}',
        '{"tool_call_id": "c", "content": "x", "attachments": [{"kind": "image"}]}',
    ],
)
def test_parse_tool_result_malformed_is_none(content: str) -> None:
    """A malformed envelope is not an error: the parser says None (priced as text)."""
    assert parse_tool_result(ChatMessage(role="tool", content=content)) is None


def test_parse_tool_result_only_reads_tool_rows() -> None:
    assert parse_tool_result(ChatMessage.user(ChatMessage.tool_result("c", "x").content)) is None


def test_tool_results_carrier_format_and_attachments() -> None:
    """TURN-3: prompt-mode results come back in a `[Tool results]` user row."""
    carrier = tool_results_carrier([("grep", "a\nb"), ("ls", "")])
    assert carrier.role == "user"
    assert carrier.content == (
        '[Tool results]\n<tool_result name="grep">\na\nb\n</tool_result>\n'
        '<tool_result name="ls">\n\n</tool_result>'
    )
    assert split_carrier_attachments(carrier.content) is None
    declared = tool_results_carrier([("shot", "ok")], attachments=["/a.png", "photo.png"])
    split = split_carrier_attachments(declared.content)
    assert split is not None
    assert split.images == ("/a.png",)
    assert (
        split.text
        == '[Tool results]\n[IMAGE:photo.png]\n<tool_result name="shot">\nok\n</tool_result>'
    )


def test_split_image_markers() -> None:
    marked = split_image_markers("a [IMAGE: /x.png ] b [IMAGE:y.png] c [IMAGE:C:/z.png]")
    assert marked.images == ("/x.png", "C:/z.png")
    assert marked.text == "a  b [IMAGE:y.png] c "
    assert split_image_markers("no markers").images == ()


def test_turn_1_to_chat_messages_one_tool_row_per_result() -> None:
    """TURN-1: a structured ToolResults item becomes one provider-facing tool row per result."""
    structured = [
        ChatMessage.user("go"),
        AssistantToolCalls(tool_calls=(ToolCall(id="a", name="grep"), ToolCall(id="b", name="ls"))),
        ToolResults(
            results=(
                ToolResultMessage(tool_call_id="a", content="1", tool_name="grep"),
                ToolResultMessage(tool_call_id="b", content="2"),
            )
        ),
    ]
    assert to_chat_messages(structured) == [
        ChatMessage.user("go"),
        ChatMessage.assistant_tool_calls(
            None, [ToolCall(id="a", name="grep"), ToolCall(id="b", name="ls")]
        ),
        ChatMessage.tool_result("a", "1"),
        ChatMessage.tool_result("b", "2"),
    ]


def test_rows_are_frozen_and_roundtrip() -> None:
    """Rows are frozen; JSON out and back in gives equal rows with the same estimate."""
    message = ChatMessage.user("¿Dónde? [IMAGE:/tmp/a.png]")
    with pytest.raises(ValidationError):
        message.content = "changed"  # type: ignore[misc]
    again = ChatMessage.model_validate_json(message.model_dump_json())
    assert again == message
    for copied in (
        again,
        copy.deepcopy(message),
        pickle.loads(pickle.dumps(message)),
        message.model_copy(),
        ChatMessage.model_construct(role="user", content=message.content),
    ):
        assert copied == message
        assert estimate_history_tokens([copied]) == estimate_history_tokens([message])
        assert index_turns([copied]).starts == (0,)
    changed = message.model_copy(update={"content": "[Tool results]\nx"})
    assert index_turns([changed]).starts == ()
    assert estimate_history_tokens([changed]) == 4 + 4  # 16 bytes


# ---- bad input names its field ------------------------------------------------------


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ({"role": "robot", "content": "x"}, "role"),
        ({"role": "user", "content": 5}, "content"),
        ({"role": "user", "content": None}, "content"),
        ({"role": "user", "content": b"bytes"}, "content"),
        ({"role": "user"}, "content"),
        ({"content": "x"}, "role"),
        ({"role": "user", "content": "x", "colour": "red"}, "colour"),
    ],
)
def test_bad_chat_rows_name_the_field(row: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as error:
        chat_rows([ChatMessage.user("ok"), row])  # type: ignore[list-item]
    assert field in str(error.value)
    assert "1" in str(error.value)  # the row's position


@pytest.mark.parametrize(
    ("item", "field"),
    [
        ({"kind": "tool_results", "results": []}, "results"),
        ({"kind": "tool_results"}, "results"),
        ({"kind": "tool_results", "results": [{"content": "x"}]}, "tool_call_id"),
        (
            {"kind": "tool_results", "results": [{"tool_call_id": "", "content": "x"}]},
            "tool_call_id",
        ),
        ({"kind": "tool_results", "results": [{"tool_call_id": "c", "content": 3}]}, "content"),
        ({"kind": "assistant_tool_calls", "tool_calls": []}, "tool_calls"),
        ({"kind": "assistant_tool_calls", "tool_calls": [{"id": "c"}]}, "name"),
        ({"kind": "assistant_tool_calls", "tool_calls": [{"id": "", "name": "x"}]}, "id"),
        (
            {"kind": "assistant_tool_calls", "text": 1, "tool_calls": [{"id": "c", "name": "x"}]},
            "text",
        ),
        ({"kind": "bogus", "role": "user", "content": "x"}, "kind"),
        ({"kind": "chat", "role": "tool_result", "content": "x"}, "role"),
    ],
)
def test_bad_structured_items_name_the_field(item: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as error:
        conversation_rows([item])  # type: ignore[list-item]
    assert field in str(error.value)


def test_unknown_kind_names_the_offending_tag() -> None:
    with pytest.raises(ValidationError) as error:
        conversation_rows([{"kind": "bogus"}])  # type: ignore[list-item]
    assert "'bogus'" in str(error.value)
    assert "'tool_results'" in str(error.value)


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: ChatMessage(role="robot", content="x"), "role"),
        (lambda: ChatMessage(role="user", content=1), "content"),
        (lambda: ChatMessage.assistant_tool_calls("x", []), "tool_calls"),
        (lambda: ChatMessage.tool_result("", "x"), "tool_call_id"),
        (lambda: ChatMessage.tool_result("c", None), "content"),
        (lambda: ChatMessage.tool_result("c", "x", attachments=[""]), "target"),
        (lambda: ToolResults(results=()), "results"),
        (lambda: ToolCall(id="c", name=""), "name"),
        (lambda: ToolCall(id="c", name="x", arguments=5), "arguments"),
    ],
)
def test_bad_constructor_input_names_the_field(build: object, field: str) -> None:
    with pytest.raises(ValidationError) as error:
        build()  # type: ignore[operator]
    assert field in str(error.value)
