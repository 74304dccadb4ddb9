"""histtrim against its peers, side by side in one process, on the same histories and budgets.

Contenders, for one history and one budget (half its estimate, so the cut falls mid-way):
  1. histtrim `trim_to_recent_turns` (row facts cached on the rows, as at every boundary);
  2. LangChain `trim_messages` (strategy="last", include_system=True, start_on="human",
     end_on=("human", "tool")) with a token counter pricing each message by the same
     heuristic, ceil(UTF-8 bytes / 4) + 4; rows are converted outside the timed region;
  3. the textbook whole-turn trim: for each candidate first-kept turn, oldest first,
     re-estimate the system rows plus the remaining turns; stop at the first that fits;
  4. the one-pass lower bound: every row's UTF-8 length, once.
Then: 1,000 tool iterations on a 50k-message history, with and without cached costs; and
the peak memory of a 1M-message trim (tracemalloc).

Times are process CPU time (the machine is shared), median of several runs in one process,
contenders alternating, GC off during each timed call (as `timeit` does).

Run `python bench/compare.py` (`--quick` for a short run; `--write-csv` writes
bench/results/compare.csv and compare.meta.json). LangChain is the one extra install:
`pip install -e ".[bench]"` (what `make bench` does); without it that column is skipped.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import gc
import importlib.metadata
import json
import os
import platform
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from histories import SHAPES, TURN_SHAPES, lower_bound, text, tool_history

from histtrim import (
    ChatMessage,
    TokenLedger,
    ToolCall,
    estimate_history_tokens,
    index_turns,
    parse_tool_result,
    text_tokens,
    trim_to_recent_turns,
)
from histtrim.carriers import parse_tool_calls
from histtrim.messages import FRAME_TOKENS

RESULTS = Path(__file__).resolve().parent / "results"
CONTENDERS = ("lower bound", "histtrim", "LangChain", "textbook")


# ------------------------------------------------------------------ the textbook algorithm


def textbook_trim(history: Sequence[ChatMessage], budget: int) -> list[ChatMessage]:
    """The whole-turn trim as the runtime the spec comes from does it: for each candidate
    first-kept turn, oldest first, re-estimate the system rows plus the remaining turns on a
    freshly built list, and stop at the first that fits (the newest turn always stays)."""
    rows = list(history)
    index = index_turns(rows)
    keep, first = rows, 0
    while estimate_history_tokens(keep) > budget > 0 and first < index.turn_count - 1:
        first += 1
        keep = [*rows[: index.body_start], *rows[index.turn_start(first) :]]
    return keep


def textbook_rows_priced(history: Sequence[ChatMessage], first_kept: int) -> int:
    """How many rows the textbook trim prices to reach `first_kept` (0 when nothing drops)."""
    index = index_turns(history)
    n = len(history)
    return n + sum(index.body_start + n - index.turn_start(f) for f in range(1, first_kept + 1))


def textbook_within(
    history: Sequence[ChatMessage], budget: int, seconds: float
) -> tuple[list[ChatMessage] | None, int, float]:
    """`textbook_trim`, stopped after `seconds` of CPU: (kept or None, rows priced, CPU s)."""
    rows = list(history)
    index = index_turns(rows)
    keep, first, priced = rows, 0, 0
    start = time.process_time()
    while True:
        priced += len(keep)
        if not (estimate_history_tokens(keep) > budget > 0 and first < index.turn_count - 1):
            return keep, priced, time.process_time() - start
        if time.process_time() - start > seconds:
            return None, priced, time.process_time() - start
        first += 1
        keep = [*rows[: index.body_start], *rows[index.turn_start(first) :]]


# ------------------------------------------------------------------ LangChain


def langchain_version() -> str | None:
    try:
        return importlib.metadata.version("langchain-core")
    except importlib.metadata.PackageNotFoundError:
        return None


def to_langchain(rows: Sequence[ChatMessage]) -> list[Any]:
    """The same rows as LangChain messages; each `content` is the row's provider-facing text,
    so both sides price the same bytes. Tool calls and results keep their ids."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    out: list[Any] = []
    for row in rows:
        if row.role == "system":
            out.append(SystemMessage(content=row.content))
        elif row.role == "user":
            out.append(HumanMessage(content=row.content))
        elif row.role == "assistant":
            calls = parse_tool_calls(row)
            tool_calls = [] if calls is None else [
                {"name": c.name, "args": json.loads(c.arguments), "id": c.id, "type": "tool_call"}
                for c in calls.calls
            ]
            out.append(AIMessage(content=row.content, tool_calls=tool_calls))
        else:
            result = parse_tool_result(row)
            out.append(ToolMessage(content=row.content,
                                   tool_call_id=result.tool_call_id if result else "?"))
    return out


def langchain_tokens(messages: list[Any]) -> int:
    """The histtrim heuristic (EST-1), ceil(UTF-8 bytes / 4) + 4, for a list of LangChain
    messages, written as tight as Python allows (a per-message counter would be slower)."""
    total = 0
    for message in messages:
        content = message.content
        size = len(content) if content.isascii() else len(content.encode("utf-8"))
        total += (size + 3) // 4 + FRAME_TOKENS
    return total


def langchain_trim(messages: list[Any], budget: int) -> list[Any]:
    """`trim_messages` configured as its docs recommend for valid chats."""
    from langchain_core.messages import trim_messages

    return trim_messages(
        messages,
        max_tokens=budget,
        token_counter=langchain_tokens,
        strategy="last",
        include_system=True,
        start_on="human",
        end_on=("human", "tool"),
        allow_partial=False,
    )


# ------------------------------------------------------------------ checks and timing


def validity(history: Sequence[ChatMessage], kept: Sequence[ChatMessage]) -> str:
    """"ok", or what makes `kept` an invalid chat: lost system rows, a missing newest turn,
    an orphan tool result or a call without its result."""
    index = index_turns(history)
    problems = []
    prefix = history[: index.prefix_len]
    if len(kept) < len(prefix) or any(a is not b for a, b in zip(prefix, kept, strict=False)):
        problems.append("system rows lost")
    if index.starts:
        newest = history[index.starts[-1] :]
        tail = kept[len(kept) - len(newest) :] if len(kept) >= len(newest) else []
        if len(tail) != len(newest) or any(a is not b for a, b in zip(newest, tail, strict=True)):
            problems.append("newest turn dropped")
    issued: set[str] = set()
    answered: set[str] = set()
    orphans = 0
    for row in kept:
        if row.role == "assistant" and row.content.startswith("{"):
            calls = parse_tool_calls(row)
            if calls is not None:
                issued.update(c.id for c in calls.calls)
        elif row.role == "tool":
            result = parse_tool_result(row)
            if result is None or result.tool_call_id not in issued:
                orphans += 1
            else:
                answered.add(result.tool_call_id)
    if orphans:
        problems.append(f"{orphans} orphan tool results")
    if issued - answered:
        problems.append(f"{len(issued - answered)} calls without results")
    return "ok" if not problems else "; ".join(problems)


def timed(fn: Callable[[], object]) -> tuple[float, float, object]:
    """(CPU seconds, wall seconds, result) of one call, GC off."""
    gc.disable()
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        out = fn()
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    finally:
        gc.enable()
    return cpu, wall, out


@dataclass
class Timing:
    cpu: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    method: str = "median"
    valid: str = ""
    rows_priced: int | None = None

    @property
    def cpu_ms(self) -> float:
        return statistics.median(self.cpu) * 1e3

    @property
    def wall_ms(self) -> float:
        return statistics.median(self.wall) * 1e3


@dataclass
class Case:
    section: str
    shape: str
    messages: int
    turns: int
    budget: int
    timings: dict[str, Timing] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def ms(self, name: str) -> float | None:
        t = self.timings.get(name)
        return t.cpu_ms if t and t.cpu else None

    def ratio(self, a: str, b: str) -> float | None:
        x, y = self.ms(a), self.ms(b)
        return x / y if x is not None and y else None


def run_case(section: str, shape: str, rows: list[ChatMessage], *, repeats: int,
             textbook_cap: float, use_langchain: bool) -> Case:
    """Time every contender on `rows` with a budget of half its estimate."""
    index = index_turns(rows)
    budget = estimate_history_tokens(rows) // 2
    case = Case(section, shape, len(rows), index.turn_count, budget)
    lc = to_langchain(rows) if use_langchain else None
    by_id = {id(m): row for m, row in zip(lc, rows, strict=True)} if lc is not None else {}
    gc.collect()
    gc.freeze()  # the inputs are long-lived: no collection walks them during the runs
    reference = trim_to_recent_turns(rows, budget)

    calls: dict[str, Callable[[], object]] = {
        "lower bound": lambda: lower_bound(rows),
        "histtrim": lambda: trim_to_recent_turns(rows, budget),
    }
    if lc is not None:
        calls["LangChain"] = lambda: langchain_trim(lc, budget)
    outputs: dict[str, list[ChatMessage]] = {}

    # The textbook first, under a CPU cap: measured if it finishes, else extrapolated.
    full = textbook_rows_priced(rows, reference.dropped_turns)
    gc.disable()
    try:
        kept, priced, cpu = textbook_within(rows, budget, textbook_cap)
    finally:
        gc.enable()
    tb = Timing(rows_priced=full)
    if kept is None:
        tb.cpu, tb.wall, tb.method = [cpu * full / priced], [cpu * full / priced], "extrapolated"
        tb.valid = "-"
        case.notes.append(f"textbook stopped after {cpu:.0f} s CPU having priced {priced:,} of "
                          f"{full:,} rows; its time is extrapolated by rows priced")
    else:
        outputs["textbook"] = kept
        if cpu < 0.5:
            calls["textbook"] = lambda: textbook_trim(rows, budget)
        else:
            tb.cpu, tb.wall, tb.method = [cpu], [cpu], "single"
    case.timings["textbook"] = tb

    for name, fn in calls.items():  # warm-up, and the outputs to check
        out = fn()
        if name == "histtrim":
            outputs[name] = out.history  # type: ignore[attr-defined]
        elif name == "LangChain":
            outputs[name] = [by_id[id(m)] for m in out]  # type: ignore[attr-defined]
        elif name == "textbook":
            outputs[name] = out  # type: ignore[assignment]
        case.timings.setdefault(name, Timing())
    names = list(calls)
    for r in range(repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            cpu, wall, _ = timed(calls[name])
            case.timings[name].cpu.append(cpu)
            case.timings[name].wall.append(wall)
    for name, out in outputs.items():
        case.timings[name].valid = validity(rows, out)
        if name != "histtrim" and case.timings[name].valid == "ok":
            same = len(out) == len(outputs["histtrim"]) and all(
                a is b for a, b in zip(out, outputs["histtrim"], strict=True))
            if not same:
                case.notes.append(f"{name} keeps other rows than histtrim ({len(out):,} rows)")
    case.timings["histtrim"].rows_priced = len(rows)
    case.timings["lower bound"].rows_priced = len(rows)
    gc.unfreeze()
    return case


# ------------------------------------------------------------------ printing


def fmt_ms(value: float | None, method: str = "") -> str:
    if value is None:
        return "-"
    mark = "~" if method == "extrapolated" else ""
    if value >= 10_000:
        return f"{mark}{value / 1e3:,.0f} s"
    if value >= 100:
        return f"{mark}{value:,.0f}"
    return f"{mark}{value:.2f}" if value < 10 else f"{mark}{value:.1f}"


def fmt_ratio(value: float | None, method: str = "") -> str:
    if value is None:
        return "-"
    mark = "~" if method == "extrapolated" else ""
    return f"{mark}{value:,.0f}" if value >= 100 else f"{mark}{value:.1f}"


def print_cases(title: str, cases: list[Case]) -> None:
    print(title)
    head = (f"{'shape':<6} {'messages':>9} {'turns':>7} {'bound ms':>9} {'histtrim':>9} "
            f"{'LangChain':>10} {'textbook':>10} {'ht/bound':>9} {'LC/ht':>6} {'LC/bound':>9} "
            f"{'tb/ht':>7}  "
            "valid: histtrim | LangChain | textbook")
    print(head)
    print("-" * len(head))
    for c in cases:
        tb = c.timings["textbook"]
        valid = " | ".join(c.timings[n].valid if n in c.timings and c.timings[n].valid else "-"
                           for n in ("histtrim", "LangChain", "textbook"))
        print(f"{c.shape:<6} {c.messages:>9,} {c.turns:>7,} {fmt_ms(c.ms('lower bound')):>9} "
              f"{fmt_ms(c.ms('histtrim')):>9} {fmt_ms(c.ms('LangChain')):>10} "
              f"{fmt_ms(c.ms('textbook'), tb.method):>10} "
              f"{fmt_ratio(c.ratio('histtrim', 'lower bound')):>9} "
              f"{fmt_ratio(c.ratio('LangChain', 'histtrim')):>6} "
              f"{fmt_ratio(c.ratio('LangChain', 'lower bound')):>9} "
              f"{fmt_ratio(c.ratio('textbook', 'histtrim'), tb.method):>7}  {valid}")
    for c in cases:
        for note in c.notes:
            print(f"  {c.shape} {c.messages:,}: {note}")
    print()


# ------------------------------------------------------------------ boundary checks


def tool_round(i: int) -> list[ChatMessage]:
    """One tool-loop iteration: an assistant row with 1-3 parallel calls and their results."""
    calls = [ToolCall(id=f"it{i}c{k}", name="read_file", arguments={"path": f"src/m{k}.py"})
             for k in range(1 + i % 3)]
    return [ChatMessage.assistant_tool_calls(None, calls),
            *(ChatMessage.tool_result(c.id, text(i + k, 200 + (i * 53) % 180))
              for k, c in enumerate(calls))]


def uncached_estimate(rows: Sequence[ChatMessage]) -> int:
    """Every row re-priced from its content (no cached facts); these rows carry no images."""
    return sum([text_tokens(row.content) + FRAME_TOKENS for row in rows])


@dataclass
class Boundary:
    method: str
    rows_priced: int
    cpu: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)


def boundary_checks(messages: int, iterations: int, rounds: int) -> tuple[list[Boundary], str]:
    """`iterations` tool rounds appended to a `messages`-row history, with the check at every
    provider-call boundary done three ways; the budget is never exceeded (pure check work)."""
    base = tool_history(messages)
    steps = [tool_round(i) for i in range(iterations)]
    final = [*base, *(row for step in steps for row in step)]
    budget = estimate_history_tokens(final) + 1
    gc.collect()
    gc.freeze()
    sizes, n = [], len(base)
    for step in steps:
        n += len(step)
        sizes.append(n)

    def no_cache() -> int:
        history, trims = list(base), 0
        for step in steps:
            history.extend(step)
            trims += uncached_estimate(history) > budget
        return uncached_estimate(history)

    def facts_cached() -> int:
        history, trims = list(base), 0
        for step in steps:
            history.extend(step)
            trims += estimate_history_tokens(history) > budget
        return estimate_history_tokens(history)

    def ledger() -> int:
        book, trims = TokenLedger(base), 0
        for step in steps:
            book.extend(step)
            trims += book.needs_trim(budget)
        return book.total

    runs = {
        "re-price every row at each boundary (no cache)": (no_cache, sum(sizes)),
        "estimate_history_tokens at each boundary (row facts cached)": (facts_cached, sum(sizes)),
        "TokenLedger: build once, append k rows, needs_trim": (
            ledger, len(base) + sum(len(s) for s in steps)),
    }
    results = {name: Boundary(name, priced) for name, (_, priced) in runs.items()}
    totals = set()
    names = list(runs)
    for r in range(rounds):
        for name in names[r % 3 :] + names[: r % 3]:
            cpu, wall, total = timed(runs[name][0])
            results[name].cpu.append(cpu)
            results[name].wall.append(wall)
            totals.add(total)
    gc.unfreeze()
    same = "yes" if len(totals) == 1 and totals == {estimate_history_tokens(final)} else "NO"
    return list(results.values()), same


def print_boundary(results: list[Boundary], same: str, messages: int, iterations: int) -> None:
    print(f"Boundary checks: {iterations:,} tool iterations (1-3 parallel calls each) on a "
          f"{messages:,}-message history")
    head = f"{'method':<62} {'rows priced':>12} {'CPU s':>8} {'per check':>10}"
    print(head)
    print("-" * len(head))
    for b in results:
        cpu = statistics.median(b.cpu)
        per = cpu / iterations
        per_text = f"{per * 1e6:.1f} us" if per < 1e-3 else f"{per * 1e3:.2f} ms"
        print(f"{b.method:<62} {b.rows_priced:>12,} {cpu:>8.3f} {per_text:>10}")
    base, ledger = statistics.median(results[0].cpu), statistics.median(results[-1].cpu)
    print(f"  the ledger does {results[0].rows_priced / results[-1].rows_priced:,.0f}x less "
          f"pricing work and is {base / ledger:,.0f}x faster than no cache "
          f"({statistics.median(results[1].cpu) / ledger:,.0f}x faster than re-estimating "
          f"cached rows); all three end on the same total: {same}")
    print()


# ------------------------------------------------------------------ memory


def memory_check(shape: str, messages: int) -> dict[str, Any]:
    """Peak memory traced during one trim of a `messages`-row history, against its size."""
    rows = SHAPES[shape](messages)
    budget = estimate_history_tokens(rows) // 2
    contents = sum(sys.getsizeof(r.content) for r in rows)
    objects = sys.getsizeof(rows) + sum(
        sys.getsizeof(r) + sys.getsizeof(r.__dict__) + sys.getsizeof(r.facts) for r in rows)
    gc.collect()
    tracemalloc.start()
    result = trim_to_recent_turns(rows, budget)
    retained, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    kept = result.history
    cut = len(rows) - len(kept) + 1  # after the one system row
    shared = kept[0] is rows[0] and all(a is b for a, b in zip(kept[1:], rows[cut:], strict=True))
    return {
        "shape": shape, "messages": len(rows), "contents_mb": contents / 2**20,
        "input_mb": (contents + objects) / 2**20, "peak_mb": peak / 2**20,
        "retained_mb": retained / 2**20, "kept": len(result.history),
        "dropped": result.dropped_messages, "shared": shared,
        "peak_bytes_per_row": peak / len(rows),
    }


def print_memory(m: dict[str, Any]) -> None:
    print(f"Memory: one trim of a {m['messages']:,}-message {m['shape']} history (tracemalloc)")
    print(f"  input: {m['input_mb']:,.0f} MB ({m['contents_mb']:,.0f} MB of message contents)")
    print(f"  trim peak: {m['peak_mb']:,.1f} MB = {m['peak_mb'] / m['input_mb']:.1%} of the input, "
          f"{m['peak_bytes_per_row']:.0f} bytes per row (row lists, costs, turn starts); "
          f"{m['retained_mb']:,.1f} MB retained by the result")
    print(f"  kept {m['kept']:,} rows, dropped {m['dropped']:,}; every kept row is the input's "
          f"own object (no content copied): {'yes' if m['shared'] else 'NO'}")
    print()


# ------------------------------------------------------------------ goals, CSV, main


def print_goals(cases: list[Case], goal_cases: list[Case]) -> None:
    print("Goals")
    worst = max(cases, key=lambda c: c.ratio("histtrim", "lower bound") or 0)
    ratio = worst.ratio("histtrim", "lower bound") or 0
    print(f"  histtrim <= 3x the lower bound: worst {ratio:.1f}x ({worst.shape} "
          f"{worst.messages:,}) -> {'met' if ratio <= 3 else 'MISSED'}")
    with_lc = [c for c in cases if c.ms("LangChain")]
    if with_lc:
        slow = min(with_lc, key=lambda c: c.ratio("LangChain", "histtrim") or 0)
        ratio = slow.ratio("LangChain", "histtrim") or 0
        print(f"  >= 10x faster than LangChain: least {ratio:.1f}x ({slow.shape} "
              f"{slow.messages:,}) -> {'met' if ratio >= 10 else 'MISSED'}")
    else:
        print("  >= 10x faster than LangChain: not measured (langchain-core not installed)")
    for c in goal_cases:
        ratio = c.ratio("textbook", "histtrim") or 0
        how = c.timings["textbook"].method
        print(f"  >= 100x faster than the textbook at 10k turns: {c.shape} ({c.messages:,} "
              f"messages) {ratio:,.0f}x, {how} -> {'met' if ratio >= 100 else 'MISSED'}")
    if not goal_cases:
        print("  >= 100x faster than the textbook at 10k turns: not run (--quick)")
    print()


def write_csv(cases: list[Case], boundary: list[Boundary], meta: dict[str, Any]) -> None:
    RESULTS.mkdir(exist_ok=True)
    with (RESULTS / "compare.csv").open("w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh, lineterminator="\n")
        out.writerow(["section", "shape", "messages", "turns", "budget", "contender", "cpu_ms",
                      "wall_ms", "runs", "method", "valid", "rows_priced"])
        for c in cases:
            for name in CONTENDERS:
                t = c.timings.get(name)
                if t is None or not t.cpu:
                    continue
                out.writerow([c.section, c.shape, c.messages, c.turns, c.budget, name,
                              f"{t.cpu_ms:.4f}", f"{t.wall_ms:.4f}", len(t.cpu), t.method,
                              t.valid, t.rows_priced if t.rows_priced is not None else ""])
        for b in boundary:
            out.writerow(["boundary", "tools", meta["boundary"]["messages"],
                          "", "", b.method, f"{statistics.median(b.cpu) * 1e3:.4f}",
                          f"{statistics.median(b.wall) * 1e3:.4f}", len(b.cpu), "median", "",
                          b.rows_priced])
    (RESULTS / "compare.meta.json").write_text(json.dumps(meta, indent=2) + "\n",
                                               encoding="utf-8")
    print(f"wrote {RESULTS / 'compare.csv'} and {RESULTS / 'compare.meta.json'}")


def machine() -> dict[str, Any]:
    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"platform": platform.platform(), "cpu": cpu, "cores": os.cpu_count(),
            "python": platform.python_version(),
            "load_average": [round(x, 2) for x in os.getloadavg()]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    parser.add_argument("--repeats", type=int, default=9,
                        help="timed runs per contender (x3 up to 1k messages, -2 above 10k)")
    parser.add_argument("--goal-turns", type=int, default=10_000)
    parser.add_argument("--textbook-cap", type=float, default=20.0,
                        help="CPU seconds before the textbook is extrapolated (main table)")
    parser.add_argument("--goal-cap", type=float, default=600.0,
                        help="the same cap for the 10k-turn goal rows")
    parser.add_argument("--boundary-messages", type=int, default=50_000)
    parser.add_argument("--boundary-iterations", type=int, default=1_000)
    parser.add_argument("--boundary-rounds", type=int, default=3)
    parser.add_argument("--memory-messages", type=int, default=1_000_000)
    parser.add_argument("--memory-shape", default="tools", choices=list(SHAPES))
    parser.add_argument("--quick", action="store_true",
                        help="sizes 1k and 10k, no goal rows, 100 iterations, 100k memory")
    parser.add_argument("--write-csv", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.goal_turns = [s for s in args.sizes if s <= 10_000], 0
        args.boundary_iterations = 100
        args.memory_messages = min(args.memory_messages, 100_000)

    lc_version = langchain_version()
    started = datetime.datetime.now(datetime.UTC)
    meta: dict[str, Any] = {"date": started.strftime("%Y-%m-%d %H:%M UTC"),
                            "machine": machine(), "histtrim": importlib.metadata.version(
                                "histtrim"), "langchain_core": lc_version,
                            "command": " ".join(["python", "bench/compare.py", *sys.argv[1:]]),
                            "clock": "process CPU time, median, GC off during each call"}
    print(f"histtrim {meta['histtrim']}, langchain-core {lc_version or 'not installed'}, "
          f"Python {meta['machine']['python']}, {meta['machine']['cpu']} x"
          f"{meta['machine']['cores']}, load {meta['machine']['load_average']}")
    print("CPU ms, median of runs alternating between contenders; budget = half the estimate; "
          "~ = extrapolated.\n")
    if lc_version is None:
        print("LangChain column skipped: pip install -e '.[bench]' (or make bench) adds it.\n")

    cases = []
    for shape in args.shapes:
        for size in args.sizes:
            repeats = (3 * args.repeats if size <= 1_000 else args.repeats if size <= 10_000
                       else max(3, args.repeats - 2))
            cases.append(run_case("trim", shape, SHAPES[shape](size), repeats=repeats,
                                  textbook_cap=args.textbook_cap,
                                  use_langchain=lc_version is not None))
    print_cases("Trim: one history, one budget", cases)

    goal_cases = []
    if args.goal_turns:
        for shape, make in TURN_SHAPES.items():
            goal_cases.append(run_case("goal", shape, make(args.goal_turns), repeats=5,
                                       textbook_cap=args.goal_cap,
                                       use_langchain=lc_version is not None))
        print_cases(f"Trim at {args.goal_turns:,} turns", goal_cases)

    boundary, same = boundary_checks(args.boundary_messages, args.boundary_iterations,
                                     args.boundary_rounds)
    print_boundary(boundary, same, args.boundary_messages, args.boundary_iterations)
    meta["boundary"] = {"messages": args.boundary_messages,
                        "iterations": args.boundary_iterations}

    if args.memory_messages:
        memory = memory_check(args.memory_shape, args.memory_messages)
        print_memory(memory)
        meta["memory"] = memory
    print_goals(cases, goal_cases)
    meta["machine"]["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    if args.write_csv:
        write_csv(cases + goal_cases, boundary, meta)


if __name__ == "__main__":
    main()
