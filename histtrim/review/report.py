"""The figures of a review (per session, one bar per policy) and the self-contained HTML
report (`histtrim review --html`): the table, what each policy changes, and the figures as
PNG data URIs."""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from histtrim._files import write_atomically
from histtrim.display.tables import Table, text_table
from histtrim.review.cache import CacheModel
from histtrim.review.compare import Review, format_review
from histtrim.review.replay import ReplaySettings

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# Okabe-Ito (as the living spec's figures): distinguishable with colour-vision deficiencies.
_POLICY_COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9")

METRICS = {
    "token_trims": "token-budget trims",
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
    so no file name is ever parsed as mathtext (`$\\frac$` made the report fail)."""
    return text.replace("$", r"\$")


def per_session_figure(review: Review, metrics: Sequence[str], title: str) -> Figure:
    """One panel per metric: a group of bars per session, one bar per policy."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    sessions = [r.session for r in review.by_policy(review.labels[0])]
    figure = Figure(figsize=(max(6.0, 0.9 * len(sessions) + 2), 2.6 * len(metrics) + 0.6))
    axes_list = figure.subplots(len(metrics), 1, squeeze=False)[:, 0]
    width = 0.8 / len(review.labels)
    for axes, metric in zip(axes_list, metrics, strict=True):
        values = per_session(review, metric)
        for k, label in enumerate(review.labels):
            xs = [i + (k - (len(review.labels) - 1) / 2) * width for i in range(len(sessions))]
            bars = axes.bar(xs, values[label], width=width, label=plain_label(label),
                            color=_POLICY_COLORS[k % len(_POLICY_COLORS)])
            # Each bar's value on it: a policy whose values are all 0 still shows its zeros.
            axes.bar_label(bars, fontsize=7, padding=1)
        axes.set_ylabel(METRICS[metric])
        axes.yaxis.set_major_locator(MaxNLocator(integer=True))
        axes.margins(y=0.15)
        names = [plain_label(name) for name in sessions]
        axes.set_xticks(range(len(sessions)), names, rotation=30, ha="right", fontsize=8)
    axes_list[-1].set_xlabel("session")
    figure.suptitle(title)
    # One legend for every panel, under the title: never over a bar.
    handles, labels = axes_list[0].get_legend_handles_labels()
    inch = 1 / figure.get_figheight()
    figure.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 1 - 0.4 * inch),
                  ncol=len(labels), fontsize=8, frameon=False)
    figure.tight_layout(rect=(0, 0, 1, 1 - 0.65 * inch))
    return figure


def tokens_figure(review: Review) -> Figure:
    """The distribution of tokens per provider call (as the provider counts them), per policy."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 3.6))
    axes = figure.subplots()
    data = [[t for r in review.by_policy(label) for t in r.true_tokens] for label in review.labels]
    axes.boxplot(data, tick_labels=[plain_label(label) for label in review.labels])
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


def report_html(
    review: Review, settings: ReplaySettings, cache: CacheModel | None = None
) -> str:
    """A self-contained HTML page: settings, table, policy changes and the figures (with a
    cache model, its rows in the table and the cost-against-context figure)."""
    figures = [
        per_session_figure(
            review, ["token_trims", "dropped_turns"], "Trims and context lost, per session"
        ),
        per_session_figure(
            review, ["reactive_retries", "model_refusals", "capacity_refusals"],
            "Retries and refusals, per session",
        ),
        tokens_figure(review),
        *(() if cache is None else (cost_context_figure(review, [cache]),)),
    ]
    provider = settings.provider
    route = (
        f"declared window {provider.context_window}, true window {settings.hidden_window}, "
        f"budget {settings.runtime(review.policies[0]).effective_context_budget()} (spec policy)"
    )
    images = "\n".join(
        f'<figure><img alt="figure {n}" src="{png_data_uri(f)}"></figure>'
        for n, f in enumerate(figures, start=1)
    )
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<title>histtrim design review</title><style>body{font-family:system-ui,sans-serif;"
        "margin:2em;max-width:70em}pre{background:#f6f8fa;padding:1em;overflow:auto}"
        "img{max-width:100%}</style></head><body>\n"
        f"<h1>Design review: {len(review.replays)} sessions, {len(review.labels)} policies</h1>\n"
        f"<p>{html.escape(route)}</p>\n"
        f"<pre>{html.escape(format_review(review, cache=cache))}</pre>\n"
        f"{images}\n</body></html>\n"
    )


def write_report(
    path: str | Path, review: Review, settings: ReplaySettings, cache: CacheModel | None = None
) -> None:
    """Write the HTML report atomically (temp file, fsync, rename)."""
    target = Path(path)
    text = report_html(review, settings, cache)
    write_atomically(target, text.encode("utf-8"))
