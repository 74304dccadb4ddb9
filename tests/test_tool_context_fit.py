"""CTX-10: the running turn fitted to the budget. When whole turns cannot bring a request
under the budget, the clear policy clears the oldest results of the kept turns (the running
one too, never its newest `keep`) down to the low-water mark, every call paired, and the
result and the event report what is sent."""

from __future__ import annotations

import json
from fractions import Fraction
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from histtrim.adapters.openai import from_openai, trim_openai
from histtrim.cli.sessions import read_session
from histtrim.counting import Pricing
from histtrim.low_water import request_points
from histtrim.messages import ChatMessage, ToolCall
from histtrim.pairing import validate_tool_pairing
from histtrim.policy import Policy, ToolContext
from histtrim.tool_context import clear_tool_results, edit_tool_context
from histtrim.trim import TrimResult

M = ChatMessage
ROOT = Path(__file__).parent.parent
ONE_TURN = (ROOT / "examples/real/swe-agent"
            / "marshmallow-1867-function-calling-replace-from-source.jsonl")
ANTHROPIC = Policy(tool_context=ToolContext(mode="clear", keep=3, trigger_tokens=100_000))
"""The Anthropic preset: its own trigger (100,000) never fires on these sessions."""
PRICES = Pricing(Policy())


def one_turn(rounds: int = 12) -> list[ChatMessage]:
    rows = [M.system("sys"), M.user("fix the bug")]
    for n in range(rounds):
        rows += [M.assistant_tool_calls(None, [ToolCall(id=f"c{n}", name="bash")]),
                 M.tool_result(f"c{n}", f"{n} " + "o" * 2000)]
    return rows


def test_ctx_10_a_one_turn_request_is_fitted_down_to_the_low_water_mark() -> None:
    rows = one_turn()
    assert PRICES.total(rows) > 6000
    assert not clear_tool_results(rows, ANTHROPIC.tool_context).changed  # its trigger alone
    edit = edit_tool_context(rows, ANTHROPIC, budget_tokens=4000)
    assert PRICES.total(edit.messages) <= 4000
    assert edit.messages[-6:] == rows[-6:]  # the newest 3 results and their calls are kept
    assert not any(p.is_error for p in validate_tool_pairing(edit.messages))
    # with a low-water target, down to 70 % of the budget in one batch
    low = ANTHROPIC.model_copy(update={"token_trim_target": Fraction(7, 10)})
    batched = edit_tool_context(rows, low, budget_tokens=4000)
    assert PRICES.total(batched.messages) <= 2800 < PRICES.total(edit.messages)
    # under the budget, nothing
    assert not edit_tool_context(rows, ANTHROPIC, budget_tokens=10**6).changed
    # collapse never touches the running turn: the fit belongs to the clear (CTX-10)
    collapse = Policy(tool_context=ToolContext(mode="collapse", keep_turns=0))
    assert not edit_tool_context(rows, collapse, budget_tokens=4000).changed


def test_ctx_10_fitted_clears_are_batched_over_the_requests() -> None:
    """Between two fits each request extends the last (the prompt cache keeps hitting)."""
    rows = one_turn(30)
    low = ANTHROPIC.model_copy(update={"token_trim_target": Fraction(1, 2)})
    sent = [edit_tool_context(rows[:end], low, budget_tokens=8000).messages
            for end in request_points(rows)]
    assert all(PRICES.total(r) <= 8000 for r in sent)
    breaks = sum(1 for a, b in pairwise(sent) if b[: len(a)] != a)
    assert 0 < breaks <= len(sent) // 4


def test_ctx_10_trim_openai_reports_the_tokens_sent() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "fix it"}]
    for n in range(12):
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"c{n}", "type": "function",
                "function": {"name": "bash", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": "o" * 2000}]
    done = trim_openai(messages, budget_tokens=4000, policy=ANTHROPIC)
    assert isinstance(done.result, TrimResult) and done.tool_context is not None
    sent = PRICES.total(from_openai(done.records))
    assert done.result.tokens_after == sent <= 4000
    assert done.records[-6:] == messages[-6:]


def test_ctx_10_on_a_real_one_turn_session_through_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real SWE-agent run (one prompt, 13 tool rounds, 8,273 estimated tokens): no whole
    turn can go, so before CTX-10 the request stayed at 8,273 against a 4,000 budget."""
    from histtrim.cli import main

    preset = ROOT / "examples/policies/clear-anthropic.toml"
    out = tmp_path / "sent.jsonl"
    assert main(["trim", str(ONE_TURN), "--budget", "4000", "--policy", str(preset),
                 "-o", str(out)]) == 0
    err = capsys.readouterr().err
    session = read_session(str(out), None, out.read_bytes())
    assert session.rows is not None
    sent = PRICES.total(session.rows)
    assert sent <= 4000 and f"{sent} tokens" in err and "cleared" in err
    assert not any(p.is_error for p in validate_tool_pairing(session.rows))
    original = [json.loads(line) for line in ONE_TURN.read_text().splitlines()]
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(written) == len(original) and written[-2:] == original[-2:]


def test_ctx_10_the_agents_sdk_filter_fits_the_running_turn() -> None:
    from histtrim.integrations.openai_agents import HisttrimInputFilter

    items: list[Any] = [{"role": "user", "content": "fix it"}]
    for n in range(12):
        items += [{"type": "function_call", "call_id": f"c{n}", "name": "bash",
                   "arguments": "{}"},
                  {"type": "function_call_output", "call_id": f"c{n}", "output": "o" * 2000}]
    done = HisttrimInputFilter(budget_tokens=4000, policy=ANTHROPIC).trim(items, None)
    assert done.tool_context is not None and done.tokens <= 4000
    assert PRICES.total(done.rows) == done.tokens


def random_history(rng: Any, rounds: int) -> list[ChatMessage]:
    """Turns of tool rounds: reused ids, images, carriers, tiny and large outputs."""
    from histtrim.carriers import tool_results_carrier

    rows = [M.system("sys")]
    for n in range(rounds):
        kind = rng.random()
        if kind < 0.15:
            rows.append(M.user(f"task {n}"))
        cid = f"c{rng.randrange(6)}"
        rows.append(M.assistant_tool_calls(None, [ToolCall(
            id=cid, name=rng.choice(["bash", "read", "memory"]), arguments='{"a":1}')]))
        size = rng.choice([0, 3, 200, 2000])
        if kind < 0.25:
            rows.append(tool_results_carrier([(cid, "p" * size), ("x", "q" * size)]))
        else:
            shots = ["https://x.example/s.png"] if rng.random() < 0.2 else None
            rows.append(M.tool_result(cid, "o" * size, attachments=shots))
        if rng.random() < 0.2:
            rows.append(M.assistant(f"done {n}"))
    return rows


@pytest.mark.parametrize("seed", range(6))
def test_a_memo_edit_is_the_edit_made_anew(seed: int) -> None:
    """`ClearMemo`: each edit resumed from the last one is the edit of the rows read anew,
    and its `tokens` are the request's estimate."""
    import random

    from histtrim.tool_context import ClearMemo

    rng = random.Random(seed)
    rows = random_history(rng, 60)
    settings = ToolContext(
        mode="clear", keep=rng.choice([0, 1, 3]), keep_unit=rng.choice(["results", "turns"]),
        trigger_tokens=rng.choice([0, 1500, 4000]), hold=rng.random() < 0.5,
        clear_to=rng.choice([Fraction(0), Fraction(1, 2)]),
        clear_at_least=rng.choice([0, 600]), clear_inputs=rng.random() < 0.5,
        exclude_tools=rng.choice([(), ("memory",)]), preview_chars=rng.choice([0, 5]))
    policy = Policy(tool_context=settings, token_trim_target=Fraction(7, 10))
    budget = rng.choice([None, 3000, 6000])
    memo = ClearMemo()
    for end in range(2, len(rows) + 1, rng.choice([1, 3])):
        made = edit_tool_context(rows[:end], policy, budget_tokens=budget)
        resumed = edit_tool_context(rows[:end], policy, budget_tokens=budget, memo=memo)
        assert resumed.messages == made.messages
        assert (resumed.cleared, resumed.cleared_inputs) == (made.cleared, made.cleared_inputs)
        if resumed.changed:
            assert resumed.tokens == PRICES.total(resumed.messages)
    other = edit_tool_context(rows[5:], policy, budget_tokens=budget, memo=memo)
    assert other.messages == edit_tool_context(rows[5:], policy, budget_tokens=budget).messages


def test_a_memo_reads_only_new_rows_and_never_trusts_an_equal_impostor() -> None:
    """A memo edit checks the rows it already read by identity, and only the rows that are
    other objects by type and equality: a dict among the new rows is validated as a row
    (the edit made anew), and an object claiming to equal a read row is no row (the same
    error as without the memo)."""
    from histtrim.tool_context import ClearMemo

    class Impostor:
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = object.__hash__

    body = one_turn(10)
    policy = Policy(tool_context=ToolContext(mode="clear", keep=1, trigger_tokens=0))
    memo = ClearMemo()
    edit_tool_context(body[:8], policy, memo=memo)
    grown: list[Any] = [*body[:12], {"role": "user", "content": "and now?"}]
    resumed = edit_tool_context(grown, policy, memo=memo)
    assert resumed.resumed == 8
    assert resumed.messages == edit_tool_context(grown, policy).messages
    assert resumed.messages[-1] == M.user("and now?")
    hostile: list[Any] = [*grown]
    hostile[3] = Impostor()
    with pytest.raises(ValueError) as fresh:
        edit_tool_context(hostile, policy)
    with pytest.raises(ValueError) as memoed:
        edit_tool_context(hostile, policy, memo=memo)
    assert str(memoed.value) == str(fresh.value)


def test_a_memo_sends_the_rows_it_is_given_when_equal_ones_come_back() -> None:
    """A trim makes its breadcrumb row again at every call: the memo resumes, and the
    request holds the row it was given, never the last call's equal one."""
    from histtrim.messages import BREADCRUMB
    from histtrim.tool_context import ClearMemo

    body = one_turn(8)[2:]
    policy = Policy(tool_context=ToolContext(mode="clear", keep=1, trigger_tokens=0))
    memo = ClearMemo()
    for end in (6, 10, 16):
        rows = [M.system("sys"), M.user(BREADCRUMB), *body[:end]]
        edit = edit_tool_context(rows, policy, crumb_present=True, memo=memo)
        assert edit.messages[1] is rows[1] and edit.cleared_results == end // 2 - 1
    assert edit.resumed == 12


@pytest.mark.parametrize("keep", [0, 2])
def test_pydantic_ai_requests_resumed_from_the_last_are_the_requests_made_anew(
    keep: int,
) -> None:
    """A clear's request resumes the last one (`from_units`' `last`): the same messages as
    one made from the units alone, call after call, a cut moving in between."""
    pytest.importorskip("pydantic_ai")
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    from histtrim.integrations.pydantic_ai import HisttrimCapability, from_units

    policy = Policy(tool_context=ToolContext(mode="clear", keep=keep, trigger_tokens=0),
                    token_trim_target=Fraction(7, 10))
    capability = HisttrimCapability(budget_tokens=3000, policy=policy)
    history: list[Any] = []
    for n in range(40):
        if n % 7 == 0:
            history.append(ModelRequest(parts=[UserPromptPart(f"task {n} " + "u" * 300)]))
        history.append(ModelResponse(parts=[ToolCallPart("bash", {"n": n}, f"c{n}")]))
        history.append(ModelRequest(parts=[ToolReturnPart("bash", "o" * 500, f"c{n}")]))
        sent, done = capability.trim(history)

        def crumbless(messages: list[Any]) -> list[Any]:  # its timestamp is the call's
            return [m.metadata if getattr(m, "metadata", None) else m for m in messages]

        assert crumbless(sent) == crumbless(from_units(history, done.units))


def test_pydantic_ai_requests_resumed_across_conversations_and_copies() -> None:
    """A clear's request resumes the last one only for a history that is the last one's or
    extends it (`Seen.origin`): two conversations interleaved on one capability, a history
    cut back, and a copy of one, each send what their units alone make (issue 46)."""
    pytest.importorskip("pydantic_ai")
    import copy

    from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart

    from histtrim.integrations.pydantic_ai import HisttrimCapability, from_units

    policy = Policy(tool_context=ToolContext(mode="clear", keep=1, trigger_tokens=0),
                    token_trim_target=Fraction(7, 10))
    capability = HisttrimCapability(budget_tokens=3000, policy=policy)

    def grown(tag: str, size: int) -> list[Any]:
        out: list[Any] = []
        for n in range(size):
            out.append(ModelResponse(parts=[ToolCallPart("bash", {"n": n}, f"{tag}{n}")]))
            out.append(ModelRequest(parts=[ToolReturnPart("bash", tag * 400, f"{tag}{n}")]))
        return out

    def crumbless(messages: list[Any]) -> list[Any]:  # its timestamp is the call's
        return [m.metadata if getattr(m, "metadata", None) else m for m in messages]

    a, b = grown("a", 30), grown("b", 30)
    resumed = 0
    for history in [a[:20], b[:20], a[:22], a[:24], b[:22], a[:16], copy.deepcopy(a[:26]),
                    a[:28], a[:30], b[:30], b[:24]]:
        made = capability._made.history
        sent, done = capability.trim(history)
        assert crumbless(sent) == crumbless(from_units(history, done.units))
        resumed += done.seen is not None and made == done.seen.origin
    assert resumed >= 3


def test_ctx_10_the_event_of_a_drop_reports_the_tokens_sent() -> None:
    """Whole turns dropped and the running turn fitted: the result, the event given to
    `on_trim` and the event of `trim_openai` all report the request as sent."""
    from histtrim.events import HistoryTrimmed
    from histtrim.integrations.openai_agents import HisttrimInputFilter

    messages: list[dict[str, Any]] = []
    items: list[Any] = []
    for turn in range(2):
        messages.append({"role": "user", "content": f"task {turn}"})
        items.append({"role": "user", "content": f"task {turn}"})
        for n in range(10):
            cid = f"c{turn}_{n}"
            messages += [
                {"role": "assistant", "content": None, "tool_calls": [{
                    "id": cid, "type": "function",
                    "function": {"name": "bash", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": cid, "content": "o" * 2000}]
            items += [{"type": "function_call", "call_id": cid, "name": "bash",
                       "arguments": "{}"},
                      {"type": "function_call_output", "call_id": cid, "output": "o" * 2000}]
    done = trim_openai(messages, budget_tokens=4000, policy=ANTHROPIC)
    assert done.event is not None and done.result.trimmed
    sent = PRICES.total(from_openai(done.records))
    assert done.event.tokens_after == sent <= 4000
    assert isinstance(done.result, TrimResult) and done.result.tokens_after == sent
    events: list[HistoryTrimmed] = []
    trimming = HisttrimInputFilter(budget_tokens=4000, policy=ANTHROPIC,
                                   on_trim=events.append)
    made = trimming.trim(items, None)
    assert events and events[-1].tokens_after == made.tokens <= 4000


def test_ctx_10_the_agent_sends_a_fitted_request_and_its_event_says_so() -> None:
    """The `Agent`: a long tool loop in one turn after an earlier turn; the drop's event
    and every request sent stay within the budget once the fit clears (before CTX-10 the
    running turn went out whole, over the budget)."""
    from histtrim import Agent, ProviderProfile, RuntimeProfile, resolve_runtime
    from histtrim.agent.providers import ProviderReply, ScriptedProvider

    policy = Policy(tool_context=ToolContext(mode="clear", keep=1, trigger_tokens=100_000))
    runtime = resolve_runtime(
        RuntimeProfile(max_context_tokens=4000, max_tool_iterations=50),
        ProviderProfile(model="m", context_window=1_000_000), None, policy=policy,
    )
    agent = Agent(ScriptedProvider(), runtime, system_prompt="sys",
                  tools=[lambda: "y" * 8000], policy=policy)
    agent.provider = ScriptedProvider([ProviderReply(text="hello")])
    agent.turn("hi " * 400)
    calls = [ProviderReply(tool_calls=(ToolCall(id=f"k{i}", name="<lambda>"),))
             for i in range(10)]
    agent.provider = ScriptedProvider([*calls, ProviderReply(text="done")])
    agent.turn("fix it")
    sent = [PRICES.total(list(r.messages)) for r in agent.provider.requests]
    assert max(sent) <= 4000 and len(sent) == 11
    assert agent.events and all(e.tokens_after <= 4000 for e in agent.events)


def test_ctx_10_with_a_calibrated_prefix_the_agent_fits_the_rows_part_of_the_budget() -> None:
    """USAGE-8 with CTX-10: the provider counts a hidden prefix of 2,000 tokens the rows do
    not show; once it reported, the running turn is fitted to the budget's rows part (the
    budget less the fitted prefix), so the provider counts every later request within the
    budget (before, the fit read the whole budget as the rows' and every request was over)."""
    from histtrim import Agent, ProviderProfile, RuntimeProfile, resolve_runtime
    from histtrim.agent.providers import ProviderReply, ScriptedProvider, estimated_input

    policy = Policy(tool_context=ToolContext(mode="clear", keep=1, trigger_tokens=100_000),
                    hidden_prefix="calibrated")
    runtime = resolve_runtime(
        RuntimeProfile(max_context_tokens=5000, max_tool_iterations=50),
        ProviderProfile(model="m", context_window=1_000_000), None, policy=policy,
    )
    rows_count = estimated_input(policy)

    def provider_count(rows: Any, schemas: Any) -> int:
        return 2000 + rows_count(rows, schemas)

    calls = [ProviderReply(tool_calls=(ToolCall(id=f"k{i}", name="<lambda>"),))
             for i in range(10)]
    agent = Agent(ScriptedProvider([*calls, ProviderReply(text="done")],
                                   reports=provider_count),
                  runtime, system_prompt="sys", tools=[lambda: "y" * 4000], policy=policy)
    agent.turn("fix it")
    counted = [provider_count(list(r.messages), ()) for r in agent.provider.requests]
    assert len(counted) == 11 and max(counted[:3]) <= 5000
    assert max(counted) <= 5000


def test_ctx_10_with_a_calibrated_prefix_the_integrations_fit_the_rows_part() -> None:
    """The same in the integrations' trimmer (the Agents SDK filter): a provider counting a
    hidden prefix of 2,000 tokens; once reported, each request is fitted to the budget's rows
    part and counted within the budget."""
    from histtrim.integrations.openai_agents import HisttrimInputFilter

    policy = Policy(tool_context=ToolContext(mode="clear", keep=1, trigger_tokens=100_000),
                    hidden_prefix="calibrated")
    trimming = HisttrimInputFilter(budget_tokens=5000, policy=policy)
    items: list[Any] = [{"role": "user", "content": "fix it"}]
    counted = []
    for n in range(10):
        done = trimming.trim(items, None)
        counted.append(2000 + done.tokens)
        trimming.trimmer.report(done, {"input_tokens": 2000 + done.tokens})
        items += [{"type": "function_call", "call_id": f"c{n}", "name": "bash",
                   "arguments": "{}"},
                  {"type": "function_call_output", "call_id": f"c{n}", "output": "o" * 4000}]
    assert max(counted) <= 5000


def test_ctx_10_the_newest_keep_results_are_cleared_only_as_a_last_resort() -> None:
    """`keep` is the first floor: the fit goes below it only when the request would still be
    sent over the budget with the newest `keep` results whole, and then only as far as the
    budget (not the low water), never into the newest exchange."""
    rows = [M.system("sys"), M.user("fix the bug")]
    for n in range(4):  # four large results, one per call row
        rows += [M.assistant_tool_calls(None, [ToolCall(id=f"c{n}", name="bash")]),
                 M.tool_result(f"c{n}", f"{n} " + "o" * 4000)]
    assert PRICES.total(rows[:2] + rows[-2:]) < 2000 < PRICES.total(rows[:2] + rows[-6:])
    edit = edit_tool_context(rows, ANTHROPIC, budget_tokens=2000)
    assert PRICES.total(edit.messages) <= 2000
    assert edit.messages[-2:] == rows[-2:]  # the newest exchange stays whole
    assert edit.cleared_results == 3
    assert not any(p.is_error for p in validate_tool_pairing(edit.messages))
    # when the newest `keep` results fit, they stay whole (no clear beyond them)
    roomy = edit_tool_context(rows, ANTHROPIC, budget_tokens=4000)
    assert roomy.messages[-6:] == rows[-6:] and roomy.cleared_results == 1
    # below `keep` as few as it takes: the budget, not a low water of 1/2 of it
    low = ANTHROPIC.model_copy(update={"token_trim_target": Fraction(1, 2)})
    last = edit_tool_context(rows, low, budget_tokens=3000)
    assert last.cleared_results == 2 and 1500 < PRICES.total(last.messages) <= 3000
    assert last.messages[-4:] == rows[-4:]
    # the newest exchange alone over the budget: sent over, as small as the fit makes it
    tight = edit_tool_context(rows, ANTHROPIC, budget_tokens=500)
    assert tight.cleared_results == 3 and tight.messages[-2:] == rows[-2:]


def test_ctx_10_with_clear_inputs_the_fit_counts_the_inputs_it_frees() -> None:
    """A coding agent's file writes are its calls' inputs: with `clear_inputs` each cleared
    result's call loses them too, and the fit counts that, so it clears as many results as
    the budget needs and no more (it cleared all but the newest before: 1,248 of 3,000)."""
    rows = [M.system("sys"), M.user("write the files")]
    for n in range(6):
        content = json.dumps({"path": f"f{n}", "content": "x" * 2000})
        rows += [M.assistant_tool_calls(None, [ToolCall(id=f"w{n}", name="write",
                                                        arguments=content)]),
                 M.tool_result(f"w{n}", f"{n} " + "o" * 2000)]
    policy = Policy(tool_context=ToolContext(mode="clear", keep=1, trigger_tokens=100_000,
                                             clear_inputs=True))
    edit = edit_tool_context(rows, policy, budget_tokens=3000)
    assert (edit.cleared_results, edit.cleared_inputs) == (4, 4)
    assert edit.tokens == PRICES.total(edit.messages) == 2255
    assert edit.messages[-4:] == rows[-4:]  # the two newest writes and results whole
    assert not any(p.is_error for p in validate_tool_pairing(edit.messages))


def test_ctx_11_clear_text_the_cleared_calls_lose_their_text_and_the_fit_counts_it() -> None:
    """CTX-11: mini-swe-agent writes a THOUGHT paragraph with each call, the call row's text,
    which no result clear frees. With `clear_text` a cleared result's call row loses it (its calls,
    ids and names stay), every clear does so, and the fit counts it."""
    rows = [M.system("sys"), M.user("fix the bug")]
    for n in range(6):
        rows += [M.assistant_tool_calls(f"THOUGHT {n}: " + "t" * 2000,
                                        [ToolCall(id=f"c{n}", name="bash")]),
                 M.tool_result(f"c{n}", f"{n} " + "o" * 1000)]
    plain = Policy(tool_context=ToolContext(mode="clear", keep=1, trigger_tokens=100_000))
    text = Policy(tool_context=plain.tool_context.model_copy(update={"clear_text": True}))
    blind = edit_tool_context(rows, plain, budget_tokens=2000)
    assert blind.cleared_results == 5 and PRICES.total(blind.messages) > 2000  # the text
    edit = edit_tool_context(rows, text, budget_tokens=2000)
    assert edit.tokens == PRICES.total(edit.messages) <= 2000
    assert edit.cleared_results == 4 and edit.cleared_inputs == 0
    assert edit.messages[-4:] == rows[-4:]  # the newest results and their calls' text whole
    cleared = json.loads(edit.messages[2].content)
    assert cleared["content"] is None and cleared["tool_calls"][0]["id"] == "c0"
    assert not any(p.is_error for p in validate_tool_pairing(edit.messages))
    # the trigger's clear (CTX-8) takes the text too
    trigger = Policy(tool_context=text.tool_context.model_copy(update={"trigger_tokens": 0}))
    assert json.loads(edit_tool_context(rows, trigger).messages[2].content)["content"] is None
    assert not plain.tool_context.clear_text  # off by default
