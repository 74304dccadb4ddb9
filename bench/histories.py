"""Deterministic provider-facing histories for the benchmarks, and the one-pass lower bound.

Every history ends where a provider call starts (a real user row, or a tool result in the
middle of a tool loop), so a trim configured for valid chats drops nothing at the end.
Shapes: chat-only; tool-heavy (1-3 rounds per turn, 1-3 parallel calls per round, results
of 1-2 KB); one giant agentic turn. Import with `sys.path` pointing at `bench/`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from histtrim import ChatMessage, ToolCall

PROSE = (
    "the build failed because the config file was missing a key so I searched the repo "
    "for every reference to it and patched the loader to fall back to defaults when unset"
)
WORDS = PROSE.split(" ")
SYSTEM = "You are a careful coding assistant."
_POOL = 1_009  # distinct tool outputs; each row still gets its own content string


def text(seed: int, words: int) -> str:
    """Deterministic pseudo-prose of `words` words, different per seed."""
    return " ".join(WORDS[(seed * 7 + i * 13) % len(WORDS)] for i in range(words))


def _sized(seed: int, size: int) -> str:
    """ASCII pseudo-prose of exactly `size` bytes."""
    return text(seed, size // 4 + 8)[:size]


_OUTPUTS = [_sized(seed, 1_024 + (seed * 389) % 1_025) for seed in range(_POOL)]
"""Tool outputs of 1,024-2,048 bytes."""


def _round(rows: list[ChatMessage], label: str, seed: int, calls: int) -> None:
    """One tool round: an assistant row with `calls` parallel calls, then their results."""
    ids = [f"{label}c{k}" for k in range(calls)]
    rows.append(ChatMessage.assistant_tool_calls(
        None, [ToolCall(id=i, name="grep", arguments={"pattern": f"key{k}"})
               for k, i in enumerate(ids)]))
    rows.extend(ChatMessage.tool_result(i, _OUTPUTS[(seed + k) % _POOL])
                for k, i in enumerate(ids))


def _rounds_filling(rows: list[ChatMessage], label: str, seed: int, count: int) -> None:
    """Tool rounds of 2-4 rows that add exactly `count` (>= 2) rows."""
    r = 0
    while count:
        size = count if count <= 4 else 2 + (seed + r) % 3
        if count - size == 1:  # never leave a lone row
            size -= 1
        _round(rows, f"{label}r{r}", seed + r, size - 1)
        count -= size
        r += 1


def chat_history(messages: int) -> list[ChatMessage]:
    """Exactly `messages` rows: a system row, then alternating user/assistant rows of 10-80
    words ending on a user row (`messages // 2` turns; an odd count opens with a greeting)."""
    rows = [ChatMessage.system(SYSTEM)]
    if messages % 2 and messages > 1:
        rows.append(ChatMessage.assistant("Hi! What are we working on today?"))
    for i in range(messages - len(rows)):
        words = 10 + (i * 37) % 70
        rows.append(ChatMessage.user(text(i, words)) if i % 2 == 0 else
                    ChatMessage.assistant(text(i, words)))
    return rows


def chat_turns(turns: int) -> list[ChatMessage]:
    """`chat_history` with exactly `turns` turns."""
    return chat_history(2 * turns)


def _tool_turn(rows: list[ChatMessage], turn: int) -> None:
    rows.append(ChatMessage.user(text(turn, 12 + turn % 20)))
    for r in range(1 + turn % 3):
        _round(rows, f"t{turn}r{r}", turn * 3 + r, 1 + (turn + r) % 3)
    rows.append(ChatMessage.assistant(text(turn + 1, 20 + turn % 30)))


def _current_turn(rows: list[ChatMessage], turn: int, count: int) -> None:
    """The turn in progress: its user row and tool rounds, `count` (1 or >= 3) rows."""
    rows.append(ChatMessage.user(text(turn, 12 + turn % 20)))
    if count > 1:
        _rounds_filling(rows, f"t{turn}", turn * 3, count - 1)


def tool_history(messages: int) -> list[ChatMessage]:
    """Exactly `messages` rows: complete tool turns (user, 1-3 rounds of 1-3 parallel calls
    with 1-2 KB results, an answer), then the current turn in the middle of its tool loop."""
    rows = [ChatMessage.system(SYSTEM)]
    turn = 0
    while True:
        before = len(rows)
        _tool_turn(rows, turn)
        if len(rows) + 3 > messages:  # keep room for a current turn of >= 3 rows
            del rows[before:]
            break
        turn += 1
    rest = messages - len(rows)
    if rest < 1 or rest == 2:
        raise ValueError(f"messages must be >= 4, got {messages}")
    _current_turn(rows, turn, rest)
    return rows


def tool_turns(turns: int) -> list[ChatMessage]:
    """`turns - 1` complete tool turns, then the current turn after its first round."""
    rows = [ChatMessage.system(SYSTEM)]
    for turn in range(turns - 1):
        _tool_turn(rows, turn)
    _current_turn(rows, turns - 1, 1 + 2 + (turns - 1) % 3)
    return rows


def giant_turn(messages: int) -> list[ChatMessage]:
    """Exactly `messages` rows: a system row, one user request, then tool rounds (an agent
    that never hands back): the whole history is one turn."""
    if messages < 4:
        raise ValueError(f"messages must be >= 4, got {messages}")
    rows = [ChatMessage.system(SYSTEM),
            ChatMessage.user("Migrate every config loader in the repo to the new schema.")]
    _rounds_filling(rows, "g", 0, messages - 2)
    return rows


SHAPES: dict[str, Callable[[int], list[ChatMessage]]] = {
    "chat": chat_history,
    "tools": tool_history,
    "giant": giant_turn,
}
"""History shapes by name, each built from a message count."""

TURN_SHAPES: dict[str, Callable[[int], list[ChatMessage]]] = {
    "chat": chat_turns,
    "tools": tool_turns,
}
"""The shapes that have many turns, built from a turn count."""


def lower_bound(history: Sequence[ChatMessage]) -> int:
    """The one-pass floor of any size-based trim: every row's UTF-8 length, once."""
    total = 0
    for row in history:
        content = row.content
        total += len(content) if content.isascii() else len(content.encode("utf-8"))
    return total
