"""Issue 47: what reading an agent's own session file costs, against a plain JSON parse of
the same bytes (`json.loads` of the document, or of each line), for every fixture of
tests/data/agent_sessions whose reader is installed; then the same file with its records
repeated 4x and 16x (fresh ids where the format keys records by id), to show the cost per
byte stays flat. Prints the best of `--runs` timings and the ratios.

    python bench/agent_session_reads.py [--runs 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from histtrim.adapters.agent_sessions import AGENTS, reader

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "agent_sessions"


def plain_parse(data: bytes) -> object:
    """The baseline: one `json.loads` of the document, or one per line."""
    try:
        return json.loads(data)
    except ValueError:
        return [json.loads(line) for line in data.splitlines() if line.strip()]


def best(runs: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def _fresh(value: Any, n: int) -> Any:
    """A record with every string id made unique to copy `n`."""
    if isinstance(value, dict):
        return {k: (f"{v}~{n}" if k in ("id", "uuid", "parentUuid", "parentId",
                                        "toolCallId", "tool_call_id", "call_id")
                    and isinstance(v, str) else _fresh(v, n)) for k, v in value.items()}
    if isinstance(value, list):
        return [_fresh(v, n) for v in value]
    return value


def repeated(data: bytes, times: int) -> bytes:
    """The file with its records (after a header line) repeated, ids made fresh."""
    try:
        whole = json.loads(data)
    except ValueError:
        whole = None
    if isinstance(whole, list):
        return json.dumps([_fresh(e, n) for n in range(times) for e in whole]).encode()
    if isinstance(whole, dict) and isinstance(whole.get("messages"), list):
        messages = [_fresh(m, n) for n in range(times) for m in whole["messages"]]
        return json.dumps({**whole, "messages": messages}).encode()
    lines = [json.loads(line) for line in data.splitlines() if line.strip()]
    body = [json.dumps(_fresh(r, n)) for n in range(times) for r in lines[1:]]
    return ("\n".join([json.dumps(lines[0]), *body]) + "\n").encode()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"{'file':<48} {'x':>3} {'KB':>7} {'parse ms':>9} {'read ms':>8} {'ratio':>6}")
    worst = 0.0
    for agent in AGENTS:
        if importlib.util.find_spec(f"histtrim.adapters.{agent.replace('-', '_')}") is None:
            print(f"{agent}: reader not installed")
            continue
        read = reader(agent)
        for path in sorted((DATA / agent).glob("*.json*")):
            original = path.read_bytes()
            for times in (1, 4, 16):
                data = original if times == 1 else repeated(original, times)
                parse = best(args.runs, lambda d=data: plain_parse(d))
                full = best(args.runs, lambda d=data, r=read, n=path.name: r(d, n))
                ratio = full / parse
                worst = max(worst, ratio)
                print(f"{agent + '/' + path.name:<48} {times:>3} {len(data) / 1024:>7.0f} "
                      f"{parse * 1000:>9.2f} {full * 1000:>8.2f} {ratio:>6.2f}")
    print(f"worst ratio of reading to a plain JSON parse: {worst:.2f} (issue 47 asks <= 3)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
