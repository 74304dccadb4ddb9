"""Held-cut scaling: the conformance kit's `held_cut` (every request a history records,
trimmed as a caller passing the whole history trims it) through `histtrim conformance serve`'s
request handler, at 1k, 4k and 16k rows.

Issue 38 item 9: each request was re-trimmed from scratch (4,000 rows took 5 s). The answer
is now one replay over the history's prefix sums. Each size is 4 times the one before: the
script prints the time (the fastest of the repeats), the time per row, and the largest size's
time per row over the smallest's (linear: about 1; quadratic: 16 from 1k to 16k rows). Goal:
that ratio at most 2, for the held cut (targets 7/10 and 1/2) and trim-to-fit (the spec's).
Run: `python bench/held_cut_scaling.py` (`--sizes 1000 4000` for a short run).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from histories import tool_history

from histtrim.conformance.codec import rows_json
from histtrim.conformance.serve import answer

GOAL_RATIO = 2.0


def seconds(history: list[dict[str, object]], arguments: dict[str, object], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        reply = answer({"id": 1, "function": "held_cut", "history": history,
                        "arguments": arguments})
        samples.append(time.perf_counter() - start)
        assert "result" in reply, reply
    return min(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 4_000, 16_000])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print("history: tool-heavy turns (bench/histories.py tool_history); budget 20,000 tokens,")
    print("max_turns 40; each size 4x the one before (linear: growth ~4, quadratic: ~16).")
    print(f"{'targets':<22}{'rows':>8}{'seconds':>10}{'us/row':>9}")
    met = True
    cases = (("held (7/10, 1/2)", ("7/10", "1/2")), ("trim to fit (1, 1)", ("1", "1")))
    for label, (token_target, turn_target) in cases:
        per_row = []
        for size in args.sizes:
            history = rows_json(tool_history(size))
            arguments = {"budget_tokens": 20_000, "max_turns": 40,
                         "token_target": token_target, "turn_target": turn_target}
            took = seconds(history, arguments, args.repeats)
            per_row.append(took / size)
            print(f"{label:<22}{size:>8}{took:>10.3f}{took / size * 1e6:>9.1f}")
        ratio = per_row[-1] / per_row[0]
        met = met and ratio <= GOAL_RATIO
        print(f"{label}: time per row at {args.sizes[-1]:,} over {args.sizes[0]:,} rows: "
              f"{ratio:.2f}")
    print(f"goal: that ratio at most {GOAL_RATIO} -> {'met' if met else 'MISSED'}")

if __name__ == "__main__":
    main()
