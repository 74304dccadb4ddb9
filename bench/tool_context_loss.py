"""Cost against needed context lost for every policy of chapter 16's table on every session
of examples/sessions (16k window) and examples/real (64k window): prints, per group and
policy, the input cost with Anthropic's prompt cache relative to the whole-turn spec, the
tokens sent relative to it and the needed context lost (`histtrim.review.loss`).

Run: .venv/bin/python bench/tool_context_loss.py (a few minutes on two cores)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from histtrim.cli.review import load_sessions
from livingspec.plotting.tool_context import cost_and_loss

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    started = time.perf_counter()
    real = ROOT / "examples" / "real"
    groups = {
        "examples/sessions (16k)": (load_sessions([str(ROOT / "examples" / "sessions")]), 16_000),
        **{
            f"real/{folder.name} (64k)": (load_sessions([str(folder)]), 64_000)
            for folder in sorted(p for p in real.iterdir() if p.is_dir())
        },
    }
    plot = cost_and_loss(groups)
    spec_tokens = {r.group: r.tokens_sent for r in plot.rows if r.policy == "whole-turn spec"}
    print(f"{'group':28s} {'policy':30s} {'sessions':>8s} {'cost':>6s} {'tokens':>7s} {'lost':>6s}")
    for r in plot.rows:
        sessions = len(groups[r.group][0])
        print(f"{r.group:28s} {r.policy:30s} {sessions:8d} {r.cost:6.3f} "
              f"{r.tokens_sent / spec_tokens[r.group]:7.3f} {100 * r.lost:5.1f}%")
    print(f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
