"""What a `token_counter` costs: the budget trim and the ledger with a custom counter, against
the spec's estimate (EST-1) on the same rows.

For a tool-heavy history (`histories.tool_history`) it prints one line per counter: the first
trim of fresh rows (the counter runs once per row), a second trim of the same rows (counts cached
on the rows: no counter call), both over the spec-estimate trim of warm rows; and the counter calls
of a `TokenLedger` fed the history row by row with a budget check after every row (RUN-1: one call
per new row). With the extra installed, the exact `o200k_base` counter gets a line too.
Run: `python bench/counter_cost.py` (`--messages 20000` for a short run).
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from histories import tool_history

from histtrim import ChatMessage, TokenLedger, estimate_history_tokens, trim_to_recent_turns
from histtrim.adapters.tokenizers import exact_counter, tokenizers_available

WORD = re.compile(r"\w+|[^\w\s]")


def words(row: ChatMessage) -> int:
    """A pure-Python stand-in counter: one token per word or symbol."""
    return len(WORD.findall(row.content))


def cpu(call: Callable[[], object]) -> float:
    start = time.process_time()
    call()
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--messages", type=int, default=100_000)
    args = parser.parse_args()
    budget = estimate_history_tokens(tool_history(args.messages)) // 2
    warm = tool_history(args.messages)
    trim_to_recent_turns(warm, budget)
    spec = min(cpu(lambda: trim_to_recent_turns(warm, budget)) for _ in range(3))
    print(f"tool history of {args.messages:,} messages, budget {budget:,}: spec-estimate trim "
          f"(warm rows) {spec * 1000:.0f} ms")
    counters: list[tuple[str, Callable[[ChatMessage], int]]] = [("words-and-symbols", words)]
    if tokenizers_available():
        counters.append(("o200k_base (exact)", exact_counter("o200k_base")))
    else:
        print("(the o200k_base line needs the extra: pip install 'histtrim[tokenizers]')")
    print(f"{'counter':<20} {'first trim ms':>13} {'x spec':>7} {'cached trim ms':>14} "
          f"{'x spec':>7} {'ledger calls/row':>16}")
    for name, counter in counters:
        rows = tool_history(args.messages)
        first = cpu(lambda rows=rows, counter=counter: trim_to_recent_turns(
            rows, budget, token_counter=counter))
        cached = min(cpu(lambda rows=rows, counter=counter: trim_to_recent_turns(
            rows, budget, token_counter=counter)) for _ in range(3))
        calls = 0

        def counting(row: ChatMessage, counter: Callable[[ChatMessage], int] = counter) -> int:
            nonlocal calls
            calls += 1
            return counter(row)

        ledger = TokenLedger(token_counter=counting)
        for row in tool_history(args.messages // 10):
            ledger.append(row)
            ledger.needs_trim(budget)
        ledger.rebuild(list(ledger))
        print(f"{name:<20} {first * 1000:>13.0f} {first / spec:>7.1f} {cached * 1000:>14.0f} "
              f"{cached / spec:>7.1f} {calls / len(ledger):>16.2f}")


if __name__ == "__main__":
    main()
