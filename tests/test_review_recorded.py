"""Recorded usage as the review's truth (`histtrim.review.recorded`): the line fitted to a
session's recorded calls, the window of a recorded model, and a replayed provider that counts
(and refuses, and reports) every request by that line."""

from __future__ import annotations

from fractions import Fraction

import pytest

from histtrim import ChatMessage
from histtrim.agent.providers import ContextOverflowError, ProviderReply, ScriptedProvider
from histtrim.config import ProviderProfile, RuntimeProfile
from histtrim.estimate import estimate_history_tokens
from histtrim.policy import SPEC
from histtrim.review.recorded import fit_usage, model_window
from histtrim.review.replay import ReplaySettings, replay_session
from histtrim.review.sessions import session_from_items


def test_the_line_through_exact_calls_is_found() -> None:
    calls = [(1000 + 2 * e, e) for e in (100, 400, 900, 2500)]
    usage = fit_usage(calls, "claude-sonnet-4-5")
    assert usage is not None
    assert (usage.hidden, usage.scale) == (1000, Fraction(2))
    assert (usage.recorded, usage.estimated) == (sum(r for r, _ in calls), 3900)


def test_a_line_below_the_origin_goes_through_it() -> None:
    usage = fit_usage([(90, 100), (400, 300)])  # slope 1.55 would cross at -65
    assert usage is not None and usage.hidden == 0
    assert usage.scale == Fraction(490, 400)


def test_one_call_or_none() -> None:
    one = fit_usage([(5000, 1000)])
    assert one is not None and (one.hidden, one.scale) == (4000, 1)
    assert fit_usage([]) is None and fit_usage([(0, 10)]) is None


@pytest.mark.parametrize(("model", "window"), [
    ("claude-sonnet-4-20250514", 200_000), ("claude-opus-4-5", 200_000),
    ("claude-3-5-sonnet-20241022", 200_000), ("aide-gpt-5", 400_000),
    ("gpt-5-codex", 400_000), ("gpt-4o-mini", 128_000), ("gpt-4.1", 1_047_576),
    ("o3", 200_000), ("openai/o4-mini", 200_000), ("gemini-2.5-pro", 1_048_576),
    ("gemini-3.1-pro-preview", 1_048_576), ("llama-3-70b", None), (None, None),
    ("x" * 300, None),
])
def test_the_window_of_a_recorded_model(model: str | None, window: int | None) -> None:
    assert model_window(model) == window


def test_the_provider_counts_refuses_and_reports_by_its_counter() -> None:
    rows = [ChatMessage.user("x" * 400)]
    estimate = estimate_history_tokens(rows)
    usage = fit_usage([(5000 + 3 * e, e) for e in (10, 500)])
    assert usage is not None
    counter = usage.counter()
    assert counter(rows, []) == 5000 + 3 * estimate
    reply = ScriptedProvider([ProviderReply(text="ok")], reports=counter,
                             counter=counter).complete(rows, [])
    assert reply.usage.prompt_tokens == 5000 + 3 * estimate
    tight = ScriptedProvider([ProviderReply(text="ok")], hidden_window=5000 + 3 * estimate - 1,
                             counter=counter)
    with pytest.raises(ContextOverflowError):
        tight.complete(rows, [])  # the estimate alone (104) fits; the provider's count not
    assert tight.requests[0].true_tokens == 5000 + 3 * estimate


def test_a_replay_counts_its_requests_with_the_recorded_line() -> None:
    items = [ChatMessage.user("a" * 2000), ChatMessage.assistant("b" * 400),
             ChatMessage.user("c" * 2000), ChatMessage.assistant("d")]
    session = session_from_items("s", items)
    settings = ReplaySettings(profile=RuntimeProfile(max_context_tokens=100_000),
                              provider=ProviderProfile(context_window=200_000),
                              true_window=200_000)
    plain = replay_session(session, SPEC, settings)
    usage = fit_usage([(20_000 + 2 * e, e) for e in (100, 1000)])
    assert usage is not None
    recorded = replay_session(session.model_copy(update={"recorded": usage}), SPEC, settings)
    assert recorded.recorded == usage
    assert list(recorded.true_tokens) == [20_000 + 2 * t for t in plain.history_tokens]
