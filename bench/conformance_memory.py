"""Peak memory of `histtrim conformance run` against implementations that answer with huge
lines (issue 30 item 11): the runner's own peak RSS, in a fresh process per case.

    .venv/bin/python bench/conformance_memory.py

Cases: one vector answered by a line of 1 MB (parsed, judged), 20 MB and 60 MB (refused
unparsed: longer than 8x the largest expected answer + 1 MiB), and 115 vectors each answered
wrongly by a 680 KB or a 60 KB line (parsed and judged; only the report lines are kept).
Prints the runner's peak RSS, its growth during the run, and the time. Goal: the growth stays
a few MB whatever the implementation writes (before issue 30 item 11, this script measured a
growth of 226 MB for one 20 MB line and 585 MB for 115 wrong 680 KB answers)."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

IMPL = (
    "import sys, json\n"
    "size = int(sys.argv[1])\n"
    "for line in sys.stdin:\n"
    "    r = json.loads(line)\n"
    "    rows = [{'role': 'user', 'content': 'x'}] * (size // 35)\n"
    "    sys.stdout.write(json.dumps({'id': r['id'], 'result': {'history': rows}}) + '\\n')\n"
    "    sys.stdout.flush()\n"
)


def inner(count: int, size: int) -> None:
    from histtrim.conformance.runner import run
    from histtrim.conformance.vectors import Vector

    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "impl.py"
        script.write_text(IMPL)
        vectors = [Vector(f"estimate_history_tokens-{n:012x}", ("EST-1",),
                          "estimate_history_tokens", "bench", [], {},
                          {"result": {"tokens": 0}}) for n in range(count)]
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        result = run(vectors, [sys.executable, str(script), str(size)], timeout=30)
        seconds = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        reasons = {o.reason.split(" (")[0] for o in result.outcomes}
        print(json.dumps({"base_kb": base, "peak_kb": peak, "seconds": seconds,
                          "reasons": sorted(reasons)}))


def main() -> None:
    if sys.argv[1:2] == ["--inner"]:
        inner(int(sys.argv[2]), int(sys.argv[3]))
        return
    cases = [(1, 1_000_000), (1, 20_000_000), (1, 60_000_000), (115, 680_000), (115, 60_000)]
    print(f"{'answers':>7}  {'line MB':>7}  {'written MB':>10}  {'runner peak MB':>14}  "
          f"{'growth MB':>9}  {'s':>5}  outcome")
    for count, size in cases:
        out = subprocess.run([sys.executable, __file__, "--inner", str(count), str(size)],
                             capture_output=True, text=True, check=True).stdout
        row = json.loads(out)
        growth = (row["peak_kb"] - row["base_kb"]) / 1024
        print(f"{count:>7}  {size / 1e6:>7.2f}  {count * size / 1e6:>10.1f}  "
              f"{row['peak_kb'] / 1024:>14.1f}  {growth:>9.1f}  {row['seconds']:>5.1f}  "
              f"{'; '.join(row['reasons'])}")


if __name__ == "__main__":
    main()
