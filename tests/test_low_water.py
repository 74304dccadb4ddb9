"""Low-water marks (`Policy.token_trim_target`, `Policy.turn_trim_target`): once RUN-1's
budget or LIMIT-1..2's turn limit is exceeded, trim further than just under it. The spec's
value is 1 and changes nothing (KEEP-1, KEEP-2, SEEN-2, RUN-2 hold at any target)."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
from pydantic import ValidationError

from histtrim.agent.legacy import legacy_run
from histtrim.agent.providers import Overflow, ProviderReply, ScriptedProvider
from histtrim.agent.runtime import Agent
from histtrim.config import ProviderProfile, RuntimeProfile
from histtrim.estimate import estimate_history_tokens
from histtrim.messages import BREADCRUMB, ChatMessage
from histtrim.policy import SPEC, Policy, low_water_tokens, low_water_turns
from histtrim.route import ResolvedRuntime, resolve_runtime
from histtrim.trim import (
    trim_conversation_to_recent_turns,
    trim_to_recent_turn_count,
    trim_to_recent_turns,
)
from histtrim.turns import index_turns

ROOT = Path(__file__).resolve().parent.parent
POLICIES = ROOT / "examples" / "policies"


def turns(count: int, size: int = 96) -> list[ChatMessage]:
    """`count` turns of a user row and an answer, each row `size` bytes: 24 + 4 tokens."""
    rows = [ChatMessage.system("s" * 12)]
    for n in range(count):
        rows += [ChatMessage.user(f"{n:03d}" + "u" * (size - 3)), ChatMessage.assistant("a" * size)]
    return rows


# ------------------------------------------------------------------ the policy fields


def test_spec_targets_are_one_and_load_from_files() -> None:
    assert SPEC.token_trim_target == 1 and SPEC.turn_trim_target == 1
    assert Policy.load(POLICIES / "spec.toml") == SPEC
    seventy = Policy.load(POLICIES / "trim-to-70.toml")
    assert seventy.token_trim_target == Fraction(7, 10) == seventy.turn_trim_target
    assert seventy.changes() == {
        "token_trim_target": "1 -> 7/10", "turn_trim_target": "1 -> 7/10"
    }
    half = Policy.load(POLICIES / "trim-to-50.toml")
    assert (half.token_trim_target, half.turn_trim_target) == (Fraction(1, 2), Fraction(1, 2))
    assert Policy.loads('{"token_trim_target": "0.7"}', format="json").token_trim_target == (
        Fraction(7, 10)
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('token_trim_target = "0"', "greater than 0 and at most 1"),
        ('turn_trim_target = "3/2"', "greater than 0 and at most 1"),
        ('token_trim_target = "-1/2"', "greater than 0 and at most 1"),
        ("token_trim_target = 0.7", "a float is inexact"),
        ('token_trim_target = "1e-1"', "expected a fraction like '2/3' or '0.7'"),
        ('turn_trim_target = "seventy"', "expected a fraction like '2/3' or '0.7'"),
    ],
)
def test_bad_targets_name_the_field(text: str, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        Policy.loads(text, format="toml")
    first = caught.value.errors()[0]
    assert first["loc"][0] == text.split(" ")[0]
    assert message in first["msg"]


def test_ratio_text_is_bounded() -> None:
    """A huge exponent or a megabyte of digits is refused before any arithmetic (it used
    to be handed to `Fraction`, which builds the integer)."""
    for text in ("1e99999999", "1/" + "3" * 1_000_000, "0." + "1" * 100):
        with pytest.raises(ValidationError, match="expected a fraction like"):
            Policy(reactive_target=text)  # type: ignore[arg-type]


def test_low_water_arithmetic() -> None:
    assert low_water_tokens(1000, Fraction(1)) == 1000
    assert low_water_tokens(1000, Fraction(7, 10)) == 700
    assert low_water_tokens(999, Fraction(1, 2)) == 499  # rounded down
    assert low_water_turns(50, Fraction(1)) == 50
    assert low_water_turns(50, Fraction(7, 10)) == 35
    assert low_water_turns(7, Fraction(7, 10)) == 5  # ceil(4.9)
    assert low_water_turns(1, Fraction(1, 2)) == 1
    assert low_water_turns(0, Fraction(1, 2)) == 1  # max(1, ...): the newest turn stays
    with pytest.raises(ValueError, match="target: expected a Fraction with 0 < target <= 1"):
        low_water_tokens(10, Fraction(3, 2))


# ------------------------------------------------------------------ the trims


def test_token_trim_fits_the_low_water_mark_once_over_budget() -> None:
    """KEEP-1 with a target: 10 turns of 56 tokens and a 7-token system row (567 tokens)."""
    rows = turns(10)
    total = estimate_history_tokens(rows)
    assert total == 7 + 10 * 56
    spec = trim_to_recent_turns(rows, 500)
    assert (spec.dropped_turns, spec.tokens_after) == (2, 7 + 8 * 56)  # just under 500
    half = trim_to_recent_turns(rows, 500, target=Fraction(1, 2))
    assert (half.dropped_turns, half.tokens_after) == (6, 7 + 4 * 56)  # fits 250
    assert half.budget_tokens == 500 and not half.over_budget
    assert half.history[:1] + half.dropped + half.history[1:] == rows  # kept + dropped
    assert half.history[-2].content.startswith("009")  # the newest turns stay
    # the trigger is unchanged: under the budget nothing is dropped, whatever the target
    assert not trim_to_recent_turns(rows, total, target=Fraction(1, 2)).trimmed
    # the newest turn stays even when it alone is over the low-water mark
    tiny = trim_to_recent_turns(rows, 100, target=Fraction(1, 10))
    assert tiny.kept_turns == 1 and tiny.tokens_after == 63


def test_turn_count_trims_keep_the_ceiling_of_the_target() -> None:
    """KEEP-2 with a target: over 6 turns, keep max(1, ceil(6 x target))."""
    rows = turns(10)
    assert trim_to_recent_turn_count(rows, 6).kept_turns == 6
    result = trim_to_recent_turn_count(rows, 6, target=Fraction(1, 2))
    assert (result.kept_turns, result.dropped_turns) == (3, 7)
    assert trim_to_recent_turn_count(rows, 6, target=Fraction(7, 10)).kept_turns == 5
    assert trim_to_recent_turn_count(rows, 0, target=Fraction(1, 2)).kept_turns == 1
    assert not trim_to_recent_turn_count(rows, 10, target=Fraction(1, 2)).trimmed
    structured = trim_conversation_to_recent_turns(rows, 6, target=Fraction(1, 2))
    assert structured.kept_turns == 3 and structured.history[0] == rows[0]


# ------------------------------------------------------------------ the agent


def route(budget: int, **profile: object) -> ResolvedRuntime:
    return resolve_runtime(
        RuntimeProfile.model_validate({"max_context_tokens": budget, **profile}),
        ProviderProfile(model="m", context_window=100_000),
        "m",
    )


def run(policy: Policy, rt: ResolvedRuntime, count: int, script: list[object] | None = None
        ) -> Agent:
    steps = script if script is not None else [ProviderReply(text="a" * 96)] * count
    bot = Agent(ScriptedProvider(steps), rt, system_prompt="s" * 12, policy=policy)  # type: ignore[arg-type]
    for n in range(count):
        bot.turn(f"{n:03d}" + "u" * 93)
    return bot


def test_agent_token_trim_applies_the_target_and_says_so() -> None:
    """RUN-1 fires at the budget; the trim cuts to the low-water mark, re-inserts the
    breadcrumb (SEEN-1) and the event names the target (SEEN-2)."""
    low = Policy(token_trim_target=Fraction(1, 2))
    spec_bot, low_bot = run(SPEC, route(600), 20), run(low, route(600), 20)
    assert all("target" not in e.to_wire() for e in spec_bot.events)
    assert len(low_bot.events) < len(spec_bot.events)  # fewer, deeper trims
    for event in low_bot.events:
        assert event.target == "1/2" and event.to_wire()["target"] == "1/2"
        assert event.budget == 300 and event.tokens_after <= 300 < 600 < event.tokens_before
    assert low_bot.crumb_present and low_bot.history[0] == ChatMessage.user(BREADCRUMB)
    rows = low_bot.working_history()
    assert rows[-1].content == "a" * 96  # the newest turn stays
    assert index_turns(rows, crumb_present=True).turn_count >= 1


def test_agent_turn_limit_applies_the_target() -> None:
    """LIMIT-1..2 with a target: over 10 turns, keep ceil(10 x 7/10) = 7."""
    seventy = Policy(turn_trim_target=Fraction(7, 10))
    bot = run(seventy, route(0, max_history_messages=10), 11)
    (event,) = bot.events
    assert (event.reason, event.kept_turns, event.target) == ("turn_limit", 7, "7/10")
    spec = run(SPEC, route(0, max_history_messages=10), 11)
    (plain,) = spec.events
    assert plain.kept_turns == 10 and plain.target is None and "target" not in plain.to_json()


def test_reactive_trim_ignores_the_target() -> None:
    """RUN-2 is unchanged: an overflow trims to 2/3 of the estimate, whatever the target."""
    script: list[object] = [ProviderReply(text="a" * 96)] * 6 + [Overflow()] + [
        ProviderReply(text="a" * 96)
    ]
    low = Policy(token_trim_target=Fraction(1, 2))
    for policy in (SPEC, low):
        bot = run(policy, route(0), 7, script)
        (event,) = bot.events
        assert event.reason == "context_overflow" and event.target is None
        assert event.budget == event.tokens_before * 2 // 3


def test_legacy_loop_applies_the_turn_target() -> None:
    """SEEN-4's legacy path trims by the same turn limit, so by the same low-water mark."""
    rows = turns(10)
    for policy, kept in ((SPEC, 10), (Policy(turn_trim_target=Fraction(1, 2)), 5)):
        rt = route(0, max_history_messages=10).model_copy(update={"policy": policy})
        result = legacy_run(
            ScriptedProvider([ProviderReply(text="ok")]), rows, "next", runtime=rt
        )
        assert index_turns(result.history).turn_count == kept
