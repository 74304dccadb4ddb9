"""The integrations' report bookkeeping (USAGE-7, `ReportBook`) stays linear and bounded.

Issue 46 item 2: one integration instance serving many conversations must keep each one's
report and held cut, in memory bounded in bytes. The script
- files the reports of 2k, 8k and 32k conversations in a book of 1 MiB and prints its bytes
  (at most the limit) and the time per report (constant: about 1 from 2k to 32k);
- looks a conversation up in histories of 2k, 8k and 32k rows (a lookup scans the history
  once, and only for a history the instance does not remember) and prints the time per row
  of the largest over the smallest (linear: about 1; quadratic: 16; the fastest of 20),
  beside the same ratio for a bare loop hashing each row once (what memory costs on this
  machine as the rows outgrow its caches).
Goal: the ratios at most 2 for the reports and 4 for the rows (16 would be quadratic), the
bytes never over the limit.
Run: `python bench/report_book.py`.
"""

from __future__ import annotations

import time

from histtrim.integrations._trimmer import Priced, ReportBook, Seen
from histtrim.messages import ChatMessage

GOAL_RATIO = 2.0
GOAL_ROWS = 4.0
SIZES = (2_000, 8_000, 32_000)


def history(c: int, rows: int) -> list[Priced]:
    out = []
    for i in range(rows // 2):
        out.append(Priced(ChatMessage.user(f"conversation {c} question {i}"), 9, 9))
        out.append(Priced(ChatMessage.assistant(f"conversation {c} answer {i}"), 9, 9))
    return out


def main() -> int:
    ok = True
    per_report = []
    print(f"{'conversations':>13s} {'bytes':>9s} {'limit':>9s} {'entries':>8s} {'us/report':>10s}")
    for size in SIZES:
        book = ReportBook()
        seens = [Seen([], [], history(c, 8), floor=2, report=(5_000, 900, 0),
                      pairs=((900, 5_000),)) for c in range(size)]
        start = time.perf_counter()
        for seen in seens:
            book.write(seen)
            ok &= book.bytes <= book.limit
        took = (time.perf_counter() - start) / size
        per_report.append(took)
        print(f"{size:13,d} {book.bytes:9,d} {book.limit:9,d} {len(book):8,d} "
              f"{1e6 * took:10.2f}")
    report_ratio = per_report[-1] / per_report[0]
    per_row, bare = [], []
    print(f"{'history rows':>13s} {'ms/lookup':>10s} {'us/row':>8s} {'bare us/row':>12s}")
    for rows in SIZES:
        book = ReportBook()
        book.write(Seen([], [], history(0, rows // 2), report=(5_000, 900, 0)))
        later = history(0, rows)
        samples = []
        for _ in range(20):
            seen = Seen([], [], later)
            start = time.perf_counter()
            book.restore(seen)
            samples.append(time.perf_counter() - start)
            ok &= seen.report == (5_000, 900, 0)
        took = min(samples)
        per_row.append(took / rows)
        loops = []
        for _ in range(20):
            start = time.perf_counter()
            for item in later:
                hash((item.row.role, item.row.content))
            loops.append(time.perf_counter() - start)
        bare.append(min(loops) / rows)
        print(f"{rows:13,d} {1e3 * took:10.2f} {1e6 * took / rows:8.3f} "
              f"{1e6 * bare[-1]:12.3f}")
    row_ratio = per_row[-1] / per_row[0]
    print(f"per report, 32k over 2k conversations: {report_ratio:.2f} (goal: at most "
          f"{GOAL_RATIO}); per row, 32k over 2k rows: {row_ratio:.2f}, bare loop "
          f"{bare[-1] / bare[0]:.2f} (goal: at most {GOAL_ROWS})")
    ok &= report_ratio <= GOAL_RATIO and row_ratio <= GOAL_ROWS
    print("bounded and linear" if ok else "GOAL MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
