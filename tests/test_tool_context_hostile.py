"""Issue 46, items 7-13: the clear (CTX-6..9) on every format names results by their tool,
clears image-only results, empties the inputs of the calls it cleared (and no other), gives
each Anthropic result its own preview, and writes exactly the request it priced."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from histtrim.adapters.anthropic import trim_anthropic
from histtrim.adapters.openai import from_openai, trim_openai
from histtrim.counting import Pricing
from histtrim.messages import ChatMessage, ToolCall
from histtrim.pairing import validate_tool_pairing
from histtrim.policy import Policy, ToolContext
from histtrim.tool_context import clear_tool_results

M = ChatMessage


def clear(**settings: Any) -> Policy:
    return Policy(tool_context=ToolContext(mode="clear", trigger_tokens=0, **settings))


def anthropic_body(names: list[str], *, blocks: int = 1) -> dict[str, Any]:
    """A body with one round per name (each `blocks` calls), then a final reply."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for n, name in enumerate(names):
        ids = [f"toolu_{n}_{b}" for b in range(blocks)]
        messages.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": i, "name": name, "input": {"n": n}} for i in ids]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": i, "content": f"{i}:" + "z" * 300}
            for i in ids]})
    messages.append({"role": "assistant", "content": "done"})
    return {"model": "m", "system": "sys", "messages": messages}


def test_item_9_anthropic_results_are_named_by_their_tool() -> None:
    """`exclude_tools` reaches Anthropic results: they answer `tool_use_id`s, resolved to the
    call's tool name (an error result too)."""
    body = anthropic_body(["memory", "bash", "memory", "memory", "bash"])
    body["messages"][4]["content"][0]["is_error"] = True  # a failed bash call
    sent, done = trim_anthropic(body, budget_tokens=10**6,
                                policy=clear(keep=0, exclude_tools=("memory",)))
    outputs = [m["content"][0]["content"] for m in sent["messages"][2::2][:5]]
    assert [o == "[cleared]" for o in outputs] == [False, True, False, False, True]
    assert done.tool_context is not None and done.tool_context.cleared_results == 2


def test_item_10_each_anthropic_result_gets_its_own_preview() -> None:
    body = anthropic_body(["bash"], blocks=3)
    sent, done = trim_anthropic(body, budget_tokens=10**6, policy=clear(keep=0,
                                                                        preview_chars=12))
    blocks = sent["messages"][2]["content"]
    assert [b["content"] for b in blocks] == [
        f"[cleared]\ntoolu_0_{b}:zz" for b in range(3)]
    assert [b["tool_use_id"] for b in blocks] == [f"toolu_0_{b}" for b in range(3)]
    # the row priced is the message written
    assert done.tool_context is not None
    row = done.rows[3]
    assert "<tool_result" not in row.content.split("\n", 2)[2].split("\n")[0]
    assert row.content.count("[cleared]\ntoolu_0_") == 3


def test_item_7_an_image_only_result_is_cleared() -> None:
    rows = [
        M.user("look"),
        M.assistant_tool_calls(None, [ToolCall(id="s1", name="screenshot")]),
        M.tool_result("s1", "", attachments=["https://x.example/a.png"]),
        M.assistant_tool_calls(None, [ToolCall(id="s2", name="screenshot")]),
        M.tool_result("s2", "", attachments=["https://x.example/b.png"]),
    ]
    edit = clear_tool_results(rows, clear(keep=1).tool_context)
    assert edit.cleared == (2,)
    assert edit.messages[2].content == '{"tool_call_id":"s1","content":"[cleared]"}'
    # an Anthropic image-only result too
    body = anthropic_body(["screenshot", "screenshot"])
    for k in (2, 4):
        block = body["messages"][k]["content"][0]
        block["content"] = [{"type": "image", "source": {
            "type": "url", "url": f"https://x.example/{k}.png"}}]
    sent, _ = trim_anthropic(body, budget_tokens=10**6, policy=clear(keep=1))
    assert sent["messages"][2]["content"][0]["content"] == "[cleared]"
    assert sent["messages"][4]["content"][0]["content"] == body["messages"][4]["content"][0][
        "content"]


def test_item_8_a_reused_call_id_empties_the_call_whose_result_was_cleared() -> None:
    """Decision "Reused call ids": each result answers the nearest call before it."""
    rows = [
        M.user("fix"),
        M.assistant_tool_calls(None, [ToolCall(id="c", name="bash", arguments='{"a":1}')]),
        M.tool_result("c", "old " * 100),
        M.assistant_tool_calls(None, [ToolCall(id="c", name="bash", arguments='{"a":2}')]),
        M.tool_result("c", "new " * 100),
    ]
    edit = clear_tool_results(rows, clear(keep=1, clear_inputs=True).tool_context)
    assert edit.cleared == (2,) and edit.cleared_inputs == 1
    assert '"arguments":"{}"' in edit.messages[1].content
    assert edit.messages[3] is rows[3]  # the newest call, whose result is kept, stays whole
    # a reused id named by another tool: the excluded call's result is kept
    renamed = [*rows[:3], M.assistant_tool_calls(None, [ToolCall(id="c", name="memory")]),
               rows[4], M.user("next")]
    kept = clear_tool_results(renamed, clear(keep=0, exclude_tools=("bash",)).tool_context)
    assert kept.cleared == (4,)


def test_item_13_inputs_cleared_on_calls_with_extra_keys() -> None:
    """A call with keys the row cannot say (Gemini's `extra_content`) keeps them, and its
    `arguments` is written emptied as priced."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for n in range(3):
        messages.append({"role": "assistant", "content": None, "tool_calls": [{
            "id": f"c{n}", "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"cmd": "x" * 400})},
            "extra_content": {"google": {"thought_signature": "sig"}}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": "y" * 400})
    done = trim_openai(messages, budget_tokens=10**6, policy=clear(keep=1,
                                                                    clear_inputs=True))
    calls = [m["tool_calls"][0] for m in done.records if m.get("tool_calls")]
    assert [c["function"]["arguments"] for c in calls[:2]] == ["{}", "{}"]
    assert calls[2]["function"]["arguments"] == messages[5]["tool_calls"][0]["function"][
        "arguments"]
    assert all(c["extra_content"] == {"google": {"thought_signature": "sig"}} for c in calls)
    pricing = Pricing(Policy())
    assert pricing.total(from_openai(done.records)) == pricing.total(done.rows)
    assert not validate_tool_pairing(from_openai(done.records))


def test_item_13_the_cli_reports_what_it_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from histtrim.cli import main

    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for n in range(3):
        messages.append({"role": "assistant", "content": None, "tool_calls": [{
            "id": f"c{n}", "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"cmd": "x" * 400})},
            "extra_content": {"google": {"thought_signature": "sig"}}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": "y" * 400})
    source, out = tmp_path / "s.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps(m) + "\n" for m in messages))
    policy = tmp_path / "p.toml"
    policy.write_text('[tool_context]\nmode = "clear"\nkeep = 1\ntrigger_tokens = 0\n'
                      "clear_inputs = true\n")
    assert main(["trim", str(source), "--budget", "100000", "--policy", str(policy),
                 "-o", str(out)]) == 0
    err = capsys.readouterr().err
    written = [json.loads(line) for line in out.read_text().splitlines()]
    tokens = Pricing(Policy()).total(from_openai(written))
    assert f"{tokens} tokens" in err
    assert [m["tool_calls"][0]["function"]["arguments"] for m in written[1::2]][:2] == [
        "{}", "{}"]


PRESETS = sorted(Path(__file__).parent.parent.joinpath("examples/policies").glob("clear-*"))


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.stem)
def test_item_11_trim_policy_takes_every_preset_on_an_anthropic_body(
    preset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from histtrim.cli import main

    body = anthropic_body(["bash"] * 6)
    messages = body["messages"][:1]
    for k in range(1, 13, 2):  # each round its own turn, for the presets that keep turns
        body["messages"][k + 1]["content"][0]["content"] = "w " * 40_000
        messages += [*body["messages"][k:k + 2], {"role": "assistant", "content": "ok"},
                     {"role": "user", "content": "more"}]
    body["messages"] = messages[:-2]
    source = tmp_path / "body.json"
    source.write_text(json.dumps(body))
    out = tmp_path / "out.json"
    code = main(["trim", str(source), "--budget", "1000000", "--policy", str(preset),
                 "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    sent = json.loads(out.read_text())
    cleared = sum(1 for m in sent["messages"] if m["role"] == "user"
                  and isinstance(m["content"], list)
                  and m["content"][0]["content"] != "w " * 40_000)
    assert cleared >= 2 and "result" in err and "cleared" in err
    assert sent["messages"][-1] == body["messages"][-1]  # the newest result is kept


def test_item_12_agents_sdk_cleared_items_stay_valid_and_are_priced_as_sent() -> None:
    from histtrim.integrations.openai_agents import HisttrimInputFilter, from_units, to_rows

    exit_0 = {"type": "exit", "exit_code": 0}
    items: list[dict[str, Any]] = [
        {"role": "user", "content": "find it"},
        {"type": "shell_call", "call_id": "s1", "action": {"commands": ["ls"]},
         "status": "completed"},
        {"type": "shell_call_output", "call_id": "s1",
         "output": [{"stdout": "a" * 3000, "stderr": "b", "outcome": exit_0}]},
        {"type": "tool_search_call", "call_id": "t1", "arguments": {"q": "mail"},
         "execution": "client", "status": "completed"},
        {"type": "tool_search_output", "call_id": "t1", "execution": "client",
         "status": "completed", "tools": [{"type": "function", "name": "send",
                                           "description": "d" * 3000, "parameters": {}}]},
        {"type": "function_call", "call_id": "f1", "name": "read", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "f1", "output": "c" * 3000},
    ]
    trimming = HisttrimInputFilter(budget_tokens=100_000, policy=clear(keep=1))
    done = trimming.trim(items, None)
    sent: list[Any] = from_units(items, done.units)
    shell, search = sent[2], sent[4]
    assert shell["output"] == [{"stdout": "[cleared]", "stderr": "", "outcome": exit_0}]
    assert search["tools"] == [] and "output" not in search
    assert sent[6] == items[6]  # the newest result is kept
    assert items[4]["tools"][0]["description"] == "d" * 3000  # the input is untouched
    _, written = to_rows(sent)
    pricing = Pricing(Policy())
    # what is sent is priced as cleared: the search output's other keys (`execution`) are
    # the few tokens between the written item and the placeholder
    assert 0 <= pricing.total(written) - done.tokens <= 10
