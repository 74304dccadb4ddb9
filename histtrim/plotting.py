"""Matplotlib figures and compact text tables for the notebooks (the living spec).

Every figure function returns the figure together with the numbers it plots, so a
notebook cell can print them: nbval compares printed text, never PNGs. Turn numbers
shown to readers are 1-based (turn 1 is the oldest); rows are 0-based positions."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, ClassVar, Generic, TypeVar

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .capacity import CapacityReport
from .carriers import parse_tool_calls, parse_tool_result, to_chat_messages
from .config import HistoryPruning, ProviderProfile, RuntimeProfile
from .estimate import estimate_history_tokens, message_costs, utf8_len
from .messages import TOOL_RESULTS_PREFIX, AssistantToolCalls, ChatMessage, ToolCall, ToolResults
from .route import ResolvedRuntime, resolve_runtime
from .runtime import ProviderCall
from .trim import TrimResult, TurnCountTrimResult, trim_to_recent_turns
from .turns import TurnIndex, index_turns, is_system

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Item = ChatMessage | AssistantToolCalls | ToolResults
R = TypeVar("R", bound="DataclassInstance")

_FIXED_COLOR = "#9e9e9e"
_KEPT_COLOR = "#2e7d32"
_DROPPED_COLOR = "#c62828"


# ---------------------------------------------------------------------------- text tables


def _cell(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "-"
    return str(value)


def text_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A plain-text table: numeric columns right-aligned, text left-aligned, `-` for None."""
    raw = [list(row) for row in rows]
    cells = [[_cell(v) for v in row] for row in raw]
    numeric = [
        any(_is_number(row[c]) for row in raw)
        and all(_is_number(row[c]) or row[c] is None for row in raw)
        for c in range(len(headers))
    ]
    widths = [max([len(h), *(len(row[c]) for row in cells)]) for c, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        parts = [
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ]
        return "  ".join(parts).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, cells)])


def _fields_table(headers: Sequence[str], rows: Iterable[DataclassInstance]) -> str:
    """`text_table` of dataclass rows: one column per field, in field order."""
    return text_table(headers, [[getattr(row, f.name) for f in fields(row)] for row in rows])


@dataclass(frozen=True)
class _Plot(Generic[R]):
    """A figure and the rows of numbers it draws; `table()` prints them (nbval reads text)."""

    figure: Figure
    rows: list[R]
    columns: ClassVar[tuple[str, ...]] = ()
    """The table's headers, one per field of a row."""

    def table(self) -> str:
        return _fields_table(self.columns, self.rows)


def print_block(*parts: object) -> None:
    """Print the parts, one per line, in a single write to stdout.

    Jupyter may split the output of several writes into separate stream outputs depending
    on timing; one write per cell keeps committed notebook outputs byte-identical."""
    sys.stdout.write("\n".join(map(str, parts)) + "\n")


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _shorten(text: str, width: int) -> str:
    flat = text.replace("\n", " ⏎ ")
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def row_summary(item: Item, width: int = 60) -> str:
    """One line describing a row of either representation (tool calls by id, name and args)."""
    if isinstance(item, AssistantToolCalls):
        return _shorten(_calls_text(item.text, item.tool_calls), width)
    if isinstance(item, ToolResults):
        parts = ", ".join(f"{r.tool_call_id}: {r.content}" for r in item.results)
        return _shorten(f"results {parts}", width)
    parsed_calls = parse_tool_calls(item)
    if parsed_calls is not None:
        return _shorten(_calls_text(parsed_calls.text, parsed_calls.calls), width)
    result = parse_tool_result(item)
    if result is not None:
        images = len(result.attachments or ())
        extra = f" (+{images} attached image{'s' * (images != 1)})" if images else ""
        return _shorten(f"result {result.tool_call_id}{extra}: {result.content}", width)
    return _shorten(item.content, width)


def _calls_text(text: str | None, calls: Sequence[ToolCall]) -> str:
    listed = ", ".join(f"{c.id} {c.name} {c.arguments}" for c in calls)
    return (f"{text} · " if text else "") + f"calls {listed}"


def _role(item: Item) -> str:
    if isinstance(item, AssistantToolCalls):
        return "assistant*"
    if isinstance(item, ToolResults):
        return "tool*"
    if item.role == "user" and item.content.startswith(TOOL_RESULTS_PREFIX):
        return "user (carrier)"
    return item.role


def item_costs(history: Sequence[Item]) -> list[int]:
    """The estimate of each item; a structured item costs the provider-facing rows it becomes."""
    spans: list[int] = []
    rows: list[ChatMessage] = []
    for item in history:
        converted = to_chat_messages([item])
        spans.append(len(converted))
        rows.extend(converted)
    costs = message_costs(rows)
    out: list[int] = []
    position = 0
    for span in spans:
        out.append(sum(costs[position : position + span]))
        position += span
    return out


def _turn_labels(index: TurnIndex) -> list[str]:
    """`sys` for the leading system block, `crumb`, the 1-based turn, or `-` (no turn)."""
    labels = [str(turn + 1) if turn >= 0 else "-" for turn in index.turn_of()]
    labels[: index.prefix_len] = ["sys"] * index.prefix_len
    if index.crumb is not None:
        labels[index.crumb] = "crumb"
    return labels


def history_table(history: Sequence[Item], *, crumb_present: bool = False, width: int = 60) -> str:
    """Row, role, turn (1-based; `sys` = leading system block, `-` = before any user row),
    estimated tokens, text.

    Roles marked `*` are structured items (`AssistantToolCalls`, `ToolResults`)."""
    index = index_turns(history, crumb_present=crumb_present)
    labels = _turn_labels(index)
    costs = item_costs(history)
    return text_table(
        ["row", "role", "turn", "tokens", "content"],
        [
            (i, _role(item), labels[i], costs[i], row_summary(item, width))
            for i, item in enumerate(history)
        ],
    )


# ---------------------------------------------------------------------------- turn map


@dataclass(frozen=True)
class TurnMapRow:
    """One message of a turn map: its turn (1-based, None for the system prefix and crumb)
    and `part`, the turn as the table shows it (`sys`, `crumb` or the number)."""

    row: int
    role: str
    turn: int | None
    part: str
    tokens: int
    kept: bool
    content: str


@dataclass(frozen=True)
class TurnMap(_Plot[TurnMapRow]):
    """A turn-map figure and the rows it draws."""

    def table(self) -> str:
        """The rows with `part` as their turn (`sys`, `crumb` or the number)."""
        return text_table(
            ["row", "role", "turn", "tokens", "kept", "content"],
            [(r.row, r.role, r.part, r.tokens, r.kept, r.content) for r in self.rows],
        )


def kept_rows(
    history: Sequence[Item],
    result: TrimResult | TurnCountTrimResult[ChatMessage] | TurnCountTrimResult[Item],
    *,
    crumb_present: bool = False,
) -> list[bool]:
    """Which input rows a trim result kept, derived from the turn index.

    Provider-facing trims keep the leading block and turns `dropped_turns..` in place; the
    structured trim keeps every system row (hoisted to the front) and drops the crumb. The
    flags are checked against `result`: ValueError when it did not come from `history`."""
    index = index_turns(history, crumb_present=crumb_present)
    owner = index.turn_of()
    drop = result.dropped_turns
    in_place = [turn < 0 or turn >= drop for turn in owner]
    hoisted = [
        is_system(item) or (turn >= drop and i != index.crumb)
        for i, (item, turn) in enumerate(zip(history, owner, strict=True))
    ]
    for flags, hoist in ((in_place, False), (hoisted, True)):
        kept = [item for item, keep in zip(history, flags, strict=True) if keep]
        if hoist:
            kept = [*filter(is_system, kept), *(k for k in kept if not is_system(k))]
        dropped = [item for item, keep in zip(history, flags, strict=True) if not keep]
        if kept == list(result.history) and dropped == list(result.dropped):
            return flags
    raise ValueError("result: does not come from trimming this history")


def _turn_color(turn: int | None) -> str:
    if turn is None:
        return _FIXED_COLOR
    palette = plt.get_cmap("tab10").colors  # type: ignore[attr-defined]
    red, green, blue = palette[(turn - 1) % len(palette)]
    return f"#{round(red * 255):02x}{round(green * 255):02x}{round(blue * 255):02x}"


def turn_map_rows(
    history: Sequence[Item],
    result: TrimResult | TurnCountTrimResult[ChatMessage] | TurnCountTrimResult[Item],
    *,
    crumb_present: bool = False,
) -> list[TurnMapRow]:
    """The numbers of a turn map: every input row with its turn, tokens and fate."""
    index = index_turns(history, crumb_present=crumb_present)
    kept = kept_rows(history, result, crumb_present=crumb_present)
    costs = item_costs(history)
    parts = _turn_labels(index)
    rows = [
        TurnMapRow(
            row=i,
            role=_role(item),
            turn=turn + 1 if turn >= 0 else None,
            part=parts[i],
            tokens=costs[i],
            kept=kept[i],
            content=row_summary(item, 44),
        )
        for i, (item, turn) in enumerate(zip(history, index.turn_of(), strict=True))
    ]
    return rows


def turn_map(
    history: Sequence[Item],
    result: TrimResult | TurnCountTrimResult[ChatMessage] | TurnCountTrimResult[Item],
    *,
    title: str,
    crumb_present: bool = False,
) -> TurnMap:
    """One bar per message (length = estimated tokens, log scale), coloured by turn;
    dropped rows are faded and hatched."""
    rows = turn_map_rows(history, result, crumb_present=crumb_present)
    figure, axes = plt.subplots(figsize=(10, 1.4 + 0.3 * len(rows)))
    for r in rows:
        axes.barh(
            r.row,
            r.tokens,
            color=_turn_color(r.turn),
            alpha=1.0 if r.kept else 0.3,
            hatch=None if r.kept else "///",
            edgecolor="black" if r.kept else _DROPPED_COLOR,
            linewidth=0.6,
        )
        axes.text(r.tokens * 1.08, r.row, f"{r.tokens}", va="center", fontsize=8)
    axes.set_xscale("log")
    axes.set_xlim(1, max(r.tokens for r in rows) * 4 if rows else 10)
    axes.set_yticks([r.row for r in rows], [f"{r.row} {r.role}" for r in rows], fontsize=8)
    axes.invert_yaxis()
    axes.set_xlabel("estimated tokens (log scale)")
    axes.set_ylabel("message (oldest at the top)")
    axes.set_title(title)
    turns = sorted({r.turn for r in rows if r.turn is not None})
    handles = [Patch(color=_FIXED_COLOR, label="system / crumb")]
    handles += [Patch(color=_turn_color(t), label=f"turn {t}") for t in turns]
    handles += [
        Patch(facecolor="white", edgecolor="black", label="kept"),
        Patch(facecolor="white", edgecolor=_DROPPED_COLOR, hatch="///", label="dropped"),
    ]
    axes.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    figure.tight_layout()
    return TurnMap(figure, rows)


# ---------------------------------------------------------------------------- budget cut


@dataclass(frozen=True)
class CutRow:
    """One turn, newest first: its size and the running total from the newest turn back."""

    turn: int
    messages: int
    tokens: int
    cumulative: int
    fits: bool
    kept: bool


@dataclass(frozen=True)
class BudgetCut(_Plot[CutRow]):
    """Cumulative tokens from the newest turn backwards against the budget."""

    columns = ("turn", "messages", "tokens", "cumulative", "fits", "kept")
    budget: int
    fixed_tokens: int
    """System prefix and breadcrumb: kept whatever the budget."""
    result: TrimResult


def cumulative_from_newest(
    history: Sequence[ChatMessage],
    budget_tokens: int,
    *,
    crumb_present: bool = False,
) -> tuple[list[CutRow], int, TrimResult]:
    """Every turn, newest first, with the running total from the newest turn backwards
    (starting from the system prefix and crumb), whether that total fits the budget (budget
    0: no trim, everything fits) and whether `trim_to_recent_turns` kept the turn.

    Returns (rows, tokens of the system prefix and crumb, the trim result)."""
    index = index_turns(history, crumb_present=crumb_present)
    costs = message_costs(history, index)
    result = trim_to_recent_turns(history, budget_tokens, crumb_present=crumb_present)
    fixed = sum(costs[: index.body_start])
    running = fixed
    rows: list[CutRow] = []
    for turn in reversed(range(index.turn_count)):
        start, end = index.turn_start(turn), index.turn_end(turn)
        tokens = sum(costs[start:end])
        running += tokens
        rows.append(
            CutRow(
                turn=turn + 1,
                messages=end - start,
                tokens=tokens,
                cumulative=running,
                fits=budget_tokens == 0 or running <= budget_tokens,
                kept=turn >= result.dropped_turns,
            )
        )
    return rows, fixed, result


def budget_cut(
    history: Sequence[ChatMessage],
    budget_tokens: int,
    *,
    title: str,
    crumb_present: bool = False,
) -> BudgetCut:
    """Bars of each turn's tokens and a line of the running total (system rows included),
    newest turn first, against the budget; the trim's cut is marked."""
    rows, fixed, result = cumulative_from_newest(
        history, budget_tokens, crumb_present=crumb_present
    )
    figure, axes = plt.subplots(figsize=(10, 4.5))
    positions = list(range(len(rows)))
    axes.bar(
        positions,
        [r.tokens for r in rows],
        color=[_KEPT_COLOR if r.kept else _DROPPED_COLOR for r in rows],
        alpha=0.55,
    )
    axes.plot(
        positions,
        [r.cumulative for r in rows],
        marker="o",
        color="black",
        label="cumulative from the newest turn (+ system rows)",
    )
    axes.axhline(budget_tokens, color="#1565c0", linestyle="--", label=f"budget {budget_tokens}")
    kept_count = sum(r.kept for r in rows)
    if 0 < kept_count < len(rows):
        axes.axvline(kept_count - 0.5, color=_DROPPED_COLOR, linestyle=":", label="cut")
    # "(newest)" on a second line so it cannot run into the next label; many turns: rotate.
    axes.set_xticks(
        positions,
        [f"turn {r.turn}" + ("\n(newest)" if i == 0 else "") for i, r in enumerate(rows)],
        rotation=45 if len(rows) > 12 else 0,
        ha="right" if len(rows) > 12 else "center",
    )
    axes.set_xlabel("turns, newest first")
    axes.set_ylabel("estimated tokens")
    axes.set_title(title)
    axes.legend(
        handles=[
            *axes.get_legend_handles_labels()[0],
            Patch(color=_KEPT_COLOR, alpha=0.55, label="kept turn"),
            Patch(color=_DROPPED_COLOR, alpha=0.55, label="dropped turn"),
        ],
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=8,
    )
    for x, r in zip(positions, rows, strict=True):
        axes.annotate(
            str(r.cumulative),
            (x, r.cumulative),
            textcoords="offset points",
            xytext=(0, 6),
            ha="center",
            fontsize=8,
        )
    figure.tight_layout()
    return BudgetCut(figure, rows, budget_tokens, fixed, result)


# ---------------------------------------------------------------------------- estimate vs bytes


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
    figure, (by_chars, by_bytes) = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    markers = "osD^v"
    for i, name in enumerate(samples):
        mine = [r for r in rows if r.sample == name]
        style = {"marker": markers[i % len(markers)], "linestyle": "-", "label": name}
        by_chars.plot([r.chars for r in mine], [r.tokens for r in mine], **style)
        by_bytes.plot([r.utf8_bytes for r in mine], [r.tokens for r in mine], **style)
    if rows:
        top = max(r.utf8_bytes for r in rows)
        xs = list(range(0, top + 1))
        by_bytes.plot(
            xs,
            [-(-x // 4) + 4 for x in xs],
            color="grey",
            linewidth=0.8,
            linestyle=":",
            label="ceil(bytes / 4) + 4",
        )
    _label(by_chars, "characters (code points)", "estimated tokens", "against characters")
    _label(by_bytes, "UTF-8 bytes", "", "against UTF-8 bytes")
    figure.suptitle(title)
    figure.tight_layout()
    return EstimatePlot(figure, rows)


def _label(axes: Axes, xlabel: str, ylabel: str, title: str) -> None:
    axes.set_xlabel(xlabel)
    if ylabel:
        axes.set_ylabel(ylabel)
    axes.set_title(title, fontsize=10)
    axes.legend(fontsize=8)


# ---------------------------------------------------------------------------- budget and capacity


def _ratio_label(ratio: float | None) -> str:
    if ratio is None:
        return "unset"
    valid = RuntimeProfile(context_compact_ratio=ratio).valid_context_compact_ratio
    return f"{ratio:g}" if valid is not None else f"{ratio:g} (invalid)"


def _tokens_label(value: int | None) -> str:
    return "unset" if value is None else f"{value:,}"


def _short_tokens(value: int) -> str:
    """32000 -> "32k", 3200 -> "3.2k", 800 -> "800": fits a heatmap cell."""
    return f"{value / 1000:g}k" if value >= 1000 else str(value)


@dataclass(frozen=True)
class BudgetGrid:
    """Budgets over ratio (columns) x max_context_tokens (rows), one grid per route."""

    figure: Figure
    ratios: tuple[float | None, ...]
    max_context_tokens: tuple[int | None, ...]
    grids: dict[str, list[list[int]]]
    """Panel title -> budgets, `grids[title][row][column]`."""

    def table(self, panel: str) -> str:
        return text_table(
            ["max_context_tokens \\ ratio", *map(_ratio_label, self.ratios)],
            [
                (_tokens_label(m), *row)
                for m, row in zip(self.max_context_tokens, self.grids[panel], strict=True)
            ],
        )


def budget_heatmap(
    routes: Mapping[str, tuple[ProviderProfile | None, str | None]],
    ratios: Sequence[float | None],
    max_context_tokens: Sequence[int | None],
    *,
    title: str,
) -> BudgetGrid:
    """One heatmap per route (panel title -> provider profile and selected model): the
    effective budget of `RuntimeProfile(max_context_tokens=m, context_compact_ratio=r)`."""
    grids = {
        name: [
            [
                resolve_runtime(
                    RuntimeProfile(max_context_tokens=m, context_compact_ratio=r), provider, model
                ).effective_context_budget()
                for r in ratios
            ]
            for m in max_context_tokens
        ]
        for name, (provider, model) in routes.items()
    }
    top = max((v for grid in grids.values() for row in grid for v in row), default=1) or 1
    figure, panels = plt.subplots(
        1,
        len(grids),
        figsize=(5.6 * len(grids), 1.6 + 0.55 * len(max_context_tokens)),
        squeeze=False,
    )
    image = None
    for column, (axes, (name, grid)) in enumerate(zip(panels[0], grids.items(), strict=True)):
        image = axes.imshow(grid, cmap="viridis", vmin=0, vmax=top, aspect="auto")
        for i, row in enumerate(grid):
            for j, value in enumerate(row):
                axes.text(
                    j,
                    i,
                    _short_tokens(value),
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white" if value < top / 2 else "black",
                )
        axes.set_xticks(
            range(len(ratios)),
            [_ratio_label(r) for r in ratios],
            rotation=45,
            ha="right",
            fontsize=8,
        )
        axes.set_yticks(
            range(len(max_context_tokens)),
            [_tokens_label(m) for m in max_context_tokens],
            fontsize=8,
        )
        axes.set_xlabel("context_compact_ratio")
        if column == 0:
            axes.set_ylabel("max_context_tokens")
        axes.set_title(name, fontsize=10)
    if image is not None:
        figure.colorbar(image, ax=panels[0].tolist(), label="effective budget (tokens)")
    figure.suptitle(title)
    return BudgetGrid(figure, tuple(ratios), tuple(max_context_tokens), grids)


@dataclass(frozen=True)
class PruningRow:
    """One profile with pruning off and with `history_pruning` on at `max_tokens`."""

    profile: str
    max_tokens: int
    budget_off: int
    budget_on: int


@dataclass(frozen=True)
class PruningPlot(_Plot[PruningRow]):
    columns = ("profile", "pruning max_tokens", "budget (pruning off)", "budget (pruning on)")


def _with_pruning(runtime: ResolvedRuntime, pruning: HistoryPruning) -> ResolvedRuntime:
    profile = runtime.profile.model_copy(update={"history_pruning": pruning})
    return runtime.model_copy(update={"profile": profile})


def pruning_effect(
    runtimes: Mapping[str, ResolvedRuntime], max_tokens: Sequence[int], *, title: str
) -> PruningPlot:
    """For each resolved runtime, its budget with `history_pruning` enabled at each
    `max_tokens`, against the same runtime with pruning off (a dashed line)."""
    rows: list[PruningRow] = []
    figure, axes = plt.subplots(figsize=(11, 4.5))
    palette = plt.get_cmap("tab10").colors  # type: ignore[attr-defined]
    for i, (name, runtime) in enumerate(runtimes.items()):
        budget_off = _with_pruning(runtime, HistoryPruning()).effective_context_budget()
        mine = [
            PruningRow(
                name,
                limit,
                budget_off,
                _with_pruning(
                    runtime, HistoryPruning(enabled=True, max_tokens=limit)
                ).effective_context_budget(),
            )
            for limit in max_tokens
        ]
        rows.extend(mine)
        color = palette[i % len(palette)]
        positive = [r for r in mine if r.max_tokens > 0]
        axes.plot(
            [r.max_tokens for r in positive],
            [r.budget_on for r in positive],
            marker="o",
            color=color,
            label=f"{name}: pruning on",
        )
        ignored = [r for r in mine if r.max_tokens == 0]
        if ignored:
            axes.scatter(
                [0] * len(ignored),
                [r.budget_on for r in ignored],
                marker="x",
                s=60,
                color=color,
                label=f"{name}: max_tokens 0 (ignored)",
            )
        axes.axhline(
            budget_off,
            color=color,
            linestyle="--",
            linewidth=1,
            label=f"{name}: pruning off ({budget_off:,})",
        )
    if max_tokens:
        top = max(max_tokens)
        axes.plot(
            [0, top],
            [0, top],
            color="grey",
            linestyle=":",
            linewidth=1,
            label="budget = max_tokens",
        )
    axes.set_xlabel("history_pruning.max_tokens")
    axes.set_ylabel("effective budget (tokens)")
    axes.set_title(title)
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figure.tight_layout()
    return PruningPlot(figure, rows)


@dataclass(frozen=True)
class CapacityPlot:
    figure: Figure
    reports: dict[str, CapacityReport]

    def table(self) -> str:
        return text_table(
            [
                "request",
                "system",
                "other messages",
                "images",
                "hooks",
                "tool schemas",
                "total",
                "window",
                "budget",
                "fits",
            ],
            [
                (name, *_breakdown(r), r.total, r.window, r.budget, r.fits)
                for name, r in self.reports.items()
            ],
        )


_PARTS = (
    ("system rows", "#6d4c41"),
    ("other messages", "#1e88e5"),
    ("images", "#fb8c00"),
    ("hooks", "#8e24aa"),
    ("tool schemas", "#43a047"),
)


def _breakdown(report: CapacityReport) -> tuple[int, int, int, int, int]:
    """A request's estimate in the parts of `_PARTS`, in that order."""
    return (
        report.system,
        report.messages - report.system,
        report.images,
        report.hooks,
        report.tool_schemas,
    )


def capacity_breakdown(reports: Mapping[str, CapacityReport], *, title: str) -> CapacityPlot:
    """A stacked bar per request (system rows, other messages, images, hooks, tool schemas)
    with its window (solid) and proactive budget (dotted) marked."""
    figure, axes = plt.subplots(figsize=(10, 4.8))
    names = list(reports)
    bottoms = [0] * len(names)
    for k, (part, color) in enumerate(_PARTS):
        values = [_breakdown(r)[k] for r in reports.values()]
        axes.bar(range(len(names)), values, bottom=bottoms, color=color, label=part, width=0.6)
        bottoms = [b + v for b, v in zip(bottoms, values, strict=True)]
    budget_labelled = False
    for i, r in enumerate(reports.values()):
        axes.hlines(
            r.window,
            i - 0.4,
            i + 0.4,
            color="black",
            linewidth=2,
            label="window (hard limit)" if i == 0 else "_nolegend_",
        )
        if r.budget:
            axes.hlines(
                r.budget,
                i - 0.4,
                i + 0.4,
                color="black",
                linestyles=":",
                label="_nolegend_" if budget_labelled else "proactive budget (0 = off)",
            )
            budget_labelled = True
        verdict = "fits" if r.fits else "exceeds"
        axes.text(
            i,
            max(r.total, r.window) * 1.02,
            f"{r.total:,} / {r.window:,}\n{verdict}",
            ha="center",
            va="bottom",
            fontsize=8,
        )
    axes.set_xticks(range(len(names)), names, fontsize=8)
    axes.set_ylim(0, max((max(r.total, r.window) for r in reports.values()), default=1) * 1.2)
    axes.set_xlabel("request")
    axes.set_ylabel("estimated tokens")
    axes.set_title(title)
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figure.tight_layout()
    return CapacityPlot(figure, dict(reports))


# ---------------------------------------------------------------------------- agent loop timeline


@dataclass(frozen=True)
class TimelineRow:
    """One provider call of an agent session and the trims made just before it."""

    call: int
    turn: int
    iteration: int
    kind: str
    outcome: str
    history: int
    """The estimated history sent (what the budget measures)."""
    tokens: int
    """History plus tool schemas (what the capacity check measures)."""
    budget: int
    window: int
    trims: str | None
    """The trims made since the previous call, as `reason -dropped_messages`."""


_TIMELINE_COLUMNS = (
    "call", "turn", "iter", "kind", "outcome", "history", "request", "budget", "window", "trims"
)  # fmt: skip


@dataclass(frozen=True)
class CallTimeline(_Plot[TimelineRow]):
    columns = _TIMELINE_COLUMNS


def timeline_table(rows: Sequence[TimelineRow]) -> str:
    """The timeline as text: history = what the budget measures, request = what the capacity
    check measures (history plus tool schemas), trims = those made before the call."""
    return _fields_table(_TIMELINE_COLUMNS, rows)


_OUTCOME_COLORS = {"reply": _KEPT_COLOR, "tool_calls": "#1565c0", "overflow": _DROPPED_COLOR}


def timeline_rows(calls: Sequence[ProviderCall]) -> list[TimelineRow]:
    """The numbers of `call_timeline`: one row per dispatch, trims as `reason -rows`."""
    return [
        TimelineRow(
            call=n,
            turn=c.turn_id,
            iteration=c.iteration,
            kind=c.kind,
            outcome=c.outcome,
            history=c.history_tokens,
            tokens=c.tokens,
            budget=c.budget,
            window=c.window,
            trims=", ".join(f"{t.reason.value} -{t.dropped_messages}" for t in c.trims) or None,
        )
        for n, c in enumerate(calls, start=1)
    ]


def call_timeline(
    calls: Sequence[ProviderCall], *, title: str, provider_window: int | None = None
) -> CallTimeline:
    """Estimated tokens sent at each provider call: the history (coloured by the call's
    outcome; what the budget measures) topped by the tool schemas (grey; the capacity check
    counts both), against the budget and the capacity. A dotted line marks each trim;
    `provider_window` draws a window the provider enforces on its own (unknown to the runtime)."""
    rows = timeline_rows(calls)
    figure, axes = plt.subplots(figsize=(10, 4.5))
    xs = [r.call for r in rows]
    axes.bar(
        xs, [r.history for r in rows], color=[_OUTCOME_COLORS[r.outcome] for r in rows], alpha=0.7
    )
    axes.bar(
        xs,
        [r.tokens - r.history for r in rows],
        bottom=[r.history for r in rows],
        color=_FIXED_COLOR,
        alpha=0.7,
        label="tool schemas",
    )
    axes.plot(
        xs,
        [r.window for r in rows],
        color="black",
        linestyle="--",
        drawstyle="steps-mid",
        label="capacity (window)",
    )
    if provider_window is not None:
        axes.axhline(
            provider_window,
            color=_DROPPED_COLOR,
            linestyle=":",
            label=f"provider's own window ({provider_window:,})",
        )
    if any(r.budget for r in rows):
        axes.plot(
            xs,
            [r.budget for r in rows],
            color="#ef6c00",
            linestyle="-.",
            drawstyle="steps-mid",
            label="budget (proactive target)",
        )
    for r in rows:
        axes.annotate(
            str(r.tokens),
            (r.call, r.tokens),
            textcoords="offset points",
            xytext=(0, 4),
            ha="center",
            fontsize=8,
        )
        if r.trims:
            axes.axvline(r.call - 0.5, color="#6a1b9a", linestyle=":")
            axes.annotate(
                r.trims.replace(", ", "\n"),
                (r.call - 0.5, 0),
                textcoords="offset points",
                xytext=(3, 4),
                fontsize=7,
                color="#6a1b9a",
                rotation=90,
                va="bottom",
            )
    axes.set_xticks(
        xs,
        [
            f"t{r.turn}.{r.iteration}" + ("\nfinal" if r.kind == "final_summary" else "")
            for r in rows
        ],
        fontsize=8,
    )
    _label(axes, "provider call (turn.iteration)", "estimated tokens sent", title)
    axes.legend(
        handles=[
            *axes.get_legend_handles_labels()[0],
            *(
                Patch(color=color, alpha=0.7, label=outcome)
                for outcome, color in _OUTCOME_COLORS.items()
            ),
            Line2D([], [], color="#6a1b9a", linestyle=":", label="trim before the call"),
        ],
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=8,
    )
    figure.tight_layout()
    return CallTimeline(figure, rows)


__all__ = [
    "BudgetCut",
    "CallTimeline",
    "CutRow",
    "EstimatePlot",
    "EstimateRow",
    "TimelineRow",
    "TurnMap",
    "TurnMapRow",
    "budget_cut",
    "call_timeline",
    "cumulative_from_newest",
    "estimate_rows",
    "estimate_vs_bytes",
    "history_table",
    "item_costs",
    "kept_rows",
    "print_block",
    "row_summary",
    "text_table",
    "timeline_rows",
    "timeline_table",
    "turn_map",
    "turn_map_rows",
]
