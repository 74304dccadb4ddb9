"""Issue 47's bound: reading an agent's own session file costs at most 3x a plain JSON parse
of the same bytes. For each format, every fixture of tests/data/agent_sessions/<format> (its
records repeated until the file holds about `--bytes`), plus any folder named with
`--dir NAME=DIR` (say, a Claude Code project folder); prints the reader's time, the plain
parse's (`json.loads` of the document, or of each line) and their ratio, per format.

    python bench/read_sessions.py [--bytes 4000000] [--runs 5] [--dir NAME=DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from histtrim.adapters.agent_sessions import AGENTS, AgentFormat, detect, reader

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "agent_sessions"
LIMIT = 3.0


def plain(data: bytes) -> object:
    """The baseline: the document parsed whole, or each line."""
    if data.lstrip()[:1] == b"[" or data.count(b"\n") < 2:
        try:
            return json.loads(data)
        except ValueError:
            pass
    out = []
    for line in data.split(b"\n"):
        if line.strip():
            with contextlib.suppress(ValueError):  # a garbled line: the readers skip it
                out.append(json.loads(line))
    return out


def grown(data: bytes, size: int) -> bytes:
    """A JSON Lines file's lines repeated until it holds about `size` bytes (a document is
    kept as it is: its records are not independent lines)."""
    if data.lstrip()[:1] in (b"[", b"{") and data.count(b"\n") and _is_document(data):
        return data
    body = data if data.endswith(b"\n") else data + b"\n"
    return body * max(1, size // max(len(body), 1))


def _is_document(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


def best(runs: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bytes", type=int, default=4_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dir", action="append", default=[], metavar="NAME=DIR")
    args = parser.parse_args(argv)
    files: dict[AgentFormat, list[bytes]] = {agent: [] for agent in AGENTS}
    for agent in AGENTS:
        for path in sorted((DATA / agent).glob("*.json*")):
            files[agent].append(grown(path.read_bytes(), args.bytes))
    for spec in args.dir:
        folder = spec.partition("=")[2]  # the format is told from each file's content
        for path in sorted(Path(folder).rglob("*.json*")):
            data = path.read_bytes()
            agent = detect(data)
            if agent is not None:
                files[agent].append(data)
    print(f"{'format':<12} {'files':>5} {'MB':>7} {'read s':>8} {'json s':>8} {'ratio':>6}")
    worst = 0.0
    for agent, datas in files.items():
        if not datas:
            continue
        read = reader(agent)
        ours = sum(best(args.runs, lambda d=d, r=read: r(d, "bench")) for d in datas)
        theirs = sum(best(args.runs, lambda d=d: plain(d)) for d in datas)
        ratio = ours / theirs
        worst = max(worst, ratio)
        size = sum(len(d) for d in datas) / 1e6
        print(f"{agent:<12} {len(datas):>5} {size:>7.2f} {ours:>8.3f} {theirs:>8.3f} "
              f"{ratio:>5.2f}x")
    print(f"worst ratio {worst:.2f}x (the bound: {LIMIT:.0f}x)")
    return 0 if worst <= LIMIT else 1


if __name__ == "__main__":
    sys.exit(main())
