"""Time `histtrim review` on the real corpus (examples/real/) under four policies, in one
process and on the default process pool:

    .venv/bin/python bench/review_real.py

runs, timing each end to end (wall clock, and the CPU of the command and its workers), the
short sessions (tau-bench's airline sessions and SWE-agent's runs) at a 3,000-token budget:

    histtrim review examples/real/tau-bench-airline examples/real/swe-agent --budget 3000 \\
        --window 200000 --cache anthropic --policy examples/policies/trim-to-90.toml \\
        --policy .../trim-to-70.toml --policy .../trim-to-50.toml --no-progress [--workers 1]

and the long ones (Claude Code transcripts and mini-swe-agent runs) at 32,000 tokens, with
1,000 tool rounds per turn (their turns are long tool loops; the default 10 cuts them short):

    histtrim review examples/real/claude-code examples/real/mini-swe-agent --budget 32000 \\
        --window 200000 --max-tool-iterations 1000 --cache anthropic --policy ... [--workers 1]

checks both runs of a corpus print the same table, and prints the times, the replays per
second and the ratio of the two wall times. The load average is printed too: on a shared
machine the wall time is the CPU time stretched by the other jobs."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "examples" / "real"
POLICIES = [ROOT / "examples" / "policies" / f"{name}.toml"
            for name in ("trim-to-90", "trim-to-70", "trim-to-50")]
CORPORA = {
    "short": (("tau-bench-airline", "swe-agent"), ["--budget", "3000"]),
    "long": (("claude-code", "mini-swe-agent"),
             ["--budget", "32000", "--max-tool-iterations", "1000"]),
}


def command(folders: tuple[str, ...], options: list[str]) -> list[str]:
    return [
        str(Path(sys.executable).with_name("histtrim")), "review",
        *(str(REAL / folder) for folder in folders), *options,
        "--window", "200000", "--cache", "anthropic", "--no-progress",
        *(arg for policy in POLICIES for arg in ("--policy", str(policy))),
    ]


def timed(base: list[str], extra: list[str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (the command and its children) and what it printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([*base, *extra], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def main() -> None:
    for name, (folders, options) in CORPORA.items():
        base = command(folders, options)
        sessions = sum(1 for folder in folders for _ in (REAL / folder).glob("*.jsonl"))
        replays = sessions * (len(POLICIES) + 1)
        print(f"{name}: " + " ".join(base[1:]))
        print(f"{sessions} sessions x {len(POLICIES) + 1} policies = {replays} replays; "
              f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
        one_wall, one_cpu, one_table = timed(base, ["--workers", "1"])
        pool_wall, pool_cpu, pool_table = timed(base, [])
        assert one_table == pool_table, "the process pool printed another table"
        for label, wall, cpu in (("--workers 1", one_wall, one_cpu),
                                 ("default pool", pool_wall, pool_cpu)):
            print(f"{label:13} {wall:6.1f} s wall  {cpu:6.1f} s CPU  "
                  f"{replays / wall:7.0f} replays/s")
        print(f"pool / one process: {pool_wall / one_wall:.2f}x the wall time")


if __name__ == "__main__":
    main()
