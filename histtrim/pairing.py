"""PAIR-2: tool-call pairing: the orphan sweep, row for row with the reference runtime, and the
validator for the rule every OpenAI-style API enforces on a request.

Both read rows through the one envelope parser (`carriers.json_object`): a native call is any
`tool_calls` element with a string `id`; a `tool` row with no readable `tool_call_id` is a
legacy row, kept by the sweep and reported (not as an error) by the validator."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar, overload

from histtrim.carriers import json_object, tool_call_ids, tool_result_call_id
from histtrim.messages import (
    AssistantToolCalls,
    ChatMessage,
    ConversationMessage,
    ToolResults,
    conversation_rows,
)
from histtrim.turns import index_turns

M = TypeVar("M", ChatMessage, ConversationMessage)


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


def _dispatch(item: object) -> tuple[str, ...] | None:
    """The call ids an item dispatches, or None when it is no native dispatch."""
    if isinstance(item, AssistantToolCalls):
        return tuple(call.id for call in item.tool_calls)
    if isinstance(item, ChatMessage):
        return tool_call_ids(item)
    return None


def _answers(item: object) -> list[str | None] | None:
    """The call ids a tool item answers (None for a legacy row), or None for other items."""
    if isinstance(item, ToolResults):
        return [result.tool_call_id for result in item.results]
    if isinstance(item, ChatMessage) and item.role == "tool":
        return [tool_result_call_id(item)]
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
    """Make a restored or edited history pass the pairing rule, as the reference does:

    - a native result stays only when the nearest assistant row of the contiguous
      assistant/tool run before it issued its id;
    - a dispatch directly following another dispatch (still unresolved) is removed, and
      the results only it issued go with it;
    - calls no kept result answers are stripped; a row left with no call keeps its trimmed
      text as a plain assistant row, or goes when that text is empty;
    - tool rows with no readable id (legacy rows) and `[Tool results]` carriers stay.

    Works on provider-facing rows and on the structured history alike; `crumb_present` is
    the owner's breadcrumb flag, checked as for the trims."""
    rows = conversation_rows(history)
    index_turns(rows, crumb_present=crumb_present)  # a flag naming no slot is an error
    removed: list[OrphanRemoval] = []
    answered: dict[int, set[str]] = {}  # kept dispatch -> the ids its kept results answer
    dispatched: dict[int, tuple[str, ...]] = {}  # kept dispatch -> the ids it issued
    keep: list[Any] = [True] * len(rows)  # True, False, or the kept subset of a ToolResults
    active: int | None = None  # the nearest assistant row of the run, when it dispatches
    issued: frozenset[str] = frozenset()  # the ids it dispatched
    after_dispatch = False
    for pos, item in enumerate(rows):
        ids = _dispatch(item)
        results = _answers(item) if ids is None else None
        if ids is not None:
            if after_dispatch:  # the previous dispatch is still unresolved
                keep[pos] = False
                removed.extend(OrphanRemoval("call", cid, pos) for cid in ids)
            else:
                active, issued = pos, frozenset(ids)
                answered[pos], dispatched[pos] = set(), ids
            after_dispatch = True
            continue
        after_dispatch = False
        if results is None:
            active = None  # a user/system row ends the run; a plain assistant row is nearest
            continue
        ok = [cid is None or (active is not None and cid in issued) for cid in results]
        for cid, good in zip(results, ok, strict=True):
            if not good:
                removed.append(OrphanRemoval("result", cid, pos))
            elif cid is not None and active is not None:
                answered[active].add(cid)
        if isinstance(item, ToolResults) and not all(ok):
            kept = tuple(r for r, good in zip(item.results, ok, strict=True) if good)
            keep[pos] = ToolResults(results=kept) if kept else False
        else:
            keep[pos] = all(ok)

    out: list[Any] = []
    for pos, item in enumerate(rows):
        if pos in answered:
            ids, done = dispatched[pos], answered[pos]
            removed.extend(OrphanRemoval("call", cid, pos) for cid in ids if cid not in done)
            stripped = _strip_calls(item, done) if not set(ids) <= done else item
            if stripped is not None:
                out.append(stripped)
        elif keep[pos] is True:
            out.append(item)
        elif keep[pos] is not False:
            out.append(keep[pos])
    removed.sort(key=lambda r: r.position)
    return SweepResult(out, tuple(removed))


def _strip_calls(item: object, answered: set[str]) -> ConversationMessage | None:
    """The dispatch with only its answered calls; its trimmed text (or nothing) if none."""
    if isinstance(item, AssistantToolCalls):
        calls = tuple(c for c in item.tool_calls if c.id in answered)
        if calls:
            return AssistantToolCalls(text=item.text, tool_calls=calls)
        text: object = item.text
    else:
        assert isinstance(item, ChatMessage)
        body = json_object(item.content)
        assert body is not None  # it dispatches, so it parsed
        calls_json = [
            c
            for c in body["tool_calls"]
            if not (isinstance(c, dict) and isinstance(c.get("id"), str))
            or c["id"] in answered
        ]
        if any(isinstance(c, dict) and isinstance(c.get("id"), str) for c in calls_json):
            content = json.dumps(
                {**body, "tool_calls": calls_json}, separators=(",", ":"), ensure_ascii=False
            )
            return ChatMessage.assistant(content)
        text = body.get("content")
    salvaged = text.strip() if isinstance(text, str) else ""
    return ChatMessage.assistant(salvaged) if salvaged else None


PairingKind = Literal["unanswered_call", "orphan_result", "legacy_result"]


@dataclass(frozen=True, slots=True)
class PairingProblem:
    """One place a history breaks the tool-pairing rule providers enforce.

    `legacy_result` (a tool row with no readable id) is reported but is not an error:
    the reference keeps such rows."""

    kind: PairingKind
    position: int
    tool_call_id: str | None

    @property
    def is_error(self) -> bool:
        return self.kind != "legacy_result"

    def __str__(self) -> str:
        what = {
            "unanswered_call": "a call no tool row right after it answers",
            "orphan_result": "a result not right after the assistant row that issued its id",
            "legacy_result": "a legacy tool row with no readable tool_call_id (kept)",
        }[self.kind]
        return f"row {self.position}: {what} (tool_call_id={self.tool_call_id!r})"


def validate_tool_pairing(
    history: Iterable[ConversationMessage | Mapping[str, Any]],
) -> list[PairingProblem]:
    """The problems that would make an OpenAI-style API reject the history, in order.

    Each assistant row with calls must be followed directly by tool rows answering exactly
    its ids, and no tool row with a readable id may appear anywhere else. Tool rows with no
    readable id are reported as `legacy_result`, which is not an error (`is_error`)."""
    rows = conversation_rows(history)
    problems: list[PairingProblem] = []
    pos = 0
    while pos < len(rows):
        ids = _dispatch(rows[pos])
        issued = set(ids or ())
        answered: set[str] = set()
        end = pos + 1 if ids is not None else pos
        while end < len(rows) and (results := _answers(rows[end])) is not None:
            for cid in results:
                if cid is None:
                    problems.append(PairingProblem("legacy_result", end, None))
                elif cid in issued:
                    answered.add(cid)
                else:
                    problems.append(PairingProblem("orphan_result", end, cid))
            end += 1
        for cid in dict.fromkeys(ids or ()):
            if cid not in answered:
                problems.append(PairingProblem("unanswered_call", pos, cid))
        pos = max(end, pos + 1)
    problems.sort(key=lambda p: p.position)
    return problems
