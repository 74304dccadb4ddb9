"""Issue 38, incremental pricing: an integration prices each row once per instance (a
`token_counter` is called once per row per session, EST-1) and reuses the prefix a framework
passes again, yet every call's answer equals a fresh instance's: with the framework copying
its messages, with an earlier message edited, with two sessions interleaved on one instance,
with an Agents SDK run of assistant items the next call continues; memory stays bounded."""

from __future__ import annotations

import copy
from fractions import Fraction
from functools import partial
from typing import Any

import pytest

from histtrim.messages import ChatMessage
from histtrim.policy import SPEC, Policy

HELD = Policy(token_trim_target=Fraction(7, 10))


class Counting:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, row: ChatMessage) -> int:
        self.calls += 1
        return len(row.content) // 3


def langchain_turns(n: int, tag: str = "") -> list[Any]:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    out: list[Any] = []
    for i in range(n):
        out += [HumanMessage(f"{tag}question {i} " + "x" * (50 + 13 * (i % 5))),
                AIMessage("", tool_calls=[{"name": "f", "args": {"i": i}, "id": f"c{tag}{i}"}]),
                ToolMessage("out " * (10 + i % 7), tool_call_id=f"c{tag}{i}"),
                AIMessage(f"answer {i}")]
    return out


def langchain_call(middleware: Any, messages: list[Any]) -> tuple[list[Any], int]:
    done = middleware.trim(messages)
    return done.units, done.tokens


@pytest.mark.parametrize("policy", [SPEC, HELD])
def test_est_1_langchain_prices_each_row_once_and_answers_as_a_fresh_instance(
    policy: Policy,
) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.messages import HumanMessage

    from histtrim.adapters.langchain import from_langchain
    from histtrim.integrations.langchain import HisttrimMiddleware

    counter = Counting()
    kept = HisttrimMiddleware(budget_tokens=700, policy=policy, token_counter=counter)
    a, b = langchain_turns(30, "a"), langchain_turns(30, "b")
    calls = [a[:40], b[:8], a[:48], b[:20], copy.deepcopy(a[:60]), a[:60]]
    edited = list(a[:64])
    edited[5] = HumanMessage("an edited question")  # the owner changed an earlier message
    calls += [edited, a[:80], a[:120]]
    for messages in calls:
        fresh = HisttrimMiddleware(budget_tokens=700, policy=policy, token_counter=Counting())
        assert langchain_call(kept, messages) == langchain_call(fresh, messages)
    distinct = {(r.role, r.content) for r in from_langchain([*a, *b[:20], edited[5]])}
    assert counter.calls <= len(distinct) + 1  # each row once (and the breadcrumb once)


def pydantic_turns(n: int) -> list[Any]:
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    out: list[Any] = [ModelRequest(parts=[SystemPromptPart("terse"), UserPromptPart("q")])]
    for i in range(n):
        out += [ModelResponse(parts=[ToolCallPart("f", {"i": i}, tool_call_id=f"c{i}")]),
                ModelRequest(parts=[ToolReturnPart("f", "out " * (10 + i % 7),
                                                   tool_call_id=f"c{i}")]),
                ModelResponse(parts=[TextPart(f"answer {i}")]),
                ModelRequest(parts=[UserPromptPart(f"question {i} " + "x" * (40 + i % 9))])]
    return out


def test_est_1_pydantic_ai_prices_each_row_once_and_answers_as_a_fresh_instance() -> None:
    pytest.importorskip("pydantic_ai")
    from histtrim.integrations.pydantic_ai import CRUMB_METADATA, HisttrimCapability

    counter = Counting()
    kept = HisttrimCapability(budget_tokens=600, policy=HELD, token_counter=counter)
    history = pydantic_turns(40)
    for messages in [history[:30], history[:50], copy.deepcopy(history[:70]), history[:90],
                     history[:20], history[:161]]:
        fresh = HisttrimCapability(budget_tokens=600, policy=HELD, token_counter=Counting())
        sent, done = kept.trim(messages, "be brief")
        again, expected = fresh.trim(messages, "be brief")
        assert done.tokens == expected.tokens and done.units == expected.units
        assert [m for m in sent if m.metadata != CRUMB_METADATA] == [
            m for m in again if m.metadata != CRUMB_METADATA]  # a crumb has its own timestamp
    assert counter.calls <= 1 + 161 + 1 + 1  # the instructions, each part's row, the crumb


def test_est_1_sdk_run_of_assistant_items_continued_by_the_next_call() -> None:
    """The last unit of a call may be a run of assistant-side items the next call extends:
    it is made again, never reused half."""
    pytest.importorskip("agents")
    from histtrim.integrations.openai_agents import HisttrimInputFilter, _sent, from_units

    items: list[Any] = []
    for i in range(30):
        items += [{"role": "user", "content": f"question {i} " + "x" * (40 + i % 9)},
                  {"type": "reasoning", "id": f"r{i}", "summary": [{"text": "think"}]},
                  {"type": "function_call", "call_id": f"c{i}", "name": "f", "arguments": "{}"},
                  {"type": "function_call_output", "call_id": f"c{i}", "output": "o " * 20},
                  {"role": "assistant", "content": f"answer {i}"}]
    counter = Counting()
    kept = HisttrimInputFilter(budget_tokens=500, policy=HELD, token_counter=counter)
    for end in (2, 3, 7, 8, 9, 60, 62, 63, 150, 40):  # cuts inside assistant runs
        fresh = HisttrimInputFilter(budget_tokens=500, policy=HELD, token_counter=Counting())
        done, expected = kept.trim(items[:end], "terse"), fresh.trim(items[:end], "terse")
        assert done.units == expected.units and done.rows == expected.rows
        assert done.tokens == expected.tokens
        assert _sent(items[:end], done) == from_units(items[:end], done.units)  # sliced


def test_the_price_cache_stays_bounded() -> None:
    from histtrim.integrations._trimmer import ENTRY_BYTES, Trimmer

    trimmer = Trimmer(budget_tokens=100)
    cache = trimmer.cache
    for i in range(3 * cache.budget // ENTRY_BYTES):
        cache.priced(ChatMessage.user(f"row {i}"))
    assert cache.bytes <= cache.budget  # in bytes (issue 46 item 16)
    assert len(cache._rows) + len(cache._old_rows) <= cache.budget // ENTRY_BYTES


def test_pair_1_the_pairing_guard_scans_each_history_once_and_answers_as_a_full_scan() -> None:
    """The guard's errors come from the history, scanned once and then from the last run on:
    on histories growing call by call, with broken pairs before, inside and after the cut, it
    refuses exactly the requests a scan of the whole request refuses."""
    pytest.importorskip("agents")
    import random

    from histtrim.integrations._trimmer import ToolPairingError, Trimmer
    from histtrim.integrations.openai_agents import HisttrimInputFilter

    def refused(check: Any) -> str | None:
        try:
            check()
        except ToolPairingError as error:
            return str(error).split(": ", 1)[1].split(" (tool_call_id")[0].split("row ")[0]
        return None

    rng = random.Random(7)
    outcomes = set()
    for trial in range(12):
        items: list[Any] = []
        for i in range(40):
            items.append({"role": "user", "content": f"q{i} " + "x" * rng.randrange(20, 200)})
            for r in range(rng.randrange(0, 3)):
                call = f"c{i}_{r}"
                items.append({"type": "function_call", "call_id": call, "name": "f",
                              "arguments": "{}"})
                if rng.random() > 0.04:  # now and then a call loses its result
                    items.append({"type": "function_call_output", "call_id": call,
                                  "output": "o" * rng.randrange(5, 100)})
            if rng.random() < 0.03:  # or a result appears from nowhere
                items.append({"type": "function_call_output", "call_id": "ghost", "output": "g"})
            items.append({"role": "assistant", "content": f"a{i}"})
        kept = HisttrimInputFilter(budget_tokens=rng.choice([300, 800, 5_000]))
        ends = sorted(rng.sample(range(1, len(items) + 1), 8))
        for end in ends:
            done = kept.trim(items[:end], "terse")
            full = refused(partial(Trimmer.check_pairing, done.rows))
            incremental = refused(partial(kept.trimmer.check_sent, done))
            assert (full is None) == (incremental is None), (trial, end, full, incremental)
            outcomes.add(full is None)
    assert outcomes == {True, False}  # both refused and sent requests were checked


@pytest.mark.parametrize("policy", [HELD, Policy(token_trim_target=Fraction(1, 2),
                                                 turn_trim_target=Fraction(1, 2))])
def test_run_1_a_resumed_held_replay_cuts_where_a_full_replay_cuts(policy: Policy) -> None:
    """Call after call the held cut resumes the replay where the last call left it: at every
    call it equals a fresh instance's full replay (both limits, the breadcrumb counted)."""
    pytest.importorskip("langchain_core")
    from histtrim.integrations.langchain import HisttrimMiddleware

    history = langchain_turns(45)
    kept = HisttrimMiddleware(budget_tokens=900, max_turns=12, policy=policy)
    for end in range(1, len(history) + 1):
        fresh = HisttrimMiddleware(budget_tokens=900, max_turns=12, policy=policy)
        done, expected = kept.trim(history[:end]), fresh.trim(history[:end])
        assert (done.units, done.tokens, done.events) == (
            expected.units, expected.tokens, expected.events), end


def test_a_trim_never_reads_another_historys_state() -> None:
    """A caller's own `priced` call between the framework's never lends its history's
    columns or held cut to another trim."""
    pytest.importorskip("langchain_core")
    from histtrim.integrations.langchain import HisttrimMiddleware

    a, b = langchain_turns(30, "a"), langchain_turns(30, "b")
    kept = HisttrimMiddleware(budget_tokens=700, policy=HELD)
    kept.priced(a)  # remembered as the last history priced, then another is trimmed
    done = kept.trimmer.trim(b, [kept.trimmer.cache.priced(r) for r in from_rows(b)],
                             crumb=b[0], crumb_present=False)
    fresh = HisttrimMiddleware(budget_tokens=700, policy=HELD).trim(b)
    assert done.rows == fresh.rows and done.tokens == fresh.tokens


def from_rows(messages: list[Any]) -> list[ChatMessage]:
    from histtrim.adapters.langchain import from_langchain

    return from_langchain(messages)


def test_concurrent_runs_on_one_capability_each_get_a_fresh_instances_requests() -> None:
    """Two pydantic-ai runs of different conversations, interleaved on one event loop through
    one capability, send what each would send alone (the state is per history)."""
    pytest.importorskip("pydantic_ai")
    import asyncio

    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from histtrim.integrations.pydantic_ai import HisttrimCapability, to_rows

    def run(capability: HisttrimCapability, histories: dict[str, list[ModelMessage]],
            order: list[str]) -> dict[str, list[list[ChatMessage]]]:
        seen: dict[str, list[list[ChatMessage]]] = {tag: [] for tag in histories}

        def agent_for(tag: str) -> Agent[None, str]:
            async def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
                await asyncio.sleep(0)  # let the other run in between
                seen[tag].append(to_rows(messages)[1])  # timestamps differ between runs
                return ModelResponse(parts=[TextPart(f"{tag} answer")])
            return Agent(FunctionModel(model), capabilities=[capability])

        async def both() -> None:
            history = dict(histories)
            for step in range(4):
                async def one(tag: str, step: int = step) -> None:
                    result = await agent_for(tag).run(f"{tag} question {step} " + "y" * 300,
                                                      message_history=history[tag])
                    history[tag] = result.all_messages()
                await asyncio.gather(*(one(tag) for tag in order))

        asyncio.run(both())
        return seen

    histories = {"a": pydantic_turns(30), "b": pydantic_turns(25)}
    shared = run(HisttrimCapability(budget_tokens=900, policy=HELD), histories, ["a", "b"])
    alone_a = run(HisttrimCapability(budget_tokens=900, policy=HELD), {"a": histories["a"]},
                  ["a"])
    alone_b = run(HisttrimCapability(budget_tokens=900, policy=HELD), {"b": histories["b"]},
                  ["b"])
    assert shared["a"] == alone_a["a"] and shared["b"] == alone_b["b"]
    assert len(shared["a"]) == 4 and shared["a"][0] != shared["b"][0]


def test_ctx_6_a_clear_request_resumed_from_the_last_is_the_request_made_anew() -> None:
    """The SDK filter makes a clear's request (positions dropped, no slice of the input)
    from the last request it made, from the first unit that is not the last one's: on
    histories that grow, are cut back, branch and are copied, what it sends equals the
    items its units stand for, made anew (issue 46's speed goal)."""
    pytest.importorskip("agents")
    import random

    from agents import Agent
    from agents.run_config import CallModelData, ModelInputData

    from histtrim.integrations.openai_agents import HisttrimInputFilter, _key, from_units
    from histtrim.policy import ToolContext

    clear = HELD.model_copy(update={"tool_context": ToolContext(
        mode="clear", keep=2, trigger_tokens=0, placeholder="[cleared]")})
    rng = random.Random(46)
    items: list[Any] = []
    for i in range(60):
        items.append({"role": "user", "content": f"q{i} " + "x" * rng.randrange(20, 120)})
        for r in range(rng.randrange(0, 3)):
            call = f"c{i}_{r}"
            items += [{"type": "function_call", "call_id": call, "name": "f",
                       "arguments": '{"a": 1}'},
                      {"type": "function_call_output", "call_id": call,
                       "output": "o" * rng.randrange(50, 300)}]
        items.append({"role": "assistant", "content": f"a{i}"})
    trimming = HisttrimInputFilter(budget_tokens=1_500, policy=clear)
    agent = Agent(name="t")
    bounds = [i + 1 for i, item in enumerate(items) if "role" in item]  # pairs whole
    ends = [*bounds[30::2], *bounds[50:56], bounds[-40], *bounds[-39:]]
    resumed = 0
    for k, end in enumerate(ends):
        given = copy.deepcopy(items[:end]) if k % 7 == 6 else items[:end]
        sent = trimming(CallModelData(model_data=ModelInputData(input=list(given),
                                                                instructions="terse"),
                                      agent=agent, context=None)).input
        done = trimming._sent[_key(sent)]
        assert sent == from_units(given, done.units)
        resumed += done.tool_context is not None and not done.positions
    assert resumed > 10  # the clear's requests were made by resuming
