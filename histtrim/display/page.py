"""One history view as HTML: a block per turn (kept or dropped), a row per message with its
tokens, and each tool call linked to its result. Row anchors come from a digest of the
content, never from `id()`, so the HTML is deterministic."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from histtrim.carriers import parse_tool_calls, parse_tool_result
from histtrim.display.pieces import (
    escape,
    marker_block,
    preview,
    shorten,
    text_block,
    user_text_block,
)
from histtrim.messages import (
    BREADCRUMB,
    TOOL_RESULTS_PREFIX,
    AssistantToolCalls,
    Attachment,
    ChatMessage,
    ConversationMessage,
    ToolResults,
)
from histtrim.turn_sizes import price_items

Status = Literal["kept", "dropped"]
"""Whether a row of the view is one the trim kept or one it dropped."""

_ROLE_COLOURS = {"system": "#6a737d", "user": "#0366d6", "assistant": "#22863a", "tool": "#b35900"}
_MONO = "font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px"


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


HEAD_ROWS = 100
TAIL_ROWS = 300
"""A long history is shown as its first turns (about HEAD_ROWS rows) and its last (about
TAIL_ROWS), the turns between counted, never rendered: the page stays a few MB at most."""


def _fill(groups: Sequence[tuple[int, range, bool]], rows: int) -> int:
    """How many leading groups fit in `rows` rows (at least one)."""
    taken = used = 0
    for _, group, _ in groups:
        if taken and used + len(group) > rows:
            break
        taken, used = taken + 1, used + len(group)
    return taken


class HistoryPage:
    """Renders one history view: blocks per turn, rows with anchors and tool links."""

    def __init__(
        self,
        items: Sequence[ConversationMessage],
        status: Sequence[Status],
        crumb_present: bool,
    ) -> None:
        self.items, self.status = items, status
        self.priced = price_items(items, crumb_present)
        self.crumb = self.priced.index.crumb
        self.links = _link_tools(items)
        self.key = _digest(items, status)

    def anchor(self, row: int) -> str:
        return f"histtrim-{self.key}-r{row}"

    def blocks(self, marker_before_first_kept: str | None = None) -> str:
        """One block per turn (and per kept/dropped run). A long history shows its first
        turns (about `HEAD_ROWS` rows) and its last (about `TAIL_ROWS`), and says how many
        turns and messages are not shown between them."""
        groups = self.groups()
        head = _fill(groups, HEAD_ROWS)
        tail = len(groups) - _fill(groups[head:][::-1], TAIL_ROWS)
        out: list[str] = []
        marker_done = marker_before_first_kept is None
        for g, (turn, rows, dropped) in enumerate(groups):
            if g == head and head < tail:
                hidden = groups[head:tail]
                turns = len({t for t, _, _ in hidden})
                messages = sum(len(r) for _, r, _ in hidden)
                out.append(
                    marker_block(
                        f"… {turns:,} turn{'s' * (turns != 1)} ({messages:,} messages) "
                        "not shown …"
                    )
                )
            if not marker_done and turn > 0 and not dropped:
                out.append(marker_block(marker_before_first_kept or ""))
                marker_done = True
            if g < head or g >= tail:
                out.append(self.block(turn, rows, dropped))
        return "".join(out)

    def groups(self) -> list[tuple[int, range, bool]]:
        """(turn, rows, dropped) of each run of rows of one turn and one status."""
        turn_of = self.priced.turn_of()
        found: list[tuple[int, range, bool]] = []
        start = 0
        while start < len(self.items):
            turn, end = turn_of[start], start + 1
            while end < len(self.items) and (turn_of[end], self.status[end]) == (
                turn,
                self.status[start],
            ):
                end += 1
            found.append((turn, range(start, end), self.status[start] == "dropped"))
            start = end
        return found

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
            f'<div style="font-weight:600">{escape(title)}'
            f'<span style="font-weight:400;color:#666"> · {" · ".join(facts)}</span></div>'
        )
        if len(rows) > HEAD_ROWS + TAIL_ROWS:
            hidden = len(rows) - HEAD_ROWS - TAIL_ROWS
            note = marker_block(f"… {hidden:,} messages of this turn not shown …")
            shown = (*rows[:HEAD_ROWS], -1, *rows[-TAIL_ROWS:])
            body = "".join(note if i < 0 else self.row(i) for i in shown)
        else:
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
            f'font-weight:600">{escape(label)}</span>'
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
            return f"{text_block(BREADCRUMB)}<div style=\"color:#9a6700\">{escape(note)}</div>"
        if isinstance(item, AssistantToolCalls):
            text = text_block(item.text) if item.text else ""
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
                text = text_block(parsed.text) if parsed.text else ""
                calls = [(c.id, c.name, c.arguments) for c in parsed.calls]
                return text + "".join(self.call(i, *call) for call in calls)
        if item.role == "tool":
            result = parse_tool_result(item)
            if result is not None:
                return self.result(
                    i, result.tool_call_id, result.content, _targets(result.attachments)
                )
        if item.role == "user":
            return user_text_block(item.content)
        return text_block(item.content)

    def call(self, row: int, call_id: str, name: str, arguments: str) -> str:
        target = self.links.result_of.get((row, call_id))
        link = (
            f'<a href="#{self.anchor(target)}">→ result</a>'
            if target is not None
            else '<span style="color:#b00">no result in this history</span>'
        )
        return (
            f'<div style="{_MONO}">⚙ <b>{escape(name)}</b>({preview(arguments)}) '
            f'<span style="color:#888">{escape(call_id)}</span> {link}</div>'
        )

    def result(self, row: int, call_id: str, content: str, attachments: list[str] | None) -> str:
        call = self.links.call_of.get((row, call_id))
        head = (
            f'<a href="#{self.anchor(call[0])}">↩ {escape(call[1])}</a>'
            if call is not None
            else '<span style="color:#b00">↩ no call in this history</span>'
        )
        images = "".join(
            f'<div style="color:#666">🖼 attachment: {escape(shorten(target))}</div>'
            for target in attachments or []
        )
        return (
            f'<div>{head} <span style="color:#888;{_MONO}">{escape(call_id)}</span></div>'
            f"{text_block(content)}{images}"
        )


def _targets(attachments: Sequence[Attachment] | None) -> list[str] | None:
    return None if attachments is None else [a.target for a in attachments]
