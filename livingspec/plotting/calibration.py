"""Chapter 11's figures: EST-1's estimate against real tokenizers, per message by content
class (boxes) and per whole session (estimate against real, log-log)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from livingspec.plotting import can_draw

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from livingspec.calibration.measure import MessageCount, SessionCount
    from livingspec.calibration.recorded import RecordedSession

# One colour per tokenizer, each box placed this far off its class's line.
_TOKENIZER_STYLES = ((-0.18, "o200k_base", "#0072B2"), (0.18, "cl100k_base", "#E69F00"))


def ratio_boxes(messages: Sequence[MessageCount], classes: Sequence[str], *,
                title: str) -> Figure | None:
    """Estimate / real per message, one line per content class, a box (quartiles, whiskers
    p5-p95) per tokenizer; 1 (exact) and 2/3 (what one RUN-2 retry absorbs) marked. None
    where matplotlib is missing (the cell prints the quantiles)."""
    if not can_draw():
        return None
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(8, 5))
    for offset, tokenizer, color in _TOKENIZER_STYLES:
        data = [[m.ratio(tokenizer) for m in messages if m.content_class == c] for c in classes]
        parts = axes.boxplot(data, positions=[i + offset for i in range(len(classes))],
                             widths=0.3, orientation="horizontal", whis=(5, 95),
                             patch_artist=True, flierprops={"markersize": 3})
        for box in parts["boxes"]:
            box.set_facecolor(color)
            box.set_alpha(0.6)
        axes.plot([], [], color=color, linewidth=6, alpha=0.6, label=tokenizer)
    axes.axvline(1, color="black", linewidth=1, label="estimate = real")
    axes.axvline(2 / 3, color="#D55E00", linestyle="--", linewidth=1,
                 label="2/3: what one RUN-2 retry absorbs")
    axes.set_yticks(range(len(classes)), list(classes))
    axes.invert_yaxis()
    axes.set_xlabel("estimate / real tokens per message (box: quartiles, whiskers: p5-p95)")
    axes.set_title(title, fontsize=10)
    axes.legend(fontsize=8, loc="lower right")
    axes.grid(True, axis="x", alpha=0.3)
    return figure


def sessions_estimate_vs_real(groups: Mapping[str, Sequence[SessionCount]],
                              colors: Mapping[str, str], *, title: str) -> Figure | None:
    """Each session's estimate against its real prompt tokens (o200k_base), log-log, one
    colour per group (`colors[group]`), with y = x (exact) and y = 2/3 x. None where
    matplotlib is missing (the cell prints the ratios)."""
    if not can_draw():
        return None
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6.5, 6))
    for name, group in groups.items():
        axes.scatter([s.real["o200k_base"] for s in group], [s.estimate for s in group],
                     s=14, color=colors[name], label=f"{name} ({len(group)})")
    top = max((max(s.real["o200k_base"], s.estimate) for g in groups.values() for s in g),
              default=100) * 1.1
    axes.plot([100, top], [100, top], color="gray", linewidth=1, label="y = x (exact)")
    axes.plot([100, top], [100 * 2 / 3, top * 2 / 3], color="#D55E00", linestyle="--",
              linewidth=1, label="y = 2/3 x")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("real prompt tokens (o200k_base)")
    axes.set_ylabel("EST-1 estimate (tokens)")
    axes.set_title(title, fontsize=10)
    axes.legend(fontsize=8)
    axes.grid(True, which="major", alpha=0.3)
    return figure


def recorded_vs_estimate(claude: Sequence[RecordedSession], mini: Sequence[RecordedSession],
                         *, title: str) -> Figure | None:
    """Every call of the long real sessions: left, what Claude Code's prompt grew by since
    the session's first call, estimated against recorded (the hidden system prompt and tool
    schemas cancel out); right, mini-swe-agent's whole prompt, estimated against Gemini's
    count. Log-log, y = x marked. None where matplotlib is missing (the cell prints ratios)."""
    if not can_draw():
        return None
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4.8))
    for s in claude:
        first = s.calls[0]
        grown = [(c.recorded - first.recorded, c.estimate - first.estimate)
                 for c in s.calls[1:] if c.recorded - first.recorded >= 100]
        left.scatter([g for g, _ in grown], [max(e, 1) for _, e in grown], s=3,
                     color="#0072B2", alpha=0.4)
    for s in mini:
        right.scatter([c.recorded for c in s.calls], [c.estimate for c in s.calls], s=3,
                      color="#009E73", alpha=0.4)
    for axes, label, name in (
        (left, "growth since the first call, recorded (Claude)",
         f"Claude Code: {len(claude)} sessions"),
        (right, "prompt tokens, recorded (Gemini 3 Pro)", f"mini-swe-agent: {len(mini)} runs"),
    ):
        axes.plot([100, 300_000], [100, 300_000], color="gray", linewidth=1, label="y = x")
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xlim(100, 300_000)
        axes.set_ylim(100, 300_000)
        axes.set_xlabel(label)
        axes.set_ylabel("EST-1 estimate of the same (tokens)")
        axes.set_title(name, fontsize=10)
        axes.grid(True, which="major", alpha=0.3)
        axes.legend(fontsize=8, loc="upper left")
    figure.suptitle(title, fontsize=10)
    return figure


def cached_share_figure(sessions: Sequence[RecordedSession], colors: Mapping[str, str], *,
                        title: str) -> Figure | None:
    """Each session's cached share of its prompts: the cache model's prediction against the
    provider's record, one colour per corpus (`colors[corpus]`), y = x marked. None where
    matplotlib is missing (the cell prints the shares)."""
    if not can_draw():
        return None
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(5.5, 5.2))
    for corpus, color in colors.items():
        group = [s for s in sessions if s.corpus == corpus]
        axes.scatter([s.recorded_share() for s in group], [s.predicted_share() for s in group],
                     s=18, color=color, label=f"{corpus} ({len(group)})")
    axes.plot([0.7, 1], [0.7, 1], color="gray", linewidth=1, label="y = x")
    axes.set_xlim(0.7, 1)
    axes.set_ylim(0.7, 1)
    axes.set_xlabel("cached share, recorded by the provider")
    axes.set_ylabel("cached share, predicted by the cache model")
    axes.set_title(title, fontsize=10)
    axes.legend(fontsize=8, loc="upper left")
    axes.grid(True, alpha=0.3)
    return figure
