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
from histtrim.adapters.langchain import from_langchain
from histtrim.adapters.openai import from_openai
from histtrim.carriers import (
    image_marker,
    image_markers,
    image_target,
    marker_image,
    split_carrier_attachments,
    split_image_markers,
    tool_results_carrier,
)
from histtrim.cli import main

FORGING = [
    "http://x/a.png" + "][IMAGE:/b" * 20,
    "http://x/a.png]",
    "http://x/a\n.png",
    "http://[2001:db8::1]/cat.png",
    "https://x.example/cat.png?size=[1,2]",
]
"""Image targets holding a `]` or a line break: valid URLs (an IPv6 host, an unencoded `[]` in
a query) and one that would be re-read as 21 images if a marker carried it as it is."""


@pytest.mark.parametrize("url", FORGING)
def test_marker_carries_any_target_as_one_image(url: str) -> None:
    """Issue 30 item 1 (EST-2): a target with `]` was refused (every integration then failed
    the run); now its marker is one loadable image whatever the target holds, and round
    two's guarantee stands: no target becomes other markers."""
    marker = image_marker(url)
    (read,) = image_markers(marker)
    assert (read.start, read.end) == (0, len(marker))
    assert marker_image(read.payload) is not None
    assert estimate_history_tokens([ChatMessage.user(f"see {marker} now")]) == 1 + 1600 + 4 + 1
    carrier = tool_results_carrier([("shot", "ok")], attachments=[url])
    split = split_carrier_attachments(carrier.content)
    assert split is not None and len(split.images) == 1


def test_a_marker_is_loadable_exactly_when_its_target_is() -> None:
    for target in ["C:/a]b.png", "\\\\srv\\]", "a]b.png", "ht\n  tp://x/a].png", " /x] "]:
        assert (marker_image(image_marker(target)[7:-1]) is None) == (
            image_target(target) is None
        ), target


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
    "read",
    [
        _openai,
        _anthropic,
        _anthropic_result,
        lambda url: from_langchain(
            [HumanMessage(content=[{"type": "image_url", "image_url": {"url": url}}])]
        ),
    ],
    ids=["openai", "anthropic", "anthropic-tool-result", "langchain"],
)
def test_adapters_price_an_image_url_with_a_bracket_as_one_image(read: Any, url: str) -> None:
    """Issue 30 item 1: each format's reader refused such a URL (so `histtrim estimate` and
    `trim` refused the file); now it is one image, never 21."""
    result = read(url)
    rows = result if isinstance(result, list) else result.rows
    images = 0
    for row in rows:
        carried = split_carrier_attachments(row.content)
        if carried is not None:
            images += len(carried.images)
        elif row.facts.opens_turn:
            images += len(split_image_markers(row.content).images)
    assert images == 1
    if len(rows) == 1:
        assert estimate_history_tokens(rows) == 1600 + 4


def test_an_openai_file_with_an_ipv6_image_is_estimated_and_trimmed(tmp_path: Path) -> None:
    """Issue 30 item 1: the CLI refused the file; the trimmed file keeps the URL as given."""
    url = "http://[2001:db8::1]/cat.png"
    image = {"type": "image_url", "image_url": {"url": url}}
    messages = [{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"},
                {"role": "user", "content": [{"type": "text", "text": "look"}, image]}]
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(messages))
    assert main(["estimate", str(path)]) == 0
    out = tmp_path / "out.json"
    assert main(["trim", "--max-turns", "1", str(path), "-o", str(out)]) == 0
    assert json.loads(out.read_text())[-1] == messages[-1]


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
def test_integrations_price_an_image_url_with_a_bracket_as_one_image(url: str) -> None:
    """Issue 30 item 1: the integrations raised inside the model call for such a URL (and
    every later run of the conversation failed); now it is one image, 1,600 tokens."""
    pydantic_ai = pytest.importorskip("pydantic_ai.messages")
    pytest.importorskip("agents")
    from histtrim.integrations import openai_agents
    from histtrim.integrations import pydantic_ai as histtrim_pydantic_ai

    prompt = pydantic_ai.UserPromptPart(content=[pydantic_ai.ImageUrl(url=url)])
    _, rows = histtrim_pydantic_ai.to_rows([pydantic_ai.ModelRequest(parts=[prompt])])
    assert estimate_history_tokens(rows) == 1600 + 4
    item = {"role": "user", "content": [{"type": "input_image", "image_url": url}]}
    _, rows = openai_agents.to_rows([item])
    assert estimate_history_tokens(rows) == 1600 + 4


PDF_BASE64 = "JVBERi0xLjcK" * 87_382  # about 1 MiB of base64


@pytest.mark.parametrize(
    "read",
    [
        lambda: from_openai([{"role": "user", "content": [
            {"type": "text", "text": "read"},
            {"type": "file", "file": {"file_data": "data:application/pdf;base64," + PDF_BASE64,
                                      "filename": "report.pdf"}}]}]),
        lambda: from_anthropic({"messages": [{"role": "user", "content": [
            {"type": "text", "text": "read"},
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                            "data": PDF_BASE64}}]}]}).rows,
    ],
    ids=["openai-file", "anthropic-document"],
)
def test_a_file_part_costs_one_attachment_in_the_format_readers(read: Any) -> None:
    """Issue 30 item 5, the same rule in every path: an OpenAI `file` part cost nothing and an
    Anthropic `document` its JSON (about 350,000 tokens); each is one attachment, an image's
    price (decision "File parts")."""
    assert estimate_history_tokens(read()) == 1 + 1600 + 4
