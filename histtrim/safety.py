"""Safety nets beside the whole-turn trims: the orphan sweep (PAIR-2), the per-result
`max_tool_result_chars` cap (PAIR-3) and the row-counting channel sender cache (LIMIT-3)."""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar, overload

from .carriers import parse_tool_calls, parse_tool_result
from .messages import (
    AssistantToolCalls,
    ChatMessage,
    ConversationMessage,
    ToolCall,
    ToolResults,
    conversation_rows,
)
from .policy import SPEC, Policy
from .turns import index_turns
from .validation import non_negative

M = TypeVar("M", ChatMessage, ConversationMessage)

DEFAULT_MAX_TOOL_RESULT_CHARS = SPEC.max_tool_result_chars
DEFAULT_CHANNEL_CACHE_ROWS = SPEC.channel_cache_rows


@dataclass(frozen=True, slots=True)
class OrphanRemoval:
    """One thing the sweep removed: a result without its call, or a call without its result."""

    kind: Literal["result", "call"]
    tool_call_id: str | None
    """None for a tool row whose envelope names no call id."""
    position: int
    """The index of the row or item in the swept input."""


@dataclass(frozen=True)
class SweepResult(Generic[M]):
    """The swept history and what was removed, in input order."""

    history: list[M]
    removed: tuple[OrphanRemoval, ...]

    @property
    def changed(self) -> bool:
        return bool(self.removed)


def _calls_of(item: object) -> tuple[str | None, tuple[ToolCall, ...]] | None:
    if isinstance(item, AssistantToolCalls):
        return item.text, item.tool_calls
    if isinstance(item, ChatMessage):
        parsed = parse_tool_calls(item)
        if parsed is not None:
            return parsed.text, parsed.calls
    return None


def _result_ids(item: object) -> list[str | None] | None:
    if isinstance(item, ToolResults):
        return [result.tool_call_id for result in item.results]
    if isinstance(item, ChatMessage) and item.role == "tool":
        parsed = parse_tool_result(item)
        return [parsed.tool_call_id if parsed is not None else None]
    return None


@overload
def sweep_orphans(
    history: Sequence[ChatMessage], *, crumb_present: bool = False
) -> SweepResult[ChatMessage]: ...
@overload
def sweep_orphans(
    history: Iterable[ConversationMessage | Mapping[str, Any]], *, crumb_present: bool = False
) -> SweepResult[ConversationMessage]: ...
def sweep_orphans(
    history: Iterable[ConversationMessage | Mapping[str, Any]], *, crumb_present: bool = False
) -> SweepResult[Any]:
    """Remove native tool results whose call no earlier assistant row of the same turn
    issued, and strip calls no later result of the same turn answers (keeping the
    assistant's text; dropping the row if it had none). `[Tool results]` carriers stay.
    A real user message closes an exchange, so rows before the first turn pair only
    among themselves.

    Works on provider-facing rows and on the structured history alike; `crumb_present` is
    the owner's breadcrumb flag, as for the trims."""
    rows = conversation_rows(history)
    starts = index_turns(rows, crumb_present=crumb_present).starts
    # The exchange a row belongs to: its turn, or the rows before the first turn.
    owner = [bisect_right(starts, pos) for pos in range(len(rows))]
    first_call: dict[tuple[int, str], int] = {}
    last_result: dict[tuple[int, str], int] = {}
    for pos, item in enumerate(rows):
        calls = _calls_of(item)
        for call in calls[1] if calls else ():
            first_call.setdefault((owner[pos], call.id), pos)
        for call_id in _result_ids(item) or ():
            if call_id is not None:
                last_result[(owner[pos], call_id)] = pos

    kept: list[ConversationMessage] = []
    removed: list[OrphanRemoval] = []
    for pos, item in enumerate(rows):
        calls = _calls_of(item)
        ids = _result_ids(item)
        if calls is not None:
            text, tool_calls = calls
            answered = [c for c in tool_calls if last_result.get((owner[pos], c.id), -1) > pos]
            removed.extend(
                OrphanRemoval("call", c.id, pos) for c in tool_calls if c not in answered
            )
            if len(answered) == len(tool_calls):
                kept.append(item)
            elif answered:
                kept.append(_with_calls(item, text, answered))
            elif text:
                kept.append(ChatMessage.assistant(text))
        elif ids is not None:
            issued = [
                cid is not None and first_call.get((owner[pos], cid), len(rows)) < pos
                for cid in ids
            ]
            removed.extend(
                OrphanRemoval("result", cid, pos)
                for cid, ok in zip(ids, issued, strict=True)
                if not ok
            )
            if all(issued):
                kept.append(item)
            elif isinstance(item, ToolResults) and any(issued):
                results = tuple(r for r, ok in zip(item.results, issued, strict=True) if ok)
                kept.append(ToolResults(results=results))
        else:
            kept.append(item)
    return SweepResult(kept, tuple(removed))


def _with_calls(
    item: ConversationMessage, text: str | None, calls: list[ToolCall]
) -> ConversationMessage:
    if isinstance(item, AssistantToolCalls):
        return AssistantToolCalls(text=text, tool_calls=tuple(calls))
    return ChatMessage.assistant_tool_calls(text, calls)


def cap_tool_result(
    content: str, max_chars: int | None = None, *, policy: Policy = SPEC
) -> str:
    """Bound one tool result when it is recorded (PAIR-3): keep the first 2/3 and the last
    1/3 of `max_chars` characters with a truncation marker between; 0 turns the cap off.
    None means the policy's cap (50,000); the split is the policy's too."""
    if max_chars is None:
        max_chars = policy.max_tool_result_chars
    non_negative("max_tool_result_chars", max_chars)
    if max_chars == 0 or len(content) <= max_chars:
        return content
    head, tail = policy.tool_result_split(max_chars)
    cut = len(content) - max_chars
    return (
        f"{content[:head]}\n\n[... {cut} characters truncated ...]\n\n"
        f"{content[len(content) - tail :]}"
    )


class ChannelSenderCache:
    """Recent rows per sender of a channel (LIMIT-3): counts individual rows, not turns;
    `max_rows` 0 means the default (50); the oldest row is dropped first."""

    def __init__(self, max_rows: int = 0, *, policy: Policy = SPEC) -> None:
        self.configured = non_negative("max_rows", max_rows)
        self.capacity = max_rows or policy.channel_cache_rows
        self._rows: dict[Hashable, deque[ChatMessage]] = {}

    def append(self, sender: Hashable, message: ChatMessage) -> int:
        """Record one row; returns how many old rows were dropped to make room (0 or 1)."""
        rows = self._rows.setdefault(sender, deque())
        rows.append(message)
        if len(rows) > self.capacity:
            rows.popleft()
            return 1
        return 0

    def extend(self, sender: Hashable, messages: Iterable[ChatMessage]) -> int:
        """Record rows in order; returns how many old rows were dropped."""
        return sum(self.append(sender, message) for message in messages)

    def rows(self, sender: Hashable) -> list[ChatMessage]:
        return list(self._rows.get(sender, ()))

    def senders(self) -> list[Hashable]:
        return list(self._rows)
