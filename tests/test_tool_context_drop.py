"""CTX-12: with `drop_cleared`, a request the fit (CTX-10) leaves over the budget drops the
running turn's oldest cleared exchanges whole (a call row's calls with their results), only
as many as the budget needs, never the turn's prompt, the newest exchange or an exchange
with a result not cleared; every call stays paired on every path."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from histtrim.carriers import tool_results_carrier
from histtrim.counting import Pricing
from histtrim.messages import ChatMessage, ToolCall
from histtrim.pairing import validate_tool_pairing
from histtrim.policy import Policy, ToolContext
from histtrim.tool_context import edit_tool_context

M = ChatMessage
PRICES = Pricing(Policy())
FIT = ToolContext(mode="clear", keep=3, trigger_tokens=10**9, clear_inputs=True)
PLAIN = Policy(tool_context=FIT)
DROP = Policy(tool_context=FIT.model_copy(update={"drop_cleared": True}))


def one_turn(rounds: int = 12, tool: str = "bash") -> list[ChatMessage]:
    """One prompt and `rounds` tool rounds; the odd rounds' call rows carry text."""
    rows = [M.system("sys"), M.user("fix the bug")]
    for n in range(rounds):
        rows += [M.assistant_tool_calls(f"say {n}" if n % 2 else None, [ToolCall(
            id=f"c{n}", name=tool if n == 0 else "bash",
            arguments=json.dumps({"cmd": "x" * 300}))]),
                 M.tool_result(f"c{n}", f"{n} " + "o" * 2000)]
    return rows


def paired(rows: list[ChatMessage]) -> bool:
    return not any(p.is_error for p in validate_tool_pairing(rows))


def test_ctx_12_the_oldest_cleared_exchanges_go_until_the_request_fits() -> None:
    rows = one_turn()
    before = copy.deepcopy(rows)
    plain = edit_tool_context(rows, PLAIN, budget_tokens=800)
    assert plain.tokens is not None and plain.tokens > 800 and not plain.dropped
    edit = edit_tool_context(rows, DROP, budget_tokens=800)
    assert edit.tokens == PRICES.total(edit.messages) <= 800
    assert paired(edit.messages) and rows == before  # the input as it was
    # kept plus dropped is the original, each row once
    assert sorted([*edit.source_rows, *edit.dropped]) == list(range(len(rows)))
    assert edit.dropped_messages == len(edit.dropped) > 0
    assert edit.messages[:2] == rows[:2]  # the system prompt and the turn's prompt
    assert edit.messages[-2:] == rows[-2:]  # the newest exchange whole
    # the oldest first: exchanges 0..k-1 went, a call row with text stays as a text row
    k = edit.dropped_exchanges
    texts = [2 + 2 * n for n in range(1, k, 2)]
    assert k == 7 and sorted([*edit.dropped, *texts]) == list(range(2, 2 + 2 * k))
    assert [m.content for m in edit.messages[2:2 + k // 2]] == [
        f"say {n}" for n in range(1, k, 2)]
    assert all(m.role == "assistant" and not m.content.startswith("{")
               for m in edit.messages[2:2 + k // 2])
    # only as many as the budget needs: the last one dropped left it over
    last = 2 + 2 * (k - 1)
    sent = dict(zip(plain.source_rows, plain.messages, strict=True))
    freed = PRICES.total([sent[last], sent[last + 1]])
    assert edit.tokens + freed > 800
    # a budget the fit meets drops nothing; off by default
    assert not edit_tool_context(rows, DROP, budget_tokens=1200).dropped
    assert not ToolContext().drop_cleared


def test_ctx_12_an_exchange_with_a_result_not_cleared_is_never_dropped() -> None:
    rows = one_turn(tool="read")
    policy = DROP.model_copy(update={"tool_context": DROP.tool_context.model_copy(
        update={"exclude_tools": ("read",)})})
    edit = edit_tool_context(rows, policy, budget_tokens=1300)
    assert edit.dropped and paired(edit.messages)
    assert edit.messages[2:4] == rows[2:4]  # the read's exchange, its result whole
    assert 2 not in edit.dropped and 3 not in edit.dropped


def test_ctx_12_only_the_running_turn_loses_exchanges() -> None:
    older = one_turn(4)[1:]
    rows = [M.system("sys"), *older, M.assistant("done"), *one_turn(12)[1:]]
    edit = edit_tool_context(rows, DROP, budget_tokens=1000)
    prompt = len(older) + 2
    assert edit.dropped and min(edit.dropped) > prompt and paired(edit.messages)
    assert prompt in edit.source_rows


def carried(rows: list[ChatMessage]) -> bool:
    """Each call row answered by the carrier right after it, every id once, and back."""
    from histtrim.carriers import parse_tool_calls
    from histtrim.tool_context import carrier_sections

    for k, row in enumerate(rows):
        calls = parse_tool_calls(row)
        found = carrier_sections(row.content) if row.role == "user" else None
        if calls is not None:
            answer = carrier_sections(rows[k + 1].content) if k + 1 < len(rows) else None
            if answer is None or [n for n, _ in answer[0]] != [c.id for c in calls.calls]:
                return False
        elif found is not None and parse_tool_calls(rows[k - 1]) is None:
            return False
    return True


def test_ctx_12_a_carrier_goes_with_its_call_row_and_prompt_mode_calls_stay() -> None:
    rows = [M.system("sys"), M.user("fix the bug")]
    for n in range(8):
        rows += [M.assistant_tool_calls(None, [ToolCall(id=f"a{n}", name="bash"),
                                               ToolCall(id=f"b{n}", name="bash")]),
                 tool_results_carrier([(f"a{n}", "o" * 1000), (f"b{n}", "p" * 1000)])]
    edit = edit_tool_context(rows, DROP, budget_tokens=700)
    assert edit.dropped and carried(edit.messages)
    assert all(2 <= i < len(rows) - 2 for i in edit.dropped)
    assert len(edit.dropped) == 2 * edit.dropped_exchanges  # call row and carrier, together
    # a carrier with text after its outputs (a user's words beside them) is never left out
    noted = [*rows[:3], M.user(rows[3].content + "\nplease hurry"), *rows[4:]]
    kept = edit_tool_context(noted, DROP, budget_tokens=700)
    assert kept.dropped and 2 not in kept.dropped and 3 not in kept.dropped
    assert "please hurry" in kept.messages[3].content
    # prompt mode: the calls are the reply's text, never rewritten, so never dropped
    prompt = [M.system("sys"), M.user("fix the bug")]
    for n in range(8):
        prompt += [M.assistant(f'<tool_call>{{"name": "bash", "n": {n}}}</tool_call>'),
                   tool_results_carrier([("bash", "o" * 2000)])]
    mode = edit_tool_context(prompt, DROP, budget_tokens=700)
    assert mode.cleared_results and not mode.dropped


def anthropic_body(rounds: int = 12) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "fix the bug"}]
    for n in range(rounds):
        blocks: list[dict[str, Any]] = [{"type": "text", "text": f"say {n}"}] if n % 2 else []
        messages += [
            {"role": "assistant", "content": [*blocks, {
                "type": "tool_use", "id": f"t{n}", "name": "bash", "input": {"c": "x" * 300}}]},
            {"role": "user", "content": [{
                "type": "tool_result", "tool_use_id": f"t{n}", "content": "o" * 2000}]}]
    return {"system": "sys", "messages": messages}


def anthropic_paired(messages: list[dict[str, Any]]) -> bool:
    """Each `tool_use` answered in the next message, each `tool_result` by the one before."""
    def ids(message: dict[str, Any], kind: str, key: str) -> set[str]:
        content = message["content"]
        return {b[key] for b in content if b.get("type") == kind} if isinstance(
            content, list) else set()
    for k, message in enumerate(messages):
        if message["role"] == "assistant":
            after = messages[k + 1] if k + 1 < len(messages) else {"content": []}
            if not ids(message, "tool_use", "id") <= ids(after, "tool_result", "tool_use_id"):
                return False
        elif ids(message, "tool_result", "tool_use_id") - (
                ids(messages[k - 1], "tool_use", "id") if k else set()):
            return False
    return True


def test_ctx_12_an_anthropic_body_stays_paired() -> None:
    from histtrim.adapters.anthropic import trim_anthropic

    body = anthropic_body()
    before = copy.deepcopy(body)
    out, _ = trim_anthropic(body, budget_tokens=800, policy=DROP, usage=False)
    plain, _ = trim_anthropic(body, budget_tokens=800, policy=PLAIN, usage=False)
    assert body == before and anthropic_paired(out["messages"])
    assert len(out["messages"]) < len(plain["messages"]) == len(body["messages"])
    assert out["messages"][-2:] == body["messages"][-2:]
    assert {"role": "assistant", "content": "say 1"} in out["messages"]


def test_ctx_12_through_the_cli_on_an_anthropic_body(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from histtrim.cli import main

    source = tmp_path / "body.json"
    source.write_text(json.dumps(anthropic_body()))
    preset = tmp_path / "drop.toml"
    preset.write_text('[tool_context]\nmode = "clear"\nkeep = 3\ntrigger_tokens = 1000000\n'
                      'clear_inputs = true\ndrop_cleared = true\n')
    out = tmp_path / "sent.json"
    assert main(["trim", str(source), "--budget", "800", "--policy", str(preset),
                 "-o", str(out)]) == 0
    assert "11 results cleared, 8 exchanges dropped" in capsys.readouterr().err
    sent = json.loads(out.read_text())["messages"]
    assert anthropic_paired(sent) and len(sent) < len(anthropic_body()["messages"])


def test_ctx_12_the_agents_sdk_filter_sends_paired_items() -> None:
    pytest.importorskip("agents")
    from histtrim.integrations.openai_agents import HisttrimInputFilter, from_units

    items: list[Any] = [{"role": "user", "content": "fix it"}]
    for n in range(12):
        items += [{"type": "function_call", "call_id": f"c{n}", "name": "bash",
                   "arguments": "{}"},
                  {"type": "function_call_output", "call_id": f"c{n}", "output": "o" * 2000}]
    done = HisttrimInputFilter(budget_tokens=900, policy=DROP).trim(items, None)
    assert done.tool_context is not None and done.tool_context.dropped
    assert PRICES.total(done.rows) == done.tokens <= 900
    sent = from_units(items, done.units)
    calls = [i["call_id"] for i in sent if i.get("type") == "function_call"]
    outputs = [i["call_id"] for i in sent if i.get("type") == "function_call_output"]
    assert calls == outputs and len(calls) < 12 and calls[-1] == "c11"


def test_ctx_12_pydantic_ai_and_langchain_send_paired_requests() -> None:
    pytest.importorskip("pydantic_ai")
    pytest.importorskip("langchain.agents")
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    from histtrim.adapters.langchain import from_langchain
    from histtrim.integrations.langchain import HisttrimMiddleware
    from histtrim.integrations.pydantic_ai import HisttrimCapability, to_rows

    history: list[Any] = [ModelRequest(parts=[UserPromptPart("fix it")])]
    for n in range(12):
        history += [ModelResponse(parts=[ToolCallPart("bash", {"n": n}, f"c{n}")]),
                    ModelRequest(parts=[ToolReturnPart("bash", "o" * 2000, f"c{n}")])]
    sent, done = HisttrimCapability(budget_tokens=900, policy=DROP).trim(history)
    assert done.tool_context is not None and done.tool_context.dropped
    assert paired(to_rows(sent)[1]) and len(sent) < len(history)
    messages: list[Any] = [HumanMessage("fix it")]
    for n in range(12):
        messages += [AIMessage("", tool_calls=[{"name": "bash", "args": {}, "id": f"c{n}"}]),
                     ToolMessage("o" * 2000, tool_call_id=f"c{n}")]
    made = HisttrimMiddleware(budget_tokens=900, policy=DROP).trim(messages, request=True)
    assert made.tool_context is not None and made.tool_context.dropped
    assert paired(from_langchain(list(made.units))) and len(made.units) < len(messages)


def test_ctx_12_a_memo_edit_is_the_edit_made_anew() -> None:
    """The Agent and the integrations resume each edit from the last (`ClearMemo`): with
    drops, every request equals the one made from the rows alone, and each is paired."""
    from histtrim.tool_context import ClearMemo

    memo = ClearMemo()
    rows = one_turn(20)
    made = 0
    for end in range(4, len(rows) + 1, 2):
        resumed = edit_tool_context(rows[:end], DROP, budget_tokens=900, memo=memo)
        fresh = edit_tool_context(rows[:end], DROP, budget_tokens=900)
        assert (resumed.messages, resumed.source_rows, resumed.dropped, resumed.tokens) == (
            fresh.messages, fresh.source_rows, fresh.dropped, fresh.tokens)
        assert paired(resumed.messages)
        made += bool(resumed.dropped)
    assert made > 5


def test_ctx_12_the_agent_sends_requests_within_the_budget() -> None:
    """The `Agent`: one long tool loop whose cleared skeleton alone is over the budget; with
    `drop_cleared` every request sent fits and is paired, and the stored history keeps
    every row."""
    from histtrim import Agent, ProviderProfile, RuntimeProfile, resolve_runtime
    from histtrim.agent.providers import ProviderReply, ScriptedProvider

    def run(policy: Policy) -> tuple[list[list[ChatMessage]], int]:
        runtime = resolve_runtime(
            RuntimeProfile(max_context_tokens=1200, max_tool_iterations=60),
            ProviderProfile(model="m", context_window=1_000_000), None, policy=policy,
        )
        agent = Agent(ScriptedProvider(), runtime, system_prompt="sys",
                      tools=[lambda: "y" * 2000], policy=policy)
        calls = [ProviderReply(text=f"step {i}", tool_calls=(
            ToolCall(id=f"k{i}", name="<lambda>", arguments='{"a":"' + "z" * 200 + '"}'),))
            for i in range(40)]
        agent.provider = ScriptedProvider([*calls, ProviderReply(text="done")])
        agent.turn("fix it")
        return [list(r.messages) for r in agent.provider.requests], len(agent.history)

    plain, _ = run(PLAIN)
    assert max(PRICES.total(r) for r in plain) > 1200  # the skeleton, without CTX-12
    sent, stored = run(DROP)
    assert len(sent) == 41 and max(PRICES.total(r) for r in sent) <= 1200
    assert all(paired(r) for r in sent)
    assert stored == 1 + 2 * 40 + 1  # the prompt, 40 rounds, the reply: every row


@pytest.mark.parametrize("seed", range(8))
def test_ctx_12_random_histories_stay_paired_and_whole(seed: int) -> None:
    """Turns of one or two calls a round, reused ids, texts, replies, tiny and large
    outputs, at every request end and a few budgets: a paired input gives a paired request,
    kept plus dropped is every row once, the newest exchange and every prompt stay, and the
    tokens reported are the request's."""
    import random

    rng = random.Random(seed)
    rows = [M.system("sys")]
    for n in range(60):
        if rng.random() < 0.1:
            rows.append(M.user(f"task {n}"))
        ids = [f"c{rng.randrange(5)}{k}" for k in range(rng.choice([1, 1, 2]))]
        rows.append(M.assistant_tool_calls(rng.choice([None, f"t{n}"]), [
            ToolCall(id=i, name=rng.choice(["bash", "read"]), arguments='{"a":1}')
            for i in ids]))
        rows += [M.tool_result(i, "o" * rng.choice([0, 30, 900])) for i in ids]
        if rng.random() < 0.15:
            rows.append(M.assistant(f"done {n}"))
    assert paired(rows)
    prompts = {i for i, r in enumerate(rows) if r.role == "user"}
    policy = Policy(tool_context=DROP.tool_context.model_copy(update={
        "keep": rng.choice([0, 1, 3]), "min_chars": rng.choice([0, 10]),
        "clear_text": rng.random() < 0.5}))
    drops = 0
    for end in range(2, len(rows) + 1, 3):
        for budget in (300, 900):
            edit = edit_tool_context(rows[:end], policy, budget_tokens=budget)
            assert paired(edit.messages) or not paired(rows[:end])
            assert sorted([*edit.source_rows, *edit.dropped]) == list(range(end))
            assert not prompts.intersection(edit.dropped)
            newest = max(i for i in range(end) if rows[i].role == "assistant") if any(
                r.role == "assistant" for r in rows[:end]) else end
            assert all(i < newest for i in edit.dropped)
            assert edit.tokens in (None, PRICES.total(edit.messages))
            drops += bool(edit.dropped)
    assert drops


def test_ctx_12_a_result_out_of_its_round_keeps_both_rounds() -> None:
    """Hostile order: a call answered after the next call row, and a round holding the
    result of an earlier row's call. Leaving either round out would strand a call or a
    result, so neither goes; the well-formed rounds after them still do."""
    big = "o" * 2000
    rows = [M.system("sys"), M.user("go"),
            M.assistant_tool_calls(None, [ToolCall(id="x", name="bash"),
                                          ToolCall(id="y", name="bash")]),
            M.tool_result("x", big),
            M.assistant_tool_calls(None, [ToolCall(id="z", name="bash")]),
            M.tool_result("z", big), M.tool_result("y", big)]
    for n in range(10):
        rows += [M.assistant_tool_calls(None, [ToolCall(id=f"c{n}", name="bash")]),
                 M.tool_result(f"c{n}", big)]
    edit = edit_tool_context(rows, DROP, budget_tokens=600)
    assert edit.dropped and not {2, 3, 4, 5, 6}.intersection(edit.dropped)
    from histtrim.carriers import parse_tool_calls, parse_tool_result

    calls = {c.id for r in edit.messages if (p := parse_tool_calls(r)) for c in p.calls}
    answers = {a.tool_call_id for r in edit.messages if (a := parse_tool_result(r))}
    assert calls == answers == {"x", "y", "z", *(f"c{n}" for n in range(10))} - {
        f"c{n}" for n in range(edit.dropped_exchanges)}


def test_ctx_12_pydantic_ai_requests_resumed_with_drops_are_the_requests_made_anew() -> None:
    """A conversation whose running turn is dropped from at nearly every call: each request
    the capability sends (resumed from the last) is the one made from its units alone, and
    paired."""
    pytest.importorskip("pydantic_ai")
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    from histtrim.integrations.pydantic_ai import HisttrimCapability, from_units, to_rows

    capability = HisttrimCapability(budget_tokens=600, policy=DROP)
    history: list[Any] = []
    drops = 0
    for n in range(50):
        if n % 40 == 0:
            history.append(ModelRequest(parts=[UserPromptPart(f"task {n} " + "u" * 300)]))
        text = [TextPart(f"t{n}")] if n % 3 == 0 else []
        history.append(ModelResponse(parts=[*text, ToolCallPart("bash", {"n": n}, f"c{n}")]))
        history.append(ModelRequest(parts=[ToolReturnPart("bash", "o" * 500, f"c{n}")]))
        sent, done = capability.trim(history)

        def crumbless(messages: list[Any]) -> list[Any]:  # its timestamp is the call's
            return [m.metadata if getattr(m, "metadata", None) else m for m in messages]

        assert crumbless(sent) == crumbless(from_units(history, done.units))
        assert paired(to_rows(sent)[1])
        drops += bool(done.tool_context is not None and done.tool_context.dropped)
    assert drops > 25
