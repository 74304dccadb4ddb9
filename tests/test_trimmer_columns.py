"""Issue 46's speed goal: what the integrations' trim reads at every call (the prices'
prefix sums, the rows opening a turn, the requests) is made for a history's new rows only
(`Columns`), and equals what a fresh reading of the whole history makes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from histtrim.integrations._trimmer import Columns, Priced
from histtrim.low_water import price_sums, request_points, split_sums
from histtrim.messages import ChatMessage
from histtrim.trim import prefix_sums
from histtrim.turns import index_turns

ROLES = st.sampled_from(["system", "user", "assistant", "tool"])
PRICE = st.one_of(st.integers(0, 50), st.integers(0, 2**62))  # past 64 bits summed too
ROW = st.tuples(ROLES, PRICE, st.booleans())


def _priced(spec: list[tuple[str, int, bool]]) -> list[Priced]:
    out = []
    for i, (role, price, apart) in enumerate(spec):
        row = ChatMessage(role=role, content=f"{role} {i}")  # type: ignore[arg-type]
        out.append(Priced(row, price, price + 7 if apart else price))
    return out


def _fields(table: Columns) -> tuple[object, ...]:
    return (table.rows, table.older, table.current, table.facts, table.points,
            list(table.sums[0]), list(table.sums[1]), table.opens)


@settings(max_examples=200, deadline=None)
@given(st.lists(ROW, max_size=30), st.lists(ROW, max_size=30), st.data())
def test_a_history_extended_reads_as_the_whole_history_read_anew(
    first: list[tuple[str, int, bool]], more: list[tuple[str, int, bool]], data: st.DataObject
) -> None:
    """One history's columns extended by the new rows equal the columns of all rows:
    sums, turn openers and requests included (the incremental answer is the fresh one)."""
    base = _priced(first)
    shared = data.draw(st.integers(0, len(base)))
    whole = [*base[:shared], *_priced(more)]
    extended = Columns.of(base).extended(shared, whole[shared:])
    fresh = Columns.of(whole)
    assert _fields(extended) == _fields(fresh)
    rows = [p.row for p in whole]
    assert fresh.points == request_points(rows)[:-1]
    assert list(fresh.sums[0]) == list(prefix_sums([p.older for p in whole]))
    assert list(fresh.sums[1]) == list(prefix_sums([p.current for p in whole]))
    assert tuple(fresh.opens) == index_turns(rows).starts


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(PRICE, PRICE), max_size=30), st.data())
def test_split_sums_are_the_sums_of_the_split_costs(
    prices: list[tuple[int, int]], data: st.DataObject
) -> None:
    """The costs priced older before the current turn and current from it, summed from both
    prices' sums, equal their own prefix sums."""
    older, current = [a for a, _ in prices], [b for _, b in prices]
    at = data.draw(st.integers(0, len(prices)))
    expected = list(prefix_sums([*older[:at], *current[at:]]))
    assert list(split_sums(price_sums((older, current)), at)) == expected
