"""histtrim inside a pydantic-ai agent, driven by pydantic-ai's own `FunctionModel` and
`TestModel`: whole-turn trim of each request (KEEP-1, RUN-1), the system prompt kept although it
lives inside the first request (TURN-5), turn limit (KEEP-2), breadcrumb (SEEN-1), event
(SEEN-2), overflow retry at 2/3 (RUN-2), pairing on every request (PAIR-1), TURN-6."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelContextWindowExceededError
from pydantic_ai.messages import (
    BinaryContent,
    DocumentUrl,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from histtrim import (
    BREADCRUMB,
    IMAGE_TOKENS,
    HistoryTrimmed,
    ProviderProfile,
    RuntimeProfile,
    TrimReason,
    estimate_history_tokens,
    index_turns,
    resolve_runtime,
    validate_tool_pairing,
)
from histtrim.integrations.pydantic_ai import (
    CRUMB,
    CRUMB_METADATA,
    HisttrimCapability,
    from_units,
    to_rows,
)
from histtrim.messages import ChatMessage
from histtrim.policy import SPEC

SYSTEM = "You are terse."


class Recorder:
    """A `FunctionModel` function: a tool call, then an answer; records every request."""

    def __init__(self, overflows: int = 0, tool_round: bool = True) -> None:
        self.seen: list[list[ModelMessage]] = []
        self.overflows = overflows
        self.tool_round = tool_round

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        if self.overflows:
            self.overflows -= 1
            raise ModelContextWindowExceededError("function:fake", "prompt is too long (fake)")
        last = messages[-1]
        if not self.tool_round or any(isinstance(p, ToolReturnPart) for p in last.parts):
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("get_weather", {"city": "R"},
                                                 tool_call_id="call_new")])


def session(turns: int) -> list[ModelMessage]:
    """`turns` finished turns with one tool round each; the system prompt in the first request."""
    messages: list[ModelMessage] = []
    for i in range(turns):
        prompt = UserPromptPart(f"question {i} " + "x" * 400)
        parts: list[Any] = [SystemPromptPart(SYSTEM), prompt] if i == 0 else [prompt]
        messages += [
            ModelRequest(parts=parts),
            ModelResponse(parts=[ToolCallPart("get_weather", {"city": "P"},
                                              tool_call_id=f"call_{i}")]),
            ModelRequest(parts=[ToolReturnPart("get_weather", "sunny " * 60,
                                               tool_call_id=f"call_{i}")]),
            ModelResponse(parts=[TextPart(f"answer {i}")]),
        ]
    return messages


def run(capability: HisttrimCapability, history: list[ModelMessage], model: Recorder,
        prompt: str = "and now?") -> Any:
    agent = Agent(FunctionModel(model), system_prompt=SYSTEM, capabilities=[capability])

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city} " * 20

    return agent.run_sync(prompt, message_history=history)


def rows(messages: list[ModelMessage]) -> Any:
    return to_rows(messages)[1]


def test_turn_5_the_system_prompt_inside_the_first_request_is_kept() -> None:
    """TURN-5, KEEP-1, SEEN-1, SEEN-2: the first request's user prompt is dropped, its
    SystemPromptPart is sent (the part object itself), then the breadcrumb request (pydantic-ai
    merges consecutive requests: the model gets one request with system, crumb, prompt)."""
    events: list[HistoryTrimmed] = []
    history = session(6)
    model = Recorder()
    result = run(HisttrimCapability(budget_tokens=700, on_trim=events.append), history, model)
    assert len(model.seen) == 2
    for sent in model.seen:
        first = sent[0].parts
        assert first[0] is history[0].parts[0] and first[1].content == BREADCRUMB
        assert isinstance(first[2], UserPromptPart) and first[2].content != BREADCRUMB
        assert estimate_history_tokens(rows(sent)) <= 700
        assert validate_tool_pairing(rows(sent)) == []
        stored = {id(m) for m in result.all_messages()}
        assert all(id(m) in stored for m in sent[1:])
    assert [e.reason for e in events] == [TrimReason.TOKEN_BUDGET] * 2
    assert result.all_messages()[: len(history)] == history  # the stored history is unchanged


def test_instructions_count_toward_the_budget() -> None:
    """`Agent(instructions=...)` is not a message part, but it is sent: the trim counts it."""
    instructions = "Answer in one sentence. " * 40
    model = Recorder(tool_round=False)
    agent = Agent(FunctionModel(model), instructions=instructions,
                  capabilities=[HisttrimCapability(budget_tokens=700)])
    agent.run_sync("and now?", message_history=session(6))
    sent = rows(model.seen[0])
    assert estimate_history_tokens([ChatMessage.system(instructions), *sent]) <= 700
    assert estimate_history_tokens(sent) + 200 < 700  # without them, more would fit


def test_a_naive_trim_loses_the_system_prompt() -> None:
    """What the capability prevents: keeping the newest messages drops the first request."""
    history = session(6)
    naive = history[-8:]
    assert not any(isinstance(p, SystemPromptPart) for m in naive for p in m.parts)


def test_turn_6_no_trim_sends_the_history_unchanged() -> None:
    events: list[HistoryTrimmed] = []
    history = session(2)
    model = Recorder(tool_round=False)
    run(HisttrimCapability(budget_tokens=100_000, on_trim=events.append), history, model)
    assert all(a is b for a, b in zip(model.seen[0], history, strict=False))
    assert len(model.seen[0]) == len(history) + 1 and events == []


def test_keep_2_turn_limit_from_the_runtime_profile() -> None:
    runtime = resolve_runtime(RuntimeProfile(max_history_messages=2, max_context_tokens=0),
                              ProviderProfile(model="m", context_window=128_000), None)
    events: list[HistoryTrimmed] = []
    model = Recorder(tool_round=False)
    run(HisttrimCapability(runtime, on_trim=events.append), session(5), model)
    prompts = [p.content[:10] for m in model.seen[0] for p in m.parts
               if isinstance(p, UserPromptPart) and p.content != BREADCRUMB]
    assert prompts == ["question 4", "and now?"]
    assert [(e.reason, e.kept_turns, e.budget) for e in events] == [
        (TrimReason.TURN_LIMIT, 2, 0)]


def test_run_2_overflow_retries_once_at_two_thirds() -> None:
    events: list[HistoryTrimmed] = []
    model = Recorder(overflows=1)
    result = run(HisttrimCapability(budget_tokens=0, on_trim=events.append), session(6), model)
    first, retry = model.seen[0], model.seen[1]
    target = SPEC.reactive_tokens(estimate_history_tokens(rows(first)))
    assert estimate_history_tokens(rows(retry)) <= target
    assert isinstance(retry[0].parts[0], SystemPromptPart)
    assert [(e.reason, e.budget) for e in events] == [(TrimReason.CONTEXT_OVERFLOW, target)]
    assert result.output == "done"
    assert all(validate_tool_pairing(rows(sent)) == [] for sent in model.seen)


def test_run_2_a_second_overflow_or_a_single_turn_is_raised() -> None:
    with pytest.raises(ModelContextWindowExceededError):
        run(HisttrimCapability(budget_tokens=0), session(6), Recorder(overflows=2))
    with pytest.raises(ModelContextWindowExceededError):
        run(HisttrimCapability(budget_tokens=0), [], Recorder(overflows=1))


def test_test_model_runs_with_the_capability() -> None:
    """pydantic-ai's TestModel calls every tool, then answers: the trimmed run completes."""
    events: list[HistoryTrimmed] = []
    agent = Agent(TestModel(), system_prompt=SYSTEM,
                  capabilities=[HisttrimCapability(budget_tokens=700, on_trim=events.append)])

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    result = agent.run_sync("and now?", message_history=session(6))
    assert result.output and events


def test_image_prompts_are_priced_as_images() -> None:
    """EST-2: an ImageUrl in the current prompt costs the image price."""
    history: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart(
        ["look", ImageUrl(url="https://example.com/a.png")])])]
    assert estimate_history_tokens(rows(history)) >= IMAGE_TOKENS


@st.composite
def histories(draw: st.DrawFn) -> list[ModelMessage]:
    messages: list[ModelMessage] = []
    system = draw(st.booleans())
    for t in range(draw(st.integers(0, 6))):
        prompt = UserPromptPart(draw(st.text(max_size=80)))
        parts: list[Any] = [SystemPromptPart("s"), prompt] if system and t == 0 else [prompt]
        messages.append(ModelRequest(parts=parts))
        if draw(st.booleans()):
            prompt.content = ["look", ImageUrl(url="https://example.com/a.png")]
        for r in range(draw(st.integers(0, 2))):
            ids = [f"c{t}_{r}_{k}" for k in range(draw(st.integers(1, 2)))]
            messages.append(ModelResponse(parts=[ToolCallPart("f", {"a": 1}, tool_call_id=i)
                                                 for i in ids]))
            returns: list[Any] = [ToolReturnPart("f", draw(st.text(max_size=60)), tool_call_id=i)
                                  for i in ids]
            if draw(st.booleans()):  # a retry prompt that answers no call joins its neighbour
                returns.append(RetryPromptPart("try again"))
            messages.append(ModelRequest(parts=returns))
        if draw(st.booleans()) and isinstance(messages[-1], ModelRequest) and t > 0:
            # The next question inside the request holding the tool returns: the turn
            # boundary falls inside one message.
            messages[-1] = ModelRequest(parts=[*messages[-1].parts,
                                               UserPromptPart(draw(st.text(max_size=20)))])
            continue
        messages.append(ModelResponse(parts=[TextPart(draw(st.text(max_size=40)))]))
    return messages


@pytest.mark.filterwarnings("ignore:`RetryPromptPart` is deprecated")
@given(histories(), st.integers(0, 300), st.sampled_from([None, 1, 2, 3]))
def test_round_trip_kept_messages_are_the_inputs_own(
    messages: list[ModelMessage], budget: int, max_turns: int | None
) -> None:
    """Rows and back without loss: every unit maps back to its message (the same object when
    all its parts are kept); a trim keeps the system prompt and a suffix of whole turns."""
    units, _ = to_rows(messages)
    back = from_units(messages, units)
    assert len(back) == len(messages) and all(a is b for a, b in zip(back, messages, strict=True))
    capability = HisttrimCapability(budget_tokens=budget, max_turns=max_turns)
    sent, done = capability.trim(messages)
    assert validate_tool_pairing(done.rows) == []
    assert done.rows == rows([m for m in sent])
    has_system = bool(messages) and isinstance(messages[0].parts[0], SystemPromptPart)
    if has_system:
        assert sent[0].parts[0] is messages[0].parts[0]
    tail = [p for m in sent if m.metadata != CRUMB_METADATA for p in m.parts
            if not isinstance(p, SystemPromptPart)]
    kept = [p for m in messages for p in m.parts][-len(tail):] if tail else []
    assert all(a is b for a, b in zip(tail, kept, strict=True))  # a suffix of whole turns
    assert (CRUMB in done.units) == done.trimmed
    if not done.trimmed:
        assert sent == messages  # TURN-6
    parts = [p for m in messages for p in m.parts]
    sent_parts = [p for m in sent if m.metadata != CRUMB_METADATA for p in m.parts]
    assert all(any(p is q for q in parts) for p in sent_parts)  # the history's own parts


def test_token_counter_prices_the_rows() -> None:
    events: list[HistoryTrimmed] = []

    def words(row: ChatMessage) -> int:
        return len(row.content.split())

    run(HisttrimCapability(budget_tokens=60, token_counter=words, on_trim=events.append),
        session(6), Recorder(tool_round=False))
    assert events and all(e.counter == "words" for e in events)


def test_a_document_is_one_attachment_not_the_repr_of_its_bytes() -> None:
    """Issue 30 item 5: a 1 MiB PDF as `BinaryContent` cost 752,597 tokens (the `repr` of
    its bytes); it is one attachment, priced as an image (decision "File parts"); so is a
    `DocumentUrl`."""
    pdf = BinaryContent(data=b"%PDF-1.7\n" + bytes(1 << 20), media_type="application/pdf")
    for part in (pdf, DocumentUrl(url="https://example.com/report.pdf")):
        history: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart(["read", part])])]
        assert estimate_history_tokens(rows(history)) == 1 + IMAGE_TOKENS + 4


def test_user_text_that_looks_like_a_marker_or_a_carrier_is_text() -> None:
    """Issue 30 item 6: typed `[IMAGE:/a]` was priced as an image and a prompt starting with
    `[Tool results]` opened no turn; pydantic-ai sends both as text."""
    typed = "[IMAGE:/a]" * 10
    for content in (typed, [typed]):
        history: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart(content)])]
        assert estimate_history_tokens(rows(history)) == -(-len(typed) // 4) + 4
    pasted = [*session(1), ModelRequest(parts=[UserPromptPart("[Tool results] pasted")])]
    assert index_turns(rows(pasted)).turn_count == 2


def test_a_cancelled_run_leaves_nothing_in_the_capability() -> None:
    """Issue 30 item 7: a run cancelled while its model request was in flight left its whole
    history in the shared capability (20 cancelled runs: 4 MB)."""
    capability = HisttrimCapability(budget_tokens=0)
    started = asyncio.Event()

    async def hang(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        started.set()
        await asyncio.Event().wait()
        raise AssertionError("never answered")

    agent = Agent(FunctionModel(hang), capabilities=[capability])

    async def go() -> None:
        for _ in range(3):
            started.clear()
            task = asyncio.create_task(agent.run("hi", message_history=session(2)))
            await started.wait()
            assert capability._sent  # the request in flight is remembered
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    asyncio.run(go())
    assert capability._sent == {} and capability._retry == {}


def test_ctx_the_capability_sends_the_policys_tool_context_and_keeps_the_history() -> None:
    """CTX-1, CTX-6, CTX-9 in pydantic-ai: a held clear and the reference's collapse edit each
    request from the messages alone; the run's messages are not edited (CTX-5), pairing
    holds, and between clears each request extends the last."""
    from histtrim.policy import Policy, ToolContext
    from histtrim.tool_context import exchange_summary

    history = session(5)
    full = sum(estimate_history_tokens([row]) for row in rows(history))
    held = Policy(tool_context=ToolContext(mode="clear", keep=1, trigger_tokens=full, hold=True))
    model = Recorder()
    result = run(HisttrimCapability(budget_tokens=100_000, policy=held), history, model)
    first, second = model.seen
    returns = [p for m in first for p in m.parts if isinstance(p, ToolReturnPart)]
    assert [p.content for p in returns[:4]] == ["[cleared]"] * 4
    assert returns[4].content == "sunny " * 60
    assert [p.tool_call_id for p in returns] == [f"call_{i}" for i in range(5)]
    assert validate_tool_pairing(rows(first)) == []
    assert second[: len(first)] == first
    assert all(p.content != "[cleared]" for m in result.all_messages() for p in m.parts
               if isinstance(p, ToolReturnPart))

    collapse = Policy(tool_context=ToolContext(mode="collapse", keep_turns=1))
    model = Recorder()
    run(HisttrimCapability(budget_tokens=100_000, policy=collapse), session(4), model)
    sent = model.seen[0]
    # pydantic-ai merges the summary response with the reply after it
    assert sent[1].parts == [TextPart(exchange_summary(1)), TextPart("answer 0")]
    assert validate_tool_pairing(rows(sent)) == []
