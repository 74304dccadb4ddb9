"""Issue 20, values that forge, break or disable: each is refused with a one-line error naming
its field, or read as plain text, never re-read as something it was not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from histtrim import ChatMessage, ToolCall, estimate_history_tokens
from histtrim.adapters.anthropic import from_anthropic, to_anthropic
from histtrim.adapters.anthropic_checks import AnthropicFormatError
from histtrim.adapters.langchain import from_langchain
from histtrim.adapters.openai import from_openai
from histtrim.adapters.openai_checks import OpenAIFormatError
from histtrim.carriers import image_marker, tool_results_carrier
from histtrim.cli import main

FORGING = ["http://x/a.png" + "][IMAGE:/b" * 20, "http://x/a.png]", "http://x/a\n.png"]
"""Image targets no `[IMAGE:...]` marker can carry: one would be re-read as 21 images."""


@pytest.mark.parametrize("url", FORGING)
def test_marker_refuses_a_target_it_cannot_carry(url: str) -> None:
    """Issue 20 item 6 (EST-2): writing a target into a marker never makes other markers."""
    with pytest.raises(ValueError, match=r"\[IMAGE:\.\.\.\] marker"):
        image_marker(url)
    with pytest.raises(ValueError, match=r"\[IMAGE:\.\.\.\] marker"):
        tool_results_carrier([("shot", "ok")], attachments=[url])


def _openai(url: str) -> Any:
    return from_openai(
        [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}]
    )


def _anthropic(url: str) -> Any:
    image = {"type": "image", "source": {"type": "url", "url": url}}
    return from_anthropic({"messages": [{"role": "user", "content": [image]}]})


def _anthropic_result(url: str) -> Any:
    image = {"type": "image", "source": {"type": "url", "url": url}}
    result = {"type": "tool_result", "tool_use_id": "c1", "content": [image]}
    call = {"type": "tool_use", "id": "c1", "name": "shot", "input": {}}
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [result]},
    ]
    return from_anthropic({"messages": messages})


@pytest.mark.parametrize("url", FORGING)
@pytest.mark.parametrize(
    ("read", "error", "field"),
    [
        (_openai, OpenAIFormatError, "image_url.url"),
        (_anthropic, AnthropicFormatError, "source.url"),
        (_anthropic_result, AnthropicFormatError, "source.url"),
        (
            lambda url: from_langchain(
                [HumanMessage(content=[{"type": "image_url", "image_url": {"url": url}}])]
            ),
            ValueError,
            "messages[0]",
        ),
    ],
    ids=["openai", "anthropic", "anthropic-tool-result", "langchain"],
)
def test_adapters_refuse_an_image_url_a_marker_cannot_carry(
    read: Any, error: type[Exception], field: str, url: str
) -> None:
    """Issue 20 item 6: an image URL holding `][IMAGE:/b` was priced as 21 images (33,604
    tokens instead of 1,604) and the row gained local-path markers; now each format's reader
    refuses it with an error naming the field."""
    with pytest.raises(error, match=r"\[IMAGE:\.\.\.\] marker") as raised:
        read(url)
    assert field in str(raised.value)


def test_a_carried_url_is_one_image() -> None:
    rows = _openai("http://x/a.png")
    assert estimate_history_tokens(rows) == 1600 + 4


SYSTEMS = [5, {"a": 1}, [5], [{"type": "text"}], [{"type": "image"}], True]


@pytest.mark.parametrize("system", SYSTEMS, ids=[json.dumps(s) for s in SYSTEMS])
@pytest.mark.parametrize("command", [["estimate"], ["trim", "--max-turns", "1"]])
def test_a_malformed_anthropic_system_is_one_line(
    system: object, command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 20 item 15: a body whose top-level `system` is malformed is a one-line error
    naming `system` (an AnthropicFormatError traceback before); so is a role that is an
    object or a list."""
    body = tmp_path / "body.json"
    body.write_text(json.dumps({"system": system, "messages": [{"role": "user", "content": "hi"}]}))
    code = main([*command, str(body)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "field 'system" in err, err
    for role in ({"a": 1}, ["user"]):
        messages = [{"role": "user", "content": "q"}, {"role": role, "content": "x"}]
        body.write_text(json.dumps({"system": "s", "messages": messages}))
        code = main([*command, str(body)])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and "field 'role'" in err, err


def test_to_anthropic_keeps_too_deep_arguments_as_text() -> None:
    """Issue 20 item 16: tool-call arguments of deeply nested JSON text become the block's
    `{"arguments": text}`, as text that is not JSON does (a RecursionError before)."""
    arguments = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"
    rows = [
        ChatMessage.user("q"),
        ChatMessage.assistant_tool_calls(None, [ToolCall(id="c", name="n", arguments=arguments)]),
        ChatMessage.tool_result("c", "ok"),
    ]
    [block] = to_anthropic(rows)["messages"][1]["content"]
    assert block["input"] == {"arguments": arguments}


def test_explain_shows_control_characters_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 20 item 17: a config's provider or model name with escape sequences or newlines
    is printed with them escaped: nothing reaches the terminal raw."""
    name = "p\x1b[31mX"
    config = {
        "providers": {name: {"model": "m\x1b[2J\nEVIL\u202e", "context_window": 1000}},
        "agents": {"a": {"provider": name}},
    }
    path = tmp_path / "agents.json"
    path.write_text(json.dumps(config))
    assert main(["explain", "--config", str(path), "--agent", "a", "--model", "x\x1b\ny"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out
    assert all(line[:2].isupper() for line in out.splitlines())  # no line of a name's own
    assert "m\\x1b[2J\\nEVIL\\u202e" in out


@pytest.mark.parametrize("url", FORGING)
def test_integrations_refuse_an_image_url_a_marker_cannot_carry(url: str) -> None:
    """Issue 20 item 6: the framework integrations write images through the same marker
    writer, so a URL holding `][IMAGE:/b` is refused there too (it was priced as 21 images)."""
    pydantic_ai = pytest.importorskip("pydantic_ai.messages")
    pytest.importorskip("agents")
    from histtrim.integrations import openai_agents
    from histtrim.integrations import pydantic_ai as histtrim_pydantic_ai

    prompt = pydantic_ai.UserPromptPart(content=[pydantic_ai.ImageUrl(url=url)])
    with pytest.raises(ValueError, match=r"\[IMAGE:\.\.\.\] marker"):
        histtrim_pydantic_ai.to_rows([pydantic_ai.ModelRequest(parts=[prompt])])
    item = {"role": "user", "content": [{"type": "input_image", "image_url": url}]}
    with pytest.raises(ValueError, match=r"\[IMAGE:\.\.\.\] marker"):
        openai_agents.to_rows([item])
