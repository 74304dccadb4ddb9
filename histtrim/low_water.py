"""RUN-1, LIMIT-1..2, SEEN-1: the low-water cut for a caller that passes the whole history on
every request (a framework's middleware, an adapter, `histtrim trim`).

The `Agent` keeps its cut: once a limit is exceeded it drops turns down to the policy's
low-water mark (`token_trim_target`, `turn_trim_target`) and then sends the same rows, a
growing prefix the provider can cache, until they no longer fit. A caller holding the
untrimmed history gets the same cut without any state: every assistant row closes a request
made of the rows before it, so the cut is replayed over those requests, then the current one.
Each row is priced once as the current turn and once as an older one (EST-2 dispatches a tool
result's images only in the current turn), so each check is O(1) on prefix sums, and the cut
only moves forward: linear in the history. An edited history is simply replayed again."""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import NamedTuple

from histtrim._checks import non_negative
from histtrim.counting import Pricing
from histtrim.events import HistoryTrimmed, TrimReason
from histtrim.messages import ChatMessage
from histtrim.policy import ColdCuts, Policy, low_water_tokens, low_water_turns
from histtrim.trim import prefix_sums
from histtrim.turns import TurnIndex
from histtrim.visible import VisibleTrim


@dataclass(frozen=True)
class Replay:
    """Where a held-cut replay stood: `requests` requests replayed, the last ending at row
    `end`, the cut at turn `first` of `turns` seen, the limit that last moved it."""

    requests: int
    end: int
    first: int
    turns: int
    reason: TrimReason | None
    cold: bool = False
    """CACHE-3: the last move of the cut was a cold request's (`ColdCuts`)."""


def holds_cut(targets: Policy) -> bool:
    """Whether the policy `targets` sets a low-water mark (a target below 1): only then is the cut
    replayed; with the spec's targets (1) every caller trims just to fit, as before."""
    return targets.token_trim_target < 1 or targets.turn_trim_target < 1


def request_points(rows: Sequence[ChatMessage]) -> list[int]:
    """Where the requests the history records end: before each assistant row that follows a
    non-assistant row (one reply may span several rows), then the whole history (the current
    request)."""
    points = [
        p for p in range(1, len(rows))
        if rows[p].role == "assistant" and rows[p - 1].role != "assistant"
    ]
    points.append(len(rows))
    return points


def two_prices(
    rows: Sequence[ChatMessage], index: TurnIndex, pricing: Pricing
) -> tuple[list[int], list[int]]:
    """Each row's price as an older row and as a row of the current turn (EST-2, EST-3): they
    differ only for a tool result declaring images."""
    costs = pricing.costs(rows, index)
    older, current = list(costs), list(costs)
    for i, row in enumerate(rows):
        if row.facts.declares_attachments:
            older[i] = pricing.cost(row, current_turn=False)
            current[i] = pricing.cost(row, current_turn=True)
    return older, current


class HeldRequest(NamedTuple):
    """One request the history records (`rows[:end]`) as a caller passing it whole sends it:
    the prefix, the breadcrumb when one is inserted, then the turns from `first` on."""

    end: int
    turns: int
    """How many turns `rows[:end]` holds."""
    first: int
    """Its first kept turn (0: nothing is dropped)."""
    reason: TrimReason | None
    """The limit that last moved the cut (None: it never moved)."""
    tokens: int
    """The price of the rows sent, the inserted breadcrumb's included."""
    crumb_inserted: bool
    cold: bool = False
    """CACHE-3: the cut last moved at a cold request (`ColdCuts`)."""


def price_sums(
    prices: tuple[Sequence[int], Sequence[int]],
) -> tuple[Sequence[int], Sequence[int]]:
    """The prefix sums of both prices of each row (`two_prices`), 8 bytes a row (a file's
    million rows): one array when no row is priced apart in the current turn."""
    older = prefix_sums(prices[0])
    same = prices[1] is prices[0] or prices[1] == prices[0]  # C speed, as each sum
    return older, older if same else prefix_sums(prices[1])


def split_sums(sums: tuple[Sequence[int], Sequence[int]], current: int) -> Sequence[int]:
    """The prefix sums of the costs priced older before row `current` and as the current
    turn's from it (`plan_visible_trim`'s), made from both prices' `price_sums` in
    O(rows) at C speed plus the current turn's rows."""
    older, now = sums
    if older is now:
        return older
    shift = older[current] - now[current]
    tail = [shift + s for s in now[current + 1:]]
    head = older[: current + 1]
    try:
        return head + array("q", tail) if isinstance(head, array) else [*head, *tail]
    except OverflowError:
        return [*head, *tail]


def replay_requests(
    index: TurnIndex,
    prices: tuple[Sequence[int], Sequence[int]],
    requests: Iterable[int],
    *,
    max_turns: int | None = None,
    budget_tokens: int | None = None,
    crumb_cost: int | Callable[[], int] = 0,
    breadcrumb: bool = True,
    turn_target: Fraction = Fraction(1),
    token_target: Fraction = Fraction(1),
    start: Replay | None = None,
    sums: tuple[Sequence[int], Sequence[int]] | None = None,
    cold: ColdCuts | None = None,
) -> Iterator[HeldRequest]:
    """Each of `requests` (row positions, ascending: request k is `rows[:requests[k]]`) as the
    caller trims it, in one pass over prefix sums: with a low-water mark (`holds_cut`) the
    cut the `Agent` holds (it stays while the rows from it fit and only moves forward); with
    the spec's targets each request trimmed just to fit, as `plan_visible_trim` trims it
    alone (a binary search over its turns). `index` is the whole history's: a request's turns
    are the starts before its end, its current turn its newest one (EST-2). `start` resumes a
    replay where it stood (`Replay`: its cut, turns and reason); `requests` are then the ones
    after its last. `sums`: the prices' `price_sums`, when the caller has them. `cold`: the
    requests made with the prompt cache cold (CACHE-2); with any, the cut is held."""
    limit = None if max_turns is None else non_negative("max_turns", max_turns)
    budget = 0 if budget_tokens is None else non_negative("budget_tokens", budget_tokens)
    older, current = price_sums(prices) if sums is None else sums
    starts, body = index.starts, index.body_start
    insert = breadcrumb and index.crumb is None
    fallback = -1 if index.crumb is None else index.crumb
    held = turn_target < 1 or token_target < 1 or bool(cold and cold.ends)
    crumb: list[int] = []

    def crumb_price() -> int:
        if not crumb:
            crumb.append((crumb_cost() if callable(crumb_cost) else crumb_cost) if insert else 0)
        return crumb[0]

    def span(a: int, b: int, opener: int) -> int:
        """Rows a..b-1 of a request whose current turn starts after row `opener`."""
        s = min(max(a, opener + 1), b)
        return older[s] - older[a] + current[b] - current[s]

    def size(first: int, end: int, opener: int, *, with_crumb: bool) -> int:
        added = crumb_price() if with_crumb and insert else 0
        return span(0, body, opener) + added + span(index.turn_start(first), end, opener)

    same = current is older  # no row priced apart in the current turn: one sum a request
    over = None if limit is None else max(limit, 1)
    keep = 0 if limit is None else low_water_turns(limit, turn_target)
    count, first, turns = len(starts), 0, 0
    reason: TrimReason | None = None
    was_cold = False
    if start is not None:
        first, turns, reason, was_cold = start.first, start.turns, start.reason, start.cold
    first_row = index.turn_start(first) if first else body
    for end in requests:
        while turns < count and starts[turns] < end:
            turns += 1
        if not held:
            first, first_row, reason = 0, body, None
        if over is not None and turns - first > over:
            first, reason, was_cold = turns - keep, TrimReason.TURN_LIMIT, False
            first_row = index.turn_start(first)
        opener = starts[turns - 1] if turns else fallback
        if same:
            sent = older[body] + older[end] - older[first_row]
        else:
            sent = span(0, body, opener) + span(first_row, end, opener)
        if first and insert:
            sent += crumb_price()
        if budget and turns - first > 1 and sent > budget:
            fit = low_water_tokens(budget, token_target) - crumb_price()
            if held:
                while first < turns - 1 and size(first, end, opener, with_crumb=False) > fit:
                    first += 1
            else:  # the oldest turn from which the rest fits; the newest turn stays
                low, high = 0, turns - 1
                while low < high:
                    middle = (low + high) // 2
                    if size(middle, end, opener, with_crumb=False) <= fit:
                        high = middle
                    else:
                        low = middle + 1
                first = max(low, first)
            first_row, reason, was_cold = index.turn_start(first), TrimReason.TOKEN_BUDGET, False
            sent = size(first, end, opener, with_crumb=first > 0)
        elif (cold is not None and end in cold.ends and turns - first > 1
              and sent > cold.trim.budget_tokens):  # CACHE-2: a cold request cuts deep now
            fit = low_water_tokens(cold.trim.budget_tokens, cold.trim.token_target)
            fit -= crumb_price()
            moved = first
            while first < turns - 1 and size(first, end, opener, with_crumb=False) > fit:
                first += 1
            if first > moved:
                first_row, reason, was_cold = index.turn_start(first), TrimReason.TOKEN_BUDGET, True
                sent = size(first, end, opener, with_crumb=True)
        yield HeldRequest(end, turns, first, reason, sent, insert and first > 0, was_cold)


def plan_held_trim(
    index: TurnIndex,
    prices: tuple[Sequence[int], Sequence[int]],
    requests: Iterable[int],
    *,
    max_turns: int | None = None,
    budget_tokens: int | None = None,
    budget_in_force: int | None = None,
    crumb_cost: int | Callable[[], int] = 0,
    breadcrumb: bool = True,
    counter: str | None = None,
    turn_target: Fraction = Fraction(1),
    token_target: Fraction = Fraction(1),
    resume: Replay | None = None,
    cold: ColdCuts | None = None,
    sums: tuple[Sequence[int], Sequence[int]] | None = None,
) -> VisibleTrim:
    """The cut the `Agent` would hold at the last of `requests` (row positions: request k is
    `rows[:requests[k]]`), replaying its two limits at each (`replay_requests`): the turn
    limit keeps `max(1, ceil(max_turns * turn_target))` turns once over `max(max_turns, 1)`;
    the budget, once exceeded with more than one turn kept, moves the cut to fit
    `budget_tokens * token_target` (the breadcrumb counted). Arguments as
    `histtrim.visible.plan_visible_trim`, plus both prices of each row (`two_prices`).

    The result describes the last request: its rows are the prefix, the breadcrumb and the
    turns from `first` on; its one event (when anything is dropped) names the limit that last
    moved the cut and the drop from the whole history. Its `replay` is the state before the
    last request: a caller whose next history extends these rows (same prices, limits and
    breadcrumb flag) passes it as `resume`, and only the requests after it are replayed.
    `cold`: the requests made with the prompt cache cold (CACHE-2, `replay_requests`); when a
    cold request last moved the cut, the event says `cold_cache` (CACHE-3). `sums`: the
    prices' `price_sums`, when the caller has them."""
    budget = 0 if budget_tokens is None else non_negative("budget_tokens", budget_tokens)
    start: Replay | None = None
    if resume is not None:
        points = requests if isinstance(requests, Sequence) else list(requests)
        done = resume.requests
        if done < len(points) and (done == 0 or points[done - 1] == resume.end):
            start, points = resume, points[done:]
        requests = points
    crumb: list[int] = []

    def crumb_price() -> int:  # asked once, only when a breadcrumb is sent
        if not crumb:
            crumb.append(crumb_cost() if callable(crumb_cost) else crumb_cost)
        return crumb[0]

    sums = price_sums(prices) if sums is None else sums
    replayed = deque(enumerate(replay_requests(
        index, prices, requests, max_turns=max_turns, budget_tokens=budget_tokens,
        crumb_cost=crumb_price, breadcrumb=breadcrumb, turn_target=turn_target,
        token_target=token_target, start=start, sums=sums, cold=cold,
    ), 1 if start is None else start.requests + 1), maxlen=2)
    replay: Replay | None = None
    if len(replayed) == 2:  # the state after the request before the last
        k, previous = replayed[0]
        replay = Replay(k, previous.end, previous.first, previous.turns, previous.reason,
                        previous.cold)
    elif replayed:
        replay = Replay(0, 0, 0, 0, None) if start is None else start
    last = replayed[-1][1] if replayed else HeldRequest(0, 0, 0, None, 0, False)
    first, reason, n = last.first, last.reason, index.length
    opener = index.current_turn_after
    older, current = sums

    def plain(a: int, b: int) -> int:
        s = min(max(a, opener + 1), b)
        return older[s] - older[a] + current[b] - current[s]

    before = plain(0, n)
    after = last.tokens if last.end == n else (
        plain(0, index.body_start) + (crumb_price() if last.crumb_inserted else 0)
        + plain(index.turn_start(first), n)
    )
    events: tuple[HistoryTrimmed, ...] = ()
    if first > 0:
        assert reason is not None
        token = reason is TrimReason.TOKEN_BUDGET
        in_force = budget if budget_in_force is None else budget_in_force
        target = token_target if token else turn_target
        cold_fit = cold.trim if last.cold and cold is not None else None
        events = (HistoryTrimmed(
            reason=reason,
            dropped_messages=index.turn_start(first) - index.body_start,
            kept_turns=index.turn_count - first,
            tokens_before=before,
            tokens_after=after,
            budget=low_water_tokens(budget, token_target) if token else in_force,
            counter=counter,
            target=None if target == 1 else str(target),
        ),)
        if cold_fit is not None:  # CACHE-3: the cut was made because the cache was cold
            events = (events[0].model_copy(update={
                "budget": low_water_tokens(cold_fit.budget_tokens, cold_fit.token_target),
                "cold_cache": True,
                "target": None if cold_fit.share == 1 else str(cold_fit.share)}),)
    added = last.crumb_inserted
    crumb_tokens = (
        crumb_price() if added else 0 if index.crumb is None else prices[0][index.crumb]
    )
    return VisibleTrim(index, first, added, before, after, events, crumb_tokens, replay)
