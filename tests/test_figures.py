"""The notebook figures fixed for readers (issue 11): what each draws, checked on the figure
objects (nbval never compares PNGs), and the HTML tables of the notebooks."""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import redirect_stdout

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
from matplotlib.colors import to_hex

from histtrim import (
    Agent,
    ChatMessage,
    ProviderProfile,
    ProviderReply,
    RuntimeProfile,
    capacity_report,
    resolve_runtime,
)
from histtrim.agent.providers import Overflow, ScriptedProvider
from histtrim.display.tables import text_table
from livingspec import examples as ex
from livingspec.plotting._base import _PALETTE
from livingspec.plotting.budget import pruning_effect
from livingspec.plotting.capacity import capacity_breakdown
from livingspec.plotting.estimate import estimate_vs_bytes
from livingspec.plotting.loop import call_timeline
from livingspec.plotting.measured import CONTENDER_STYLES, measured_trim_times
from livingspec.plotting.tables import print_block


@pytest.fixture(autouse=True)
def _close_figures() -> Iterator[None]:
    yield
    plt.close("all")


def _runtime(window: int | None, model: str = "m", **settings: object):  # type: ignore[no-untyped-def]
    return resolve_runtime(RuntimeProfile(**settings), ProviderProfile(model=model,
                                                                       context_window=window), None)


def test_table_is_its_text_and_renders_as_an_escaped_html_table() -> None:
    table = text_table(["name", "n"], [("<b>🚀</b>", 1), ("x", None)])
    assert str(table).splitlines()[0].split() == ["name", "n"]
    page = table._repr_html_()
    assert page.startswith('<table class="histtrim-table">')
    assert "&lt;b&gt;🚀&lt;/b&gt;" in page and "<b>" not in page
    assert '<td class="num">1</td>' in page and '<td class="num">-</td>' in page
    assert '<td>x</td>' in page


def test_print_block_outside_a_kernel_prints_the_text_once() -> None:
    out = io.StringIO()
    with redirect_stdout(out):
        print_block("title", text_table(["a"], [(1,)]), "")
    assert out.getvalue() == "title\na\n-\n1\n\n"


def test_estimate_reference_line_is_visible() -> None:
    picture = estimate_vs_bytes(ex.sample_texts(), title="t")
    line = next(ln for ln in picture.figure.axes[1].lines if "reference" in str(ln.get_label()))
    assert line.get_linewidth() >= 2 and to_hex(line.get_color()) == "#000000"
    samples = [ln for ln in picture.figure.axes[1].lines if ln is not line]
    assert line.get_zorder() < min(ln.get_zorder() for ln in samples)


def test_pruning_effect_has_one_panel_per_profile_and_a_shared_short_legend() -> None:
    runtimes = {"a": _runtime(200_000), "b": _runtime(200_000, context_compact_ratio=0.5),
                "c": _runtime(8_192)}
    plot = pruning_effect(runtimes, [0, 2_000, 64_000], title="t")
    assert len(plot.figure.axes) == 3
    assert [ax.get_title() for ax in plot.figure.axes] == ["a", "b", "c"]
    legend = plot.figure.legends[0]
    assert [t.get_text() for t in legend.get_texts()] == [
        "budget = max_tokens", "pruning off", "pruning on", "max_tokens 0: ignored"]
    assert all(r.budget_on <= r.budget_off for r in plot.rows)


def test_capacity_breakdown_hides_invisible_parts_and_marks_the_overage() -> None:
    history = [ChatMessage.system("s" * 400), ChatMessage.user("u" * 40_000)]
    reports = {"big window": capacity_report(history, runtime=_runtime(200_000), hooks=["h"]),
               "small window": capacity_report(history, runtime=_runtime(4_096), hooks=["h"])}
    plot = capacity_breakdown(reports, title="t")
    axes = plot.figure.axes[0]
    labels = [t.get_text() for t in axes.get_legend().get_texts()]
    assert "hooks" not in labels and "over the window" in labels
    assert "hooks" in axes.get_xlabel()  # named as too small to see
    over = reports["small window"].total - reports["small window"].window
    texts = [t.get_text() for t in axes.texts]
    assert any(f"over by {over:,}" in t for t in texts)
    assert any(t.endswith("fits") for t in texts)


def _reactive_agent() -> Agent:
    provider = ScriptedProvider([Overflow(), ProviderReply(text="ok")])
    agent = Agent(provider, _runtime(8_000), system_prompt="s")
    agent.restore([ChatMessage.user("old " * 300), ChatMessage.assistant("a " * 300),
                   ChatMessage.user("older " * 300), ChatMessage.assistant("b " * 300)])
    agent.turn("now")
    return agent


def test_timeline_keeps_bars_on_scale_and_legends_only_what_is_drawn() -> None:
    agent = _reactive_agent()
    timeline = call_timeline(agent.calls, title="t", provider_window=900)
    axes = timeline.figure.axes[0]
    tallest = max(r.tokens for r in timeline.rows)
    assert axes.get_ylim()[1] <= 1.3 * max(tallest, 900) + 1  # the 8,000 window is off scale
    labels = [t.get_text() for t in axes.get_legend().get_texts()]
    assert any("8,000: above the chart" in label for label in labels)
    outcomes = {r.outcome for r in timeline.rows}
    assert {label.rsplit(" ", 1)[-1] for label in labels if "call outcome" in label} == outcomes
    provider_line = next(ln for ln in axes.lines if "provider's own window" in str(ln.get_label()))
    assert to_hex(provider_line.get_color()) not in {to_hex(p.get_facecolor()) for p in
                                                     axes.patches}
    trims = [t for t in axes.texts if t.get_text().startswith("✂")]
    assert trims and all(t.get_rotation() == 0 for t in trims)


def test_measured_times_colour_each_contender_and_mark_a_lost_newest_turn() -> None:
    rows = [
        {"section": "trim", "shape": "giant", "messages": str(n), "contender": name,
         "cpu_ms": str(ms), "method": "median", "valid": valid}
        for n, name, ms, valid in [(1_000, "histtrim", 1.0, "ok"), (10_000, "histtrim", 10.0, "ok"),
                                   (1_000, "LangChain", 5.0, "newest turn dropped"),
                                   (10_000, "LangChain", 50.0, "newest turn dropped")]
    ]
    plot = measured_trim_times(rows, ["giant"], title="t")
    lines = {str(ln.get_label()): ln for ln in plot.figure.axes[0].lines}
    assert to_hex(lines["histtrim"].get_color()) == to_hex(CONTENDER_STYLES["histtrim"][0])
    assert to_hex(lines["LangChain"].get_color()) == to_hex(CONTENDER_STYLES["LangChain"][0])
    marks = [ln for ln in plot.figure.axes[0].lines if ln.get_marker() == "X"]
    assert len(marks) == 2
    assert [t.get_text() for t in plot.figure.legends[0].get_texts()][-1] == (
        "output: newest turn dropped")
    assert [r.output for r in plot.rows] == ["ok", "ok", "newest turn dropped",
                                             "newest turn dropped"]


def test_palette_is_okabe_ito() -> None:
    assert _PALETTE[:5] == ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00")
