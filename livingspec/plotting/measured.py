"""Measured trim times (bench/compare.py's CSV rows) per history shape and contender."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
from matplotlib.artist import Artist

from livingspec.plotting._base import _KEPT_COLOR, _Plot, panel_width

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
    figure, panels = plt.subplots(1, len(shapes), figsize=(panel_width(len(shapes), 4.4), 4.6),
                                  sharey=True, squeeze=False)
    rows: list[MeasuredRow] = []
    lost_labelled = False
    for axes, shape in zip(panels[0], shapes, strict=True):
        for name, (color, style) in CONTENDER_STYLES.items():
            points = sorted(
                (MeasuredRow(shape, name, int(r["messages"]), round(float(r["cpu_ms"]), 2),
                             r["method"], r["valid"] or "-")
                 for r in measured
                 if r["section"] == "trim" and r["shape"] == shape and r["contender"] == name),
                key=lambda p: p.messages,
            )
            if not points:
                continue
            rows.extend(points)
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
    return MeasuredPlot(figure, rows)
