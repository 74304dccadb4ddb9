"""CTX-1..9: tool context retention (`histtrim.tool_context`): the reference's collapse and
the field's placeholder clearing, request-time edits that never change the stored rows."""

from __future__ import annotations

import random
from fractions import Fraction
from itertools import pairwise

import pytest
from pydantic import ValidationError

from histtrim.agent.providers import ProviderReply, ScriptedProvider
from histtrim.agent.runtime import Agent
from histtrim.carriers import tool_results_carrier
from histtrim.config import ProviderProfile, RuntimeProfile
from histtrim.estimate import estimate_history_tokens
from histtrim.low_water import request_points
from histtrim.messages import BREADCRUMB, ChatMessage, ToolCall
from histtrim.pairing import validate_tool_pairing
from histtrim.policy import SPEC, Policy, ToolContext
from histtrim.route import resolve_runtime
from histtrim.tool_context import (
    clear_tool_results,
    collapse_tool_context,
    edit_tool_context,
    exchange_summary,
)

M = ChatMessage


def call(cid: str, name: str = "shell", args: str = '{"cmd":"ls"}') -> ChatMessage:
    return M.assistant_tool_calls(None, [ToolCall(id=cid, name=name, arguments=args)])


def tool_turn(n: int, calls: int = 1, name: str = "shell", size: int = 400) -> list[ChatMessage]:
    rows = [M.user(f"task {n}")]
    for c in range(calls):
        rows += [call(f"c{n}_{c}", name), M.tool_result(f"c{n}_{c}", f"out{n}_{c} " + "x" * size)]
    return [*rows, M.assistant(f"done {n}")]


def history(turns: int, calls: int = 1) -> list[ChatMessage]:
    return [M.system("sys"), *(r for n in range(turns) for r in tool_turn(n, calls))]


# ------------------------------------------------------------------ collapse (CTX-1..5)


def test_ctx_1_keeps_the_newest_prior_turns_and_the_running_one() -> None:
    """CTX-1: keep_turns prior turns and the running one keep their tool rows."""
    rows = history(5, calls=2)
    edit = collapse_tool_context(rows, 2)
    summary = exchange_summary(2)
    assert summary == "[Tool exchange: 2 tool call(s) — results collapsed]"
    assert [m.content for m in edit.messages[:7]] == [
        "sys", "task 0", summary, "done 0", "task 1", summary, "done 1"
    ]
    assert edit.messages[7:] == rows[13:]  # turns 2, 3 and the running turn 4: whole
    assert (edit.collapsed_turns, edit.dropped_messages) == (2, 8)
    # 0 keeps tool context for the running turn only; a history of keep + 1 turns is untouched
    assert collapse_tool_context(rows, 0).collapsed_turns == 4
    assert collapse_tool_context(rows, 4).messages == rows
    # the running turn (no reply yet) is never collapsed, whatever keep_turns is
    running = [*history(2), M.user("now"), call("r1"), M.tool_result("r1", "big " * 100)]
    assert collapse_tool_context(running, 0).messages[-3:] == running[-3:]


def test_ctx_2_source_rows_and_turns_that_end_on_a_call_or_a_result() -> None:
    """CTX-2: prompt, one summary row, closing reply; a call row is never a reply."""
    rows = [
        M.user("a"), call("x1"), M.tool_result("x1", "r"),  # ended on a result
        M.user("b"), call("x2"),  # ended on an unanswered call: no closing reply
        M.user("c"), M.assistant("plain reply"),  # no tool rows: nothing to collapse
        M.user("d"), M.assistant("reply d"),
    ]
    edit = collapse_tool_context(rows, 0)
    assert [m.content for m in edit.messages] == [
        "a", exchange_summary(1), "b", exchange_summary(1), "c", "plain reply", "d", "reply d"
    ]
    assert edit.source_rows == [0, 1, 3, 4, 5, 6, 7, 8]  # a summary stands for its call row
    assert edit.collapsed_turns == 2 and edit.dropped_messages == 3
    assert not any(p.is_error for p in validate_tool_pairing(edit.messages))


def test_ctx_3_parse_error_rows_stay_in_their_turn_and_the_crumb_is_copied() -> None:
    """CTX-3: the parse error row opens no turn; system rows and the crumb pass through."""
    parse_error = M.user("[Tool call parse error] expected JSON")
    rows = [
        M.system("sys"), M.user(BREADCRUMB),
        *tool_turn(0),
        M.user("task 1"), call("p1"), M.tool_result("p1", "o"), parse_error, M.assistant("fixed"),
        M.user("task 2"), M.assistant("done 2"),
    ]
    edit = collapse_tool_context(rows, 1, crumb_present=True)
    assert edit.messages[:5] == [rows[0], rows[1], rows[2], M.assistant(exchange_summary(1)),
                                 rows[5]]
    assert edit.messages[5:] == rows[6:]  # the parse error row did not open a turn
    # the same row, opening a turn as whole-turn trimming counts it, would shift the window
    assert collapse_tool_context(rows, 0, crumb_present=True).dropped_messages == 2 + 3


def test_ctx_4_prompt_mode_carriers_collapse_as_a_unit() -> None:
    """CTX-4: a prompt-mode exchange collapses as a unit too."""
    carrier = tool_results_carrier([("shell", "listing"), ("read", "file")])
    rows = [
        M.user("t0"), M.assistant('<tool_call name="shell"/>'), carrier, M.assistant("done 0"),
        M.user("t1"), M.assistant("done 1"),
    ]
    edit = collapse_tool_context(rows, 0)
    # the row that opened the exchange is plain text: one summary for one carrier
    assert [m.content for m in edit.messages] == [
        "t0", exchange_summary(1), "done 0", "t1", "done 1"
    ]


def test_ctx_5_nothing_stored_changes_and_no_event_in_the_agent() -> None:
    """CTX-5: a request-time bound: the Agent stores every row and emits no HistoryTrimmed."""
    rows = history(4)
    frozen = list(rows)
    collapse_tool_context(rows, 0)
    assert rows == frozen  # the input is never mutated
    policy = Policy(tool_context=ToolContext(mode="collapse", keep_turns=0))
    runtime = resolve_runtime(
        RuntimeProfile(max_context_tokens=0), ProviderProfile(model="m", context_window=100_000),
        None, policy=policy,
    )
    agent = Agent(ScriptedProvider(), runtime, system_prompt="sys", tools=[lambda: "x" * 300],
                  policy=policy)
    for n in range(3):
        agent.provider = provider = ScriptedProvider([
            ProviderReply(tool_calls=(ToolCall(id=f"k{n}", name="<lambda>"),)),
            ProviderReply(text=f"done {n}"),
        ])
        agent.turn(f"task {n}")
    sent = provider.requests[-1].messages
    assert [m.content for m in sent[:4]] == ["sys", "task 0", exchange_summary(1), "done 0"]
    assert sent[-2].role == "assistant" and sent[-1].role == "tool"  # the running turn: whole
    assert len(agent.working_history()) == 1 + 3 * 4  # every stored row is still there
    assert agent.events == []
    # the call log and the capacity check price what was sent, not the stored rows
    assert agent.calls[-1].history_tokens == estimate_history_tokens(sent)
    assert estimate_history_tokens(sent) < estimate_history_tokens(agent.working_history())


# ------------------------------------------------------------------ clear (CTX-6..9)


def clear(**fields: object) -> ToolContext:
    return ToolContext.model_validate({"mode": "clear", "trigger_tokens": 0, **fields})


def contents(rows: list[ChatMessage]) -> list[str]:
    return [m.content for m in rows if m.role == "tool"]


def test_ctx_6_keeps_the_newest_results_or_turns_and_excluded_tools() -> None:
    """CTX-6: the newest results (or turns) and excluded tools are kept; pairing holds."""
    rows = history(4, calls=2)
    edit = clear_tool_results(rows, clear(keep=3))
    assert edit.cleared_results == 5 and len(edit.messages) == len(rows)
    assert all('"content":"[cleared]"' in c for c in contents(edit.messages)[:5])
    assert all("x" * 400 in c for c in contents(edit.messages)[5:])
    by_turn = clear_tool_results(rows, clear(keep=1, keep_unit="turns"))
    assert by_turn.cleared_results == 6  # the newest turn keeps both of its results
    mixed = [*tool_turn(0), *tool_turn(1, name="read"), *tool_turn(2)]
    kept = clear_tool_results(mixed, clear(keep=0, exclude_tools=("read",)))
    assert kept.cleared_results == 2 and "x" * 400 in contents(kept.messages)[1]
    assert clear_tool_results(mixed, clear(keep=0, min_chars=1000)).cleared_results == 0
    for made in (edit, by_turn, kept):
        assert not any(p.is_error for p in validate_tool_pairing(made.messages))


def test_ctx_7_placeholder_ids_inputs_carriers_and_images() -> None:
    """CTX-7: ids kept, output and images gone, carriers keep their prefix, inputs emptied."""
    rows = [
        M.user("t"), call("a1"),
        M.tool_result("a1", "shot", attachments=["/tmp/a.png"]),
        M.user("t2"), M.assistant("x"), tool_results_carrier([("shell", "y" * 300)]),
        M.assistant("done"),
    ]
    edit = clear_tool_results(rows, clear(keep=0, clear_inputs=True, preview_chars=4))
    assert edit.messages[2].content == '{"tool_call_id":"a1","content":"[cleared]"}'
    assert edit.messages[1].content == call("a1", args="{}").content
    assert edit.messages[5].content == (  # each output its own preview, its name kept
        '[Tool results]\n<tool_result name="shell">\n[cleared]\nyyyy\n</tool_result>')
    assert (edit.cleared_results, edit.cleared_inputs, edit.cleared) == (2, 1, (2, 5))


def test_ctx_8_trigger_and_clear_at_least() -> None:
    """CTX-8: only above the trigger, and only a clear worth `clear_at_least`."""
    rows = history(4)
    total = sum(1 for _ in rows)
    size = Policy().tool_context  # off: nothing changes
    assert edit_tool_context(rows, Policy(tool_context=size)).messages == rows
    big = clear_tool_results(rows, clear(keep=1, trigger_tokens=10_000))
    assert big.cleared_results == 0  # the request is far below the trigger
    small = clear_tool_results(rows, clear(keep=1, trigger_tokens=100))
    assert small.cleared_results == 3
    worth = clear_tool_results(rows, clear(keep=1, trigger_tokens=100, clear_at_least=10_000))
    assert worth.cleared_results == 0 and total == len(worth.messages)


def sent_requests(rows: list[ChatMessage], settings: ToolContext) -> list[list[ChatMessage]]:
    """The request each recorded provider call sends under `settings`."""
    return [clear_tool_results(rows[:end], settings).messages for end in request_points(rows)]


def test_ctx_9_held_clears_keep_the_prefix_stable_between_clears() -> None:
    """CTX-9: held clears batch: between clears each request extends the last."""
    rows = history(12, calls=2)
    per_hop = clear(keep=2, trigger_tokens=1500)
    held = clear(keep=2, trigger_tokens=1500, hold=True, clear_to=Fraction(1, 2))

    def breaks(requests: list[list[ChatMessage]]) -> int:
        return sum(1 for a, b in pairwise(requests) if b[: len(a)] != a)

    hop, batched = sent_requests(rows, per_hop), sent_requests(rows, held)
    assert breaks(hop) > 2 * breaks(batched) > 0
    for a, b in pairwise(batched):  # a request either extends the last or clears more
        same = b[: len(a)] == a
        cleared_a = sum("[cleared]" in m.content for m in a)
        assert same or sum("[cleared]" in m.content for m in b) > cleared_a
    assert not any(p.is_error for r in batched for p in validate_tool_pairing(r))


def test_clearing_is_deterministic_and_never_mutates() -> None:
    rng = random.Random(39)
    for _ in range(30):
        rows = [M.system("s")]
        for n in range(rng.randint(1, 8)):
            rows += tool_turn(n, rng.randint(0, 3), rng.choice(["a", "b"]), rng.randint(0, 900))
        frozen = list(rows)
        settings = clear(keep=rng.randint(0, 4), trigger_tokens=rng.randint(0, 2000),
                         hold=rng.random() < 0.5, clear_to=Fraction(rng.randint(0, 4), 4))
        first = clear_tool_results(rows, settings)
        assert first == clear_tool_results(list(rows), settings) and rows == frozen
        assert len(first.messages) == len(rows)
        assert [m.role for m in first.messages] == [m.role for m in rows]
        collapsed = collapse_tool_context(rows, rng.randint(0, 3))
        for edit in (first, collapsed):
            assert not any(p.is_error for p in validate_tool_pairing(edit.messages))


def test_policy_settings_load_and_name_bad_fields() -> None:
    policy = Policy.loads(
        '[tool_context]\nmode = "clear"\nkeep = 2\nclear_to = "7/10"\nhold = true\n',
        format="toml",
    )
    assert policy.tool_context.clear_to == Fraction(7, 10)
    assert policy.changes()["tool_context.mode"] == "off -> clear"
    assert SPEC.tool_context.mode == "off"
    with pytest.raises(ValidationError, match=r"tool_context\.mode"):
        Policy.loads('[tool_context]\nmode = "drop"\n', format="toml")
    with pytest.raises(ValidationError, match="clear_to"):
        Policy.loads('[tool_context]\nclear_to = "3/2"\n', format="toml")
    with pytest.raises(ValueError, match="keep_turns"):
        collapse_tool_context([], -1)


# ------------------------------------------------------------------ every path takes it


def openai_session(turns: int) -> list[dict[str, object]]:
    messages: list[dict[str, object]] = [{"role": "system", "content": "sys"}]
    for n in range(turns):
        cid = f"call_{n}"
        messages += [
            {"role": "user", "content": f"task {n}"},
            {"role": "assistant", "content": None, "tool_calls": [{
                "id": cid, "type": "function",
                "function": {"name": "shell", "arguments": '{"cmd":"ls"}'}}]},
            {"role": "tool", "tool_call_id": cid, "content": f"out {n} " + "x" * 300},
            {"role": "assistant", "content": f"done {n}"},
        ]
    return messages


def test_ctx_adapters_send_the_edited_request_and_keep_the_input() -> None:
    """CTX-1, CTX-6: trim_openai and trim_anthropic take the policy's tool context."""
    from histtrim.adapters import trim_records
    from histtrim.adapters.anthropic import trim_anthropic
    from histtrim.adapters.openai import from_openai, trim_openai

    messages = openai_session(4)
    frozen = repr(messages)
    collapse = Policy(tool_context=ToolContext(mode="collapse", keep_turns=1))
    done = trim_openai(messages, budget_tokens=10**6, policy=collapse)
    assert repr(messages) == frozen and done.tool_context is not None
    assert done.records[2] == {"role": "assistant", "content": exchange_summary(1)}
    assert [m["role"] for m in done.records[:4]] == ["system", "user", "assistant", "assistant"]
    assert done.records[-4:] == messages[-4:] and done.event is None
    assert not validate_tool_pairing(from_openai(done.records))

    clear = Policy(tool_context=ToolContext(mode="clear", keep=1, trigger_tokens=0,
                                            clear_inputs=True))
    cleared = trim_openai(messages, budget_tokens=10**6, policy=clear)
    tools = [m for m in cleared.records if m["role"] == "tool"]
    assert [m["content"] for m in tools[:3]] == ["[cleared]"] * 3 and tools[3] == messages[-2]
    assert cleared.records[2]["tool_calls"][0]["function"]["arguments"] == "{}"  # type: ignore[index]

    body = {"model": "m", "system": "sys", "messages": [
        {"role": "user", "content": "look"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "grep", "input": {"q": "x"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "big " * 100}]},
        {"role": "assistant", "content": "found"},
        {"role": "user", "content": "next"},
    ]}
    every = Policy(tool_context=ToolContext(mode="clear", keep=0, trigger_tokens=0,
                                            clear_inputs=True))
    sent, _ = trim_anthropic(body, budget_tokens=10**6, policy=every)
    block = sent["messages"][2]["content"][0]
    assert block == {"type": "tool_result", "tool_use_id": "t1", "content": "[cleared]"}
    # a carrier's outputs answer their calls by id: clear_inputs reaches them too
    assert sent["messages"][1]["content"][0]["input"] == {}
    assert body["messages"][2]["content"][0]["content"] == "big " * 100  # type: ignore[index]
    with pytest.raises(ValueError, match=r"policy\.tool_context"):
        trim_records(messages, from_openai(messages), budget_tokens=10**6, policy=clear)


def test_ctx_9_a_caller_passing_the_whole_history_resends_a_stable_prefix() -> None:
    """CTX-9 through trim_openai: a held clear replays from the history alone."""
    from histtrim.adapters.openai import trim_openai

    messages = openai_session(14)
    held = Policy(tool_context=ToolContext(
        mode="clear", keep=2, trigger_tokens=800, hold=True, clear_to=Fraction(1, 2)))
    per_hop = Policy(tool_context=ToolContext(mode="clear", keep=2, trigger_tokens=800))

    def breaks(policy: Policy) -> int:
        sent = [trim_openai(messages[:end], budget_tokens=10**6, policy=policy).records
                for end in range(5, len(messages) + 1, 4)]
        return sum(1 for a, b in pairwise(sent) if b[: len(a)] != a)

    assert 0 < breaks(held) < breaks(per_hop)


def test_ctx_cli_trim_writes_the_request_the_policy_sends(
    tmp_path: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    """CTX-1 and CTX-5 through `histtrim trim --policy`: the output is the collapsed
    request; the input file is left as it is; an Anthropic body is edited too."""
    import json
    from pathlib import Path

    from histtrim.cli import main

    folder = Path(str(tmp_path))
    session = folder / "s.jsonl"
    session.write_text("".join(json.dumps(m) + "\n" for m in openai_session(3)))
    before = session.read_bytes()
    policy = folder / "collapse.toml"
    policy.write_text('[tool_context]\nmode = "collapse"\nkeep_turns = 0\n')
    assert main(["trim", str(session), "--budget", "100000", "--policy", str(policy)]) == 0
    out, err = capsys.readouterr()
    sent = [json.loads(line) for line in out.splitlines()]
    assert [m["content"] for m in sent[2:4]] == [exchange_summary(1), "done 0"]
    assert sent[-4:] == openai_session(3)[-4:] and session.read_bytes() == before
    assert "tool context: 2 turns collapsed" in err
    body = folder / "body.json"
    body.write_text(json.dumps({"model": "m", "system": "s", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "x"}]}]}))
    assert main(["trim", str(body), "--budget", "100", "--policy", str(policy)]) == 0
    assert json.loads(capsys.readouterr().out)["messages"][0]["content"][0]["text"] == "x"


def test_ctx_9_the_agent_sends_held_clears_with_a_stable_prefix() -> None:
    """CTX-9 in the Agent: its requests extend each other between clears; per hop they break
    more often. Nothing stored is cleared (CTX-5)."""

    def run(settings: ToolContext) -> tuple[int, Agent]:
        policy = Policy(tool_context=settings)
        runtime = resolve_runtime(
            RuntimeProfile(max_context_tokens=0, max_tool_iterations=50),
            ProviderProfile(model="m", context_window=1_000_000), None, policy=policy,
        )
        agent = Agent(ScriptedProvider(), runtime, system_prompt="sys",
                      tools=[lambda: "y" * 600], policy=policy)
        sent: list[tuple[ChatMessage, ...]] = []
        for n in range(6):
            calls = [ProviderReply(tool_calls=(ToolCall(id=f"k{n}_{i}", name="<lambda>"),))
                     for i in range(3)]
            agent.provider = ScriptedProvider([*calls, ProviderReply(text=f"done {n}")])
            agent.turn(f"task {n}")
            sent += [r.messages for r in agent.provider.requests]
        return sum(1 for a, b in pairwise(sent) if b[: len(a)] != a), agent

    held, agent = run(ToolContext(mode="clear", keep=2, trigger_tokens=1_500, hold=True,
                                  clear_to=Fraction(1, 2)))
    per_hop, _ = run(ToolContext(mode="clear", keep=2, trigger_tokens=1_500))
    assert 0 < held < per_hop
    assert not any("[cleared]" in row.content for row in agent.working_history())
