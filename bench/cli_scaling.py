"""A million-row history file: read, trim and write it back (and print its per-turn estimate)
with `histtrim.adapters.formats` / `rewrite`, against merely parsing it line by line with the
standard `json` module.

The file is a generated OpenAI chat-completions JSON Lines history (a system message, then
turns of a user message, an assistant reply and, every third turn, a tool call and its result;
about 94 bytes a message, like the 90 MB file of issue 15). Each task runs in a fresh Python
process; its CPU time (user + system) and peak RSS come from `os.wait4`, so the interpreter
start and the imports count. Goals: `trim` and `estimate` within 3x the time of the json
baseline, and a peak RSS at most 4x the file size.

Run: `python bench/cli_scaling.py` (`--rows 100000` for a short run; `--current-cli` also
times the `histtrim trim` / `histtrim estimate` commands themselves; `--layout array` writes
the same messages as one JSON array, the baseline then parsing the whole array).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

TIME_GOAL, MEMORY_GOAL = 3.0, 4.0
PROSE = (
    "the build failed because the config file was missing a key so I searched the repo for "
    "every reference"
)
WORDS = PROSE.split(" ")


def text(seed: int, words: int) -> str:
    return " ".join(WORDS[(seed * 7 + i * 13) % len(WORDS)] for i in range(words))


def write_history(path: Path, rows: int) -> None:
    """`rows` OpenAI messages as JSON Lines, deterministic."""
    with path.open("w", encoding="utf-8") as out:
        out.write(json.dumps({"role": "system", "content": "You are careful."}) + "\n")
        written, turn = 1, 0
        while written < rows:
            messages = [{"role": "user", "content": text(turn, 6 + turn % 8)}]
            if turn % 3 == 0:
                call = f"call_{turn}"
                arguments = json.dumps({"q": f"k{turn}"})
                messages.append({"role": "assistant", "content": None, "tool_calls": [
                    {"id": call, "type": "function",
                     "function": {"name": "grep", "arguments": arguments}}]})
                messages.append({"role": "tool", "tool_call_id": call,
                                 "content": text(turn + 1, 5)})
            messages.append({"role": "assistant", "content": text(turn + 2, 6 + turn % 9)})
            for message in messages[: rows - written]:
                out.write(json.dumps(message, ensure_ascii=False) + "\n")
            written += len(messages)
            turn += 1


# ------------------------------------------------------------------ the tasks (child side)


def task_json(path: str) -> None:
    """The baseline: parse every line with the standard json module (nothing kept), or the
    whole array."""
    if path.endswith(".json"):
        json.loads(Path(path).read_bytes())
        return
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                json.loads(line)


def as_array(source: Path, target: Path) -> None:
    """The JSON Lines file's messages as one JSON array, one message a line."""
    lines = [line for line in source.read_text(encoding="utf-8").split("\n") if line]
    target.write_text("[\n" + ",\n".join(lines) + "\n]\n", encoding="utf-8")
    source.unlink()


def task_trim(path: str, out: str) -> None:
    from histtrim.adapters.formats import read_history
    from histtrim.adapters.rewrite import trim_history, write_history

    history = read_history(Path(path).read_bytes())
    result = trim_history(history, budget_tokens=sum(history.costs) // 2)
    Path(out).write_bytes(write_history(history, result))
    print(json.dumps({"dropped": result.events[0].dropped_messages if result.events else 0,
                      "tokens_before": result.tokens_before,
                      "tokens_after": result.tokens_after}))


def task_estimate(path: str) -> None:
    from histtrim.adapters.formats import read_history
    from histtrim.adapters.rewrite import turn_table
    from histtrim.cli.estimate import format_turn_table

    table = format_turn_table(turn_table(read_history(Path(path).read_bytes())))
    print(json.dumps({"lines": table.count("\n")}))


TASKS = {"json": task_json, "trim": task_trim, "estimate": task_estimate}


# ------------------------------------------------------------------ measuring (parent side)


def run(command: list[str]) -> tuple[float, float]:
    """(CPU seconds, peak RSS in MB) of one child process, reaped by `os.wait4` for its
    own resource usage."""
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {child.stderr.read().decode()}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3, help="runs per task (best is kept)")
    parser.add_argument("--current-cli", action="store_true",
                        help="also time the `histtrim trim` / `estimate` commands")
    parser.add_argument("--layout", choices=["jsonl", "array"], default="jsonl")
    parser.add_argument("--task", choices=list(TASKS), help=argparse.SUPPRESS)
    parser.add_argument("args", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.task:
        TASKS[args.task](*args.args)
        return

    with tempfile.TemporaryDirectory() as tmp:
        source, output = Path(tmp, "history.jsonl"), Path(tmp, "trimmed.jsonl")
        write_history(source, args.rows)
        if args.layout == "array":
            source, output = Path(tmp, "history.json"), Path(tmp, "trimmed.json")
            as_array(Path(tmp, "history.jsonl"), source)
        size = source.stat().st_size / 2**20
        me = [sys.executable, __file__, "--task"]
        commands = {
            "json lines (baseline)": [*me, "json", str(source)],
            "trim (formats + rewrite)": [*me, "trim", str(source), str(output)],
            "estimate (formats + rewrite)": [*me, "estimate", str(source)],
        }
        if args.current_cli:
            cli = [sys.executable, "-m", "histtrim.cli"]
            budget = "--budget"
            commands["histtrim trim (CLI)"] = [
                *cli, "trim", str(source), budget, str(10**6), "-o", str(output)]
            commands["histtrim estimate (CLI)"] = [*cli, "estimate", str(source)]
        kind = "a JSON array" if args.layout == "array" else "JSON Lines"
        print(f"{args.rows:,} OpenAI messages, {size:.1f} MB of {kind}; CPU seconds (user + "
              f"system) and peak RSS of a fresh process, best of {args.repeats}\n")
        results: dict[str, tuple[float, float]] = {}
        for name, command in commands.items():
            runs = [run(command) for _ in range(args.repeats)]
            results[name] = (min(r[0] for r in runs), min(r[1] for r in runs))
        base = results["json lines (baseline)"][0]
        print(f"{'task':32} {'CPU s':>7} {'x json':>7} {'peak MB':>8} {'x file':>7}")
        for name, (cpu, rss) in results.items():
            print(f"{name:32} {cpu:7.2f} {cpu / base:7.2f} {rss:8.0f} {rss / size:7.2f}")
        print("\nGoals")
        goals = ["trim (formats + rewrite)", "estimate (formats + rewrite)"]
        goals += [name for name in results if name.endswith("(CLI)")]
        for name in goals:
            cpu, rss = results[name]
            ok = cpu / base <= TIME_GOAL and rss / size <= MEMORY_GOAL
            print(f"  {name}: {cpu / base:.2f}x the json time (goal <= {TIME_GOAL:g}), "
                  f"{rss / size:.2f}x the file (goal <= {MEMORY_GOAL:g}) -> "
                  f"{'met' if ok else 'MISSED'}")


if __name__ == "__main__":
    main()
