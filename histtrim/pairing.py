"""PAIR-2: tool-call pairing: the orphan sweep, composed as the reference runtime composes it
(strip, remove pass 1, remove pass 2) plus one deliberate addition, and the validator for the
rule every OpenAI-style API enforces on a request.

Both read rows through the one envelope parser (`carriers.json_object`): a native call is any
`tool_calls` element with a string `id`; a `tool` row with no readable `tool_call_id` stays
only right after a native dispatch (the validator reports it anywhere else as an error)."""

from __future__ import annotations

import heapq
import json
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar, overload

from histtrim.carriers import RUST_WHITESPACE, json_object, tool_call_ids, tool_result_call_id
from histtrim.messages import (
    AssistantToolCalls,
    ChatMessage,
    ConversationMessage,
    ToolCall,
    ToolResultMessage,
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
    """None for a tool row with no readable call id, or a call element with no string id."""
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
    """The call ids a tool item answers (None for a row with no readable id), or None for
    other items."""
    if isinstance(item, ToolResults):
        return [result.tool_call_id for result in item.results]
    if isinstance(item, ChatMessage) and item.role == "tool":
        return [tool_result_call_id(item)]
    return None


def _call_id(call: object) -> str | None:
    """A call element's id: a `ToolCall`'s, or a JSON element's string `id`, else None."""
    if isinstance(call, ToolCall):
        return call.id
    if isinstance(call, dict):
        call_id = call.get("id")
        return call_id if isinstance(call_id, str) else None
    return None


@dataclass(slots=True)
class _Unit:
    """One provider-facing row of the swept history; a `ToolResults` item is one unit per
    result, regrouped at the end."""

    pos: int
    """The index of the item in the swept input."""
    item: ChatMessage | AssistantToolCalls | ToolResultMessage
    role: str
    calls: list[Any] | None = None
    """An assistant row's `tool_calls` elements, when its content is an object with that
    array (the strip reads these); None for any other row."""
    ids: frozenset[str] | None = None
    """The string ids among `calls` when there is one (a native dispatch), else None."""
    answer: str | None = None
    """A tool row's readable `tool_call_id`, else None."""

    def set_item(self, item: ChatMessage | AssistantToolCalls | ToolResultMessage) -> None:
        self.item = item
        self.calls, self.ids, self.answer = None, None, None
        if isinstance(item, AssistantToolCalls):
            self.calls = list(item.tool_calls)
        elif isinstance(item, ToolResultMessage):
            self.answer = item.tool_call_id
        elif item.role == "assistant":
            body = json_object(item.content)
            calls = body.get("tool_calls") if body is not None else None
            self.calls = calls if isinstance(calls, list) else None
        elif item.role == "tool":
            self.answer = tool_result_call_id(item)
        if self.calls is not None:
            ids = frozenset(cid for c in self.calls if (cid := _call_id(c)) is not None)
            self.ids = ids or None


def _units(rows: Sequence[ConversationMessage]) -> list[_Unit]:
    units: list[_Unit] = []
    for pos, row in enumerate(rows):
        parts: Sequence[ChatMessage | AssistantToolCalls | ToolResultMessage]
        parts = row.results if isinstance(row, ToolResults) else (row,)
        for part in parts:
            role = part.role if isinstance(part, ChatMessage) else (
                "tool" if isinstance(part, ToolResultMessage) else "assistant"
            )
            unit = _Unit(pos, part, role)
            unit.set_item(part)
            units.append(unit)
    return units


def _regroup(units: Iterable[_Unit]) -> list[Any]:
    """The items again: consecutive results of one `ToolResults` item are one item."""
    out: list[Any] = []
    group: list[ToolResultMessage] = []
    group_pos = -1
    for unit in units:
        if isinstance(unit.item, ToolResultMessage) and group and unit.pos == group_pos:
            group.append(unit.item)
            continue
        if group:
            out.append(ToolResults(results=tuple(group)))
            group = []
        if isinstance(unit.item, ToolResultMessage):
            group, group_pos = [unit.item], unit.pos
        else:
            out.append(unit.item)
    if group:
        out.append(ToolResults(results=tuple(group)))
    return out


def _keep_calls(unit: _Unit, keep: Sequence[bool], removed: list[OrphanRemoval]) -> bool:
    """Strip the calls `keep` rejects from an assistant unit, as the reference's strip does:
    the paired calls stay in the envelope; with none left the row becomes its trimmed text,
    or goes (False) when there is none."""
    assert unit.calls is not None
    calls = unit.calls
    removed.extend(
        OrphanRemoval("call", _call_id(c), unit.pos) for c, k in zip(calls, keep, strict=True)
        if not k
    )
    kept = [c for c, k in zip(calls, keep, strict=True) if k]
    item = unit.item
    if isinstance(item, AssistantToolCalls):
        if kept:
            unit.set_item(AssistantToolCalls(text=item.text, tool_calls=tuple(kept)))
            return True
        text: object = item.text
    else:
        assert isinstance(item, ChatMessage)
        body = json_object(item.content)
        assert body is not None  # it has calls, so it parsed
        if kept:
            content = json.dumps(
                {**body, "tool_calls": kept}, separators=(",", ":"), ensure_ascii=False
            )
            unit.set_item(ChatMessage.assistant(content))
            return True
        text = body.get("content")
    salvaged = text.strip(RUST_WHITESPACE) if isinstance(text, str) else ""
    if not salvaged:
        return False
    unit.set_item(ChatMessage.assistant(salvaged))
    return True


def _spelled_out(item: object) -> bool:
    """Whether the reference's strip looks at the row: it skips an envelope whose text does
    not contain `tool_calls` literally (an escaped key), which its passes still read."""
    return not isinstance(item, ChatMessage) or "tool_calls" in item.content


def _strip(units: list[_Unit], removed: list[OrphanRemoval]) -> list[_Unit]:
    """The reference's strip: walking from the end, a call stays only when a later tool
    row answers its id. histtrim's difference: a result answers one row only, the nearest
    dispatch before it that issued its id, so a reused id cannot keep an older call (see
    Decisions: reused call ids)."""
    later: set[str] = set()
    out: list[_Unit] = []
    for unit in reversed(units):
        if unit.role == "tool":
            if unit.answer is not None:
                later.add(unit.answer)
        elif unit.role == "assistant" and unit.calls is not None:
            keep = [(cid := _call_id(c)) is not None and cid in later for c in unit.calls]
            later.difference_update(unit.ids or ())
            if _spelled_out(unit.item) and not all(keep) and not _keep_calls(unit, keep, removed):
                continue
        out.append(unit)
    out.reverse()
    return out


def _remove_back_to_back(units: list[_Unit], removed: list[OrphanRemoval]) -> list[_Unit]:
    """The reference's pass 1: a dispatch directly after a dispatch goes, with the tool rows
    right after it that answer its ids or have no readable id. (Between two adjacent rows
    no tool row answers anything, so the earlier dispatch is always unresolved.)"""
    out: list[_Unit] = []
    i = 0
    while i < len(units):
        unit = units[i]
        i += 1
        doomed = unit.ids if unit.role == "assistant" else None
        if doomed is None or not out or out[-1].role != "assistant" or out[-1].ids is None:
            out.append(unit)
            continue
        assert unit.calls is not None
        removed.extend(OrphanRemoval("call", _call_id(c), unit.pos) for c in unit.calls)
        while i < len(units) and units[i].role == "tool":
            answer = units[i].answer
            if answer is not None and answer not in doomed:
                break
            removed.append(OrphanRemoval("result", answer, units[i].pos))
            i += 1
    return out


def _remove_orphan_results(units: list[_Unit], removed: list[OrphanRemoval]) -> list[_Unit]:
    """The reference's pass 2: a tool row stays only when the nearest assistant row of the
    assistant/tool run before it is a native dispatch, and either issued the row's id or
    the row has no readable id."""
    out: list[_Unit] = []
    nearest: _Unit | None = None
    for unit in units:
        if unit.role == "tool":
            issued = nearest.ids if nearest is not None else None
            if issued is None or (unit.answer is not None and unit.answer not in issued):
                removed.append(OrphanRemoval("result", unit.answer, unit.pos))
                continue
        elif unit.role == "assistant":
            nearest = unit
        else:
            nearest = None
        out.append(unit)
    return out


def _strip_unanswered(units: list[_Unit], removed: list[OrphanRemoval]) -> list[_Unit] | None:
    """histtrim's addition: strip each call that no tool row right after its row answers.
    None when every call is answered."""
    out: list[_Unit] = []
    changed = False
    for i, unit in enumerate(units):
        if unit.ids is not None and unit.role == "assistant":
            assert unit.calls is not None
            answered: set[str] = set()
            j = i + 1
            while j < len(units) and units[j].role == "tool":
                if (answer := units[j].answer) is not None:
                    answered.add(answer)
                j += 1
            keep = [(cid := _call_id(c)) is not None and cid in answered for c in unit.calls]
            if not all(keep):
                changed = True
                if not _keep_calls(unit, keep, removed):
                    continue
        out.append(unit)
    return out if changed else None


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
    """Make a restored or edited history pass the pairing rule, composed as the reference
    composes it (`strip`, then remove pass 1, then pass 2):

    1. strip: a call stays only when a later tool row answers its id (a result answers
       only the nearest dispatch before it that issued its id: histtrim's, where an id is
       reused); a row left with no call becomes its trimmed text, or goes when there is none;
    2. pass 1: a dispatch directly after another dispatch goes, with the tool rows right
       after it that answer its ids or have no readable id;
    3. pass 2: a tool row stays only when the nearest assistant row of the assistant/tool
       run before it is a native dispatch that issued its id (or, for a row with no
       readable id, is any native dispatch);
    4. histtrim's addition (not the reference's; see Decisions: the orphan-sweep pairing):
       a call left with no result right after it is stripped as in 1, and passes 1 and 2
       run again, until nothing changes; so no call is left unanswered.

    `[Tool results]` carriers are user rows and stay. Works on provider-facing rows and on
    the structured history alike; `crumb_present` is the owner's breadcrumb flag, checked
    as for the trims."""
    *_, last = _sweep(history, crumb_present)
    return SweepResult(last.history, last.removed)


SweepStage = Literal["strip", "pass 1", "pass 2", "histtrim"]


@dataclass(frozen=True)
class SweepStep(Generic[M]):
    """The history after one stage of the sweep, with everything removed up to it."""

    stage: SweepStage
    history: list[M]
    removed: tuple[OrphanRemoval, ...]
    positions: tuple[int, ...]
    """The input position of each item of `history`."""
    removed_here: tuple[OrphanRemoval, ...]
    """What this stage removed, in input order."""


def sweep_stages(
    history: Iterable[ConversationMessage | Mapping[str, Any]], *, crumb_present: bool = False
) -> list[SweepStep[Any]]:
    """The sweep one stage at a time: after the strip, after pass 1, after pass 2 (the
    reference's answer, where no id is issued twice) and after histtrim's addition
    (`sweep_orphans`'s answer)."""
    return list(_sweep(history, crumb_present))


def _sweep(
    history: Iterable[ConversationMessage | Mapping[str, Any]], crumb_present: bool
) -> Iterator[SweepStep[Any]]:
    rows = conversation_rows(history)
    index_turns(rows, crumb_present=crumb_present)  # a flag naming no slot is an error
    removed: list[OrphanRemoval] = []
    done = 0  # removals made by the stages before

    def step(stage: SweepStage, units: list[_Unit]) -> SweepStep[Any]:
        nonlocal done
        items = _regroup(units)
        positions = tuple(dict.fromkeys(u.pos for u in units))  # a ToolResults is one item
        assert len(positions) == len(items)
        here = tuple(sorted(removed[done:], key=_position))
        done = len(removed)
        return SweepStep(
            stage, items, tuple(sorted(removed, key=_position)), positions, here
        )

    units = _strip(_units(rows), removed)
    yield step("strip", units)
    units = _remove_back_to_back(units, removed)
    yield step("pass 1", units)
    units = _remove_orphan_results(units, removed)
    yield step("pass 2", units)
    while (stripped := _strip_unanswered(units, removed)) is not None:
        units = _remove_orphan_results(_remove_back_to_back(stripped, removed), removed)
    yield step("histtrim", units)


def _position(removal: OrphanRemoval) -> int:
    return removal.position


PairingKind = Literal["unanswered_call", "orphan_result", "legacy_result", "reused_id"]


@dataclass(frozen=True, slots=True)
class PairingProblem:
    """One place a history breaks the tool-pairing rule providers enforce.

    `legacy_result` (a tool row with no readable id, right after a native dispatch) is
    reported but is not an error: the reference keeps such rows there. Anywhere else such
    a row is an `orphan_result` with no id, an error. `reused_id` (a dispatch issuing an id
    an earlier dispatch issued, `earlier` its row) is not an error either: a result answers
    the dispatch right before it (see Decisions: reused call ids)."""

    kind: PairingKind
    position: int
    tool_call_id: str | None
    earlier: int | None = None
    """For `reused_id`: the row of the dispatch that issued the id first."""

    @property
    def is_error(self) -> bool:
        return self.kind in ("unanswered_call", "orphan_result")

    def __str__(self) -> str:
        what = {
            "unanswered_call": "a call no tool row right after it answers",
            "orphan_result": "a result not right after the assistant row that issued its id",
            "legacy_result": "a tool row with no readable tool_call_id after a native dispatch"
            " (kept)",
            "reused_id": f"a call reusing the id of row {self.earlier}'s call (not an error:"
            " each result answers the dispatch right before it)",
        }[self.kind]
        if self.kind == "orphan_result" and self.tool_call_id is None:
            what = "a tool row with no readable tool_call_id not right after a native dispatch"
        return f"row {self.position}: {what} (tool_call_id={_quoted(self.tool_call_id)})"


_QUOTED_ID = 80
"""The longest call id a problem quotes whole; a longer one (ids are the input's, of any
size) is cut to its start and its length."""


def _quoted(call_id: str | None) -> str:
    if call_id is None or len(call_id) <= _QUOTED_ID:
        return repr(call_id)
    return f"{call_id[: _QUOTED_ID - 20]!r}... ({len(call_id):,} characters)"


class PairingScan:
    """`validate_tool_pairing` one row at a time, for a reader that sees each row once:
    a row is a dispatch (its call ids), a tool row (the id it answers, None when it has no
    readable one) or any other row. Each problem goes to `report(kind, position, call_id,
    k)` (k: the index of an unanswered call among its row's distinct ids, else -1), a
    dispatch's own problems before those of the tool rows after it, so sorting the reports
    by position (stably) gives the validator's order. Memory: the open dispatch's ids."""

    __slots__ = ("_answered", "_head", "_ids", "_issued", "_report", "dispatching")

    def __init__(self, report: Callable[[PairingKind, int, str | None, int], None]) -> None:
        self._report = report
        self._head = -1
        self._ids: tuple[str, ...] | None = None
        self._issued: frozenset[str] = frozenset()
        self._answered: set[str] = set()
        self.dispatching = False
        """Whether a dispatch is open (`other` then closes it; else it does nothing)."""

    def dispatch(self, position: int, ids: tuple[str, ...]) -> None:
        self.other()
        self._head, self._ids, self._issued = position, ids, frozenset(ids)
        self.dispatching = True

    def answer(self, position: int, call_id: str | None, k: int = -1) -> None:
        """A result for `call_id` at `position` (`k`: its index among the row's results,
        for a row that answers several, else -1)."""
        if call_id is None:
            kind: PairingKind = "legacy_result" if self._ids is not None else "orphan_result"
            self._report(kind, position, None, k)
        elif call_id in self._issued:
            self._answered.add(call_id)
        else:
            self._report("orphan_result", position, call_id, k)

    def other(self) -> None:
        """A row that neither dispatches nor answers (and the end): closes the open dispatch."""
        if self._ids is None:
            return
        for k, cid in enumerate(dict.fromkeys(self._ids)):
            if cid not in self._answered:
                self._report("unanswered_call", self._head, cid, k)
        self._ids, self._issued = None, frozenset()
        self._answered.clear()
        self.dispatching = False


@dataclass
class PairingErrors:
    """The errors a `PairingScan` reports, kept compactly for a whole file: each one's row
    and the index of its call among the row's distinct ids, or of its result among the row's
    results (-1 for a tool row's one result), 16 bytes an error; the ids are read again from
    the few rows shown (`PairingProblem`)."""

    positions: array[int] = field(default_factory=lambda: array("q"))
    calls: array[int] = field(default_factory=lambda: array("q"))

    def add(self, kind: PairingKind, position: int, call_id: str | None, k: int) -> None:
        if kind != "legacy_result":
            self.positions.append(position)
            self.calls.append(k)

    def __len__(self) -> int:
        return len(self.positions)

    def first(self, count: int, start: int = 0) -> list[int]:
        """The indexes of the first `count` errors at rows `start..`, in the validator's
        order (by row, then as reported)."""
        positions = self.positions
        found = (i for i in range(len(positions)) if positions[i] >= start)
        return heapq.nsmallest(count, found, key=lambda i: (positions[i], i))

    def count_from(self, start: int) -> int:
        return sum(map(start.__le__, self.positions))


def validate_tool_pairing(
    history: Iterable[ConversationMessage | Mapping[str, Any]],
) -> list[PairingProblem]:
    """The problems that would make an OpenAI-style API reject the history, in order.

    Each assistant row with calls must be followed directly by tool rows answering exactly
    its ids, and no tool row may appear anywhere else. A tool row with no readable id right
    after a native dispatch is reported as `legacy_result`, and a dispatch reusing an id an
    earlier dispatch issued as `reused_id`; neither is an error (`is_error`)."""
    problems: list[PairingProblem] = []
    first: dict[str, int] = {}  # each id's first dispatch row
    scan = PairingScan(lambda kind, pos, cid, _: problems.append(PairingProblem(kind, pos, cid)))
    for pos, row in enumerate(conversation_rows(history)):
        answers = _answers(row)
        if answers is not None:
            for cid in answers:
                scan.answer(pos, cid)
            continue
        ids = _dispatch(row)
        if ids is not None:
            scan.dispatch(pos, ids)
            for issued_id in dict.fromkeys(ids):
                if issued_id in first:
                    problems.append(PairingProblem("reused_id", pos, issued_id, first[issued_id]))
                first.setdefault(issued_id, pos)
        else:
            scan.other()
    scan.other()
    problems.sort(key=lambda p: p.position)
    return problems
