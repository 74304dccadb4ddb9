"""Anthropic conversations as structured items: each tool call and result on its own, a
result's images its declared attachments (EST-3), so `histtrim review` replays Anthropic
sessions exactly as it replays the same session in histtrim's own formats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from histtrim import (
    AssistantToolCalls,
    Attachment,
    ChatMessage,
    ConversationMessage,
    ToolResultMessage,
    ToolResults,
    to_chat_messages,
)
from histtrim.adapters.anthropic import to_anthropic
from histtrim.adapters.anthropic_checks import AnthropicFormatError
from histtrim.adapters.anthropic_items import anthropic_items
from histtrim.cli import main
from livingspec.synth import generate

SHOT = "https://files.example.com/a.png"


def _without_tool_names(items: list[ConversationMessage]) -> list[ConversationMessage]:
    """Anthropic results name their call only: the tool's name is not in the format."""
    return [
        ToolResults(results=tuple(r.model_copy(update={"tool_name": None}) for r in item.results))
        if isinstance(item, ToolResults) else item
        for item in items
    ]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_research_session_round_trips_through_an_anthropic_body(seed: int) -> None:
    items = generate("research", seed, 8)
    assert any(isinstance(i, ToolResults) and i.results[0].attachments for i in items)
    body = to_anthropic(to_chat_messages(items))
    assert anthropic_items(body) == _without_tool_names(items)
    assert anthropic_items(body["messages"]) == _without_tool_names(items)[1:]  # no system


def test_blocks_become_calls_results_and_attachments() -> None:
    body = {
        "system": [{"type": "text", "text": "Be brief."}],
        "messages": [
            {"role": "user", "content": "Look at the page"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Rendering."},
                {"type": "tool_use", "id": "t1", "name": "shot", "input": {"url": "/"}},
                {"type": "tool_use", "id": "t2", "name": "grep", "input": {}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": [
                    {"type": "text", "text": "Rendered."},
                    {"type": "image", "source": {"type": "url", "url": SHOT}},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                 "data": "AAAA"}},
                ]},
                {"type": "tool_result", "tool_use_id": "t2", "content": "no match",
                 "is_error": True},
                {"type": "text", "text": "Also check the footer."},
            ]},
            {"role": "assistant", "content": "Done."},
        ],
    }
    items = anthropic_items(body)
    assert items[0] == ChatMessage.system("Be brief.")
    assert items[1] == ChatMessage.user("Look at the page")
    calls = items[2]
    assert isinstance(calls, AssistantToolCalls)
    assert calls.text == "Rendering." and [c.id for c in calls.tool_calls] == ["t1", "t2"]
    assert items[3] == ToolResults(results=(
        ToolResultMessage(tool_call_id="t1", content="Rendered.", attachments=(
            # base64 data is priced by its type, never its encoding (`tool_image_target`)
            Attachment(target=SHOT), Attachment(target="data:image/png;base64,"))),
        ToolResultMessage(tool_call_id="t2", content="no match\nAlso check the footer."),
    ))
    assert items[4] == ChatMessage.assistant("Done.")


def test_bad_blocks_name_their_field() -> None:
    bad = [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": 7}]}]
    with pytest.raises(AnthropicFormatError, match=r"messages\[0\]\.content\[0\]"):
        anthropic_items(bad)


def test_review_reads_an_anthropic_session_as_the_same_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = generate("research", 4, 12)
    structured = tmp_path / "structured" / "research.json"
    anthropic = tmp_path / "anthropic" / "research.json"
    for path in (structured, anthropic):
        path.parent.mkdir()
    structured.write_text(json.dumps(
        [item.model_dump(mode="json") for item in _without_tool_names(items)]))
    anthropic.write_text(json.dumps(to_anthropic(to_chat_messages(items))))
    tables = []
    policy = Path(__file__).parent.parent / "examples" / "policies" / "cheap-images.toml"
    for path in (structured, anthropic):
        assert main(["review", str(path), "--workers", "1", "--policy", str(policy)]) == 0
        tables.append(capsys.readouterr().out)
    assert tables[0] == tables[1]
    assert [line.split()[-2:] for line in tables[0].splitlines()
            if line.startswith("turns replayed")] == [["12", "12"]]


def test_review_names_the_line_of_a_bad_anthropic_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"system": "s", "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": ""}]},
    ]}, indent=1))
    assert main(["review", str(path)]) == 2
    error = capsys.readouterr().err
    # The line the bad message starts on, and the field inside it.
    assert error == (f"histtrim: error: {path}: line 8: field 'content[0].name': expected a "
                     "non-empty string, got an empty string\n")
