"""Estimate against characters and UTF-8 bytes, one line per sample text."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from histtrim.estimate import estimate_history_tokens, utf8_len
from histtrim.messages import ChatMessage
from livingspec.plotting import can_draw
from livingspec.plotting._base import _PALETTE, _label, _Plot

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class EstimateRow:
    """A text (a sample repeated `repeats` times) and its estimate as one message."""

    sample: str
    repeats: int
    chars: int
    utf8_bytes: int
    tokens: int


@dataclass(frozen=True)
class EstimatePlot(_Plot[EstimateRow]):
    columns = ("sample", "repeats", "chars", "utf8_bytes", "tokens")


def estimate_rows(
    samples: Mapping[str, str], repeats: Sequence[int] = (1, 2, 4, 8)
) -> list[EstimateRow]:
    """Each sample repeated `repeats` times: characters, UTF-8 bytes and the estimate of the
    text as one assistant message (plain text, EST-1)."""
    return [
        EstimateRow(
            sample=name,
            repeats=count,
            chars=len(text * count),
            utf8_bytes=utf8_len(text * count),
            tokens=estimate_history_tokens([ChatMessage.assistant(text * count)]),
        )
        for name, text in samples.items()
        for count in repeats
    ]


def estimate_vs_bytes(
    samples: Mapping[str, str], repeats: Sequence[int] = (1, 2, 4, 8), *, title: str
) -> EstimatePlot:
    """The estimate of each sample, repeated, plotted against characters (one slope per
    script) and against UTF-8 bytes (one line for all)."""
    rows = estimate_rows(samples, repeats)
    return EstimatePlot(_draw_estimate(rows, list(samples), title) if can_draw() else None, rows)


def _draw_estimate(rows: Sequence[EstimateRow], samples: Sequence[str], title: str) -> Figure:
    import matplotlib.pyplot as plt

    figure, (by_chars, by_bytes) = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    markers = "osD^v"
    for i, name in enumerate(samples):
        mine = [r for r in rows if r.sample == name]
        style = {"marker": markers[i % len(markers)], "linestyle": "-", "label": name,
                 "color": _PALETTE[i % len(_PALETTE)], "linewidth": 1.2, "zorder": 3}
        by_chars.plot([r.chars for r in mine], [r.tokens for r in mine], **style)
        by_bytes.plot([r.utf8_bytes for r in mine], [r.tokens for r in mine], **style)
    if rows:
        top = max(r.utf8_bytes for r in rows)
        xs = list(range(0, top + 1))
        by_bytes.plot(
            xs,
            [-(-x // 4) + 4 for x in xs],
            color="black",
            linewidth=2.5,
            linestyle="--",
            alpha=0.75,
            zorder=2,
            label="reference: ceil(bytes / 4) + 4",
        )
    _label(by_chars, "characters (code points)", "estimated tokens", "against characters")
    _label(by_bytes, "UTF-8 bytes", "", "against UTF-8 bytes")
    figure.suptitle(title)
    figure.tight_layout()
    return figure
