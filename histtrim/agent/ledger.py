"""A running token ledger: the provider-facing rows and their estimate, kept up to date as
rows arrive, so the check at every provider-call boundary (RUN-1) costs O(new rows).

The total always equals `estimate_history_tokens` of the rows (EST-1..4): when a real user
row opens a new turn, the previous turn's tool results and carriers lose their image price
(EST-2), and each row is repriced at most once that way."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import wraps
from typing import Any, Concatenate, ParamSpec, TypeVar, overload

from histtrim._checks import flag, integer_in, non_negative
from histtrim.counting import Pricing, TokenCounter
from histtrim.messages import ChatMessage, chat_rows
from histtrim.policy import SPEC, Policy
from histtrim.trim import TrimResult, trim_to_recent_turns
from histtrim.turns import crumb_slot, index_turns, is_system

P = ParamSpec("P")
T = TypeVar("T")


_Method = Callable[Concatenate["TokenLedger", P], T]


def _locked(method: _Method[P, T]) -> _Method[P, T]:
    """Run the method holding the ledger's lock: one reader or writer at a time."""

    @wraps(method)
    def run(self: TokenLedger, /, *args: P.args, **kwargs: P.kwargs) -> T:
        with self._lock:
            return method(self, *args, **kwargs)

    return run


def _as_row(value: ChatMessage | Mapping[str, Any]) -> ChatMessage:
    return value if isinstance(value, ChatMessage) else ChatMessage.model_validate(value)


class TokenLedger(Sequence[ChatMessage]):
    """Provider-facing rows with a running `total` equal to `estimate_history_tokens(rows)`
    (or, with a `token_counter`, to the counted estimate of `histtrim.counting`).

    A sequence of `ChatMessage`s (pass it to any trim). Appending k rows costs O(k),
    amortized; `needs_trim` is O(1). After a trim, `drop_oldest` advances it, or `rebuild`
    starts it again from the kept rows.

    Thread-safe: every method holds the ledger's (reentrant) lock, so a ledger shared by
    several threads stays equal to the estimate of its rows; iterating walks a snapshot."""

    __slots__ = ("_costs", "_last_open", "_lock", "_pending", "_prefix", "_priced", "_prices",
                 "_rows", "_total", "_turns")
    _lock: threading.RLock
    _rows: list[ChatMessage]
    _costs: list[int]
    _total: int
    _turns: int
    """Rows that open a turn (a breadcrumb row counts; the owner's flag discounts it)."""
    _prefix: int
    _last_open: int
    """The newest real user row, or -1: the rows after it are the current turn (all rows
    when there is no real user row)."""
    _pending: list[int]
    """Current-turn rows whose price includes images (repriced when the turn closes)."""
    _priced: int
    _prices: Pricing

    def __init__(
        self,
        history: Iterable[ChatMessage | Mapping[str, Any]] = (),
        *,
        token_counter: TokenCounter | None = None,
        policy: Policy = SPEC,
    ) -> None:
        """`token_counter` prices each row's text instead of EST-1's bytes (`histtrim.counting`):
        it is called once per row, ever, so the ledger stays O(new rows) with it too."""
        self._lock = threading.RLock()
        self._prices = Pricing(policy, token_counter)
        self._priced = 0
        self.rebuild(history)

    @property
    def pricing(self) -> Pricing:
        """How the rows are priced (fixed for the ledger's life)."""
        return self._prices

    @property
    def token_counter(self) -> TokenCounter | None:
        """The counter pricing the rows' text; None: the spec's estimate (EST-1)."""
        return self._prices.counter

    # ------------------------------------------------------------------ reading

    @property
    def total(self) -> int:
        """The estimate of every row, images included (EST-1..4)."""
        with self._lock:
            return self._total

    @property
    def policy(self) -> Policy:
        """The prices every row is estimated with (fixed for the ledger's life)."""
        return self._prices.policy

    @property
    def priced(self) -> int:
        """How many row prices this ledger has computed so far (the work it has done)."""
        return self._priced

    @property
    def system_rows(self) -> int:
        """The length of the leading system block (where the breadcrumb goes)."""
        return self._prefix

    @_locked
    def turn_count(self, *, crumb_present: bool = False) -> int:
        """`index_turns(rows, crumb_present=...).turn_count`, without a pass over the rows."""
        self._check_crumb(crumb_present)
        return self._turns - crumb_present

    @_locked
    def needs_trim(self, budget_tokens: int, *, crumb_present: bool = False) -> bool:
        """Whether `trim_to_recent_turns(rows, budget_tokens)` would drop a turn: a positive
        budget is exceeded and more than one turn is left. O(1)."""
        budget = non_negative("budget_tokens", budget_tokens)
        return 0 < budget < self._total and self.turn_count(crumb_present=crumb_present) > 1

    @_locked
    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[ChatMessage]:
        with self._lock:
            return iter(list(self._rows))

    @overload
    def __getitem__(self, index: int) -> ChatMessage: ...
    @overload
    def __getitem__(self, index: slice) -> list[ChatMessage]: ...
    @_locked
    def __getitem__(self, index: int | slice) -> ChatMessage | list[ChatMessage]:
        return self._rows[index]

    @_locked
    def __repr__(self) -> str:
        return f"TokenLedger(rows={len(self._rows)}, total={self._total})"

    # ------------------------------------------------------------------ growing

    @_locked
    def append(self, row: ChatMessage | Mapping[str, Any]) -> int:
        """Add a row at the end and return its price; a real user row reprices the turn
        it closes (EST-2). Amortized O(1)."""
        row = _as_row(row)
        position = len(self._rows)
        if row.facts.opens_turn:
            # first: a failing counter changes nothing
            cost = self._prices.cost(row, current_turn=False)
            self._close_current_turn()
            self._last_open = position
            self._turns += 1
            cost = self._prices.cost(row, current_turn=False)
        else:  # after the newest real user row, or anywhere when there is none (-1)
            cost = self._prices.cost(row, current_turn=True)
            if cost != self._prices.plain(row):
                self._pending.append(position)
        if position == self._prefix and is_system(row):
            self._prefix += 1
        self._rows.append(row)
        self._costs.append(cost)
        self._total += cost
        self._priced += 1
        return cost

    @_locked
    def extend(self, rows: Iterable[ChatMessage | Mapping[str, Any]]) -> None:
        """Append every row, in order: O(len(rows)), amortized."""
        for row in rows:
            self.append(row)

    @_locked
    def insert(self, index: int, row: ChatMessage | Mapping[str, Any]) -> None:
        """Insert a row before position `index` (e.g. the breadcrumb after the system rows)."""
        row = _as_row(row)
        integer_in("index", index, 0, len(self))
        pending = [i + (i >= index) for i in self._pending]
        if row.facts.opens_turn:
            cost = self._prices.cost(row, current_turn=False)
            if index > self._last_open:
                # The new row opens the current turn: the rows it closes lose their images.
                closed = [i for i in pending if i < index]
                pending = [i for i in pending if i > index]
                for i in closed:
                    self._reprice(i, self._prices.plain(self._rows[i]))
                self._last_open = index
            else:
                self._last_open += 1
            self._turns += 1
        else:
            current = self._last_open < index
            cost = self._prices.cost(row, current_turn=current)
            if index <= self._last_open:
                self._last_open += 1
            if current and cost != self._prices.plain(row):
                pending.append(index)
        if index <= self._prefix and is_system(row):
            self._prefix += 1
        elif index < self._prefix:
            self._prefix = index
        self._pending = pending
        self._rows.insert(index, row)
        self._costs.insert(index, cost)
        self._total += cost
        self._priced += 1

    # ------------------------------------------------------------------ shrinking

    @_locked
    def drop(self, start: int, stop: int) -> None:
        """Remove rows `start:stop`. Python work O(stop - start), unless the newest real user
        row goes too: then the rows after the new last one are repriced."""
        integer_in("start", start, 0, len(self))
        integer_in("stop", stop, start, len(self))
        if start == stop:
            return
        width = stop - start
        self._total -= sum(self._costs[start:stop])
        self._turns -= sum(1 for row in self._rows[start:stop] if row.facts.opens_turn)
        del self._rows[start:stop]
        del self._costs[start:stop]
        if self._last_open >= stop:
            self._last_open -= width
            self._pending = [i - width for i in self._pending]
        elif self._last_open < start:
            self._pending = [
                i if i < start else i - width for i in self._pending if not start <= i < stop
            ]
        else:
            self._reopen(start)
        if start <= self._prefix:
            prefix, rows = start, self._rows
            while prefix < len(rows) and is_system(rows[prefix]):
                prefix += 1
            self._prefix = prefix

    @_locked
    def drop_oldest(self, count: int, *, crumb_present: bool = False) -> None:
        """Drop the `count` oldest rows after the system block and the breadcrumb: what a
        whole-turn trim removed (`result.dropped_messages`)."""
        self._check_crumb(crumb_present)
        body = self._prefix + crumb_present
        integer_in("count", count, 0, len(self) - body)
        self.drop(body, body + count)

    @_locked
    def trim(self, budget_tokens: int, *, crumb_present: bool = False) -> TrimResult:
        """`trim_to_recent_turns` on these rows, then drop what it dropped (KEEP-1).

        The breadcrumb is the owner's to insert (`insert(system_rows, breadcrumb_message())`)."""
        result = trim_to_recent_turns(
            self, budget_tokens, crumb_present=crumb_present, token_counter=self.token_counter,
            policy=self.policy,
        )
        if result.trimmed:
            self.drop_oldest(result.dropped_messages, crumb_present=crumb_present)
        return result

    @_locked
    def rebuild(self, history: Iterable[ChatMessage | Mapping[str, Any]]) -> None:
        """Start again from `history` (e.g. the rows a trim kept): one pass, O(len)."""
        rows = list(chat_rows(history))
        index = index_turns(rows)
        costs = self._prices.costs(rows, index)  # first: a failing counter changes nothing
        self._rows, self._costs = rows, costs
        self._total = sum(self._costs)
        self._turns = index.turn_count
        self._prefix = index.prefix_len
        self._last_open = index.starts[-1] if index.starts else -1
        self._pending = self._special_rows()
        self._priced += len(rows)

    # ------------------------------------------------------------------ internals

    def _check_crumb(self, crumb_present: bool) -> None:
        if flag("crumb_present", crumb_present):
            crumb_slot(self._rows, self._prefix)

    def _special_rows(self) -> list[int]:
        """Rows of the current turn whose price includes images (repriced when it closes)."""
        rows, costs, plain = self._rows, self._costs, self._prices.plain
        return [i for i in range(self._last_open + 1, len(rows)) if costs[i] != plain(rows[i])]

    def _reprice(self, i: int, cost: int) -> None:
        self._total += cost - self._costs[i]
        self._costs[i] = cost
        self._priced += 1

    def _close_current_turn(self) -> None:
        """A new turn starts: the current turn's tool results and carriers become older ones."""
        for i in self._pending:
            self._reprice(i, self._prices.plain(self._rows[i]))
        self._pending = []

    def _reopen(self, start: int) -> None:
        """The newest real user row was dropped: the turn before `start` is current again."""
        last = start - 1
        while last >= 0 and not self._rows[last].facts.opens_turn:
            last -= 1
        self._last_open = last
        for i in range(last + 1, len(self._rows)):
            self._reprice(i, self._prices.cost(self._rows[i], current_turn=True))
        self._pending = self._special_rows()

