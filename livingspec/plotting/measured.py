"""Chapter 09's figures: measured trim times (bench/compare.py's CSV rows) per history shape
and contender, and the counted work (rows priced) of a trim and of budget checks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from histtrim.display.tables import Table, fields_table
from livingspec.plotting import can_draw
from livingspec.plotting._base import _KEPT_COLOR, _Plot, panel_width

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.figure import Figure

# One colour and line style per algorithm (Okabe-Ito), the same in every panel.
CONTENDER_STYLES: dict[str, tuple[str, str]] = {
    "lower bound": ("#000000", ":"),
    "histtrim": (_KEPT_COLOR, "-"),
    "LangChain": ("#0072B2", "-"),
    "textbook": ("#D55E00", "--"),
}


@dataclass(frozen=True)
class MeasuredRow:
    """One plotted point: CPU ms per trim, how it was timed, and what the output kept."""

    shape: str
    contender: str
    messages: int
    cpu_ms: float
    how: str
    output: str


@dataclass(frozen=True)
class MeasuredPlot(_Plot[MeasuredRow]):
    columns = ("shape", "contender", "messages", "CPU ms", "how", "output")


def measured_trim_times(
    measured: Sequence[Mapping[str, str]], shapes: Sequence[str], *, title: str
) -> MeasuredPlot:
    """One log-log panel per history shape: median CPU ms per trim against message count for
    each contender. Hollow points are extrapolated; a cross marks a trim whose output lost
    the newest turn (the `valid` column of the CSV is not "ok")."""
    rows = [
        MeasuredRow(shape, name, int(r["messages"]), round(float(r["cpu_ms"]), 2), r["method"],
                    r["valid"] or "-")
        for shape in shapes
        for name in CONTENDER_STYLES
        for r in sorted(
            (r for r in measured
             if r["section"] == "trim" and r["shape"] == shape and r["contender"] == name),
            key=lambda r: int(r["messages"]),
        )
    ]
    return MeasuredPlot(_draw_measured(rows, shapes, title) if can_draw() else None, rows)


def _draw_measured(rows: Sequence[MeasuredRow], shapes: Sequence[str], title: str) -> Figure:
    import matplotlib.pyplot as plt

    figure, panels = plt.subplots(1, len(shapes), figsize=(panel_width(len(shapes), 4.4), 4.6),
                                  sharey=True, squeeze=False)
    lost_labelled = False
    for axes, shape in zip(panels[0], shapes, strict=True):
        for name, (color, style) in CONTENDER_STYLES.items():
            points = [p for p in rows if p.shape == shape and p.contender == name]
            if not points:
                continue
            axes.plot([p.messages for p in points], [p.cpu_ms for p in points], color=color,
                      linestyle=style, marker="o", linewidth=1.8, label=name)
            for p in points:
                if p.how == "extrapolated":
                    axes.plot([p.messages], [p.cpu_ms], marker="o", color="white",
                              markeredgecolor=color, zorder=4)
                if p.output not in ("ok", "-"):
                    axes.plot([p.messages], [p.cpu_ms], marker="X", markersize=11,
                              color="black", zorder=5, linestyle="none",
                              label="_nolegend_" if lost_labelled else f"output: {p.output}")
                    lost_labelled = True
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_title(f"{shape} history", fontsize=10)
        axes.set_xlabel("messages")
        axes.grid(True, which="major", alpha=0.3)
    panels[0][0].set_ylabel("CPU ms per trim (median)")
    handles: dict[str, Artist] = {}
    for axes in panels[0]:
        for handle, label in zip(*axes.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    figure.legend(list(handles.values()), list(handles), loc="lower center",
                  ncol=len(handles), fontsize=8, frameon=False)
    figure.suptitle(title)
    figure.tight_layout(rect=(0, 0.08, 1, 1))
    return figure


@dataclass(frozen=True)
class PricedRow:
    """One history trimmed to half its estimate: the rows each algorithm priced doing it."""

    shape: str
    messages: int
    histtrim: int
    textbook: int


@dataclass(frozen=True)
class PricedPlot(_Plot[PricedRow]):
    columns = ("shape", "messages", "histtrim", "textbook")


def rows_priced(rows: Sequence[PricedRow], *, title: str) -> PricedPlot:
    """Rows priced by one trim against the history's size, log-log: histtrim (solid) and the
    textbook algorithm (dashed), one marker per history shape."""
    return PricedPlot(_draw_priced(rows, title) if can_draw() else None, list(rows))


def _draw_priced(rows: Sequence[PricedRow], title: str) -> Figure:
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    for shape, marker in zip(dict.fromkeys(r.shape for r in rows), "os^D", strict=False):
        mine = [r for r in rows if r.shape == shape]
        messages = [r.messages for r in mine]
        axes.plot(messages, [r.histtrim for r in mine], marker=marker,
                  color=CONTENDER_STYLES["histtrim"][0], label=f"histtrim, {shape}")
        axes.plot(messages, [r.textbook for r in mine], marker=marker, linestyle="--",
                  color=CONTENDER_STYLES["textbook"][0], label=f"textbook, {shape}")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("messages in the history")
    axes.set_ylabel("per-row cost evaluations (one trim)")
    axes.set_title(title, fontsize=10)
    axes.legend(fontsize=8)
    axes.grid(True, which="major", alpha=0.3)
    return figure


@dataclass(frozen=True)
class CheckRow:
    """Rows priced so far after `iteration` budget checks, by each way of checking."""

    iteration: int
    re_estimate: int
    ledger: int


@dataclass(frozen=True)
class ChecksPlot(_Plot[CheckRow]):
    columns = ("iteration", "re-estimate", "ledger")

    def table(self, iterations: Sequence[int] = ()) -> Table:
        """The rows at `iterations` (every row when empty)."""
        shown = set(iterations)
        return fields_table(self.columns, [r for r in self.rows if not shown
                                           or r.iteration in shown])


def budget_checks(
    re_estimate: Sequence[int], ledger: Sequence[int], *, title: str
) -> ChecksPlot:
    """Rows priced so far (cumulative, log scale) at each tool iteration: re-estimating the
    whole history at every boundary against a `TokenLedger` (built once, then appends)."""
    rows = [CheckRow(i, a, b)
            for i, (a, b) in enumerate(zip(re_estimate, ledger, strict=True), start=1)]
    return ChecksPlot(_draw_checks(rows, title) if can_draw() else None, rows)


def _draw_checks(rows: Sequence[CheckRow], title: str) -> Figure:
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    iterations = [r.iteration for r in rows]
    axes.plot(iterations, [r.re_estimate for r in rows], color=CONTENDER_STYLES["textbook"][0],
              label="estimate_history_tokens at every boundary")
    axes.plot(iterations, [r.ledger for r in rows], color=CONTENDER_STYLES["histtrim"][0],
              label="TokenLedger (built once, then appends)")
    axes.set_yscale("log")
    axes.set_xlabel("tool iterations")
    axes.set_ylabel("rows priced so far (cumulative)")
    axes.set_title(title, fontsize=10)
    axes.legend(fontsize=8)
    axes.grid(True, which="major", alpha=0.3)
    return figure
