"""The cache model against the provider's recorded cache reads, per session and pooled, on
every corpus that records them (examples/real/claude-code: Anthropic; mini-swe-agent:
Gemini), with the calls' recorded times (examples/real/call-times.json, tools/call_times.py).

    python bench/cache_calibration.py [--sessions]

Each corpus is split by sorted session name: every third session (the 3rd, 6th, ...) is
held out; what is tuned is tuned on the rest only, and both sides are printed:
- Claude Code: whether part of the hidden prefix (the client's system prompt and tool
  schemas) is kept warm by the client's other sessions (each session's first call says how
  much), chosen by which is closer on the tuned sessions;
- Gemini: the hit rate of its best-effort implicit cache, the tuned sessions' recorded
  share over the share a guaranteed cache would give (`histtrim.review.cache.GEMINI`
  carries it, rounded to hundredths).
The lifetimes are the providers' documented ones, never tuned."""

from __future__ import annotations

import argparse
from fractions import Fraction
from pathlib import Path

from livingspec.calibration.recorded import (
    hit_rate,
    pooled,
    recorded_sessions,
    split,
    warm_prefix,
)

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", action="store_true", help="print every session too")
    args = parser.parse_args()
    everything = recorded_sessions(ROOT / "examples" / "real")
    for corpus in ("claude-code", "mini-swe-agent"):
        group = [s for s in everything if s.corpus == corpus]
        tuned, held = split(group)
        cache = group[0].cache
        warm = warm_prefix(tuned, cache)
        timed = sum(1 for s in group for t in (s.times or ()) if t is not None)
        print(f"{corpus}: {len(group)} sessions ({len(tuned)} tuned, {len(held)} held out), "
              f"{sum(len(s.calls) for s in group)} calls, {timed} timed; cache model "
              f"{cache.name} (lifetime {cache.lifetime} s, hit rate {cache.hit_rate})")
        if corpus == "mini-swe-agent":
            print(f"  hit rate measured on the tuned sessions: {hit_rate(tuned, cache)}")
        else:
            print(f"  part of the hidden prefix kept warm by other sessions: {warm}")
        print(f"  {'':28}{'predicted':>10}{'recorded':>10}{'gap':>8}")
        for label, side in (("tuned", tuned), ("held out", held), ("all", group)):
            before = pooled(side, cache.model_copy(update={"hit_rate": Fraction(1)}),
                            timed=False, warm=False)
            after = pooled(side, cache, timed=True, warm=warm)
            for name, (p, r) in (("always warm", before), ("with lifetimes", after)):
                print(f"  {label + ', ' + name:28}{p:>10.1%}{r:>10.1%}"
                      f"{(p - r) * 100:>+8.2f}")
        if args.sessions:
            for s in group:
                side = "held" if s in held else "tuned"
                p = s.predicted_share(timed=True, warm=warm)
                print(f"    {s.name:42}{side:>6}{p:>8.1%}{s.recorded_share():>8.1%}")


if __name__ == "__main__":
    main()
