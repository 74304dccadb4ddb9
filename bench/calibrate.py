"""Measure EST-1 against real tokenizers and save the counts the calibration chapter reads.

    pip install -e ".[tokenizers]"     # bpe-openai: o200k_base and cl100k_base, offline
    python bench/calibrate.py          # writes bench/results/calibration_*.csv

The corpus is generated deterministically (`livingspec.calibration`), so a second run writes the
same files; `tests/test_calibration.py` re-computes them when the extra is installed."""

from __future__ import annotations

import argparse
from pathlib import Path

from histtrim.adapters.tokenizers import count_text, exact_counter
from livingspec.calibration.measure import (
    MESSAGES_CSV,
    SESSIONS_CSV,
    TOKENIZERS,
    load_messages,
    load_sessions,
    measure_messages,
    measure_sessions,
    save,
    summarize_messages,
    summarize_sessions,
)

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for the CSV files")
    args = parser.parse_args()
    messages = measure_messages(
        {name: (lambda text, name=name: count_text(text, name)) for name in TOKENIZERS}
    )
    sessions = measure_sessions({name: exact_counter(name) for name in TOKENIZERS}, ROOT)
    args.out.mkdir(parents=True, exist_ok=True)
    save(args.out, messages, sessions)
    messages = load_messages(args.out / MESSAGES_CSV)
    sessions = load_sessions(args.out / SESSIONS_CSV)
    print(f"{len(messages)} messages, {len(sessions)} sessions -> {args.out}")
    for tokenizer in TOKENIZERS:
        print(f"\nestimate / real, {tokenizer}: class, median, p5, p95, worst, under-counted")
        summaries = summarize_messages(messages, tokenizer)
        for s in [*summaries, summarize_sessions(sessions, tokenizer)]:
            print(f"  {s.group:<20} {s.median:5.2f} {s.p5:5.2f} {s.p95:5.2f} {s.worst:5.2f} "
                  f"{s.under:6.1%}")


if __name__ == "__main__":
    main()
