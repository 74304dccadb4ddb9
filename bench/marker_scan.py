"""Does pricing hostile `[IMAGE:` text stay linear? (issue 20, item 1)

Prices one user row of `--mb` MB (fresh row each run: row facts, then
`estimate_history_tokens`) for plain text and for adversarial marker texts, and prints each
CPU time (median of `--runs`) over the plain text's, and over the same text at half the size
(2.0 is linear; a quadratic scan shows 4.0). Goal: the openers-without-a-close text (the one
a backtracking regex took ~10 s per 112 KB to price) within 3x of plain text.
Run: `python bench/marker_scan.py` (`--mb 1 --runs 7` by default).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from histtrim import ChatMessage, estimate_history_tokens

MB = 1 << 20

SHAPES: dict[str, Callable[[int], str]] = {
    "plain text": lambda size: ("lorem ipsum dolor sit amet " * (size // 27 + 1))[:size],
    "openers, no close": lambda size: ("[IMAGE:" * (size // 7 + 1))[:size],
    "openers, one close at end": lambda size: ("[IMAGE:" * (size // 7 + 1))[: size - 1] + "]",
    "nested openers, closed": lambda size: ("[IMAGE:[IMAGE:/x]" * (size // 17 + 1))[:size],
    "plain-text markers": lambda size: ("[IMAGE:x]" * (size // 9 + 1))[:size],
    "loadable markers": lambda size: ("[IMAGE:/a.png]" * (size // 14 + 1))[:size],
}


def price(text: str) -> float:
    """CPU seconds to make the row and price it."""
    start = time.process_time()
    estimate_history_tokens([ChatMessage.user(text)])
    return time.process_time() - start


def median_price(text: str, runs: int) -> float:
    return statistics.median(price(text) for _ in range(runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    size = int(args.mb * MB)
    plain = median_price(SHAPES["plain text"](size), args.runs)
    print(f"pricing one {size:,}-character user row, CPU ms (median of {args.runs})")
    print(f"{'text':<28}{'ms':>10}{'/ plain':>10}{'/ half size':>13}")
    worst_goal = 0.0
    for name, make in SHAPES.items():
        full = median_price(make(size), args.runs)
        half = median_price(make(size // 2), args.runs)
        ratio = full / plain if plain else float("inf")
        growth = full / half if half else float("inf")
        print(f"{name:<28}{full * 1000:>10.2f}{ratio:>10.2f}{growth:>13.2f}")
        if name.startswith("openers"):
            worst_goal = max(worst_goal, ratio)
    verdict = "met" if worst_goal <= 3 else "MISSED"
    print(f"goal: openers without a close within 3x of plain text: {worst_goal:.2f}x {verdict}")


if __name__ == "__main__":
    main()
