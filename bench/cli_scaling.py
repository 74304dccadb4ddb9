"""A million-row history file through `histtrim trim` and `histtrim estimate`, against merely
parsing it line by line with the standard `json` module, in every format and layout the
fast reader takes.

The history is generated and deterministic: a system message, then turns of a user message,
an assistant reply and, every third turn, a tool call and its result (about 94 bytes a
message, like the 90 MB file of issue 15). It is written as each case of `CASES`: OpenAI
messages and histtrim rows, as JSON Lines and as a JSON array (one record a line), and an
Anthropic request body (`system` and `messages`, one message a line, tool calls as
`tool_use` / `tool_result` blocks). Each task runs in a fresh Python process; its CPU time
(user + system) and peak RSS come from `os.wait4`, so the interpreter start and the imports
count. The baseline and the tasks of a case run in turn within one run (the best of
`--repeats`), so a ratio compares two figures taken under the same load.

Goals (issue 32): `histtrim trim` (pairing warnings on, a budget of about half the file) and
`histtrim estimate` at most 2x the time of the baseline (2.5x for the Anthropic body), and
every task's peak RSS at most 3x the file. The same trim with a low-water target
(`--token-target 7/10`, the cut the Agent holds) has the same goals (issue 38 item 6).

Run: `python bench/cli_scaling.py` (`--rows 100000` for a short run, `--case openai-jsonl`
for one case, `--write-csv` to write `results/cli_scaling.csv` and its `.meta.json`).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

TIME_GOAL, ANTHROPIC_TIME_GOAL, MEMORY_GOAL = 2.0, 2.5, 3.0
CASES = (
    ("openai", "jsonl"), ("openai", "array"), ("histtrim", "jsonl"), ("histtrim", "array"),
    ("anthropic", "body"),
)
RESULTS = Path(__file__).parent / "results" / "cli_scaling.csv"
PROSE = (
    "the build failed because the config file was missing a key so I searched the repo for "
    "every reference"
)
WORDS = PROSE.split(" ")
SYSTEM = "You are careful."


def text(seed: int, words: int) -> str:
    return " ".join(WORDS[(seed * 7 + i * 13) % len(WORDS)] for i in range(words))


def turns() -> Iterator[list[dict[str, Any]]]:
    """The history's turns as OpenAI messages, without end."""
    turn = 0
    while True:
        messages: list[dict[str, Any]] = [{"role": "user", "content": text(turn, 6 + turn % 8)}]
        if turn % 3 == 0:
            call = f"call_{turn}"
            arguments = json.dumps({"q": f"k{turn}"})
            messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": call, "type": "function",
                 "function": {"name": "grep", "arguments": arguments}}]})
            messages.append({"role": "tool", "tool_call_id": call,
                             "content": text(turn + 1, 5)})
        messages.append({"role": "assistant", "content": text(turn + 2, 6 + turn % 9)})
        yield messages
        turn += 1


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def as_histtrim(message: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI message as a histtrim row (native envelopes as its content)."""
    if message.get("tool_calls"):
        calls = [{"id": c["id"], "name": c["function"]["name"],
                  "arguments": c["function"]["arguments"]} for c in message["tool_calls"]]
        content = _compact({"content": message["content"], "tool_calls": calls})
    elif message["role"] == "tool":
        content = _compact({"tool_call_id": message["tool_call_id"],
                            "content": message["content"]})
    else:
        content = message["content"]
    return {"kind": "chat", "role": message["role"], "content": content}


def as_anthropic(message: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI message as an Anthropic message (tool calls as blocks)."""
    if message.get("tool_calls"):
        blocks = [{"type": "tool_use", "id": c["id"], "name": c["function"]["name"],
                   "input": json.loads(c["function"]["arguments"])}
                  for c in message["tool_calls"]]
        return {"role": "assistant", "content": blocks}
    if message["role"] == "tool":
        return {"role": "user", "content": [{"type": "tool_result",
                                             "tool_use_id": message["tool_call_id"],
                                             "content": message["content"]}]}
    return {"role": message["role"], "content": message["content"]}


def records(rows: int, fmt: str) -> Iterator[str]:
    """The first `rows` messages (the system message counted) as JSON texts of `fmt`."""
    if fmt != "anthropic":
        first = {"role": "system", "content": SYSTEM}
        yield json.dumps(as_histtrim(first) if fmt == "histtrim" else first)
    written = 1
    for messages in turns():
        for message in messages:
            if written >= rows:
                return
            if fmt == "histtrim":
                message = as_histtrim(message)
            elif fmt == "anthropic":
                message = as_anthropic(message)
            yield json.dumps(message, ensure_ascii=False)
            written += 1


def write_case(path: Path, rows: int, fmt: str, layout: str) -> None:
    """The history as `fmt` records in `layout`: one record a line in every layout."""
    with path.open("w", encoding="utf-8") as out:
        if layout == "jsonl":
            for record in records(rows, fmt):
                out.write(record + "\n")
            return
        out.write('{"system": ' + json.dumps(SYSTEM) + ', "messages": [\n'
                  if layout == "body" else "[\n")
        for k, record in enumerate(records(rows, fmt)):
            out.write((",\n" if k else "") + record)
        out.write("\n]}\n" if layout == "body" else "\n]\n")


def file_name(fmt: str, layout: str) -> str:
    return f"{fmt}-{layout}.{'jsonl' if layout == 'jsonl' else 'json'}"


# ------------------------------------------------------------------ the tasks (child side)


def task_json(path: str) -> None:
    """The baseline: parse every record with the standard json module, a line at a time
    (an array's or a body's lines without their separating comma), nothing kept."""
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            line = line.strip().removesuffix(",")
            if line and line not in ("[", "]", "]}") and not line.endswith("["):
                json.loads(line)


def task_library_trim(path: str, out: str) -> None:
    """The library's file trim (`read_history`, `trim_history`, `write_history_chunks`,
    each piece written as it is made)."""
    from histtrim.adapters.formats import read_history
    from histtrim.adapters.rewrite import trim_history, write_history_chunks

    history = read_history(Path(path).read_bytes())
    result = trim_history(history, budget_tokens=sum(history.costs) // 2)
    with open(out, "wb") as file:
        for piece in write_history_chunks(history, result):
            file.write(piece)


TASKS = {"json": task_json, "library-trim": task_library_trim}


# ------------------------------------------------------------------ measuring (parent side)


def run(command: list[str]) -> tuple[float, float]:
    """(CPU seconds, peak RSS in MB) of one child process, reaped by `os.wait4` for its
    own resource usage; its stdout is discarded."""
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    assert child.stderr is not None
    errors = child.stderr.read().decode()
    if child.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {errors}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def commands(source: Path, output: Path, budget: int) -> dict[str, list[str]]:
    me = [sys.executable, __file__, "--task"]
    cli = [sys.executable, "-m", "histtrim.cli"]
    return {
        "json.loads per line (baseline)": [*me, "json", str(source)],
        "histtrim trim": [*cli, "trim", str(source), "--budget", str(budget),
                          "-o", str(output)],
        "histtrim trim --token-target 7/10": [*cli, "trim", str(source), "--budget",
                                              str(budget), "--token-target", "7/10",
                                              "-o", str(output)],
        "histtrim estimate": [*cli, "estimate", str(source)],
        "library trim (read, trim, write)": [*me, "library-trim", str(source), str(output)],
    }


def measure(case: tuple[str, str], rows: int, repeats: int, tmp: Path) -> list[dict[str, Any]]:
    fmt, layout = case
    source, output = tmp / file_name(fmt, layout), tmp / ("out-" + file_name(fmt, layout))
    write_case(source, rows, fmt, layout)
    size = source.stat().st_size / 2**20
    # about half the estimate (EST-1: a quarter of the bytes, plus 4 a message)
    budget = (source.stat().st_size // 4 + 4 * rows) // 2
    tasks = commands(source, output, budget)
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in tasks}
    for _ in range(repeats):  # in turn, so each ratio's two sides share the machine's load
        for name, command in tasks.items():
            runs[name].append(run(command))
    base = min(cpu for cpu, _ in runs["json.loads per line (baseline)"])
    goal = ANTHROPIC_TIME_GOAL if fmt == "anthropic" else TIME_GOAL
    out = []
    for name, measured in runs.items():
        cpu, rss = min(r[0] for r in measured), min(r[1] for r in measured)
        out.append({"format": fmt, "layout": layout, "rows": rows, "file_mb": round(size, 1),
                    "task": name, "cpu_s": round(cpu, 2), "x_json": round(cpu / base, 2),
                    "peak_mb": round(rss), "x_file": round(rss / size, 2),
                    "time_goal": goal if name.startswith("histtrim") else "",
                    "memory_goal": MEMORY_GOAL})
    source.unlink()
    output.unlink(missing_ok=True)
    return out


def verdict(row: dict[str, Any]) -> str:
    ok = row["x_file"] <= row["memory_goal"]
    if row["time_goal"] != "":
        ok = ok and row["x_json"] <= row["time_goal"]
    return "met" if ok else "MISSED"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=2, help="runs per task (best is kept)")
    parser.add_argument("--case", action="append", choices=[f"{f}-{lay}" for f, lay in CASES],
                        help="only this format-layout (repeatable; default: every case)")
    parser.add_argument("--write-csv", action="store_true",
                        help=f"write {RESULTS.name} and its .meta.json under bench/results")
    parser.add_argument("--task", choices=list(TASKS), help=argparse.SUPPRESS)
    parser.add_argument("args", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.task:
        TASKS[args.task](*args.args)
        return

    cases = [c for c in CASES if args.case is None or f"{c[0]}-{c[1]}" in args.case]
    print(f"{args.rows:,} messages per file; CPU seconds (user + system) and peak RSS of a "
          f"fresh process, best of {args.repeats}; each ratio against the baseline of the same "
          "file in the same run\n")
    print(f"{'file':20} {'task':34} {'CPU s':>7} {'x json':>7} {'peak MB':>8} {'x file':>7}"
          "  goal")
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            for row in measure(case, args.rows, args.repeats, Path(tmp)):
                results.append(row)
                name = f"{row['format']}-{row['layout']}"
                print(f"{name:20} {row['task']:34} {row['cpu_s']:7.2f} {row['x_json']:7.2f} "
                      f"{row['peak_mb']:8.0f} {row['x_file']:7.2f}  {verdict(row)}",
                      flush=True)
    missed = [r for r in results if verdict(r) != "met"]
    print(f"\nGoals: time <= {TIME_GOAL:g}x the baseline ({ANTHROPIC_TIME_GOAL:g}x for the "
          f"Anthropic body) for `histtrim trim` and `estimate`, peak RSS <= {MEMORY_GOAL:g}x "
          f"the file for every task -> {'met' if not missed else f'{len(missed)} MISSED'}")
    if args.write_csv:
        with RESULTS.open("w", newline="", encoding="utf-8") as out:
            writer = csv.DictWriter(out, fieldnames=list(results[0]))
            writer.writeheader()
            writer.writerows(results)
        meta = {
            "command": "python bench/cli_scaling.py " + " ".join(sys.argv[1:]),
            "date": datetime.date.today().isoformat(),
            "machine": f"{cpu_model()} x{os.cpu_count()} ({platform.system()} "
                       f"{platform.machine()}), shared with other jobs",
            "python": platform.python_version(),
            "load_average": [round(x, 1) for x in os.getloadavg()],
        }
        RESULTS.with_suffix(".meta.json").write_text(json.dumps(meta, indent=2) + "\n")


if __name__ == "__main__":
    main()
