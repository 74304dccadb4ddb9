"""Chapter 14's Review 7 figure: the real corpora replayed under the field's policies and the
cold-cache trim (CACHE-1..3), each request at its recorded time (or a scripted clock's), priced
with a prompt-cache model that knows its lifetime and measured for the needed context lost."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path

from histtrim.cli.review import load_sessions
from histtrim.policy import ColdCache, Policy
from histtrim.review.cache import ANTHROPIC, GEMINI, CacheModel
from histtrim.review.compare import cache_totals
from histtrim.review.loss import NO_LOSS
from histtrim.review.replay import ReplaySettings, SessionReplay, replay_session
from histtrim.review.sessions import ReviewSession, recorded_times, with_recorded_times
from livingspec.calibration.recorded import split
from livingspec.plotting import can_draw
from livingspec.plotting.tool_context import CostLoss, LossRow, _figure, field_policies, route

COLD_CACHE = "cold-cache"


def cold_cache_policy(lifetime: int) -> Policy:
    """The whole-turn 0.7 cut, made early, on a cold request over 3/4 of the budget
    (examples/policies/cold-cache.toml, with the cache model's `lifetime`)."""
    low = Fraction(7, 10)
    return Policy(
        token_trim_target=low, turn_trim_target=low,
        cold_cache=ColdCache(lifetime=lifetime, cut_from=Fraction(3, 4)),
    )


COLD_CLEAR = "cold-cache + held clear"


def lifetime_policies(window: int, lifetime: int) -> dict[str, Policy]:
    """Chapter 16's policies on a `window`-token route, then the cold-cache trim, alone and
    with chapter 16's held clear (a cold request also clears in one batch, CACHE-2)."""
    field = field_policies(window)
    cold = cold_cache_policy(lifetime)
    held = field["held clear 0.7"].tool_context
    return {**field, COLD_CACHE: cold,
            COLD_CLEAR: cold.model_copy(update={"tool_context": held})}


@dataclass(frozen=True)
class Group:
    """One corpus: its sessions, the route's window, the cache model and the clock."""

    sessions: Sequence[ReviewSession]
    window: int
    cache: CacheModel
    think_seconds: float = 5.0
    idle_seconds: float = 0.0
    recorded_times: bool = True


@dataclass(frozen=True)
class LifetimeRow:
    """One policy on one corpus: cost with and without the cache's lifetime."""

    group: str
    policy: str
    cost: float
    """Input cost with the cache's lifetime, relative to the whole-turn spec's."""
    warm_cost: float
    """The same requests priced as if the cache never expired, relative to the same."""
    lost: float
    trims: int
    cold_cuts: int


def real_groups(real: Path) -> dict[str, Group]:
    """Every session of the four real corpora (`examples/real`) on chapter 16's routes:
    Claude Code and mini-swe-agent at their recorded call times (call-times.json), the
    airline and SWE-agent runs, which record none, on a scripted clock (5 s between calls)."""
    times = recorded_times(real / "call-times.json")
    timed_cc, timed_mini = (
        with_recorded_times(load_sessions([str(real / folder)]), times)
        for folder in ("claude-code", "mini-swe-agent"))
    return {
        "Claude Code (64k)": Group(timed_cc, 64_000, ANTHROPIC),
        "mini-swe-agent (64k)": Group(timed_mini, 64_000, GEMINI),
        "tau-bench airline (4k)": Group(load_sessions([str(real / "tau-bench-airline")]),
                                        4_000, ANTHROPIC, recorded_times=False),
        "SWE-agent (16k)": Group(load_sessions([str(real / "swe-agent")]), 16_000, ANTHROPIC,
                                 recorded_times=False),
    }


def held_out(groups: Mapping[str, Group]) -> dict[str, Group]:
    """Each group's held-out third (every third session by sorted name, the calibration's
    `split`): what chapter 14 replays; bench/cache_lifetimes.py replays every session."""
    return {name: replace(group, sessions=split(group.sessions)[1])
            for name, group in groups.items()}


def settings(group: Group) -> ReplaySettings:
    """Chapter 16's route with the group's clock."""
    return route(group.window).model_copy(update={
        "think_seconds": group.think_seconds, "idle_seconds": group.idle_seconds,
        "recorded_times": group.recorded_times,
    })


def _warm(replays: Sequence[SessionReplay]) -> list[SessionReplay]:
    """The replays without their times: priced as if the cache never expired."""
    return [replace(r, prompt_times=()) for r in replays]


def lifetime_review(groups: Mapping[str, Group]) -> tuple[CostLoss, list[LifetimeRow]]:
    """Every group under `lifetime_policies`: the cost-against-loss figure (cost with the
    lifetime) and the rows with both costs."""
    plotted: list[LossRow] = []
    rows: list[LifetimeRow] = []
    for name, group in groups.items():
        route_ = settings(group)
        lifetime = group.cache.lifetime or 0
        base = warm_base = None
        for label, policy in lifetime_policies(group.window, lifetime).items():
            replays = [replay_session(s, policy, route_, label=label) for s in group.sessions]
            timed = cache_totals(replays, group.cache)
            warm = cache_totals(_warm(replays), group.cache)
            base = timed.cost if base is None else base
            warm_base = warm.cost if warm_base is None else warm_base
            loss = sum((r.loss for r in replays), NO_LOSS)
            plotted.append(LossRow(
                name, label, timed.calls, timed.tokens,
                round(float(timed.cost / base), 3), round(loss.share, 3),
            ))
            rows.append(LifetimeRow(
                name, label, round(float(timed.cost / base), 3),
                round(float(warm.cost / warm_base), 3), round(loss.share, 4),
                sum(r.trims for r in replays), sum(r.cold_cuts for r in replays),
            ))
    return CostLoss(_figure(plotted) if can_draw() else None, plotted), rows
