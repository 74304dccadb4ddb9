"""Issue 28's table: what a caller that passes the whole history on every request pays with a
provider prompt cache, before (trim to fit, the spec's targets) and after (the held cut of
`Policy(token_trim_target=7/10)`), against the Agent with the same policy.

`trim_openai` is called with the whole history at every request point of a session (one per
assistant reply); every request is priced with the cache models of `histtrim.review.cache`.
Prints one row per budget and caller, then whether the held cut is within 10 % of the Agent's
input cost with the same cut moves (±1). The whole session takes a few minutes a budget on a
2-core machine (each request converts its whole history, as a caller does).

    python bench/cache_stability.py [--session FILE] [--budgets 8000,16000,24000] [--rows N]
"""

from __future__ import annotations

import argparse
import json
from fractions import Fraction
from pathlib import Path

from histtrim.adapters.openai import from_openai, to_openai, trim_openai
from histtrim.display.tables import text_table
from histtrim.messages import ChatMessage
from histtrim.policy import SPEC, Policy
from histtrim.review.prefix import (
    PrefixCost,
    agent_prompts,
    prefix_cost,
    request_prompts,
    whole_history_requests,
)

ROOT = Path(__file__).resolve().parent.parent
LOW = Policy(token_trim_target=Fraction(7, 10))


def read_rows(path: Path) -> list[ChatMessage]:
    lines = path.read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    return [ChatMessage.model_validate({k: v for k, v in r.items() if k != "kind"})
            for r in records]


def whole_history(
    rows: list[ChatMessage], budget: int, policy: Policy
) -> tuple[PrefixCost, int]:
    """The caller's figures, and how many requests dropped rows (trim events)."""
    trims = 0

    def trim(history: list[ChatMessage]) -> list[ChatMessage]:
        nonlocal trims
        done = trim_openai(to_openai(history), budget_tokens=budget, policy=policy)
        trims += done.trimmed
        return from_openai(done.records)

    return prefix_cost(request_prompts(whole_history_requests(rows, trim))), trims


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--session", type=Path,
                        default=ROOT / "examples" / "sessions" / "very-long-coding-agent.jsonl")
    parser.add_argument("--budgets", default="8000,16000,24000")
    parser.add_argument("--rows", type=int, default=None, help="only the first N rows")
    args = parser.parse_args()
    rows = read_rows(args.session)[: args.rows]
    table, verdicts = [], []
    for budget in (int(b) for b in args.budgets.split(",")):
        before, trims_before = whole_history(rows, budget, SPEC)
        after, trims_after = whole_history(rows, budget, LOW)
        agent = prefix_cost(agent_prompts(args.session.stem, rows, budget, LOW))
        for caller, cost, trims in (
            ("whole history, trim to fit (before)", before, trims_before),
            ("whole history, held cut at 0.7 (after)", after, trims_after),
            ("Agent, 0.7", agent, None),
        ):
            table.append([budget, caller, cost.requests, trims, cost.cut_moves,
                          f"{cost.cached_share:.1%}", f"{cost.anthropic:.3f}x",
                          f"{cost.openai:.3f}x"])
        ratio = after.anthropic / agent.anthropic
        met = abs(ratio - 1) <= 0.1 and abs(after.cut_moves - agent.cut_moves) <= 1
        verdicts.append(
            f"budget {budget}: held/Agent input cost {ratio:.3f} (Anthropic), "
            f"{after.openai / agent.openai:.3f} (OpenAI); cut moves {after.cut_moves} vs "
            f"{agent.cut_moves}; trim to fit costs {before.anthropic / after.anthropic:.2f}x "
            f"the held cut -> {'met' if met else 'MISSED'}"
        )
    print(text_table(["budget", "caller", "requests", "requests trimmed", "cut moves",
                      "cached", "Anthropic", "OpenAI"], table))
    print("\n".join(verdicts))


if __name__ == "__main__":
    main()
