"""Per-turn figures and the Jupyter rich display of histories and trim results.

The display depends on the results, never the reverse: trim results render as HTML in
Jupyter because this module registers `trim_result_html` with IPython's HTML formatter.
The HTML is deterministic (ids come from a digest of the content, never from `id()`), and
every piece of message text is escaped."""

from __future__ import annotations

import hashlib
import html
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .carriers import (
    IMAGE_MARKER,
    marker_image,
    parse_tool_calls,
    parse_tool_result,
    to_chat_messages,
)
from .counting import TokenCounter, counted_costs
from .estimate import dispatched_images, message_costs
from .messages import (
    BREADCRUMB,
    TOOL_RESULTS_PREFIX,
    AssistantToolCalls,
    Attachment,
    ChatMessage,
    ConversationMessage,
    ToolResults,
    conversation_rows,
)
from .policy import SPEC, Policy
from .trim import TrimResult, TurnCountTrimResult
from .turns import TurnIndex, index_turns, leading_system_count

PREVIEW_CHARS = 400
"""Longer message text is cut in the HTML (the figures always use the whole message)."""

Status = Literal["kept", "dropped"]


@dataclass(frozen=True, slots=True)
class TurnStats:
    """One turn's share of a history (turn 0 is the system prefix and the breadcrumb)."""

    turn: int
    first_row: int
    messages: int
    tokens: int
    images: int
    cumulative: int
    """Tokens kept when this turn and every newer one are kept, the prefix included: the
    figure the token-budget trim compares with the budget."""


@dataclass(frozen=True, slots=True)
class _Priced:
    """A history with its turn index and each item's estimate and dispatched images."""

    items: Sequence[ConversationMessage]
    index: TurnIndex
    costs: list[int]
    images: list[int]

    def turn_of(self) -> list[int]:
        """1-based turn of each item; 0 for the system prefix and the breadcrumb."""
        return [turn + 1 for turn in self.index.turn_of()]


def _price(
    items: Sequence[ConversationMessage],
    crumb_present: bool,
    token_counter: TokenCounter | None = None,
    policy: Policy = SPEC,
) -> _Priced:
    index = index_turns(items, crumb_present=crumb_present)
    rows: list[ChatMessage] = []
    owner: list[int] = []
    for i, item in enumerate(items):
        expanded = [item] if isinstance(item, ChatMessage) else to_chat_messages([item])
        rows.extend(expanded)
        owner.extend([i] * len(expanded))
    row_index = index_turns(rows, crumb_present=crumb_present)
    row_costs = (
        message_costs(rows, row_index, policy=policy)
        if token_counter is None
        else counted_costs(rows, token_counter, row_index, policy=policy)
    )
    current = row_index.current_turn_after
    costs, images = [0] * len(items), [0] * len(items)
    for r, (i, row) in enumerate(zip(owner, rows, strict=True)):
        costs[i] += row_costs[r]
        images[i] += dispatched_images(row, current_turn=r > current)
    return _Priced(items, index, costs, images)


def turn_stats(
    history: Iterable[ConversationMessage | Mapping[str, Any]],
    *,
    crumb_present: bool = False,
    token_counter: TokenCounter | None = None,
    policy: Policy = SPEC,
) -> list[TurnStats]:
    """Messages, tokens, images and the cumulative size from the newest turn, per turn.

    Structured items are priced as the provider-facing rows they become; a `token_counter`
    prices the rows' text instead of EST-1's bytes (`histtrim.counting`)."""
    priced = _price(conversation_rows(history), crumb_present, token_counter, policy)
    turn_of = priced.turn_of()
    turns = priced.index.turn_count
    first = [0, *(priced.index.turn_start(k) for k in range(turns))]
    messages, tokens, images = [0] * (turns + 1), [0] * (turns + 1), [0] * (turns + 1)
    for i, turn in enumerate(turn_of):
        messages[turn] += 1
        tokens[turn] += priced.costs[i]
        images[turn] += priced.images[i]
    stats: list[TurnStats] = []
    cumulative = tokens[0]
    for t in range(turns, -1, -1):
        if t > 0:
            cumulative += tokens[t]
        stats.append(TurnStats(t, first[t], messages[t], tokens[t], images[t], cumulative))
    return stats[::-1]


# -- HTML --------------------------------------------------------------------------------

_ROLE_COLOURS = {"system": "#6a737d", "user": "#0366d6", "assistant": "#22863a", "tool": "#b35900"}
_FONT = "font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:13px;line-height:1.45"
_MONO = "font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px"


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _preview(text: str) -> str:
    if len(text) <= PREVIEW_CHARS:
        return _e(text)
    more = len(text) - PREVIEW_CHARS
    return f'{_e(text[:PREVIEW_CHARS])}<span style="color:#888"> … (+{more:,} characters)</span>'


def _digest(items: Sequence[ConversationMessage], status: Sequence[Status]) -> str:
    payload = json.dumps(
        [[item.model_dump(mode="json"), s] for item, s in zip(items, status, strict=True)],
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha1(payload.encode("utf-8")).hexdigest()[:10]


@dataclass(frozen=True, slots=True)
class _Links:
    """Where each tool call's result is, and which call each result answers (row anchors)."""

    result_of: dict[tuple[int, str], int]
    call_of: dict[tuple[int, str], tuple[int, str]]


def _link_tools(items: Sequence[ConversationMessage]) -> _Links:
    """Pair each call with the first later result carrying its id (names kept for display)."""
    open_calls: dict[str, tuple[int, str]] = {}
    result_of: dict[tuple[int, str], int] = {}
    call_of: dict[tuple[int, str], tuple[int, str]] = {}
    for i, item in enumerate(items):
        for call_id, name in _calls_of(item):
            open_calls[call_id] = (i, name)
        for call_id in _results_of(item):
            if call_id in open_calls:
                row, name = open_calls.pop(call_id)
                result_of[(row, call_id)] = i
                call_of[(i, call_id)] = (row, name)
    return _Links(result_of, call_of)


def _calls_of(item: ConversationMessage) -> list[tuple[str, str]]:
    if isinstance(item, AssistantToolCalls):
        return [(c.id, c.name) for c in item.tool_calls]
    if isinstance(item, ChatMessage):
        parsed = parse_tool_calls(item)
        if parsed is not None:
            return [(c.id, c.name) for c in parsed.calls]
    return []


def _results_of(item: ConversationMessage) -> list[str]:
    if isinstance(item, ToolResults):
        return [r.tool_call_id for r in item.results]
    if isinstance(item, ChatMessage):
        result = parse_tool_result(item)
        if result is not None:
            return [result.tool_call_id]
    return []


class _Page:
    """Renders one history view: blocks per turn, rows with anchors and tool links."""

    def __init__(
        self,
        items: Sequence[ConversationMessage],
        status: Sequence[Status],
        crumb_present: bool,
    ) -> None:
        self.items, self.status = items, status
        self.priced = _price(items, crumb_present)
        self.crumb = self.priced.index.crumb
        self.links = _link_tools(items)
        self.key = _digest(items, status)

    def anchor(self, row: int) -> str:
        return f"histtrim-{self.key}-r{row}"

    def blocks(self, marker_before_first_kept: str | None = None) -> str:
        turn_of = self.priced.turn_of()
        out: list[str] = []
        marker_done = marker_before_first_kept is None
        start = 0
        while start < len(self.items):
            turn, end = turn_of[start], start + 1
            while end < len(self.items) and (turn_of[end], self.status[end]) == (
                turn,
                self.status[start],
            ):
                end += 1
            dropped = self.status[start] == "dropped"
            if not marker_done and turn > 0 and not dropped:
                out.append(_marker(marker_before_first_kept or ""))
                marker_done = True
            out.append(self.block(turn, range(start, end), dropped))
            start = end
        return "".join(out)

    def block(self, turn: int, rows: range, dropped: bool) -> str:
        tokens = sum(self.priced.costs[i] for i in rows)
        images = sum(self.priced.images[i] for i in rows)
        count = len(rows)
        title = f"Turn {turn}" if turn else self.prefix_title(rows)
        facts = [f"{count} message{'s' * (count != 1)}", f"{tokens:,} tokens"]
        if images:
            facts.append(f"{images} image{'s' * (images != 1)}")
        facts.append("dropped" if dropped else ("always kept" if turn == 0 else "kept"))
        border = "#bbb" if dropped else ("#6a737d" if turn == 0 else "#0366d6")
        style = f"border-left:4px solid {border};margin:6px 0;padding:2px 0 2px 8px"
        if dropped:
            style += ";opacity:0.5;background:#f3f3f3;color:#555"
        header = (
            f'<div style="font-weight:600">{_e(title)}'
            f'<span style="font-weight:400;color:#666"> · {" · ".join(facts)}</span></div>'
        )
        body = "".join(self.row(i) for i in rows)
        state = "dropped" if dropped else "kept"
        return f'<div data-turn="{turn}" data-state="{state}" style="{style}">{header}{body}</div>'

    def prefix_title(self, rows: range) -> str:
        has_crumb = self.crumb in rows
        if has_crumb and len(rows) == 1:
            return "Breadcrumb"
        return "System prefix and breadcrumb" if has_crumb else "System prefix"

    def row(self, i: int) -> str:
        item = self.items[i]
        is_crumb = i == self.crumb
        role = item.role if isinstance(item, ChatMessage) else (
            "assistant" if isinstance(item, AssistantToolCalls) else "tool"
        )
        label: str = role
        if is_crumb:
            label = "breadcrumb"
        elif isinstance(item, ChatMessage) and role == "user" and item.content.startswith(
            TOOL_RESULTS_PREFIX
        ):
            label = "user · tool results"
        colour = "#9a6700" if is_crumb else _ROLE_COLOURS.get(role, "#444")
        badge = (
            f'<span style="display:inline-block;min-width:7.5em;color:{colour};'
            f'font-weight:600">{_e(label)}</span>'
        )
        tokens = (
            f'<span style="display:inline-block;min-width:6.5em;color:#666;text-align:right;'
            f'margin-right:8px">{self.priced.costs[i]:,} tok</span>'
        )
        style = "display:flex;align-items:flex-start;padding:1px 0"
        if is_crumb:
            style += ";background:#fff5cc;border:1px dashed #d4a72c;padding:2px 4px"
        content = self.content(i, item, is_crumb)
        return (
            f'<div id="{self.anchor(i)}" style="{style}">{badge}{tokens}'
            f'<div style="flex:1;min-width:0">{content}</div></div>'
        )

    def content(self, i: int, item: ConversationMessage, is_crumb: bool) -> str:
        if is_crumb:
            note = "breadcrumb: earlier turns were left out here (SEEN-1)"
            return f"{_text(BREADCRUMB)}<div style=\"color:#9a6700\">{_e(note)}</div>"
        if isinstance(item, AssistantToolCalls):
            text = _text(item.text) if item.text else ""
            calls = [(c.id, c.name, c.arguments) for c in item.tool_calls]
            return text + "".join(self.call(i, *call) for call in calls)
        if isinstance(item, ToolResults):
            return "".join(
                self.result(i, r.tool_call_id, r.content, _targets(r.attachments))
                for r in item.results
            )
        if item.role == "assistant":
            parsed = parse_tool_calls(item)
            if parsed is not None:
                text = _text(parsed.text) if parsed.text else ""
                calls = [(c.id, c.name, c.arguments) for c in parsed.calls]
                return text + "".join(self.call(i, *call) for call in calls)
        if item.role == "tool":
            result = parse_tool_result(item)
            if result is not None:
                return self.result(
                    i, result.tool_call_id, result.content, _targets(result.attachments)
                )
        if item.role == "user":
            return _user_text(item.content)
        return _text(item.content)

    def call(self, row: int, call_id: str, name: str, arguments: str) -> str:
        target = self.links.result_of.get((row, call_id))
        link = (
            f'<a href="#{self.anchor(target)}">→ result</a>'
            if target is not None
            else '<span style="color:#b00">no result in this history</span>'
        )
        return (
            f'<div style="{_MONO}">⚙ <b>{_e(name)}</b>({_preview(arguments)}) '
            f'<span style="color:#888">{_e(call_id)}</span> {link}</div>'
        )

    def result(self, row: int, call_id: str, content: str, attachments: list[str] | None) -> str:
        call = self.links.call_of.get((row, call_id))
        head = (
            f'<a href="#{self.anchor(call[0])}">↩ {_e(call[1])}</a>'
            if call is not None
            else '<span style="color:#b00">↩ no call in this history</span>'
        )
        images = "".join(
            f'<div style="color:#666">🖼 attachment: {_e(_short(target))}</div>'
            for target in attachments or []
        )
        return (
            f'<div>{head} <span style="color:#888;{_MONO}">{_e(call_id)}</span></div>'
            f"{_text(content)}{images}"
        )


def _targets(attachments: Sequence[Attachment] | None) -> list[str] | None:
    return None if attachments is None else [a.target for a in attachments]


def _text(text: str) -> str:
    # Wrap at spaces only (never inside a word); a longer word scrolls.
    return f'<div style="white-space:pre-wrap;overflow-x:auto">{_preview(text)}</div>'


def _image(target: str) -> str:
    """An image reference; an inline `data:image/...` image is shown as the image itself."""
    label = f'<div style="color:#666">🖼 image: {_e(_short(target))}</div>'
    if not target.startswith("data:image/"):
        return label
    return (
        f'<div><img src="{_e(target)}" alt="image pasted by the user" '
        'style="width:4em;height:4em;object-fit:contain;image-rendering:pixelated;'
        f'border:1px solid #999;vertical-align:middle"></div>{label}'
    )


def _user_text(text: str) -> str:
    """User text with each loadable image marker shown as an image reference (EST-2)."""
    pieces: list[str] = []
    position = 0
    for match in IMAGE_MARKER.finditer(text):
        image = marker_image(match.group(1))
        if image is None:
            continue
        if match.start() > position:
            pieces.append(_text(text[position : match.start()]))
        pieces.append(_image(image))
        position = match.end()
    if not pieces:
        return _text(text)
    if position < len(text):
        pieces.append(_text(text[position:]))
    return "".join(pieces)


def _short(target: str, limit: int = 80) -> str:
    return target if len(target) <= limit else target[:limit] + "…"


def _marker(text: str) -> str:
    return (
        '<div style="margin:6px 0;padding:2px 8px;border:1px dashed #d4a72c;'
        f'background:#fff5cc;color:#9a6700">{_e(text)}</div>'
    )


def _frame(title: str, summary: str, blocks: str) -> str:
    return (
        f'<div class="histtrim" style="{_FONT}">'
        f'<div style="font-weight:700">{_e(title)}</div>'
        f'<div style="color:#444;margin-bottom:4px">{_e(summary)}</div>'
        f"{blocks}</div>"
    )


def history_html(
    history: Iterable[ConversationMessage | Mapping[str, Any]], *, crumb_present: bool = False
) -> str:
    """One block per turn, token counts, tool calls linked to their results."""
    items = conversation_rows(history)
    page = _Page(items, ["kept"] * len(items), crumb_present)
    total = sum(page.priced.costs)
    turns = page.priced.index.turn_count
    summary = f"{turns} turns · {len(items)} messages · {total:,} tokens"
    return _frame("History", summary, page.blocks())


def _crumb_counted(rows: Sequence[ConversationMessage], turns: int) -> bool:
    """Whether the row after the prefix is a breadcrumb the result did not count as a turn.

    A result's kept/dropped turn counts exclude the breadcrumb, while an index built
    without the flag counts it: the difference tells, without reading any text."""
    return index_turns(rows).turn_count == turns + 1


def trim_result_html(
    result: TrimResult | TurnCountTrimResult[Any], *, crumb_inserted: bool = False
) -> str:
    """The input of a trim, dropped turns greyed out, where the breadcrumb goes marked."""
    kept: Sequence[ConversationMessage] = result.history
    dropped: Sequence[ConversationMessage] = result.dropped
    crumb_kept = _crumb_counted(kept, result.kept_turns)
    crumb_dropped = bool(dropped) and _crumb_counted(dropped, result.dropped_turns)
    body = leading_system_count(kept) + crumb_kept
    items = [*kept[:body], *dropped, *kept[body:]]
    kept_status: list[Status] = ["kept"]
    dropped_status: list[Status] = ["dropped"]
    rest = len(kept) - body
    status = [*kept_status * body, *dropped_status * len(dropped), *kept_status * rest]
    page = _Page(items, status, crumb_kept or crumb_dropped)
    turns = result.kept_turns + result.dropped_turns
    if isinstance(result, TrimResult):
        title = "Token-budget trim"
        if result.budget_tokens == 0:
            summary = f"budget 0: proactive trimming is off · {turns} turns kept"
        elif result.trimmed:
            summary = (
                f"kept {result.kept_turns} of {turns} turns · dropped {result.dropped_messages}"
                f" messages · {result.tokens_before:,} → {result.tokens_after:,} tokens"
                f" (budget {result.budget_tokens:,})"
            )
            if result.over_budget:
                summary += " · the newest turn alone is over the budget and stays (CAP-1)"
        else:
            summary = (
                f"no trim: {turns} turns · {result.tokens_before:,} tokens"
                f" (budget {result.budget_tokens:,})"
            )
    else:
        title = "Turn-limit trim"
        if result.trimmed:
            summary = (
                f"kept {result.kept_turns} of {turns} turns (max_turns {result.max_turns})"
                f" · dropped {result.dropped_messages} messages"
            )
        else:
            summary = f"no trim: {turns} turns (max_turns {result.max_turns})"
    marker = None
    if result.trimmed and not crumb_kept:
        marker = (
            "breadcrumb inserted here, before the first kept turn (SEEN-1)"
            if crumb_inserted
            else "the owner inserts the breadcrumb here, before the first kept turn (SEEN-1)"
        )
    return _frame(title, summary, page.blocks(marker))


@dataclass(frozen=True)
class History:
    """Wraps a history for Jupyter: `History(rows)` renders one block per turn."""

    rows: Sequence[ConversationMessage | Mapping[str, Any]]
    crumb_present: bool = False

    def _repr_html_(self) -> str:
        return history_html(self.rows, crumb_present=self.crumb_present)

    def __repr__(self) -> str:
        stats = turn_stats(self.rows, crumb_present=self.crumb_present)
        total = stats[0].cumulative if stats else 0
        return f"History({len(stats) - 1} turns, {len(self.rows)} messages, {total:,} tokens)"


def register_ipython_formatters(shell: Any = None) -> bool:
    """Render `TrimResult` and `TurnCountTrimResult` with `trim_result_html` in Jupyter.

    Called when this module is imported inside IPython (so `import histtrim` is enough);
    call it yourself for a shell started later. Returns whether a shell was found."""
    if shell is None:
        ipython = sys.modules.get("IPython")
        shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return False
    html = shell.display_formatter.formatters["text/html"]
    for result_type in (TrimResult, TurnCountTrimResult):
        html.for_type(result_type, trim_result_html)
    return True


register_ipython_formatters()
