"""What the three integrations share: the limits resolved once (budget, turn limit, counter,
policy), the whole-turn trim of a framework's units (one provider-facing row each), the
reactive 2/3 trim after an overflow, the pairing guard and the event delivery.

A unit is whatever one row stands for in a framework (a message, some parts of a message, a
run of input items); the framework module maps units to rows and kept units back to its own
objects. The cut is `histtrim.adapters.trim_records`, so it is the library's cut exactly."""

from __future__ import annotations

import logging
from bisect import bisect_left
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Generic, TypeVar

from histtrim.adapters import trim_records_held
from histtrim.carriers import tool_call_ids
from histtrim.config import RuntimeProfile
from histtrim.counting import Pricing, TokenCounter
from histtrim.events import HistoryTrimmed
from histtrim.messages import ChatMessage
from histtrim.pairing import PairingProblem, validate_tool_pairing
from histtrim.policy import SPEC, Policy
from histtrim.route import ResolvedRuntime, resolve_runtime
from histtrim.trim import TrimResult, breadcrumb_message
from histtrim.turns import index_turns

_ROW, _OLDER, _CURRENT = attrgetter("row"), attrgetter("older"), attrgetter("current")
U = TypeVar("U")
T = TypeVar("T")

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


class PriceCache:
    """Each unit's row and prices, computed once per integration instance.

    A framework passes the same prefix on every model call, so a unit already seen is not
    priced again (a `token_counter` is called once per row per session): a unit is found by
    the identity of its objects (`anchors`, held while the entry lives, so an id is never
    reused under it), else by its row's content, which is what its price depends on (a
    framework that copies its messages pays for the row's text, never for the counter).
    Two generations of at most `limit` entries each bound the memory; entries are pure
    values, so concurrent calls can at worst price a row twice."""

    def __init__(self, pricing: Pricing, limit: int = 8192) -> None:
        self.pricing = pricing
        self.limit = limit
        self._ids: dict[Hashable, tuple[tuple[object, ...], Priced]] = {}
        self._old_ids: dict[Hashable, tuple[tuple[object, ...], Priced]] = {}
        self._rows: dict[tuple[str, str, int], Priced] = {}
        self._old_rows: dict[tuple[str, str, int], Priced] = {}
        self._groups: dict[Hashable, tuple[tuple[object, ...], tuple[Any, ...]]] = {}
        self._old_groups: dict[Hashable, tuple[tuple[object, ...], tuple[Any, ...]]] = {}

    def get(
        self, anchors: tuple[object, ...], build: Callable[[], tuple[ChatMessage, int]]
    ) -> Priced:
        """The unit's priced row: cached by its objects' identity, else by its row."""
        key = tuple(map(id, anchors))
        hit = self._ids.get(key) or self._old_ids.get(key)
        if hit is not None:
            if len(self._ids) < self.limit:
                self._ids[key] = hit
            return hit[1]
        row, parts = build()
        content = (row.role, row.content, parts)
        priced = self._rows.get(content) or self._old_rows.get(content)
        if priced is None:
            older, current = self.pricing.both(row, parts)
            priced = Priced(row, older, current)
        self._keep(content, priced)
        self._ids[key] = (anchors, priced)
        return priced

    def group(
        self, anchors: tuple[object, ...], build: Callable[[], Sequence[tuple[T, ChatMessage, int]]]
    ) -> tuple[tuple[T, Priced], ...]:
        """`get` for an object that stands for several units (a pydantic-ai request's parts):
        each unit's tag (`build`'s first item) and priced row."""
        key = tuple(map(id, anchors))
        hit = self._groups.get(key) or self._old_groups.get(key)
        if hit is not None:
            if len(self._groups) < self.limit:
                self._groups[key] = hit
            return hit[1]
        out = tuple((tag, self.priced(row, parts)) for tag, row, parts in build())
        self._groups[key] = (anchors, out)
        return out

    def _keep(self, content: tuple[str, str, int], priced: Priced) -> None:
        if len(self._rows) >= self.limit or len(self._ids) >= self.limit or len(
                self._groups) >= self.limit:
            self._old_rows, self._rows = self._rows, {}
            self._old_ids, self._ids = self._ids, {}
            self._old_groups, self._groups = self._groups, {}
        self._rows[content] = priced

    def fit(self, units: int) -> None:
        """Room for a call of `units` units and the next one: a history longer than the
        limit would otherwise evict itself on every call."""
        self.limit = max(self.limit, 2 * units + 1024)

    def priced(self, row: ChatMessage, parts: int = 0) -> Priced:
        """A row the framework does not hold (the instructions): by its content only."""
        content = (row.role, row.content, parts)
        priced = self._rows.get(content) or self._old_rows.get(content)
        if priced is None:
            older, current = self.pricing.both(row, parts)
            priced = Priced(row, older, current)
            self._keep(content, priced)
        return priced


@dataclass(frozen=True)
class Seen:
    """A history an instance priced: its items, and the units and priced rows made of them."""

    items: list[Any]
    units: list[Any]
    priced: list[Priced]


class Prefixes:
    """The last few histories an instance priced, so a call that extends one (a framework
    passes the same prefix on every model call) reuses its units and prices and makes only
    the new items': the prefix is checked at C speed (list equality, identity first: an
    equal item makes an equal row). `keep` histories are remembered (concurrent sessions on
    one instance); an item the framework changed in place after a call is not seen."""

    def __init__(self, keep: int = 4) -> None:
        self.keep = keep
        self._seen: list[Seen] = []

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

    def remember(self, items: Sequence[Any], units: list[Any], priced: list[Priced]) -> None:
        self._seen = [Seen(list(items), units, priced), *self._seen[: self.keep - 1]]


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
    ) -> None:
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
        self.on_trim = on_trim
        self.cache = PriceCache(self.pricing)
        self.prefixes = Prefixes()
        """The last histories priced, whose units and prices a longer one reuses."""
        self._crumb_priced: Priced | None = None
        """Each unit's row and prices, once per instance (`PriceCache`)."""

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
        self, units: Sequence[U], priced: Sequence[Priced], *, crumb: U, crumb_present: bool
    ) -> Trimmed[U]:
        """The turn limit (KEEP-2, LIMIT-1), then the token budget (KEEP-1, RUN-1), by whole
        turns, in one plan (`trim_records_held`: a low-water policy holds the Agent's cut);
        a drop inserts `crumb` after the leading system units (SEEN-1) and emits one event
        per limit (SEEN-2). Nothing to drop: the same units, in order (TURN-6)."""
        return self._plan(units, priced, crumb, crumb_present, self.budget_tokens,
                          self.max_turns, after_overflow=False)

    def reactive(
        self, units: Sequence[U], priced: Sequence[Priced], *, crumb: U, crumb_present: bool
    ) -> Trimmed[U] | None:
        """After the provider reported an overflow for these units: trim them to two thirds
        of their estimate (RUN-2). None when one turn is left: nothing older can be dropped."""
        rows = [p.row for p in priced]
        if index_turns(rows, crumb_present=crumb_present).turn_count <= 1:
            return None
        target = self.policy.reactive_tokens(self._size(priced, rows, crumb_present))
        return self._plan(units, priced, crumb, crumb_present, target, None,
                          after_overflow=True)

    def _size(self, priced: Sequence[Priced], rows: Sequence[ChatMessage], crumb: bool) -> int:
        current = index_turns(rows, crumb_present=crumb).current_turn_after + 1
        return sum(p.older for p in priced[:current]) + sum(p.current for p in priced[current:])

    def _plan(
        self, units: Sequence[U], priced: Sequence[Priced], crumb: U, crumb_present: bool,
        budget: int, max_turns: int | None, *, after_overflow: bool,
    ) -> Trimmed[U]:
        rows = list(map(_ROW, priced))
        if len(units) != len(rows):
            raise ValueError(f"units: {len(units)} units but {len(rows)} rows")
        done = trim_records_held(  # records: the units' positions (ints: no garbage to collect)
            range(len(rows)), rows, max_turns=max_turns,
            budget_tokens=budget, budget_in_force=self.budget_tokens,
            crumb_present=crumb_present, breadcrumb_record=-1,
            token_counter=self.token_counter, policy=self.policy,
            prices=(list(map(_OLDER, priced)), list(map(_CURRENT, priced))),
        )
        events = done.events
        if after_overflow:
            events = tuple(event.after_overflow() for event in events[-1:])
        self._emit(events)
        tokens = done.result.tokens_after if isinstance(done.result, TrimResult) else 0
        if not done.trimmed:
            return Trimmed(list(units), done.rows, done.crumb_present, events, tokens,
                           list(priced))
        # kept: the leading positions 0..k-1, the breadcrumb (-1) if inserted, then cut..n-1
        kept = done.records
        k = bisect_left(range(len(kept)), True, key=lambda j: kept[j] != j)
        crumbs = [crumb] if k < len(kept) and kept[k] == -1 else []
        cut = kept[k + len(crumbs)] if k + len(crumbs) < len(kept) else len(rows)
        added = [self._crumb()] if crumbs else []
        return Trimmed([*units[:k], *crumbs, *units[cut:]], done.rows, done.crumb_present,
                       events, tokens, [*priced[:k], *added, *priced[cut:]])

    def _crumb(self) -> Priced:
        """The breadcrumb row and its price (a plain row, SEEN-1), made once."""
        if self._crumb_priced is None:
            row = breadcrumb_message()
            price = self.pricing.plain(row)
            self._crumb_priced = Priced(row, price, price)
        return self._crumb_priced

    @staticmethod
    def check_pairing(rows: Sequence[ChatMessage]) -> None:
        """Refuse a request every OpenAI-style API would reject (PAIR-1): a call without its
        results, or a result without its call. Whole-turn trims never cause one; a history
        broken before it reached the integration is reported here, not sent."""
        errors = [problem for problem in validate_tool_pairing(rows)
                  if problem.is_error and not _around_an_empty_id(rows, problem)]
        if errors:
            raise ToolPairingError(
                f"the request breaks tool pairing and was not sent: {errors[0]}"
                + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else "")
            )

    def _emit(self, events: Sequence[HistoryTrimmed]) -> None:
        """Each event to `on_trim`; a callback that raises is logged, the run goes on (SEEN-3)."""
        if self.on_trim is None:
            return
        for event in events:
            try:
                self.on_trim(event)
            except Exception:
                logging.getLogger(LOGGER).exception("histtrim: on_trim failed for %r", event)


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
