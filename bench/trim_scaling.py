"""Trim scaling: `trim_to_recent_turns` time against a one-pass lower bound.

The histories and the lower bound come from `histories.py`: chat-only rows, and tool-heavy
turns (1-3 rounds of 1-3 parallel calls with 1-2 KB results). The bound touches every row
once, summing its UTF-8 length (`len(content)` for an ASCII row, which is the same number
as `len(content.encode())`); a linear trim keeps a flat ratio to it as the history grows.
Goal: the ratio stays flat and is at most 3 from 100k messages up.
Run: `python bench/trim_scaling.py` (`--sizes 1000 10000` for a short run).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from histories import chat_history, lower_bound, tool_history

from histtrim import ChatMessage, estimate_history_tokens, trim_to_recent_turns

GOAL_RATIO = 3.0
GOAL_FROM = 100_000
"""The ratio goal holds for histories of this many messages and more."""


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
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print("bound: one pass summing each row's UTF-8 length (len(content) for ASCII rows, equal")
    print("to len(content.encode())); budget: half the history's estimate.")
    print("warm: rows trimmed before (row facts cached, as at every provider-call boundary);")
    print("cold: the first trim of freshly built rows. Ratios are trim time / lower bound.\n")
    print(f"{'history':<7} {'messages':>9} {'bound ms':>9} {'warm ms':>8} {'ratio':>6} "
          f"{'cold ms':>8} {'ratio':>6} {'dropped turns':>14}")
    worst: dict[str, float] = {}
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
            if size >= GOAL_FROM:
                for clock, seconds in (("warm", warm), ("cold", cold)):
                    worst[clock] = max(worst.get(clock, 0.0), seconds / bound)
    print(f"\nGoal: ratio <= {GOAL_RATIO:g} from {GOAL_FROM:,} messages")
    if not worst:
        print("  not measured (no size that large)")
    for clock, ratio in worst.items():
        print(f"  {clock}: worst {ratio:.2f} -> {'met' if ratio <= GOAL_RATIO else 'MISSED'}")


if __name__ == "__main__":
    main()
