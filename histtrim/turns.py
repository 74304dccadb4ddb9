"""TURN-2..5: the turn index every limit is computed from.

The boundary test is `opens_turn` (one rule, cached per row as `RowFacts.opens_turn`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import compress
from operator import attrgetter, itemgetter

from histtrim._checks import flag
from histtrim.messages import ChatMessage, Row, RowFacts, conversation_rows


def opens_turn(message: Row) -> bool:
    """A real user row opens a turn; a `[Tool results]` carrier continues the previous one.

    The test itself is `RowFacts.opens_turn`, computed once per row."""
    return message.facts.opens_turn


def is_system(message: object) -> bool:
    return isinstance(message, ChatMessage) and message.role == "system"


def leading_system_count(history: Sequence[object]) -> int:
    """How many rows form the leading system block (TURN-5)."""
    count = 0
    for message in history:
        if not is_system(message):
            break
        count += 1
    return count


@dataclass(frozen=True, slots=True)
class TurnIndex:
    """Where the system prefix, the breadcrumb slot and each turn start.

    Rows after the prefix/crumb and before the first boundary belong to no turn: they
    are dropped together with the first turn."""

    length: int
    prefix_len: int
    crumb: int | None
    starts: tuple[int, ...]
    facts: list[RowFacts] = field(repr=False, compare=False)

    @property
    def body_start(self) -> int:
        """First row after the system prefix and the breadcrumb."""
        return self.prefix_len + (self.crumb is not None)

    @property
    def turn_count(self) -> int:
        return len(self.starts)

    @property
    def current_turn_after(self) -> int:
        """Rows after this one are the current user turn (EST-2): the newest user row, the
        crumb when no turn follows it (as for a history read without the flag), else -1:
        with no real user row every tool result is current."""
        opener = self.starts[-1] if self.starts else self.crumb
        return -1 if opener is None else opener

    def turn_start(self, turn: int) -> int:
        """First row that is kept when turns `turn..` are kept (turn 0 takes the preamble)."""
        return self.body_start if turn == 0 else self.starts[turn]

    def turn_end(self, turn: int) -> int:
        return self.starts[turn + 1] if turn + 1 < len(self.starts) else self.length

    def turn_of(self) -> list[int]:
        """The turn of every row: -1 for the prefix and the crumb."""
        owner = [-1] * self.length
        for turn in range(self.turn_count):
            for row in range(self.turn_start(turn), self.turn_end(turn)):
                owner[row] = turn
        return owner


_FACTS = attrgetter("facts")
_OPENS_TURN = itemgetter(RowFacts._fields.index("opens_turn"))


def index_turns(
    history: Sequence[Row], *, crumb_present: bool = False
) -> TurnIndex:
    """Index a history of either representation in one pass.

    `crumb_present` is the owner's flag: the row after the system prefix is the
    breadcrumb slot, whatever its text. It is never inferred from text either: without the
    flag a row equal to the breadcrumb is an ordinary turn. Dicts are validated like the
    trims validate them."""
    flag("crumb_present", crumb_present)
    try:
        facts = [row.facts for row in history]
    except AttributeError:
        history = conversation_rows(history)  # dicts (or bad rows): validated, errors name them
        facts = [row.facts for row in history]
    return index_with_facts(history, facts, crumb_present=crumb_present)


def index_with_facts(
    history: Sequence[Row], facts: list[RowFacts], *, crumb_present: bool = False,
    opens: Sequence[int] | None = None,
) -> TurnIndex:
    """`index_turns` of rows whose facts the caller already holds (`facts[k]` is row k's):
    a caller that keeps a growing history's facts indexes it without reading every row.
    `opens`: the rows whose facts open a turn (`RowFacts.opens_turn`), when the caller
    keeps them too."""
    prefix = leading_system_count(history)
    crumb: int | None = None
    if crumb_present:
        crumb_slot(history, prefix)
        crumb = prefix
    starts = tuple(compress(range(len(facts)), map(_OPENS_TURN, facts)) if opens is None
                   else opens)
    if crumb is not None and starts and starts[0] == crumb:
        starts = starts[1:]  # the slot opens no turn, whatever its text
    return TurnIndex(len(history), prefix, crumb, starts, facts)


def crumb_slot(history: Sequence[object], prefix: int) -> None:
    """Check the owner's flag: the row after the system prefix is the breadcrumb slot.

    The flag is authoritative: any user row there is the slot, whatever its text (another
    locale, an older wording). Only a flag naming no row or a non-user row is an error."""
    slot = history[prefix] if prefix < len(history) else None
    if slot is None:
        raise ValueError(
            f"crumb_present=True but there is no row {prefix} after the system prefix to be "
            "the breadcrumb"
        )
    if not (isinstance(slot, ChatMessage) and slot.role == "user"):
        raise ValueError(
            f"crumb_present=True but row {prefix} (after the system prefix) is not a user "
            "chat row, so it cannot be the breadcrumb"
        )
