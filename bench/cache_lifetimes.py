"""Chapter 14's Review 7 on every session: the four real corpora (examples/real) replayed
under chapter 16's policies and the cold-cache trim (CACHE-1..3), each request priced at its
recorded time (Claude Code, mini-swe-agent) or a scripted clock's (airline, SWE-agent) with
the cache's lifetime. The chapter replays the held-out third of each corpus; this prints,
per corpus and policy, the same columns for all of them.

Run: .venv/bin/python bench/cache_lifetimes.py (about two minutes on two shared cores)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from livingspec.plotting.cache_lifetimes import held_out, lifetime_review, real_groups

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    started = time.perf_counter()
    groups = real_groups(ROOT / "examples" / "real")
    held = held_out(groups)
    _, rows = lifetime_review(groups)
    print(f"{'corpus':24s} {'policy':30s} {'cost':>6s} {'warm':>6s} {'lost':>7s} "
          f"{'trims':>5s} {'cold':>4s}")
    for r in rows:
        print(f"{r.group:24s} {r.policy:30s} {r.cost:6.3f} {r.warm_cost:6.3f} "
              f"{r.lost:7.2%} {r.trims:5d} {r.cold_cuts:4d}")
    for name, group in groups.items():
        print(f"{name}: {len(group.sessions)} sessions "
              f"(the chapter replays {len(held[name].sessions)})")
    print(f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
