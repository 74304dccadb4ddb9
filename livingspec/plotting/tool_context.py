"""Chapter 16's cost-against-loss figure: recorded sessions replayed under the field's ways of
keeping tool context (CTX-1..9) and two whole-turn policies, each priced with a prompt-cache
model that knows its lifetime (each request at its recorded time, or 5 seconds after the one
before) and measured for the needed context lost (`histtrim.review.loss`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING

from histtrim.config import ProviderProfile, RuntimeProfile
from histtrim.policy import Policy, ToolContext
from histtrim.review.cache import ANTHROPIC, CacheModel
from histtrim.review.compare import cache_totals
from histtrim.review.loss import NO_LOSS
from histtrim.review.replay import ReplaySettings, replay_session
from histtrim.review.sessions import ReviewSession, recorded_times, with_recorded_times
from livingspec.plotting import can_draw
from livingspec.plotting._base import _PALETTE, _Plot, panel_width

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def field_policies(window: int) -> dict[str, Policy]:
    """The issue's table as histtrim policies on a route of `window` tokens. The published
    100,000-token triggers are half of a 200,000-token window: here half of `window`. Anthropic's
    `clear_tool_uses` and LangChain's `ClearToolUsesEdit` share their defaults (keep 3,
    trigger): one policy stands for both."""
    trigger = window // 2
    clear = {"mode": "clear", "keep": 3, "trigger_tokens": trigger}
    low = Fraction(7, 10)
    return {
        "whole-turn spec": Policy(),
        "whole-turn 0.7": Policy(token_trim_target=low, turn_trim_target=low),
        "zeroclaw collapse": Policy(tool_context=ToolContext(mode="collapse", keep_turns=2)),
        "Anthropic/LangChain clear": Policy(tool_context=ToolContext.model_validate(clear)),
        "held clear 0.7": Policy(tool_context=ToolContext.model_validate({
            **clear, "hold": True, "clear_to": low, "clear_at_least": trigger // 16,
        })),
        "OpenAI ToolOutputTrimmer": Policy(tool_context=ToolContext(
            mode="clear", keep=2, keep_unit="turns", trigger_tokens=0, min_chars=500,
            preview_chars=200, placeholder="[tool output trimmed]",
        )),
        "pydantic-ai ClearToolResults": Policy(tool_context=ToolContext(
            mode="clear", keep=3, trigger_tokens=0, placeholder="[tool result cleared]",
        )),
    }


def route(window: int) -> ReplaySettings:
    """The replay route: a `window`-token model, a budget of three quarters of it, tool loops
    as long as the recordings, the loss measured and every request kept for the cache, each
    at its recorded time where the session has one, else 5 seconds after the one before (the
    cache model's lifetime, chapter 14's Review 7)."""
    return ReplaySettings(
        profile=RuntimeProfile(max_context_tokens=window * 3 // 4, max_tool_iterations=1000),
        provider=ProviderProfile(model="replay-model", context_window=window),
        measure_loss=True,
        record_prompts=True,
        think_seconds=5,
        recorded_times=True,
    )


CALL_TIMES = Path(__file__).resolve().parents[2] / "examples" / "real" / "call-times.json"
"""The real sessions' recorded call times (tools/call_times.py)."""


def timed(sessions: Sequence[ReviewSession]) -> list[ReviewSession]:
    """The sessions with their recorded call times, where call-times.json has them."""
    if not CALL_TIMES.is_file():
        return list(sessions)
    return with_recorded_times(sessions, recorded_times(CALL_TIMES))


@dataclass(frozen=True)
class LossRow:
    """One policy on one group of sessions."""

    group: str
    policy: str
    calls: int
    tokens_sent: int
    cost: float
    """Input cost with the cache model, relative to the whole-turn spec on the same sessions."""
    lost: float
    """Needed context lost: share of the next replies' distinctive tokens."""


@dataclass(frozen=True)
class CostLoss(_Plot[LossRow]):
    """Cost against loss, one panel per group of sessions."""

    columns = ("group", "policy", "calls", "tokens sent", "cost vs spec", "context lost")


def cost_and_loss(
    groups: Mapping[str, tuple[Sequence[ReviewSession], int]],
    *,
    cache: CacheModel = ANTHROPIC,
) -> CostLoss:
    """Replay every group (its sessions, its window) under `field_policies` of its window."""
    rows: list[LossRow] = []
    for group, (sessions, window) in groups.items():
        settings = route(window)
        base = None
        for label, policy in field_policies(window).items():
            replays = [replay_session(s, policy, settings, label=label)
                       for s in timed(sessions)]
            totals = cache_totals(replays, cache)
            base = totals.cost if base is None else base
            loss = sum((r.loss for r in replays), NO_LOSS)
            rows.append(LossRow(
                group, label, totals.calls, totals.tokens,
                round(float(totals.cost / base), 3), round(loss.share, 3),
            ))
    return CostLoss(_figure(rows) if can_draw() else None, rows)


_MARKERS = "osD^vP*X"


def _figure(rows: Sequence[LossRow]) -> Figure:
    import matplotlib.pyplot as plt

    groups = list(dict.fromkeys(r.group for r in rows))
    policies = list(dict.fromkeys(r.policy for r in rows))
    figure, axes = plt.subplots(
        1, len(groups), figsize=(panel_width(len(groups), 3.6), 4.4), squeeze=False,
        sharey=True,
    )
    for panel, group in zip(axes[0], groups, strict=True):
        for n, policy in enumerate(policies):
            point = next(r for r in rows if r.group == group and r.policy == policy)
            panel.scatter(
                point.cost, 100 * point.lost, s=46, marker=_MARKERS[n % len(_MARKERS)],
                color=_PALETTE[n % len(_PALETTE)], label=policy, zorder=3,
            )
        panel.set_title(group, fontsize=10)
        panel.set_xlabel("input cost vs whole-turn spec")
        panel.grid(alpha=0.3)
    axes[0][0].set_ylabel("needed context lost (%)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=3, fontsize=9, frameon=False)
    figure.tight_layout(rect=(0, 0.22, 1, 1))
    return figure
