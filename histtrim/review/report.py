"""The figures of a review (per session, one bar per policy) and the self-contained HTML
report (`histtrim review --html`): the table, what each policy changes, and the figures as
PNG data URIs."""

from __future__ import annotations

import base64
import html
import io
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from histtrim._files import write_atomically
from histtrim.display.tables import Table, escape_controls, text_table
from histtrim.review.cache import CacheModel
from histtrim.review.compare import Review, review_lines, settings_lines
from histtrim.review.replay import ReplaySettings

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# Okabe-Ito (as the living spec's figures): distinguishable with colour-vision deficiencies.
_POLICY_COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9")

METRICS = {
    "token_trims": "token-budget trims (RUN-1)",
    "turn_limit_trims": "turn-limit trims",
    "dropped_turns": "turns dropped",
    "dropped_messages": "messages dropped",
    "reactive_retries": "reactive retries",
    "model_refusals": "requests refused by the model",
    "capacity_refusals": "requests refused by the capacity check",
    "failed_turns": "failed turns",
    "kept_turns": "turns kept at the end",
    "calls": "provider calls",
}
"""The per-session figures a review can plot, with their axis labels."""

MAX_SESSIONS_DRAWN = 40
"""A per-session figure draws at most this many sessions (those where the policies differ
most), so its size and memory stay bounded whatever the corpus; the table counts them all."""


def drawn_sessions(review: Review, metrics: Sequence[str], limit: int = MAX_SESSIONS_DRAWN
                   ) -> list[int]:
    """The sessions (indices, review order) a per-session figure of `metrics` draws: all of
    them up to `limit`, else the `limit` where the policies' values spread most."""
    count = len(review.replays)
    if count <= limit:
        return list(range(count))
    values = [per_session(review, m) for m in metrics]
    spread = [
        sum(max(v[label][i] for label in review.labels) - min(v[label][i] for label in
            review.labels) for v in values)
        for i in range(count)
    ]
    return sorted(sorted(range(count), key=lambda i: -spread[i])[:limit])


def per_session(review: Review, metric: str) -> dict[str, list[int]]:
    """One metric of every session, per policy label (sessions in review order)."""
    if metric not in METRICS:
        raise ValueError(f"metric: expected one of {sorted(METRICS)}, got {metric!r}")
    return {
        label: [int(getattr(r, metric)) for r in review.by_policy(label)]
        for label in review.labels
    }


def per_session_table(review: Review, metrics: Sequence[str]) -> Table:
    """The numbers behind `per_session_figure`: one row per session, one column per
    (metric, policy); an HTML table in Jupyter (`print_block`), aligned text elsewhere."""
    sessions = [r.session for r in review.by_policy(review.labels[0])]
    columns = [
        (m, label, per_session(review, m)[label]) for m in metrics for label in review.labels
    ]
    headers = ["session", *(f"{METRICS[m]} [{label}]" for m, label, _ in columns)]
    rows = [[name, *(values[i] for _, _, values in columns)] for i, name in enumerate(sessions)]
    return text_table(headers, rows)


def plain_label(text: str) -> str:
    """Text from sessions or policy files as matplotlib shows it literally: every `$` escaped,
    so no file name is ever parsed as mathtext (`$\\frac$` made the report fail), and every
    control character written as its escape (no font draws them)."""
    return escape_controls(text).replace("$", r"\$")


def per_session_figure(review: Review, metrics: Sequence[str], title: str) -> Figure:
    """One panel per metric: a group of bars per session, one bar per policy; beyond
    `MAX_SESSIONS_DRAWN` sessions, those where the policies differ most (the title says so)."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    shown = drawn_sessions(review, metrics)
    everyone = review.by_policy(review.labels[0])
    sessions = [everyone[i].session for i in shown]
    if len(shown) < len(everyone):
        title += (f"\n({len(shown)} of {len(everyone)} sessions: those where the policies"
                  " differ most)")
    figure = Figure(figsize=(max(6.0, 0.9 * len(sessions) + 2), 2.6 * len(metrics) + 0.6))
    axes_list = figure.subplots(len(metrics), 1, squeeze=False)[:, 0]
    width = 0.8 / len(review.labels)
    for axes, metric in zip(axes_list, metrics, strict=True):
        values = per_session(review, metric)
        for k, label in enumerate(review.labels):
            xs = [i + (k - (len(review.labels) - 1) / 2) * width for i in range(len(sessions))]
            bars = axes.bar(xs, [values[label][i] for i in shown], width=width,
                            label=plain_label(label),
                            color=_POLICY_COLORS[k % len(_POLICY_COLORS)])
            # Each bar's value on it: a policy whose values are all 0 still shows its zeros.
            axes.bar_label(bars, fontsize=7, padding=1)
        # Wrapped: stacked panels' labels never run into each other.
        axes.set_ylabel(textwrap.fill(METRICS[metric], 18), fontsize=9)
        axes.yaxis.set_major_locator(MaxNLocator(integer=True))
        top = max((values[label][i] for label in review.labels for i in shown), default=0)
        axes.set_ylim(0, max(1, top) * 1.18)  # counts: from 0, never a -0.06..0.06 axis
        names = [plain_label(name) for name in sessions]
        axes.set_xticks(range(len(sessions)), names, rotation=30, ha="right", fontsize=8)
    axes_list[-1].set_xlabel("session")
    figure.align_ylabels(axes_list)
    figure.suptitle(title)
    # One legend for every panel, under the title: never over a bar.
    handles, labels = axes_list[0].get_legend_handles_labels()
    inch = 1 / figure.get_figheight()
    extra = 0.25 * title.count("\n")  # a second title line pushes the legend down
    figure.legend(handles, labels, loc="upper center",
                  bbox_to_anchor=(0.5, 1 - (0.4 + extra) * inch),
                  ncol=len(labels), fontsize=8, frameon=False)
    figure.tight_layout(rect=(0, 0, 1, 1 - (0.65 + extra) * inch))
    return figure


def tokens_figure(review: Review) -> Figure:
    """The distribution of tokens per provider call (as the provider counts them), per policy."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 3.6))
    axes = figure.subplots()
    data = [[t for r in review.by_policy(label) for t in r.true_tokens] for label in review.labels]
    # Whiskers from minimum to maximum, no outlier points: bounded whatever the call count.
    axes.boxplot(data, tick_labels=[plain_label(label) for label in review.labels],
                 whis=(0, 100), showfliers=False)
    axes.set_xlabel("policy")
    axes.set_ylabel("tokens per provider call (true)")
    axes.set_title("Tokens sent per call")
    figure.tight_layout()
    return figure


def cost_context_figure(review: Review, models: Sequence[CacheModel]) -> Figure:
    """Input cost relative to no cache against the mean history sent per call (the context
    kept): one point per policy and cache model, a line joining each model's policies."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 4.2))
    axes = figure.subplots()
    markers = "osD^v"
    for model in models:
        summaries = review.summaries(model)
        xs = [s.history_tokens_mean for s in summaries]
        ys = [s.cache.relative_cost if s.cache is not None else 0.0 for s in summaries]
        (line,) = axes.plot(xs, ys, "-", linewidth=1, alpha=0.5)
        for k, (x, y, s) in enumerate(zip(xs, ys, summaries, strict=True)):
            axes.plot([x], [y], markers[k % len(markers)], color=line.get_color(),
                      label=plain_label(f"{model.name}: {s.label}"))
            axes.annotate(plain_label(s.label), (x, y), textcoords="offset points", xytext=(5, 4),
                          fontsize=8)
    axes.set_xlabel("history tokens sent per call, mean (context kept)")
    axes.set_ylabel("input cost relative to no cache")
    axes.margins(x=0.12, y=0.12)  # room for the labels at the edges
    axes.set_ylim(bottom=0)
    axes.legend(fontsize=8)
    axes.set_title("Prompt cache: cost against context kept")
    figure.tight_layout()
    return figure


def png_bytes(figure: Figure) -> bytes:
    """The figure as PNG (no metadata: the same figure gives the same bytes)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=96, metadata={"Software": None})
    return buffer.getvalue()


def png_data_uri(figure: Figure) -> str:
    """The figure as a PNG data URI, for a self-contained HTML page."""
    return "data:image/png;base64," + base64.b64encode(png_bytes(figure)).decode("ascii")


def _alt_bars(review: Review, metrics: Sequence[str]) -> str:
    shown = len(drawn_sessions(review, metrics))
    which = (f"{shown} sessions" if shown == len(review.replays) else
             f"the {shown} of {len(review.replays)} sessions where the policies differ most")
    return (f"Bar charts, one panel each for {', '.join(METRICS[m] for m in metrics)}: "
            f"one group of bars per session ({which}), one bar per policy "
            f"({', '.join(review.labels)}), each bar labelled with its count.")


def report_html(
    review: Review, settings: ReplaySettings, cache: CacheModel | None = None
) -> str:
    """A self-contained HTML page: settings, table, policy changes and the figures (with a
    cache model, its rows in the table and the cost-against-context figure). Its size is
    bounded whatever the corpus: the figures draw at most `MAX_SESSIONS_DRAWN` sessions."""
    trims = ["token_trims", "dropped_turns"]
    refusals = ["reactive_retries", "model_refusals", "capacity_refusals"]
    policies = ", ".join(review.labels)
    figures = [
        (per_session_figure(review, trims, "Trims and context lost, per session"),
         _alt_bars(review, trims)),
        (per_session_figure(review, refusals, "Retries and refusals, per session"),
         _alt_bars(review, refusals)),
        (tokens_figure(review),
         f"Box plots of the tokens per provider call as the provider counts them, one box "
         f"per policy ({policies})."),
    ]
    if cache is not None:
        figures.append((
            cost_context_figure(review, [cache]),
            f"Scatter plot: input cost relative to no cache ({cache.name}) against the mean "
            f"history tokens sent per call, one point per policy ({policies}).",
        ))
    images = "\n".join(
        f'<figure><img alt="{html.escape(escape_controls(alt))}" src="{png_data_uri(f)}">'
        "</figure>"
        for f, alt in figures
    )
    text = "\n".join(escape_controls(line) for line in [
        *settings_lines(settings, review.policies[0], cache), *review_lines(review, cache=cache)
    ])
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<title>histtrim design review</title><style>body{font-family:system-ui,sans-serif;"
        "margin:2em;max-width:70em}pre{background:#f6f8fa;padding:1em;white-space:pre-wrap;"
        "overflow-wrap:anywhere}img{max-width:100%}</style></head><body>\n"
        f"<h1>Design review: {len(review.replays)} sessions, {len(review.labels)} policies</h1>\n"
        f"<pre>{html.escape(text)}</pre>\n"
        f"{images}\n</body></html>\n"
    )


def write_report(
    path: str | Path, review: Review, settings: ReplaySettings, cache: CacheModel | None = None
) -> None:
    """Write the HTML report atomically (temp file, fsync, rename)."""
    target = Path(path)
    text = report_html(review, settings, cache)
    write_atomically(target, text.encode("utf-8"))
