"""The agent's structured history and its provider-facing rows, kept in step (TURN-1, RUN-1):
each item is converted and priced once, when recorded; a trim or a restore rebuilds the rows
in one pass; a checkpoint brings all of it back (a turn is all or nothing)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import NamedTuple

from histtrim.agent.ledger import TokenLedger
from histtrim.carriers import to_chat_messages
from histtrim.counting import TokenCounter
from histtrim.messages import ChatMessage, ConversationMessage
from histtrim.policy import SPEC, Policy


class Checkpoint(NamedTuple):
    """What `AgentHistory.rollback` needs: O(1) to take (items are only ever appended to a
    list, or the list is replaced)."""

    items: list[ConversationMessage]
    item_rows: list[tuple[ChatMessage, ...]]
    length: int
    crumb: bool


class AgentHistory:
    """Structured items, the rows of each (converted once) and their `TokenLedger`, behind
    the system rows in `head`; `crumb` is the owner's breadcrumb flag."""

    def __init__(
        self, *, token_counter: TokenCounter | None = None, policy: Policy = SPEC
    ) -> None:
        self.items: list[ConversationMessage] = []
        self.item_rows: list[tuple[ChatMessage, ...]] = []
        """The provider-facing rows of each item, converted once."""
        self.ledger = TokenLedger(token_counter=token_counter, policy=policy)
        self.head: tuple[ChatMessage, ...] = ()
        self.crumb = False

    def record(self, item: ConversationMessage) -> None:
        """Append one item and its rows to the ledger: O(its rows)."""
        rows = tuple(to_chat_messages((item,)))
        self.items.append(item)
        self.item_rows.append(rows)
        self.ledger.extend(rows)

    def replace(self, history: list[ConversationMessage]) -> None:
        """A new structured history (a restore or a trim): items already recorded keep their
        rows, and the ledger is rebuilt from the head and those rows in one pass."""
        known = {id(item): rows for item, rows in zip(self.items, self.item_rows, strict=True)}
        item_rows: list[tuple[ChatMessage, ...]] = []
        for item in history:
            rows = known.get(id(item))
            item_rows.append(tuple(to_chat_messages((item,))) if rows is None else rows)
        self.items, self.item_rows = history, item_rows
        self.ledger.rebuild([*self.head, *chain.from_iterable(item_rows)])

    def set_head(self, head: Sequence[ChatMessage]) -> None:
        """New system rows in front (the system prompt): the rows are rebuilt."""
        self.head = tuple(head)
        self.replace(self.items)

    def checkpoint(self) -> Checkpoint:
        return Checkpoint(self.items, self.item_rows, len(self.items), self.crumb)

    def rollback(self, checkpoint: Checkpoint) -> None:
        """Back to the checkpoint: the items, their rows, the ledger and the crumb flag."""
        items, item_rows, length, self.crumb = checkpoint
        del items[length:], item_rows[length:]
        self.items, self.item_rows = items, item_rows
        self.ledger.rebuild([*self.head, *chain.from_iterable(item_rows)])
