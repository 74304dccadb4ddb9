"""What a policy takes from the model, measured without a model: for each request of a
recorded session, the recorded next reply is what the model wrote with the full context; the
"needed context lost" is the share of that reply's distinctive tokens (identifiers, numbers,
paths of 4 characters or more, not in the system prompt) that the full request contains and
the request the policy sent does not.

Not the spec: review machinery. A proxy, not a quality score: a token the reply repeats from
its context is context the model used; losing it is a loss the model had to make up for."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from histtrim.agent.providers import ProviderReply
from histtrim.messages import ChatMessage

_CANDIDATE = re.compile(r"[A-Za-z0-9_][\w./:-]*[\w]|[A-Za-z0-9_]")
_MARKS = re.compile(r"[\d_./:-]|[a-z][A-Z]")
MIN_CHARS = 4


def distinctive_tokens(text: str) -> set[str]:
    """Identifier-, number- and path-like tokens of 4 characters or more: a digit, `_`, `.`,
    `/`, `:` or `-` inside, or a lower-to-upper case change (camelCase). Plain words are not
    distinctive: any reply repeats them. One regex pass: linear in the text."""
    return {
        token for token in _CANDIDATE.findall(text)
        if len(token) >= MIN_CHARS and _MARKS.search(token)
    }


def reply_text(reply: ProviderReply) -> str:
    """What the model wrote at one step: its text and each call's name and arguments."""
    parts = [reply.text or ""]
    parts.extend(f"{call.name} {call.arguments}" for call in reply.tool_calls)
    return "\n".join(parts)


class RowTokens:
    """Each row's distinctive tokens, found once per distinct row text (rows repeat across
    the requests of a session)."""

    def __init__(self) -> None:
        self._seen: dict[str, frozenset[str]] = {}

    def __call__(self, row: ChatMessage) -> frozenset[str]:
        found = self._seen.get(row.content)
        if found is None:
            found = self._seen[row.content] = frozenset(distinctive_tokens(row.content))
        return found

    def present(self, wanted: set[str], rows: Iterable[ChatMessage]) -> set[str]:
        """The tokens of `wanted` that some row contains: one pass over the rows, stopping once
        every token is found."""
        found: set[str] = set()
        for row in rows:
            if len(found) == len(wanted):
                break
            found |= wanted & self(row)
        return found


@dataclass(frozen=True)
class ContextLoss:
    """Summed over requests: the reply tokens the full requests held, and those the sent
    requests no longer did."""

    needed: int = 0
    lost: int = 0
    requests: int = 0

    @property
    def share(self) -> float:
        return self.lost / self.needed if self.needed else 0.0

    def __add__(self, other: ContextLoss) -> ContextLoss:
        return ContextLoss(
            self.needed + other.needed, self.lost + other.lost, self.requests + other.requests
        )


NO_LOSS = ContextLoss()


def request_loss(
    reply: str,
    full: Iterable[ChatMessage],
    sent: Iterable[ChatMessage],
    *,
    system: frozenset[str] = frozenset(),
    tokens: RowTokens | None = None,
) -> ContextLoss:
    """One request: the reply's distinctive tokens (minus `system`, the system prompt's) the
    full request holds, and how many of them the sent one lost."""
    rows = RowTokens() if tokens is None else tokens
    wanted = distinctive_tokens(reply) - system
    if not wanted:
        return ContextLoss(requests=1)
    needed = rows.present(wanted, full)
    if not needed:
        return ContextLoss(requests=1)
    kept = rows.present(needed, sent)
    return ContextLoss(len(needed), len(needed) - len(kept), 1)
