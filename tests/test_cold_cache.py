"""CACHE-1..3: a trim that knows when the prompt cache is cold. The Agent is given a clock (a
list of times here: every test runs on a given clock); a request more than the policy's
`cold_cache.lifetime` after the previous one finds the cache cold (CACHE-1), and if its
history is over `cut_from` of the budget it cuts to the low-water mark now (CACHE-2); the
event says so (CACHE-3). Off by default: the spec's agent never reads the clock's times."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest
from pydantic import ValidationError

from histtrim.agent.providers import ProviderReply, ScriptedProvider, estimated_input
from histtrim.agent.runtime import Agent
from histtrim.config import ProviderProfile, RuntimeProfile
from histtrim.events import HistoryTrimmed, TrimReason
from histtrim.messages import ChatMessage, ToolCall
from histtrim.policy import SPEC, ColdCache, Policy, ToolContext
from histtrim.review.cache import ANTHROPIC
from histtrim.review.compare import cache_totals
from histtrim.review.replay import ReplaySettings, replay_session, step_times
from histtrim.review.sessions import ReviewSession, recorded_times, session_from_items
from histtrim.route import ResolvedRuntime, resolve_runtime
from livingspec.synth import generate_long

COLD = Policy(token_trim_target=Fraction(1, 2), cold_cache=ColdCache(lifetime=300))


def route(budget: int) -> ResolvedRuntime:
    return resolve_runtime(
        RuntimeProfile(max_context_tokens=budget, max_history_messages=1000),
        ProviderProfile(model="m", context_window=100_000),
        "m",
    )


def clock(times: list[float]) -> Callable[[], float]:
    """A given clock: each call returns the next time."""
    ticks = iter(times)
    return lambda: next(ticks)


GAPS = [0.0, 10, 20, 30, 40, 50, 460, 470, 480, 490]
"""The 7th request comes 410 s after the 6th: past Anthropic's 5 minutes."""


def run(policy: Policy, times: list[float] | None, count: int = 10) -> Agent:
    bot = Agent(
        ScriptedProvider([ProviderReply(text="a" * 96)] * count), route(400),
        system_prompt="s" * 12, policy=policy,
        clock=None if times is None else clock(times),
    )
    for n in range(count):
        bot.turn(f"{n:03d}" + "u" * 93)
    return bot


def test_is_cold_reads_the_given_times() -> None:
    rule = ColdCache(lifetime=300)
    assert rule.is_cold(1000.0, 600.0) and not rule.is_cold(900.0, 600.0)
    assert not rule.is_cold(None, 600.0) and not rule.is_cold(1000.0, None)
    assert not ColdCache().is_cold(10_000.0, 0.0)  # off: lifetime 0
    assert rule.cut_tokens(1000) == 900
    with pytest.raises(ValidationError, match="cut_from"):
        ColdCache(cut_from="0")


def test_a_cold_request_over_cut_from_cuts_to_the_low_water_mark() -> None:
    # each turn adds 56 tokens: the history passes 360 (9/10 of the 400 budget) at turn 7;
    # warm (10 s apart) the agent waits for the budget (turn 8), cold (the 7th request comes
    # 410 s after the 6th) it cuts then, down to the 200-token low-water mark
    warm = run(COLD, [10.0 * n for n in range(10)])
    cold = run(COLD, GAPS)
    assert all(e.cold_cache is None for e in warm.events)
    first = cold.events[0]
    assert first.cold_cache is True and first.reason is TrimReason.TOKEN_BUDGET
    assert 360 < first.tokens_before <= 400 and first.tokens_after <= 200
    assert first.target == "1/2"
    assert cold.calls[6].history_tokens <= 200  # the cold request was sent cut
    assert warm.events[0].tokens_before > 400  # warm: the budget forced it, a turn later


def test_unset_the_event_reads_as_before() -> None:
    # the spec's agent, and a policy with a lifetime but no clock: no cold-cache cut, and the
    # event's JSON has no new key
    for bot in (run(SPEC, GAPS), run(COLD, None)):
        assert bot.events and all(e.cold_cache is None for e in bot.events)
        assert all("cold_cache" not in json.loads(e.to_json()) for e in bot.events)
    event = HistoryTrimmed(reason=TrimReason.TOKEN_BUDGET, dropped_messages=2, kept_turns=1,
                           tokens_before=10, tokens_after=5, budget=8, cold_cache=True)
    assert json.loads(event.to_json())["cold_cache"] is True


def test_a_failed_turn_leaves_the_last_request_time_as_it_was() -> None:
    bot = Agent(ScriptedProvider([ProviderReply(text="a")]), route(1000), policy=COLD,
                clock=clock([5.0, 999.0]))
    bot.turn("one")
    with pytest.raises(Exception, match="script"):
        bot.turn("two")  # the script is exhausted: rolled back
    assert bot._last_request == 5.0


# ----------------------------------------------------------- the review's clock and times

def _session(turns: int = 3) -> ReviewSession:
    return session_from_items("long", generate_long(turns, 60))


def test_the_replay_clock_times_every_billed_request() -> None:
    session = _session()
    steps = [len(t.steps) for t in session.turns]
    clocked = ReplaySettings(record_prompts=True, think_seconds=5, idle_seconds=600)
    times = step_times(session, clocked)
    assert times is not None and len(times) == sum(steps)
    # 5 s between a turn's calls, 600 s before each turn after the first
    assert times[: steps[0]] == [5.0 * j for j in range(steps[0])]
    assert times[steps[0]] == times[steps[0] - 1] + 600
    replay = replay_session(session, SPEC, clocked)
    assert len(replay.prompt_times) == len(replay.prompts)
    # priced with the lifetime: each turn's first call finds the cache cold (600 s > 300 s)
    warm = cache_totals([replace(replay, prompt_times=())], ANTHROPIC)
    cold = cache_totals([replay], ANTHROPIC)
    assert cold.cached < warm.cached and cold.cost > warm.cost
    # without a clock: no times, as before
    assert replay_session(session, SPEC, ReplaySettings(record_prompts=True)).prompt_times == ()
    assert step_times(session, ReplaySettings()) is None


def test_recorded_times_come_first_then_the_think_time() -> None:
    session = _session(2)
    count = sum(len(t.steps) for t in session.turns)
    recorded = [1000.0 + 30 * k for k in range(count)]
    recorded[1] = None  # unknown: 5 s after the one before
    timed = session.with_times(recorded)
    settings = ReplaySettings(think_seconds=5, recorded_times=True)
    assert step_times(timed, settings)[:3] == [0.0, 5.0, 60.0]
    # fewer times than calls: the session is left as it was
    assert session.with_times(recorded[:-1]).times == ()


def test_the_cold_cache_policy_replays_with_the_clock() -> None:
    session = _session(6)
    budget = 6000
    settings = ReplaySettings(
        profile=RuntimeProfile(max_context_tokens=budget, max_history_messages=1000),
        provider=ProviderProfile(model="m", context_window=100_000),
        record_prompts=True, think_seconds=5, idle_seconds=900,
    )
    low = Fraction(7, 10)
    held = Policy(token_trim_target=low)
    cold = held.model_copy(update={"cold_cache": ColdCache(lifetime=300, cut_from=low)})
    a, b = (replay_session(session, p, settings) for p in (held, cold))
    assert b.trace != a.trace  # the cold policy cut at a cold turn start
    assert cache_totals([b], ANTHROPIC).cost < cache_totals([a], ANTHROPIC).cost


def test_a_times_file_is_read_with_its_errors_named(tmp_path: Path) -> None:
    good = tmp_path / "times.json"
    good.write_text('{"c": {"s": [[10, 0], null, [12.5, 1]]}}')
    assert recorded_times(good) == {"s": [10.0, None, 12.5]}
    for text, message in (
        ("[]", "expected an object of corpora"),
        ('{"c": {"s": [["x", 0]]}}', "c.s: expected"),
        ('{"c": 1}', "c: expected an object"),
        ("{", "not JSON"),
    ):
        good.write_text(text)
        with pytest.raises(ValueError, match=message):
            recorded_times(good)


def test_a_cold_cut_may_go_deeper_than_a_warm_one() -> None:
    deep = COLD.model_copy(update={
        "cold_cache": ColdCache(lifetime=300, target=Fraction(1, 4))})
    cut = run(deep, GAPS).events[0]
    assert cut.cold_cache is True and cut.tokens_after <= 100 and cut.target == "1/4"
    with pytest.raises(ValidationError, match="target"):
        ColdCache(target="5/4")


def test_the_shipped_policy_file_is_the_chapters_policy() -> None:
    from livingspec.plotting.cache_lifetimes import cold_cache_policy

    shipped = Policy.load(Path(__file__).resolve().parent.parent / "examples" / "policies"
                          / "cold-cache.toml")
    assert shipped == cold_cache_policy(300)
    assert shipped.changes()["cold_cache.lifetime"] == "0 -> 300"
    with_clear = Policy.load(shipped_dir() / "cold-cache-clear.toml")
    held = Policy.load(shipped_dir() / "clear-anthropic-held.toml")
    assert with_clear == shipped.model_copy(update={"tool_context": held.tool_context})


def shipped_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "examples" / "policies"


def test_the_review_command_reads_the_recorded_times(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from histtrim.cli import main

    real = Path(__file__).resolve().parent.parent / "examples" / "real"
    session = str(real / "mini-swe-agent" / "django__django-15957.jsonl")
    common = ["review", session, "--cache", "gemini", "--workers", "1", "--budget", "20000",
              "--window", "64000"]
    bad = tmp_path / "times.json"
    bad.write_text("[]")
    assert main([*common, "--times", str(bad)]) != 0
    assert main([*common, "--times", str(real / "call-times.json")]) == 0
    out = capsys.readouterr().out
    assert "gemini, 3600 s lifetime" in out
    assert "clock            the recorded times, else 5 s between calls" in out
    assert main([*common, "--think-seconds", "-1"]) != 0


def test_a_bad_clock_or_bad_times_are_one_line_errors() -> None:
    for value in ("soon", float("nan"), True):
        bot = Agent(ScriptedProvider([ProviderReply(text="a")]), route(400), policy=COLD,
                    clock=lambda value=value: value)  # type: ignore[misc]
        with pytest.raises(ValueError, match="clock: expected a finite number of seconds"):
            bot.turn("one")
        assert bot.turn_id == 0 and not bot.history  # rolled back
    with pytest.raises(TypeError, match="clock: expected a callable"):
        Agent(ScriptedProvider([]), route(400), clock=5)  # type: ignore[arg-type]
    session = _session(1)
    steps = sum(len(t.steps) for t in session.turns)
    with pytest.raises(ValidationError, match="finite"):
        session.with_times([float("inf")] * steps)


def clear_run(times: list[float] | None, turns: int = 14) -> list[tuple[ChatMessage, ...]]:
    """An agent with a held clear (CTX-9: trigger 2,000, down to half) and the cold cache
    rule; each turn calls a tool returning 600 characters. The requests it sent."""
    policy = Policy(
        token_trim_target=Fraction(7, 10),
        cold_cache=ColdCache(lifetime=300, cut_from=Fraction(3, 4)),
        tool_context=ToolContext(mode="clear", keep=1, trigger_tokens=2_000, hold=True,
                                 clear_to=Fraction(1, 2), clear_at_least=0),
    )
    runtime = resolve_runtime(
        RuntimeProfile(max_context_tokens=100_000, max_history_messages=1000),
        ProviderProfile(model="m", context_window=200_000), None, policy=policy,
    )
    agent = Agent(ScriptedProvider(), runtime, system_prompt="sys",
                  tools=[lambda: "x" * 600], policy=policy,
                  clock=None if times is None else clock(times))
    sent: list[tuple[ChatMessage, ...]] = []
    for n in range(turns):
        agent.provider = provider = ScriptedProvider([
            ProviderReply(tool_calls=(ToolCall(id=f"k{n}", name="<lambda>"),)),
            ProviderReply(text=f"done {n}"),
        ])
        agent.turn(f"task {n}")
        sent += [request.messages for request in provider.requests]
    assert not agent.events  # no whole turn is dropped: only the clear acts
    return sent


def cleared(request: tuple[ChatMessage, ...]) -> int:
    return sum(row.role == "tool" and "[cleared]" in row.content for row in request)


def test_a_cold_request_clears_old_tool_results_in_one_batch_and_holds_it() -> None:
    # two requests a turn, 10 s apart; from turn 7 on the user comes back after 1,000 s
    warm_times = [10.0 * n for n in range(28)]
    idle = [10.0 * n + 1000.0 * max(0, n // 2 - 6) for n in range(28)]
    warm, cold = clear_run(warm_times), clear_run(idle)
    assert warm == clear_run(None)  # warm, the clock changes nothing
    first_warm = next(k for k, r in enumerate(warm) if cleared(r))
    first_cold = next(k for k, r in enumerate(cold) if cleared(r))
    # the cold request (a turn's first, after the idle gap) clears before the trigger forces
    # it, several results in one batch, down to half the trigger
    assert first_cold < first_warm and first_cold % 2 == 0 and first_cold >= 14
    assert cleared(cold[first_cold]) >= 2
    assert estimated_input()(cold[first_cold], ()) <= 1_000
    # held: the next request extends it row for row (a byte-stable prefix)
    after = cold[first_cold + 1]
    assert after[: len(cold[first_cold])] == cold[first_cold]


VIBE = Path(__file__).resolve().parent / "data" / "agent_sessions" / "claude-code" / (
    "vibe-claude-code.jsonl")


def test_trim_reads_an_agents_recorded_times_and_now(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the Claude Code fixture's 19th call came 376 s after the 18th: its request (the rows
    # before record 38) found the cache cold; `--now` is when the next request is made,
    # by default the last call's time (warm)
    from datetime import UTC, datetime

    from histtrim.cli import main
    from histtrim.cli.agentfiles import cold_requests, read_agent_file

    agent = read_agent_file(str(VIBE), VIBE.read_bytes(), None)
    assert agent is not None
    assert cold_requests(agent, ColdCache(lifetime=300), None) == (frozenset({38}), False)
    assert cold_requests(agent, ColdCache(lifetime=400), None) == (frozenset(), False)
    last = agent.part.calls[-1].timestamp
    assert last is not None
    assert cold_requests(agent, ColdCache(lifetime=300), last + 301) == (
        frozenset({38}), True)

    policy = str(shipped_dir() / "cold-cache.toml")
    common = ["trim", str(VIBE), "--policy", policy, "--budget", "50000", "--ignore-usage",
              "-o", str(tmp_path / "out.json")]
    assert main(common) == 0  # warm: 42,208 tokens fit the budget, nothing is cut
    assert "nothing to trim" in capsys.readouterr().err
    later = datetime.fromtimestamp(last + 600, UTC).isoformat()
    assert main([*common, "--now", later]) == 0  # cold: over 3/4 of the budget, cut now
    err = capsys.readouterr().err
    event = json.loads(err.splitlines()[0])
    assert event["cold_cache"] is True and event["target"] == "7/10"
    assert event["tokens_after"] <= 35_000 < event["tokens_before"]
    assert main([*common, "--now", "tomorrow"]) != 0
    assert "argument --now: expected an ISO 8601 time" in capsys.readouterr().err
