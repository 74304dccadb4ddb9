"""Does `HisttrimSession` save in time proportional to what it saves? (issue 30, item 4)

The Agents SDK saves after every step; each save of the old `HisttrimSession` re-read and
re-indexed the whole session (500/1,000/2,000 saves: 9/30/124 s, the bare `SQLiteSession`
0.1/0.2/0.5 s). This saves `--saves` turns one at a time (in-memory SQLite) through the bare
session and through `HisttrimSession(max_turns=20)`, and prints each wall time, the wrapped
over the bare, and the wrapped time per save at each size over the smallest size's (1.0 is
linear in what is saved; a quadratic save shows the size ratio), each the fastest of `--runs`
alternating runs. Goal: wrapped within 1.5x of bare at every size. Then one `get_items()`
(the trimmed view a run reads) at the largest size.
Run: `python bench/session_saves.py` (`--saves 500 1000 2000` by default).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from agents.memory import SQLiteSession

from histtrim.integrations.openai_agents import HisttrimSession


def _turn(n: int) -> list[Any]:
    return [{"role": "user", "content": f"question {n}"},
            {"role": "assistant", "content": f"answer {n} " + "x" * 200}]


async def _saves(session: Any, saves: int) -> float:
    start = time.perf_counter()
    for n in range(saves):
        await session.add_items(_turn(n))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--saves", type=int, nargs="+", default=[500, 1000, 2000])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"{'saves':>6} {'bare s':>8} {'wrapped s':>10} {'wrapped/bare':>13} "
          f"{'per save vs first':>18}")
    worst, first_per_save = 0.0, None
    wrapped_session = None
    for saves in args.saves:
        bares, wraps = [], []
        for run in range(args.runs):  # alternating, the fastest of each: a shared CPU is noisy
            bares.append(asyncio.run(_saves(SQLiteSession(f"bare-{saves}-{run}"), saves)))
            wrapped_session = HisttrimSession(SQLiteSession(f"w-{saves}-{run}"), max_turns=20)
            wraps.append(asyncio.run(_saves(wrapped_session, saves)))
        bare, wrapped = min(bares), min(wraps)
        per_save = wrapped / saves
        first_per_save = first_per_save or per_save
        worst = max(worst, wrapped / bare)
        print(f"{saves:>6} {bare:>8.3f} {wrapped:>10.3f} {wrapped / bare:>13.2f} "
              f"{per_save / first_per_save:>18.2f}")
    if wrapped_session is not None:
        start = time.perf_counter()
        stored = asyncio.run(wrapped_session.inner.get_items())
        read = time.perf_counter() - start
        start = time.perf_counter()
        view = asyncio.run(wrapped_session.get_items())
        print(f"one get_items() of the largest session: bare {read:.3f} s ({len(stored)} "
              f"items), wrapped {time.perf_counter() - start:.3f} s ({len(view)} items: 20 turns "
              "and the breadcrumb)")
    print(f"worst wrapped/bare: {worst:.2f} -> {'met' if worst <= 1.5 else 'MISSED'} (goal 1.5)")


if __name__ == "__main__":
    main()
