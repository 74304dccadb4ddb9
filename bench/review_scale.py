"""Time `histtrim review` on many generated sessions: on a process pool over every core, and
on a local Dask cluster (one single-threaded worker process per core).

    .venv/bin/python bench/review_scale.py --sessions 10000

Writes the sessions as JSON Lines files (histtrim rows; the four kinds of the corpus, 3 to
10 turns each) under a temporary folder, then runs, timing each end to end:

    histtrim review DIR --policy examples/policies/reactive-half.toml --workers N
    histtrim review DIR --policy examples/policies/reactive-half.toml --dask ADDRESS

and checks both print the same table. Prints the commands, the times and sessions/second."""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from histtrim import to_chat_messages
from livingspec.synth import KINDS, generate

ROOT = Path(__file__).resolve().parent.parent
POLICY = ROOT / "examples" / "policies" / "reactive-half.toml"


def write_sessions(folder: Path, count: int) -> int:
    """`count` sessions as JSON Lines files; returns the bytes written."""
    total = 0
    for n in range(count):
        kind = KINDS[n % len(KINDS)]
        items = generate(kind, n, random.Random(n).randint(3, 10))
        if kind == "restored":
            items = items[:1] + items[2:]  # JSON Lines carry no breadcrumb flag
        text = "".join(
            json.dumps(row.model_dump(mode="json"), ensure_ascii=False) + "\n"
            for row in to_chat_messages(items)
        )
        (folder / f"{kind}-{n:05d}.jsonl").write_text(text, encoding="utf-8")
        total += len(text)
    return total


def timed(command: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return time.perf_counter() - start, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--keep", help="write the sessions here and keep them")
    args = parser.parse_args()

    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="histtrim-review-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        start = time.perf_counter()
        size = write_sessions(folder, args.sessions)
        print(f"generated {args.sessions} sessions ({size / 1e6:.0f} MB) in "
              f"{time.perf_counter() - start:.1f}s under {folder}")
        histtrim = str(Path(sys.executable).parent / "histtrim")
        base = [histtrim, "review", str(folder), "--policy", str(POLICY), "--no-progress"]

        pool_command = [*base, "--workers", str(args.workers)]
        pool_time, pool_out = timed(pool_command)
        print(f"process pool ({args.workers} workers): {pool_time:.1f}s, "
              f"{args.sessions / pool_time:.0f} sessions/s\n  $ {' '.join(pool_command)}")

        from distributed import LocalCluster

        with LocalCluster(
            n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster:
            dask_command = [*base, "--dask", cluster.scheduler_address]
            dask_time, dask_out = timed(dask_command)
        print(f"Dask LocalCluster ({args.workers} worker processes): {dask_time:.1f}s, "
              f"{args.sessions / dask_time:.0f} sessions/s\n  $ {' '.join(dask_command)}")
        if dask_out != pool_out:
            raise SystemExit("the two runs printed different tables")
        print("both printed the same table:\n" + pool_out)
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
