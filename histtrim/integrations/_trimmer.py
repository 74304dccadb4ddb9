"""What the three integrations share: the limits resolved once (budget, turn limit, counter,
policy), the whole-turn trim of a framework's units (one provider-facing row each), the
reactive 2/3 trim after an overflow, the reports each conversation's requests got
(`ReportBook`, USAGE-7..8), the pairing guard and the event delivery.

A unit is whatever one row stands for in a framework (a message, some parts of a message, a
run of input items); the framework module maps units to rows and kept units back to its own
objects. The cut is `histtrim.adapters.trim_records`, so it is the library's cut exactly."""

from __future__ import annotations

import itertools
import logging
import math
import sys
import threading
from array import array
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import compress
from operator import attrgetter, itemgetter
from typing import Any, Generic, TypeVar

from histtrim.adapters import trim_records_held
from histtrim.carriers import tool_call_ids
from histtrim.config import RuntimeProfile
from histtrim.counting import Pricing, TokenCounter
from histtrim.estimate import estimate_tool_schemas
from histtrim.events import HistoryTrimmed, TrimReason
from histtrim.low_water import Replay, price_sums, request_points
from histtrim.messages import ChatMessage, RowFacts
from histtrim.pairing import PairingProblem, validate_tool_pairing
from histtrim.policy import SPEC, ColdCuts, Policy, ToolContext, low_water_tokens
from histtrim.reported_usage import (
    PAIRS_KEPT,
    PROVIDER_UNITS,
    HiddenPrefix,
    calibrated,
    fit_hidden_prefix,
    reported_input_tokens,
    scaled_budget,
    usable_report,
)
from histtrim.route import ResolvedRuntime, resolve_runtime
from histtrim.tool_context import ClearMemo, ToolContextEdit, edit_tool_context
from histtrim.trim import TrimResult, breadcrumb_message
from histtrim.turns import index_turns, index_with_facts

_ROW, _OLDER, _CURRENT = attrgetter("row"), attrgetter("older"), attrgetter("current")
_FACTS = attrgetter("facts")
_OPENS_TURN = itemgetter(RowFacts._fields.index("opens_turn"))
U = TypeVar("U")
T = TypeVar("T")

Rewrite = Callable[[T, ChatMessage], T]
"""Writes a framework's unit for a row the tool context edit changed (CTX-1..9): the unit
the row stands for, and the new row (a placeholder result, or a collapse summary)."""

OnTrim = Callable[[HistoryTrimmed], object]
"""Receives each `HistoryTrimmed` (SEEN-2), e.g. `EventBus` transport's `send` or `list.append`."""

LOGGER = "histtrim.integrations"


class ToolPairingError(ValueError):
    """The request would break the tool-pairing rule providers enforce: it is not sent."""


@dataclass(frozen=True, slots=True)
class Priced:
    """One unit's provider-facing row and its price as an older row and as a row of the
    current turn (`Pricing.both`), the non-text parts its text does not carry included."""

    row: ChatMessage
    older: int
    current: int


CACHE_BYTES = 4 << 20
"""The price cache's budget per integration instance, in bytes: what its entries keep
alive (each row's text, held by the framework's objects it is found by too, and
`ENTRY_BYTES` for the entry itself). The call in progress always fits: the budget grows to
twice that call's bytes while it runs, never for the calls before it, so the entries of a
cancelled run age out with the next calls."""
ENTRY_BYTES = 256
"""What an entry costs beside its row's text (its keys, tuples and `Priced`): the bound
for many small rows, as the text is for large ones."""


class PriceCache:
    """Each unit's row and prices, computed once per integration instance.

    A framework passes the same prefix on every model call, so a unit already seen is not
    priced again (a `token_counter` is called once per row per session): a unit is found by
    the identity of its objects (`anchors`, held while the entry lives, so an id is never
    reused under it), else by its row's content, which is what its price depends on (a
    framework that copies its messages pays for the row's text, never for the counter).
    Two generations bound the memory in bytes (`CACHE_BYTES`): when the newer one would pass
    half the budget (or the bytes of the call in progress, if more: `fit`) it becomes the
    older one and the older one is dropped; an entry found again moves to the newer one, so
    a prefix passed on every call outlives the swap. Entries are pure values, so concurrent
    calls can at worst price a row twice."""

    def __init__(self, pricing: Pricing, budget: int = CACHE_BYTES) -> None:
        self.pricing = pricing
        self.budget = budget
        self._ids: dict[Hashable, tuple[tuple[object, ...], Priced]] = {}
        self._old_ids: dict[Hashable, tuple[tuple[object, ...], Priced]] = {}
        self._rows: dict[tuple[str, str, int], Priced] = {}
        self._old_rows: dict[tuple[str, str, int], Priced] = {}
        self._groups: dict[Hashable, tuple[tuple[object, ...], tuple[Any, ...]]] = {}
        self._old_groups: dict[Hashable, tuple[tuple[object, ...], tuple[Any, ...]]] = {}
        self._bytes = 0  # the newer generation's entries
        self._old_bytes = 0
        self._call = 0  # what the call in progress found or made since `fit`
        self._counting = False  # no call counts before the first `fit`

    @property
    def bytes(self) -> int:
        """The bytes its entries keep alive: at most `budget`, or twice the call in
        progress when that is more."""
        return self._bytes + self._old_bytes

    def get(
        self, anchors: tuple[object, ...], build: Callable[[], tuple[ChatMessage, int]]
    ) -> Priced:
        """The unit's priced row: cached by its objects' identity, else by its row."""
        key = tuple(map(id, anchors))
        hit = self._recall("_ids", key)
        if hit is not None:
            found: Priced = hit[1]
            return found
        priced = self.priced(*build())
        self._put("_ids", key, (anchors, priced), _entry_bytes((priced,)))
        return priced

    def group(
        self, anchors: tuple[object, ...], build: Callable[[], Sequence[tuple[T, ChatMessage, int]]]
    ) -> tuple[tuple[T, Priced], ...]:
        """`get` for an object that stands for several units (a pydantic-ai request's parts):
        each unit's tag (`build`'s first item) and priced row."""
        key = tuple(map(id, anchors))
        hit = self._recall("_groups", key)
        if hit is not None:
            group: tuple[tuple[T, Priced], ...] = hit[1]
            return group
        out = tuple((tag, self.priced(row, parts)) for tag, row, parts in build())
        self._put("_groups", key, (anchors, out), _entry_bytes(p for _, p in out))
        return out

    def priced(self, row: ChatMessage, parts: int = 0) -> Priced:
        """A unit's row by its content only (also a row the framework does not hold, the
        instructions)."""
        content = (row.role, row.content, parts)
        priced = self._rows.get(content)
        if priced is not None:
            if self._counting:
                self._call += _entry_bytes((priced,))
            return priced
        priced = self._old_rows.get(content)
        if priced is None:
            older, current = self.pricing.both(row, parts)
            priced = Priced(row, older, current)
        self._put("_rows", content, priced, _entry_bytes((priced,)))
        return priced

    def _recall(self, kind: str, key: Hashable) -> Any:
        """An entry of `kind` (`_ids`, `_groups`) found by its objects' identity; found in
        the older generation, it moves to the newer one (so a prefix passed on every call
        outlives the next swap)."""
        hit = getattr(self, kind).get(key)
        if hit is not None:
            if self._counting:
                self._call += _entry_bytes(_priced_of(hit[1]))
            return hit
        hit = getattr(self, "_old" + kind).get(key)
        if hit is not None:
            self._put(kind, key, hit, _entry_bytes(_priced_of(hit[1])))
        return hit

    def _put(self, kind: str, key: Hashable, value: Any, size: int) -> None:
        """Keep an entry of `size` bytes in the newer generation's `kind` map, retiring the
        generation first when the entry would take it past its share: half the budget, or
        what the call in progress touched if more."""
        if self._counting:
            self._call += size
        if self._bytes + size > max(self.budget // 2, self._call):
            self._old_rows, self._rows = self._rows, {}
            self._old_ids, self._ids = self._ids, {}
            self._old_groups, self._groups = self._groups, {}
            self._old_bytes, self._bytes = self._bytes, 0
        getattr(self, kind)[key] = value
        self._bytes += size

    def fit(self, units: int) -> None:
        """A call of `units` units starts: the newer generation's share is at least
        `ENTRY_BYTES` a unit plus the bytes of the entries the call finds or makes (a
        history larger than the budget does not evict itself), and the calls before it
        (ended or cancelled) no longer count."""
        self._call, self._counting = units * ENTRY_BYTES, True


def _priced_of(value: Priced | tuple[tuple[Any, Priced], ...]) -> Iterable[Priced]:
    return (value,) if isinstance(value, Priced) else (p for _, p in value)


def _entry_bytes(priced: Iterable[Priced]) -> int:
    """What an entry keeps alive: its rows' text and `ENTRY_BYTES` each."""
    return sum(len(p.row.content) + ENTRY_BYTES for p in priced)


@dataclass
class Seen:
    """A history an instance priced: its items, the units and priced rows made of them, and
    what the reported-usage trim (USAGE-1..6) holds for it and for every history that extends
    it: `floor`, the first unit a reported-usage trim kept (0: none; the framework's history
    still holds the dropped turns, so the cut is held here), and `report`, the last usage
    report for a request made from it that is still to be applied: (reported input tokens,
    the estimate of exactly the population that request sent)."""

    items: list[Any]
    units: list[Any]
    priced: list[Priced]
    floor: int = 0
    report: tuple[int, int, int] | None = None
    """(reported input tokens, the estimate of the request it counts with the tool schemas,
    the tool schemas' estimate)."""
    pairs: tuple[tuple[int, int], ...] = ()
    """The conversation's newest (rows estimate, reported) pairs (USAGE-8's fit)."""
    fresh: bool = False
    """Made without a remembered history it extends: what the reported-usage trim holds for
    it is looked up in the `ReportBook` (by the rows of the requests it counts)."""
    problems: list[PairingProblem] | None = None
    """The pairing errors of the whole history (its positions), found once per history: a
    history that extends another scans only from the other's last request on."""
    parent: tuple[int, list[PairingProblem]] | None = None
    """The length and errors of the history this one extends, until `problems` is made."""
    columns: Columns | None = None
    """The rows, prices and row facts of its trim's units (`lead` then its own) as lists,
    made once per history."""
    lead: tuple[Priced, ...] = ()
    """The units its trim put before the history's own (the instructions)."""
    base: tuple[int, Columns, tuple[Priced, ...]] | None = None
    """How many leading priced rows it shares with the history it extends, and that one's
    columns and lead, until `columns` is made."""
    replay: tuple[tuple[Priced, ...], bool, Replay] | None = None
    """Its held-cut replay before its last request, with the rows the trim put before the
    history's (the instructions) and the breadcrumb flag it was made with; a history that
    extends it resumes there (`plan_held_trim`'s `resume`)."""
    last_time: float | None = None
    """CACHE-1: when this conversation's last request was trimmed (the Trimmer's clock)."""
    cold: ColdCuts | None = None
    """CACHE-2: its requests made with the cache cold (their ends in its priced rows), which
    every later replay of the conversation cuts at again."""
    number: int = 0
    """Its number in the instance's `Prefixes` (from 1)."""
    origin: int = 0
    """The number of the history it extends (0: none): its items start with that one's,
    found equal by `Prefixes.find`."""
    bytes: int = 0
    """What its rows keep alive (their text and `ENTRY_BYTES` each, `_entry_bytes`): the
    `Prefixes` bound."""


@dataclass(frozen=True)
class Columns:
    """Priced rows as the plan reads them: the rows, both prices and the row facts, and
    what the plan would otherwise read them all for at every call (the prices' prefix sums,
    the rows opening a turn, the requests), each made for a history's new rows only."""

    rows: list[ChatMessage]
    older: list[int]
    current: list[int]
    facts: list[RowFacts]
    points: list[int]
    """Where the requests the rows record end (`request_points`, the last one left out)."""
    sums: tuple[Sequence[int], Sequence[int]]
    """Both prices' prefix sums (`price_sums`; one object when no row is priced apart)."""
    opens: list[int]
    """The rows whose facts open a turn (`index_with_facts`'s `opens`)."""

    @classmethod
    def of(cls, priced: Sequence[Priced]) -> Columns:
        rows = list(map(_ROW, priced))
        older, current = list(map(_OLDER, priced)), list(map(_CURRENT, priced))
        facts = list(map(_FACTS, rows))
        return cls(rows, older, current, facts, request_points(rows)[:-1],
                   price_sums((older, current)),
                   list(compress(range(len(facts)), map(_OPENS_TURN, facts))))

    def head(self, size: int) -> Columns:
        older = self.sums[0][: size + 1]
        current = older if self.sums[1] is self.sums[0] else self.sums[1][: size + 1]
        return Columns(self.rows[:size], self.older[:size], self.current[:size],
                       self.facts[:size], self.points[: bisect_left(self.points, size)],
                       (older, current), self.opens[: bisect_left(self.opens, size)])

    def extended(self, size: int, priced: Sequence[Priced]) -> Columns:
        """The columns of the first `size` rows, then `priced`'s, each column copied once
        (a copy of a list of objects touches each object: a cache miss a row when the
        history is large)."""
        more = Columns.of(priced)
        table = self.head(size)
        joint = [size] if (size and more.rows and more.rows[0].role == "assistant"
                           and table.rows[-1].role != "assistant") else []
        table.rows.extend(more.rows)
        table.older.extend(more.older)
        table.current.extend(more.current)
        table.facts.extend(more.facts)
        table.points.extend(joint)
        table.points.extend(size + p for p in more.points)
        table.opens.extend(size + p for p in more.opens)
        older = _joined(table.sums[0], more.sums[0])
        same = table.sums[0] is table.sums[1] and more.sums[0] is more.sums[1]
        return replace(table, sums=(
            older, older if same else _joined(table.sums[1], more.sums[1])))


def _joined(sums: Sequence[int], more: Sequence[int]) -> Sequence[int]:
    """The prefix sums of two runs of prices from each run's (`prefix_sums`): O(the second
    run) beside a copy of the first at C speed."""
    tail = [sums[-1] + s for s in more[1:]]
    try:
        return sums + array("q", tail) if isinstance(sums, array) else [*sums, *tail]
    except OverflowError:
        return [*sums, *tail]


def columns(seen: Seen, lead: tuple[Priced, ...]) -> Columns:
    """The columns of `lead` and a history's units: the shared head of the history it
    extends (when its trim had the same lead) and its own new rows'."""
    if seen.columns is None or seen.lead != lead:
        base = seen.base
        if base is not None and base[2] == lead:
            size, table, _ = base
            seen.columns = table.extended(len(lead) + size, seen.priced[size:])
        else:
            seen.columns = Columns.of([*lead, *seen.priced])
        seen.lead, seen.base = lead, None
    return seen.columns


def _row_key(row: ChatMessage) -> int:
    return hash((row.role, row.content))


_ANCHOR_BACK = 64
"""How far back from a history's end its anchor (its newest user row) is looked for."""
_ANCHOR_TAIL = 4
"""How many of a history's last rows its anchor's key covers besides its first row."""


@dataclass
class Held:
    """What the reported-usage trim holds for one conversation (USAGE-1..8): the pending
    report, the held cut as a distance back from the anchor (0: none) and the fit's pairs,
    under the anchor's key: its first row, its length to the history's end and its last
    rows."""

    key: tuple[int, int, int]
    back: int
    report: tuple[int, int, int] | None
    pairs: tuple[tuple[int, int], ...]

    def size(self) -> int:
        """Its bytes, as `sys.getsizeof` counts them (the book's bound)."""
        report = 0 if self.report is None else sys.getsizeof(self.report) + 3 * 36
        return (sys.getsizeof(self) + sys.getsizeof(self.key) + 3 * 36 + report
                + sys.getsizeof(self.pairs) + len(self.pairs) * (sys.getsizeof((0, 0)) + 72)
                + 64)


class ReportBook:
    """USAGE-7: each conversation's report and held cut, kept for the request it counts.

    A report counts the rows of one request: it is filed under an anchor in the history that
    request was made from (its newest user row, its distance to the end and the last rows),
    so a later history of that conversation finds it wherever those rows now stand: one
    that extends it (an instance serving more conversations than `Prefixes` remembers), or
    one whose older turns were dropped from the store (LangChain's `persist=True`, the SDK's
    `HisttrimSession(max_turns=...)`). A history holding no such rows (another
    conversation) finds nothing. At most `limit` bytes, the least recently used dropped
    first; a lookup scans the history once (only for a history not remembered)."""

    def __init__(self, limit: int = 1 << 20) -> None:
        self.limit = limit
        self.bytes = 0
        self._entries: OrderedDict[tuple[int, int, int], Held] = OrderedDict()
        self._firsts: dict[int, list[tuple[int, int, int]]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    @staticmethod
    def anchor(rows: Sequence[ChatMessage]) -> tuple[int, tuple[int, int, int]] | None:
        """Where a history's anchor starts and its key (None: no rows)."""
        size = len(rows)
        if not size:
            return None
        start = size - 1
        while start > max(0, size - _ANCHOR_BACK) and rows[start].role != "user":
            start -= 1
        tail = hash(tuple(map(_row_key, rows[max(start, size - _ANCHOR_TAIL):])))
        return start, (_row_key(rows[start]), size - start, tail)

    def write(self, seen: Seen) -> None:
        """File what `seen` holds under its anchor, replacing the entry it came from."""
        found = self.anchor(_Rows(seen.priced))
        if found is None:
            return
        start, key = found
        back = start - seen.floor if seen.floor else 0
        entry = Held(key, max(0, back), seen.report, seen.pairs[-PAIRS_KEPT:])
        with self._lock:
            self._drop(key)
            self._entries[key] = entry
            self._firsts.setdefault(key[0], []).append(key)
            self.bytes += entry.size()
            while self.bytes > self.limit and self._entries:
                self._drop(next(iter(self._entries)))  # the least recently used

    def _drop(self, key: tuple[int, int, int]) -> None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        self.bytes -= entry.size()
        keys = self._firsts.get(key[0], [])
        keys.remove(key)
        if not keys:
            self._firsts.pop(key[0], None)

    def restore(self, seen: Seen) -> None:
        """Give `seen` (a history not remembered) what the book holds for the newest request
        whose anchor its rows contain: the pending report, the cut and the pairs."""
        rows = _Rows(seen.priced)
        best: tuple[int, int, Held] | None = None
        with self._lock:
            if not self._entries:
                return
            firsts = self._firsts
            for p, item in enumerate(seen.priced):
                row = item.row
                keys = firsts.get(hash((row.role, row.content)))
                for key in keys or ():
                    end = p + key[1]
                    if end > len(rows) or (best is not None and end <= best[0]):
                        continue
                    tail = hash(tuple(map(_row_key, rows[max(p, end - _ANCHOR_TAIL):end])))
                    if tail == key[2]:
                        best = (end, p, self._entries[key])
            if best is None:
                return
            _, start, entry = best
            self._entries.move_to_end(entry.key)  # recently used
        seen.floor = max(0, start - entry.back) if entry.back else 0
        seen.report, seen.pairs = entry.report, entry.pairs


class Prefixes:
    """The last few histories an instance priced, so a call that extends one (a framework
    passes the same prefix on every model call) reuses its units and prices and makes only
    the new items': the prefix is checked at C speed (list equality, identity first: an
    equal item makes an equal row). Up to `keep` histories are remembered (concurrent
    sessions on one instance), bounded in bytes: the newest always (the next call extends
    it), the older ones while their rows' bytes (`Seen.bytes`, shared rows counted in each)
    stay within `budget`, the least recent dropped first (a forgotten conversation is priced
    again from the `PriceCache` and finds its reports in the `ReportBook`). An item the
    framework changed in place after a call is not seen."""

    def __init__(self, keep: int = 4, budget: int = CACHE_BYTES) -> None:
        self.keep = keep
        self.budget = budget
        self._numbers = itertools.count(1)
        self._seen: list[Seen] = []
        self._last = threading.local()

    def find(self, items: Sequence[Any]) -> Seen | None:
        """The longest remembered history that `items` starts with, if any."""
        best: Seen | None = None
        for seen in list(self._seen):
            size = len(seen.items)
            if size > len(items) or (best is not None and size <= len(best.items)):
                continue
            try:
                same = items[:size] == seen.items
            except Exception:  # an item whose equality fails: no reuse, never a failure
                same = False
            if same:
                best = seen
        return best

    def remember(
        self, items: Sequence[Any], units: list[Any], priced: list[Priced],
        extends: Seen | None = None, shared: int = 0, *, owned: bool = False,
    ) -> Seen:
        """Remember a history priced now (inheriting what the one it `extends` holds, whose
        first `shared` priced rows it reuses); it is also `last()` for this thread until the
        next one (the trim that follows reads it). `owned`: `items` is the caller's own
        list, never changed after, kept as is (else copied)."""
        if extends is not None and len(items) == len(extends.items) and _same(
                priced, extends.priced):  # the same history again: one record of it
            self._keep(extends)
            self._last.seen = extends
            return extends
        kept = items if owned and isinstance(items, list) else list(items)
        seen = Seen(kept, units, priced, fresh=extends is None,
                    number=next(self._numbers), origin=0 if extends is None else extends.number)
        seen.bytes = _entry_bytes(priced[shared:])  # the shared rows' from the one it extends
        if extends is not None and shared:
            seen.bytes += extends.bytes - _entry_bytes(extends.priced[shared:])
        if extends is not None:
            seen.floor, seen.report = extends.floor, extends.report
            seen.last_time, seen.cold = extends.last_time, extends.cold
            seen.pairs = extends.pairs
            if extends.problems is not None:
                seen.parent = (len(extends.priced), extends.problems)
            if extends.columns is not None and shared:
                seen.base = (shared, extends.columns, extends.lead)
                if extends.replay is not None and extends.replay[2].end <= shared:
                    seen.replay = extends.replay  # its requests end in the shared rows
        self._keep(seen)
        self._last.seen = seen
        return seen

    def _keep(self, newest: Seen) -> None:
        """`newest` first, then the most recent others while `keep` and `budget` allow."""
        kept, total = [newest], 0
        for seen in self._seen:
            if len(kept) == self.keep:
                break
            if seen is not newest and total + seen.bytes <= self.budget:
                kept.append(seen)
                total += seen.bytes
        self._seen = kept

    def last(self) -> Seen | None:
        """The history this thread priced last (the priced call and its trim run with no
        await between them, so under asyncio too this is the call's own)."""
        seen = getattr(self._last, "seen", None)
        self._last.seen = None
        return seen


@dataclass(frozen=True)
class _Plan:
    """A trim in positions of the request (-1: the breadcrumb) and its priced rows."""

    positions: Sequence[int]
    priced: Sequence[Priced]
    rows: list[ChatMessage]
    crumb_present: bool
    events: tuple[HistoryTrimmed, ...]
    tokens: int
    replay: Replay | None = None


def _same(priced: Sequence[Priced], other: Sequence[Priced]) -> bool:
    """Whether two lists hold the same priced rows (list equality at C speed, identity
    first: an equal `Priced` is the same row at the same prices)."""
    return len(priced) == len(other) and _listed(priced) == _listed(other)


def _listed(items: Sequence[T]) -> list[T]:
    return items if isinstance(items, list) else list(items)


def kept_items(items: Sequence[T], positions: Sequence[int], crumb: T) -> list[T]:
    """The items at the kept `positions` (-1: `crumb`): the leading ones, the crumb, then a
    run to the end, taken as slices when they are (a whole-turn cut's shape)."""
    if isinstance(positions, range):
        return list(items[positions.start : positions.stop])
    k = bisect_left(range(len(positions)), True, key=lambda j: positions[j] != j)
    crumbs = 1 if k < len(positions) and positions[k] == -1 else 0
    start = kept_tail(positions, len(items))
    if start is not None:
        return [*items[:k], *([crumb] if crumbs else []), *items[start:]]
    return [items[i] if i >= 0 else crumb for i in positions]


def kept_tail(positions: Sequence[int], size: int) -> int | None:
    """Where the run of kept positions that ends the request starts, when the positions
    after the leading ones and the crumb are exactly that run to `size` (a whole-turn cut's
    shape); else None."""
    k = bisect_left(range(len(positions)), True, key=lambda j: positions[j] != j)
    tail = k + (1 if k < len(positions) and positions[k] == -1 else 0)
    if tail == len(positions):
        return size
    first, last = positions[tail], positions[-1]
    if first >= 0 and last == size - 1 and last - first == len(positions) - 1 - tail:
        return first
    return None


def same_model(requested: object, reported: object) -> bool:
    """Whether a usage report is for the model the request named (USAGE-5: another model's
    report, e.g. a fallback's, is no report): the same name, or the requested name with a
    dated snapshot after it (`gpt-4o` answered as `gpt-4o-2024-08-06`). Unknown: the same."""
    if not isinstance(requested, str) or not isinstance(reported, str):
        return True
    if not requested or not reported or requested == reported:
        return True
    rest = reported[len(requested):]
    return reported.startswith(requested) and rest[:1] == "-" and rest[1:2].isdigit()


def schema_tokens(
    tools: Iterable[tuple[object, object, object]], policy: Policy | None = None
) -> int:
    """The estimate of the tool schemas a framework sends beside the rows (name, description,
    parameters of each: `estimate_tool_schemas`), the reports' `tool_schema_tokens`; 0 when
    they cannot be read (a guest never fails its host's run over a figure)."""
    try:
        return estimate_tool_schemas([
            {"name": str(name), "description": "" if text is None else str(text),
             "parameters": params if isinstance(params, Mapping) else {}}
            for name, text, params in tools], policy=SPEC if policy is None else policy)
    except Exception:
        return 0


def _first_kept(positions: Sequence[int]) -> int | None:
    """The first position a cut keeps after the leading ones and the breadcrumb."""
    for j, position in enumerate(positions):
        if position == -1 or position != j:
            after = positions[j + 1] if position == -1 else position
            return after if position != -1 or j + 1 < len(positions) else None
    return None


@dataclass(frozen=True)
class Trimmed(Generic[U]):
    """The units to send, their rows, whether the breadcrumb leads them, the events, and the
    estimate of exactly what is sent (`tokens`: the population a provider's usage report for
    this request counts, issue 43's `reported_population_estimated`)."""

    units: list[U]
    rows: list[ChatMessage]
    crumb_present: bool
    events: tuple[HistoryTrimmed, ...]
    tokens: int = 0
    priced: list[Priced] = field(default_factory=list)
    """Each unit's priced row (the breadcrumb's included), as `units`."""
    seen: Seen | None = None
    """The history the request was made from: a usage report for it is recorded there."""
    positions: Sequence[int] = ()
    """Each unit's position in the units the trim was given (-1: the breadcrumb)."""
    offset: int = 0
    """How many units the trim was given before the history's own (the instructions)."""
    given: int = 0
    """How many units the trim was given (`positions` index them)."""
    tool_context: ToolContextEdit | None = None
    """The policy's tool context edit of the kept rows (CTX-1..9), when it changed any:
    `units` and `rows` are then what is sent, a changed unit written by the framework."""
    paired: Sequence[int] = ()
    """A clear's request (CTX-6..10, `positions` dropped): the kept positions it stands for
    row for row, with the same calls and results (`check_sent` reads its pairing there)."""

    @property
    def trimmed(self) -> bool:
        return bool(self.events)


class Trimmer:
    """The spec's limits for one integration, resolved once.

    Pass a `ResolvedRuntime` (from `histtrim.resolve_runtime` or `histtrim.select_route`) for
    the spec's budget (BUDGET-1..9) and turn limit (LIMIT-2), or a plain `budget_tokens`
    (0: no token trim) with an optional `max_turns`; with neither, the spec's defaults for an
    empty `RuntimeProfile` apply (32,000 tokens, 50 turns). `token_counter` prices each row's
    text instead of EST-1's bytes (`histtrim.counting`); `on_trim` receives every event.

    `policy` (default: the runtime's, else the spec's) gives the constants and the low-water
    marks: with `Policy(token_trim_target=Fraction(7, 10))` the framework's whole history,
    passed on every request, is cut where the `Agent` would hold its cut
    (`histtrim.low_water`), so the provider's prompt cache stays warm between cut moves."""

    def __init__(
        self,
        runtime: ResolvedRuntime | None = None,
        *,
        budget_tokens: int | None = None,
        max_turns: int | None = None,
        token_counter: TokenCounter | None = None,
        on_trim: OnTrim | None = None,
        policy: Policy | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if clock is not None and not callable(clock):
            raise ValueError(f"clock: expected a callable or None, got {type(clock).__name__}")
        if policy is not None and not isinstance(policy, Policy):
            raise ValueError(
                f"policy: expected a histtrim Policy, got {type(policy).__name__}"
            )
        if runtime is not None and budget_tokens is not None:
            raise ValueError("budget_tokens: pass a runtime or a budget, not both")
        if runtime is not None and not isinstance(runtime, ResolvedRuntime):
            raise ValueError(
                f"runtime: expected a ResolvedRuntime (histtrim.resolve_runtime), got "
                f"{type(runtime).__name__}"
            )
        limit: int | None = max_turns
        chosen = SPEC if policy is None else policy
        if budget_tokens is None:
            if runtime is not None and policy is not None and runtime.policy != policy:
                runtime = runtime.model_copy(update={"policy": policy})
            resolved = runtime or resolve_runtime(RuntimeProfile(), None, None, policy=chosen)
            self.budget_tokens = resolved.effective_context_budget()
            limit = resolved.max_turns if max_turns is None else max_turns
            self.policy = resolved.policy
        else:
            self.budget_tokens = _count("budget_tokens", budget_tokens)
            self.policy = resolve_runtime(RuntimeProfile(), None, None, policy=chosen).policy
        self.max_turns = None if limit is None else _count("max_turns", limit)
        if token_counter is not None and not callable(token_counter):
            raise ValueError("token_counter: expected a callable from a ChatMessage to an int")
        if on_trim is not None and not callable(on_trim):
            raise ValueError("on_trim: expected a callable receiving a HistoryTrimmed")
        self.token_counter = token_counter
        self.pricing = Pricing(self.policy, token_counter)
        """How every figure is priced: the policy's constants and the counter, if any."""
        self._cut_policy = (
            self.policy if self.policy.tool_context.mode == "off"
            else self.policy.model_copy(update={"tool_context": ToolContext()})
        )
        """The policy of the whole-turn cut: the tool context edit comes after it (CTX-5)."""
        self.on_trim = on_trim
        self.clock = clock
        """Times each request in seconds for the policy's `cold_cache` (CACHE-1..3); None:
        no time is known and the cache is never cold (the spec)."""
        self.cache = PriceCache(self.pricing)
        self.prefixes = Prefixes()
        """The last histories priced, whose units and prices a longer one reuses."""
        self._last_fit: tuple[tuple[object, int], HiddenPrefix | None] | None = None
        """The last USAGE-8 fit and the pairs it was made of."""
        self.book = ReportBook()
        """Each conversation's report and held cut, by the rows of the request it counts."""
        self._crumb_priced: Priced | None = None
        """Each unit's row and prices, once per instance (`PriceCache`)."""
        self._clear = ClearMemo()
        """The last clear (CTX-6..10), which the next request of that history resumes."""
        self._cleared: tuple[list[Any], list[Priced]] | None = None
        """The units and prices of the last edited request (`_edited`)."""
        self._clearing = threading.Lock()
        """Held while an edit reads and updates `_clear`; a concurrent edit goes without."""

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(budget_tokens={self.budget_tokens}, "
            f"max_turns={self.max_turns}, token_counter={self.token_counter!r}"
            f"{'' if self.policy == SPEC else f', policy={self.policy.changes()}'})"
        )

    def estimate(self, rows: Sequence[ChatMessage]) -> int:
        """The rows' size as the trims price it (the counter's, else EST-1..4)."""
        return self.pricing.total(rows)

    def trim(
        self, units: Sequence[U], priced: Sequence[Priced], *, crumb: U, crumb_present: bool,
        rewrite: Rewrite[U] | None = None,
    ) -> Trimmed[U]:
        """The turn limit (KEEP-2, LIMIT-1), then the token budget (KEEP-1, RUN-1), by whole
        turns, in one plan (`trim_records_held`: a low-water policy holds the Agent's cut);
        a drop inserts `crumb` after the leading system units (SEEN-1) and emits one event
        per limit (SEEN-2). Nothing to drop: the same units, in order (TURN-6).

        When the history was priced just before (`Prefixes.last`), a reported-usage cut held
        for it is applied first, and a usage report recorded for the request before it is
        applied after (USAGE-1..6, `report`). With `rewrite`, the policy's tool context edit
        (CTX-1..9) is applied to the kept units: `rewrite(unit, row)` writes a changed one."""
        seen = self.prefixes.last()
        offset = 0 if seen is None else len(priced) - len(seen.priced)
        if seen is not None and (offset < 0 or not _same(priced[offset:], seen.priced)):
            seen = None  # not the history this trim was given (a caller's own `priced` call)
            offset = 0
        if seen is not None and seen.fresh:
            seen.fresh = False
            self.book.restore(seen)
        positions: Sequence[int] = range(len(priced))
        rows: Sequence[Priced] = priced
        if seen is not None and seen.floor:
            positions, rows, crumb_present = self._held_floor(
                priced, crumb_present, seen.floor + offset)
        cold = None if seen is None else self._cold(seen, offset, positions, len(priced))
        given, resume, lead = None, None, tuple(priced[:offset])
        if seen is not None:  # the history's columns, made once (the next call's head)
            table = columns(seen, lead)
            if not seen.floor:
                given = table
                if seen.replay is not None and seen.replay[:2] == (lead, crumb_present):
                    resume = seen.replay[2]
        fitted = self._fitted(seen)
        budget = self.budget_tokens
        if fitted is not None:  # USAGE-8: the rows held to the budget's rows part
            budget = min(budget, fitted.rows_budget(budget))
        if budget != self.budget_tokens:
            resume = None  # the held replay was planned at another budget
        plan = self._plan(positions, rows, crumb_present, budget, self.max_turns,
                          given=given, resume=resume, cold=cold)
        if fitted is not None and plan.events:
            plan = replace(plan, events=tuple(
                e if e.reason != TrimReason.TOKEN_BUDGET else e.model_copy(update={
                    "tokens_before": fitted.count(e.tokens_before),
                    "tokens_after": fitted.count(e.tokens_after),
                    "budget": self.budget_tokens, "counter": PROVIDER_UNITS,
                    "hidden_prefix": fitted.prefix, "ratio": fitted.ratio_text,
                }) for e in plan.events))
        if (given is not None and seen is not None and plan.replay is not None
                and budget == self.budget_tokens):
            seen.replay = (lead, crumb_present, plan.replay)
        if seen is not None and seen.report is not None:
            plan = self._reported(plan, seen, offset)
        done = self._rebuild(plan, units, priced, crumb, seen, rewrite, budget)
        self._emit(done.events)
        return done

    def _cold(
        self, seen: Seen, offset: int, positions: Sequence[int], size: int
    ) -> ColdCuts | None:
        """CACHE-1..2 for the request made of `seen` now: its time from the clock, cold
        when the gap since this conversation's last request passes the lifetime
        (`ColdCache.cold_trim`, the Agent's mechanism); the conversation's cold requests as
        ends of the `positions` trimmed (`size` units, `offset` of them before the history)."""
        rule = self.policy.cold_cache
        if not rule.lifetime or self.clock is None:
            return None
        now = self._now()
        last = seen.last_time
        if now is not None:
            seen.last_time = now
        deep = rule.cold_trim(self.budget_tokens, self.policy.token_trim_target, now, last)
        if deep is not None:
            ends = frozenset() if seen.cold is None else seen.cold.ends
            seen.cold = ColdCuts(ends | {len(seen.priced)}, deep)
        if seen.cold is None:
            return None
        shift = len(positions) - size  # a held reported-usage cut's (`_held_floor`)
        ends = frozenset(
            e + offset + shift for e in seen.cold.ends
            if 0 < e + offset + shift <= len(positions)
            and positions[e + offset + shift - 1] == e + offset - 1  # the same request
        )
        return ColdCuts(ends, seen.cold.trim)

    def _now(self) -> float | None:
        """The clock's time in seconds; a clock that fails or returns no finite number is
        logged and no time is known (a guest never fails its host's run)."""
        try:
            value = self.clock() if self.clock is not None else None
            if value is None:
                return None
            if isinstance(value, bool) or not isinstance(value, int | float) or not (
                    math.isfinite(value)):
                raise ValueError(f"clock: expected a finite number of seconds, got {value!r}")
            return float(value)
        except Exception:
            logging.getLogger(LOGGER).exception("histtrim: the clock gave no time")
            return None

    def _fitted(self, seen: Seen | None) -> HiddenPrefix | None:
        """USAGE-8: the hidden prefix fitted on the conversation's reports, when the policy
        calibrates it and a budget is set (None: the estimate's budget, as the reference)."""
        if (seen is None or not seen.pairs or not self.budget_tokens
                or self.policy.hidden_prefix != "calibrated"):
            return None
        _, _, schemas = seen.report if seen.report is not None else (0, 0, 0)
        key = (seen.pairs, schemas)
        last = self._last_fit
        if last is None or last[0] != key:  # the same pairs at every call until a report
            last = self._last_fit = (key, fit_hidden_prefix(seen.pairs, schemas))
        return last[1]

    def _held_floor(
        self, priced: Sequence[Priced], crumb_present: bool, floor: int
    ) -> tuple[list[int], list[Priced], bool]:
        """The positions (and priced rows) left when those before `floor` (after the system
        units and the breadcrumb) are left out and the breadcrumb (-1) is in their place: the
        held reported-usage cut, which the framework's history does not hold."""
        body = index_turns(list(map(_ROW, priced)), crumb_present=crumb_present).body_start
        if floor <= body or floor >= len(priced):
            return list(range(len(priced))), list(priced), crumb_present
        lead, added = ([], []) if crumb_present else ([-1], [self._crumb()])
        return ([*range(body), *lead, *range(floor, len(priced))],
                [*priced[:body], *added, *priced[floor:]], True)

    def report(
        self, sent: Trimmed[Any] | None, usage: object, *, model: object = None,
        expected_model: object = None, tool_schema_tokens: int = 0,
    ) -> None:
        """Record the provider's usage report for the request `sent`: its input tokens
        (`reported_input_tokens`, USAGE-5; the frameworks report cached input inside them).
        No usable report (absent, 0, negative, not an integer, another model's, or one
        `usable_report` refuses, USAGE-7) records nothing: the estimate alone decides. The
        next call made from that history, or from a later history holding the request's
        rows (`ReportBook`), applies it (`_reported`). `tool_schema_tokens`: the estimate of
        the tool schemas the framework sent beside the rows. Never raises: a guest does not
        fail its host's run."""
        try:
            if sent is None or sent.seen is None or sent.tokens <= 0:
                return
            if not same_model(expected_model, model):
                return
            schemas = _count("tool_schema_tokens", tool_schema_tokens)
            reported = usable_report(
                reported_input_tokens(usage), sent.tokens, schemas, policy=self.policy,
                warn=lambda reason: logging.getLogger(LOGGER).warning("histtrim: %s", reason),
            )
            if reported is not None:
                seen = sent.seen
                seen.report = (reported, sent.tokens + schemas, schemas)
                seen.pairs = (*seen.pairs, (sent.tokens, reported))[-PAIRS_KEPT:]
                self.book.write(seen)
        except Exception:
            logging.getLogger(LOGGER).exception("histtrim: a usage report was not read")

    def _reported(self, plan: _Plan, seen: Seen, offset: int) -> _Plan:
        """USAGE-1..4, 6: after a report over the budget, the request is trimmed by whole
        turns to the budget scaled by estimated / reported (its low-water mark with a
        `Policy` target below 1), once, and the cut is then held (`Seen.floor`). A report
        within the budget (or none) never moves the cut."""
        assert seen.report is not None
        reported, estimated, schemas = seen.report
        seen.report = None
        self.book.write(seen)
        target = self.policy.token_trim_target
        prefix = None
        if self.policy.hidden_prefix == "calibrated":  # USAGE-8
            prefix = fit_hidden_prefix(seen.pairs, schemas)
        if prefix is not None:
            due = self.budget_tokens > 0 and reported > self.budget_tokens
            fit_budget = low_water_tokens(self.budget_tokens, target)
            scaled = prefix.rows_budget(fit_budget) if due else None
        else:
            scaled = scaled_budget(self.budget_tokens, reported, estimated, schemas,
                                   target=target)
        if scaled is None:
            return plan
        fit = self._cut_policy.model_copy(update={"token_trim_target": 1, "turn_trim_target": 1})
        moved = self._plan(plan.positions, plan.priced, plan.crumb_present, scaled, None,
                           policy=fit)
        if not moved.events:
            return plan
        dropped = moved.events[-1]
        event = dropped.model_copy(update={
            "tokens_before": reported,
            "tokens_after": prefix.count(moved.tokens) if prefix is not None else calibrated(
                moved.tokens + schemas, reported, estimated),
            "budget": low_water_tokens(self.budget_tokens, target),
            "counter": PROVIDER_UNITS, "target": None if target == 1 else str(target),
            "hidden_prefix": None if prefix is None else prefix.prefix,
            "ratio": None if prefix is None else prefix.ratio_text,
        })
        first = _first_kept(moved.positions)
        if first is not None:
            seen.floor = first - offset
            self.book.write(seen)
        return _Plan(moved.positions, moved.priced, moved.rows, moved.crumb_present,
                     (*plan.events, event), moved.tokens)

    def reactive(
        self, units: Sequence[U], priced: Sequence[Priced], *, crumb: U, crumb_present: bool,
        rewrite: Rewrite[U] | None = None, sent: Trimmed[Any] | None = None,
    ) -> Trimmed[U] | None:
        """After the provider reported an overflow for these units: trim them to two thirds
        of their estimate (RUN-2). None when one turn is left: nothing older can be dropped.

        `sent`: the request that overflowed (these are its units). Its history then holds
        the retry's cut, as after a reported-usage trim (`Seen.floor`), and the retry is a
        request of that history whose usage `report` records (issue 46 item 1: a resumed
        session would otherwise overflow again at every call)."""
        rows = list(map(_ROW, priced))
        index = index_turns(rows, crumb_present=crumb_present)
        if index.turn_count <= 1:
            return None
        current = index.current_turn_after + 1
        size = sum(map(_OLDER, priced[:current])) + sum(map(_CURRENT, priced[current:]))
        target = self.policy.reactive_tokens(size)
        plan = self._plan(range(len(priced)), priced, crumb_present, target, None)
        plan = replace(plan, events=tuple(e.after_overflow() for e in plan.events[-1:]))
        done = self._rebuild(plan, units, priced, crumb, None, rewrite, target)
        self._emit(done.events)
        seen = None if sent is None else sent.seen
        if seen is None:
            return done
        first = _first_kept(plan.positions) if plan.events else None
        if first is not None and isinstance(sent, Trimmed) and len(sent.positions) == len(
                units) and first < len(units):
            held = sent.positions[first]
            if held >= 0 and held - sent.offset > seen.floor:
                seen.floor = held - sent.offset
                self.book.write(seen)
        return replace(done, seen=seen)

    def _plan(
        self, positions: Sequence[int], priced: Sequence[Priced], crumb_present: bool,
        budget: int, max_turns: int | None, *, policy: Policy | None = None,
        given: Columns | None = None, resume: Replay | None = None,
        cold: ColdCuts | None = None,
    ) -> _Plan:
        """The whole-turn trim of `priced` (at `positions` of the request; -1: the crumb);
        `given`: their columns, when the caller holds them."""
        table = Columns.of(priced) if given is None else given
        rows = table.rows
        done = trim_records_held(  # records: positions (ints: no garbage to collect per row)
            positions, rows, max_turns=max_turns, budget_tokens=budget,
            budget_in_force=self.budget_tokens, crumb_present=crumb_present,
            breadcrumb_record=-1, token_counter=self.token_counter,
            policy=self._cut_policy if policy is None else policy,
            prices=(table.older, table.current),
            index=index_with_facts(rows, table.facts, crumb_present=crumb_present,
                                   opens=table.opens),
            requests=[*table.points, len(rows)], resume=resume,
            crumb_price=self._crumb().older, cold=cold, sums=table.sums,
        )
        tokens = done.result.tokens_after if isinstance(done.result, TrimResult) else 0
        if not done.trimmed:
            return _Plan(positions, priced, rows, crumb_present, (), tokens, done.replay)
        kept = done.records
        k = bisect_left(range(len(kept)), True, key=lambda j: kept[j] != positions[j])
        lead = 1 if done.crumb_inserted else 0
        skip = len(positions) - (len(kept) - k - lead)
        return _Plan(kept, [*priced[:k], *([self._crumb()] if lead else []), *priced[skip:]],
                     done.rows, done.crumb_present, done.events, tokens, done.replay)

    def _rebuild(
        self, plan: _Plan, units: Sequence[U], priced: Sequence[Priced], crumb: U,
        seen: Seen | None, rewrite: Rewrite[U] | None = None, budget: int = 0,
    ) -> Trimmed[U]:
        """The units the plan keeps: the leading ones, the crumb (-1), the rest to the end;
        with `rewrite`, then the policy's tool context edit of them (`_edited`), fitted to
        `budget` (CTX-10)."""
        out = kept_items(units, plan.positions, crumb)
        offset = 0 if seen is None else len(priced) - len(seen.priced)
        done = Trimmed(out, plan.rows, plan.crumb_present, plan.events, plan.tokens,
                       list(plan.priced), seen, plan.positions, offset, len(units))
        if rewrite is None or self.policy.tool_context.mode == "off":
            return done
        cold = _cold_rows(seen, offset, plan.positions, len(priced))
        return self._edited(done, rewrite, budget, cold)

    def _edited(
        self, done: Trimmed[U], rewrite: Rewrite[U], budget: int = 0,
        cold: ColdCuts | None = None,
    ) -> Trimmed[U]:
        """The request the policy's tool context sends (CTX-1..9), made from the kept rows
        alone (so the same history gives the same request): an unchanged unit is the
        framework's own object, a changed one is written by `rewrite`. The estimate of what
        is sent (`tokens`) is the edited rows'; `positions` are dropped (the units are no
        longer the history's own, position for position). A request still over `budget`
        is fitted to it (CTX-10); the last event then reports the tokens sent. `cold`: the
        conversation's cold requests in the kept rows, where the clear batches (CACHE-2)."""
        if not self._clearing.acquire(blocking=False):  # another thread's edit: no memo
            return self._edit(done, rewrite, budget, None, cold)
        try:
            return self._edit(done, rewrite, budget, self._clear, cold)
        finally:
            self._clearing.release()

    def _edit(
        self, done: Trimmed[U], rewrite: Rewrite[U], budget: int, memo: ClearMemo | None,
        cold: ColdCuts | None = None,
    ) -> Trimmed[U]:
        """`_edited`, resumed from `memo` (the last request, when this one extends it)."""
        edit = edit_tool_context(
            done.rows, self.policy, crumb_present=done.crumb_present,
            token_counter=self.token_counter, budget_tokens=budget, memo=memo, cold=cold,
        )
        last = None
        if memo is not None:
            last, self._cleared = self._cleared, None
        if not edit.changed:
            return done
        units: list[U]
        priced: list[Priced]
        if edit.resumed and last is not None and len(last[0]) == edit.resumed:
            # the last request, extended: only the rows the edit sends otherwise are written
            k = edit.resumed
            units = [*last[0][:k], *done.units[k:]]
            priced = [*last[1][:k], *done.priced[k:]]
            for at in edit.touched:
                self._write(done, edit.messages[at], at, units, priced, rewrite)
        else:
            units, priced = [], []
            for row, src in zip(edit.messages, edit.source_rows, strict=True):
                units.append(done.units[src])
                priced.append(done.priced[src])
                if row is not done.rows[src]:
                    self._write(done, row, len(units) - 1, units, priced, rewrite, src)
        tokens = self.pricing.total(edit.messages) if edit.tokens is None else edit.tokens
        if edit.tokens is not None and memo is not None and not edit.dropped:
            self._cleared = (units, priced)
        events = done.events
        if events and events[-1].counter != PROVIDER_UNITS:
            events = (*events[:-1], events[-1].model_copy(update={"tokens_after": tokens}))
        return replace(done, units=units, rows=edit.messages, priced=priced, tokens=tokens,
                       positions=(), tool_context=edit, events=events,
                       paired=done.positions
                       if edit.tokens is not None and not edit.dropped else ())

    def _write(
        self, done: Trimmed[U], row: ChatMessage, at: int, units: list[U],
        priced: list[Priced], rewrite: Rewrite[U], src: int | None = None,
    ) -> None:
        """Unit `at` of the request as `row` says: the kept unit when the edit left its row
        as it was, else the framework's rewrite of it, priced as plain text."""
        src = at if src is None else src
        if row is done.rows[src]:
            units[at], priced[at] = done.units[src], done.priced[src]
            return
        units[at] = rewrite(done.units[src], row)
        price = self.pricing.plain(row)
        priced[at] = Priced(row, price, price)

    def _crumb(self) -> Priced:
        """The breadcrumb row and its price (a plain row, SEEN-1), made once."""
        if self._crumb_priced is None:
            row = breadcrumb_message()
            price = self.pricing.plain(row)
            self._crumb_priced = Priced(row, price, price)
        return self._crumb_priced

    def check_sent(self, sent: Trimmed[Any]) -> None:
        """`check_pairing` of the request `sent`, from its history's pairing errors (found
        once per history, then only for the rows a call adds): a whole-turn cut and the
        breadcrumb never break a pair, so the request's errors are the history's errors in
        the rows it keeps."""
        seen = sent.seen
        positions = sent.positions or sent.paired
        if seen is None or not positions:
            self.check_pairing(sent.rows)
            return
        problems = _history_problems(seen)
        if not problems:
            return
        history = list(map(_ROW, seen.priced))
        first = _first_kept(positions)
        if first is None:
            _refuse(problems, history)
            return
        lead = bisect_left(range(len(positions)), True, key=lambda j: positions[j] != j)
        _refuse([p for p in problems if not lead <= p.position + sent.offset < first],
                history)

    @staticmethod
    def check_pairing(rows: Sequence[ChatMessage]) -> None:
        """Refuse a request every OpenAI-style API would reject (PAIR-1): a call without its
        results, or a result without its call. Whole-turn trims never cause one; a history
        broken before it reached the integration is reported here, not sent."""
        _refuse([p for p in validate_tool_pairing(rows) if p.is_error], rows)

    def _emit(self, events: Sequence[HistoryTrimmed]) -> None:
        """Each event to `on_trim`; a callback that raises is logged, the run goes on (SEEN-3)."""
        if self.on_trim is None:
            return
        for event in events:
            try:
                self.on_trim(event)
            except Exception:
                logging.getLogger(LOGGER).exception("histtrim: on_trim failed for %r", event)


def _cold_rows(
    seen: Seen | None, offset: int, positions: Sequence[int], size: int
) -> ColdCuts | None:
    """A conversation's cold requests (CACHE-2) as ends of the rows a trim kept (`positions`
    of the `size` units it was given, `offset` of them before the history): the requests
    whose last row was kept. O(cold requests) on a whole-turn cut's shape."""
    if seen is None or seen.cold is None:
        return None
    lead = bisect_left(range(len(positions)), True, key=lambda j: positions[j] != j)
    start = kept_tail(positions, size)
    where: dict[int, int] | None = None

    def at(p: int) -> int | None:
        nonlocal where
        if p < lead:
            return p
        if start is not None:
            return len(positions) - (size - p) if start <= p < size else None
        if where is None:  # not a whole-turn cut's shape: every position, once
            where = {q: j for j, q in enumerate(positions) if q >= 0}
        return where.get(p)

    ends = frozenset(j + 1 for e in seen.cold.ends
                     if (j := at(e + offset - 1)) is not None)
    return ColdCuts(ends, seen.cold.trim) if ends else None


def _refuse(errors: Sequence[PairingProblem], rows: Sequence[ChatMessage]) -> None:
    """Raise `ToolPairingError` for the errors a framework does not resolve itself."""
    errors = [problem for problem in errors if not _around_an_empty_id(rows, problem)]
    if errors:
        raise ToolPairingError(
            f"the request breaks tool pairing and was not sent: {errors[0]}"
            + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else "")
        )


def _history_problems(seen: Seen) -> list[PairingProblem]:
    """The pairing errors of a history (`Seen.problems`), scanned once: from its start, or
    from the last request of the history it extends (a run of calls and results starts at an
    assistant row after a non-assistant one, so nothing before it changes an error after it)."""
    if seen.problems is not None:
        return seen.problems
    rows = _Rows(seen.priced)
    start, earlier = 0, []
    if seen.parent is not None:
        size, problems = seen.parent
        start = min(size, len(rows))
        while start > 0 and not (start < len(rows) and _fresh(rows, start)):
            start -= 1
        earlier = [p for p in problems if p.position < start]
    tail = [replace(p, position=p.position + start) for p in
            validate_tool_pairing(list(map(_ROW, seen.priced[start:]))) if p.is_error]
    seen.problems, seen.parent = [*earlier, *tail], None
    return seen.problems


class _Rows(Sequence[ChatMessage]):
    """The rows of priced units, read one at a time (no list of them all is made)."""

    def __init__(self, priced: Sequence[Priced]) -> None:
        self.priced = priced

    def __len__(self) -> int:
        return len(self.priced)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [p.row for p in self.priced[i]]
        return self.priced[i].row


def _fresh(rows: Sequence[ChatMessage], position: int) -> bool:
    """Whether no pairing error at or after `position` depends on a row before it: a user or
    system row, or the first assistant row of a reply (a new run of calls and results)."""
    role = rows[position].role
    return role in ("user", "system") or (role == "assistant"
                                          and rows[position - 1].role != "assistant")


def _around_an_empty_id(rows: Sequence[ChatMessage], problem: PairingProblem) -> bool:
    """Whether a pairing problem is one the framework resolves, never a broken history: an
    empty call id (Gemini's OpenAI-compatible endpoint, LM Studio) is sent as is or replaced
    by a fresh id when the request is written (pydantic-ai), so a call with id "" left
    unanswered, or a result right after a dispatch holding such a call (the framework's
    answer under an id it made), is sent as the framework alone would send it."""
    if problem.tool_call_id == "":
        return True
    if problem.kind != "orphan_result":
        return False
    position = problem.position - 1
    while position >= 0 and rows[position].role == "tool":
        position -= 1
    ids = tool_call_ids(rows[position]) if position >= 0 else None
    return ids is not None and "" in ids


def _count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name}: expected an integer >= 0, got {value!r}")
    return value
