"""ScriptedProvider: replays its script, overflows on demand, records every request (PAIR-4)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from histtrim import (
    ChatMessage,
    ContextOverflowError,
    Provider,
    ProviderReply,
    ToolCall,
    estimate_history_tokens,
)
from histtrim.agent.providers import (
    Overflow,
    ScriptedProvider,
    ScriptExhaustedError,
    Usage,
    estimated_input,
)
from histtrim.estimate import ToolSchema, estimate_tool_schemas
from histtrim.policy import SPEC

SCHEMA = ToolSchema(name="grep", description="Search files.", parameters={"type": "object"})


def _request(text: str = "hello") -> list[ChatMessage]:
    return [ChatMessage.system("Be brief."), ChatMessage.user(text)]


def test_replays_replies_in_order_and_records_requests() -> None:
    call = ToolCall(id="c1", name="grep", arguments={"pattern": "x"})
    provider = ScriptedProvider([ProviderReply(tool_calls=(call,)), ProviderReply(text="done")])
    first = provider.complete(_request("a"), [SCHEMA])
    second = provider.complete(_request("b"), [])
    assert first.tool_calls == (call,) and first.text is None
    assert second.text == "done" and second.tool_calls == ()
    assert [r.messages[-1].content for r in provider.requests] == ["a", "b"]
    assert [r.tool_schemas for r in provider.requests] == [(SCHEMA,), ()]
    assert [r.outcome for r in provider.requests] == ["reply", "reply"]
    assert provider.remaining == 0


def test_reports_usage_from_the_request_unless_the_script_states_it() -> None:
    """USAGE-5's source in tests: a provider counting its input; without `reports`, none."""
    stated = Usage(prompt_tokens=7, completion_tokens=3)
    script = [ProviderReply(text="abcdefgh"), ProviderReply(usage=stated)]
    assert ScriptedProvider(script).complete(_request(), []).usage == Usage()
    provider = ScriptedProvider(script, reports=estimated_input(SPEC))
    reply = provider.complete(_request(), [SCHEMA])
    expected_prompt = estimate_history_tokens(_request()) + estimate_tool_schemas([SCHEMA])
    assert reply.usage == Usage(prompt_tokens=expected_prompt, completion_tokens=2)
    assert provider.requests[0].estimated_tokens == expected_prompt
    assert provider.complete(_request(), []).usage == stated


def test_overflow_on_call_n_then_continues_with_the_script() -> None:
    """PAIR-4: the provider's own context enforcement shows up as ContextOverflowError."""
    provider = ScriptedProvider([ProviderReply(text="one"), Overflow(), ProviderReply(text="two")])
    assert provider.complete(_request(), []).text == "one"
    with pytest.raises(ContextOverflowError, match="context window exceeded") as info:
        provider.complete(_request(), [])
    assert info.value.request_tokens == estimate_history_tokens(_request())
    assert provider.complete(_request(), []).text == "two"
    assert [r.outcome for r in provider.requests] == ["reply", "overflow", "reply"]


def test_hidden_window_overflows_without_consuming_a_step() -> None:
    small = _request("hi")
    big = _request("x" * 400)
    window = estimate_history_tokens(small)
    provider = ScriptedProvider([ProviderReply(text="ok")], hidden_window=window)
    with pytest.raises(ContextOverflowError) as info:
        provider.complete(big, [])
    assert info.value.request_tokens == estimate_history_tokens(big)
    assert provider.remaining == 1
    assert provider.complete(small, []).text == "ok"
    assert [r.outcome for r in provider.requests] == ["overflow", "reply"]


def test_hidden_window_counts_tool_schemas() -> None:
    rows = _request()
    provider = ScriptedProvider(
        [ProviderReply(text="ok")], hidden_window=estimate_history_tokens(rows)
    )
    with pytest.raises(ContextOverflowError):
        provider.complete(rows, [SCHEMA])
    assert provider.complete(rows, []).text == "ok"


def test_exhausted_script_raises_and_is_recorded() -> None:
    provider = ScriptedProvider()
    with pytest.raises(ScriptExhaustedError, match="after 0 calls"):
        provider.complete(_request(), [])
    assert [r.outcome for r in provider.requests] == ["exhausted"]
    provider.extend([ProviderReply(text="late")])
    assert provider.complete(_request(), []).text == "late"


def test_bad_hidden_window_is_rejected() -> None:
    with pytest.raises(ValueError, match="hidden_window"):
        ScriptedProvider(hidden_window=-1)


def test_reply_validation_names_the_field() -> None:
    with pytest.raises(ValueError, match="text"):
        ProviderReply(text=3)  # type: ignore[arg-type]


def test_satisfies_the_provider_protocol() -> None:
    provider: Provider = ScriptedProvider([ProviderReply(text="ok")])
    assert provider.complete(_request(), []).text == "ok"


@given(st.lists(st.text(max_size=30), min_size=1, max_size=6))
def test_records_a_copy_of_what_it_received(texts: list[str]) -> None:
    rows = [ChatMessage.user(t) for t in texts]
    snapshot = list(rows)
    provider = ScriptedProvider([ProviderReply(text="ok")])
    provider.complete(rows, [])
    rows.append(ChatMessage.assistant("later"))
    assert list(provider.requests[0].messages) == snapshot
