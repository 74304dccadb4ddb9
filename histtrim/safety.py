"""PAIR-3, LIMIT-3: safety nets beside the whole-turn trims: the per-result
`max_tool_result_chars` cap (PAIR-3) and the row-counting channel sender cache (LIMIT-3). The
orphan sweep (PAIR-2) lives in `pairing` with its validator."""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterable

from histtrim._checks import non_negative
from histtrim.messages import ChatMessage
from histtrim.policy import SPEC, Policy

__all__ = [
    "DEFAULT_CHANNEL_CACHE_ROWS",
    "DEFAULT_MAX_TOOL_RESULT_CHARS",
    "ChannelSenderCache",
    "cap_tool_result",
]

DEFAULT_MAX_TOOL_RESULT_CHARS = SPEC.max_tool_result_chars
DEFAULT_CHANNEL_CACHE_ROWS = SPEC.channel_cache_rows


def cap_tool_result(
    content: str, max_chars: int | None = None, *, policy: Policy = SPEC
) -> str:
    """Bound one tool result when it is recorded (PAIR-3); 0 turns the cap off, None means
    the policy's cap (50,000).

    An over-long result keeps a head and a tail, the policy's shares (2/3 and 1/3) of
    `max_chars` characters, with the marker `"\\n\\n[... N characters truncated ...]\\n\\n"`
    between (N: the characters left out), so the model always learns the output was cut. It
    is never longer than the result itself: when head, marker and tail would not fit in the
    result's length, head and tail shrink to make room for the marker. Only a result too short
    to hold the marker at all (under about 40 characters) is cut to its first `max_chars`."""
    if max_chars is None:
        max_chars = policy.max_tool_result_chars
    limit = non_negative("max_tool_result_chars", max_chars)
    if limit == 0 or len(content) <= limit:
        return content
    kept = limit
    while True:  # the marker's digits depend on what is kept: at most a few rounds
        marker = _truncation_marker(len(content) - kept)
        if kept + len(marker) <= len(content):
            break
        kept = len(content) - len(marker)
        if kept < 1:
            return content[:limit]
    head, tail = policy.tool_result_split(kept)
    return f"{content[:head]}{marker}{content[len(content) - tail :]}"


def _truncation_marker(cut: int) -> str:
    return f"\n\n[... {cut} characters truncated ...]\n\n"


class ChannelSenderCache:
    """Recent rows per sender of a channel (LIMIT-3): counts individual rows, not turns;
    `max_rows` 0 means the default (50); the oldest row is dropped first."""

    def __init__(self, max_rows: int = 0, *, policy: Policy = SPEC) -> None:
        self.configured = non_negative("max_rows", max_rows)
        self.capacity = max_rows or policy.channel_cache_rows
        self._rows: dict[Hashable, deque[ChatMessage]] = {}

    def append(self, sender: Hashable, message: ChatMessage) -> int:
        """Record one row; returns how many old rows were dropped to make room (0 or 1)."""
        rows = self._rows.setdefault(sender, deque())
        rows.append(message)
        if len(rows) > self.capacity:
            rows.popleft()
            return 1
        return 0

    def extend(self, sender: Hashable, messages: Iterable[ChatMessage]) -> int:
        """Record rows in order; returns how many old rows were dropped."""
        return sum(self.append(sender, message) for message in messages)

    def rows(self, sender: Hashable) -> list[ChatMessage]:
        return list(self._rows.get(sender, ()))

    def senders(self) -> list[Hashable]:
        return list(self._rows)
