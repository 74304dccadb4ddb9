"""Trim scaling: `trim_to_recent_turns` time against a one-pass lower bound.

The lower bound touches every message once (`sum(len(m.content.encode()))`); a linear
trim keeps a flat ratio to it as the history grows. Run: `python bench/trim_scaling.py`.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence

from histtrim import ChatMessage, ToolCall, estimate_history_tokens, trim_to_recent_turns

PROSE = (
    "the build failed because the config file was missing a key so I searched the repo "
    "for every reference to it and patched the loader to fall back to defaults when unset"
)
WORDS = PROSE.split(" ")


def _text(seed: int, words: int) -> str:
    """Deterministic pseudo-prose of `words` words, different per seed."""
    return " ".join(WORDS[(seed * 7 + i * 13) % len(WORDS)] for i in range(words))


def chat_history(messages: int) -> list[ChatMessage]:
    """A system prompt, then alternating user/assistant rows of 10-80 words."""
    rows = [ChatMessage.system("You are a careful coding assistant.")]
    for i in range(messages - 1):
        words = 10 + (i * 37) % 70
        rows.append(ChatMessage.user(_text(i, words)) if i % 2 == 0 else
                    ChatMessage.assistant(_text(i, words)))
    return rows


def tool_history(messages: int) -> list[ChatMessage]:
    """Turns of: user, assistant tool call(s), their results, assistant answer."""
    rows = [ChatMessage.system("You are a careful coding assistant.")]
    turn = 0
    while len(rows) < messages:
        rows.append(ChatMessage.user(_text(turn, 12 + turn % 20)))
        calls = [ToolCall(id=f"t{turn}c{k}", name="grep", arguments={"pattern": f"key{k}"})
                 for k in range(1 + turn % 3)]
        rows.append(ChatMessage.assistant_tool_calls(None, calls))
        rows.extend(ChatMessage.tool_result(c.id, _text(turn + k, 150 + (turn * 11) % 200))
                    for k, c in enumerate(calls))
        rows.append(ChatMessage.assistant(_text(turn + 1, 20 + turn % 30)))
        turn += 1
    return rows[:messages]


def lower_bound(history: Sequence[ChatMessage]) -> int:
    return sum(len(m.content.encode()) for m in history)


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def cold_seconds(make: Callable[[int], list[ChatMessage]], size: int, budget: int,
                 repeats: int) -> float:
    """Median time of the first trim of freshly built rows (no cached row facts yet)."""
    samples = []
    for _ in range(repeats):
        history = make(size)
        start = time.perf_counter()
        trim_to_recent_turns(history, budget)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print("warm: rows trimmed before (row facts cached, as at every provider-call boundary);")
    print("cold: the first trim of freshly built rows. Ratios are trim time / lower bound.\n")
    print(f"{'history':<7} {'messages':>9} {'bound ms':>9} {'warm ms':>8} {'ratio':>6} "
          f"{'cold ms':>8} {'ratio':>6} {'dropped turns':>14}")
    for name, make in (("chat", chat_history), ("tools", tool_history)):
        for size in args.sizes:
            history = make(size)
            budget = estimate_history_tokens(history) // 2  # the cut falls mid-history
            repeats = args.repeats if size < 1_000_000 else max(3, args.repeats // 2)
            cold = cold_seconds(make, size, budget, repeats)
            result = trim_to_recent_turns(history, budget)
            bound = median_seconds(lambda h=history: lower_bound(h), repeats)
            warm = median_seconds(lambda h=history, b=budget: trim_to_recent_turns(h, b), repeats)
            print(f"{name:<7} {size:>9,} {bound * 1e3:>9.1f} {warm * 1e3:>8.1f} "
                  f"{warm / bound:>6.2f} {cold * 1e3:>8.1f} {cold / bound:>6.2f} "
                  f"{result.dropped_turns:>14,}")


if __name__ == "__main__":
    main()
