"""Issue 47's bound: reading an agent's own session file costs at most 3x a plain JSON parse
of the same bytes. For each format, every fixture of tests/data/agent_sessions/<format> (its
records repeated until the file holds about `--bytes`), plus any folder named with
`--dir NAME=DIR` (say, a Claude Code project folder); prints the reader's time, the plain
parse's (`json.loads` of the document, or of each line) and their ratio, per format. Then
each fixture with its records repeated 4x and 16x (fresh ids), and hostile shapes (one reply
streamed in many items, many calls in one reply, a message id repeated, many rewinds or
condensations, many side agents, many tiny lines) at n and 4n: linear reading costs about
4x per 4x, a quadratic one 16x.

    python bench/read_sessions.py [--bytes 4000000] [--runs 5] [--dir NAME=DIR] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
    """The file with its records (after a header line) repeated, ids made fresh: a document
    format keeps its records' order and keys, so its cost per byte can be compared too."""
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


def _lines(rows: list[Any]) -> bytes:
    return ("\n".join(json.dumps(r) for r in rows) + "\n").encode()


def _codex_streamed(n: int) -> bytes:
    """One Codex reply whose text comes in `n` message items."""
    rows: list[Any] = [{"type": "session_meta", "payload": {"id": "s"}},
                       {"type": "response_item", "payload": {
                           "type": "message", "role": "user", "content": "go"}}]
    rows += [{"type": "response_item", "payload": {
        "type": "message", "role": "assistant",
        "content": [{"type": "output_text", "text": "x" * 200}]}} for _ in range(n)]
    return _lines(rows)


def _pi_calls(n: int) -> bytes:
    """One Pi reply calling `n` tools, their results in reverse order."""
    rows: list[Any] = [{"type": "session", "version": 3, "id": "s", "cwd": "/w"},
                       {"type": "message", "id": "u", "parentId": None,
                        "message": {"role": "user", "content": "go"}},
                       {"type": "message", "id": "a", "parentId": "u", "message": {
                           "role": "assistant", "content": [
                               {"type": "toolCall", "id": f"c{i}", "name": "ls",
                                "arguments": {}} for i in range(n)]}}]
    parent = "a"
    for i in reversed(range(n)):
        rows.append({"type": "message", "id": f"r{i}", "parentId": parent, "message": {
            "role": "toolResult", "toolCallId": f"c{i}", "content": "ok"}})
        parent = f"r{i}"
    return _lines(rows)


def _openhands_condensations(n: int) -> bytes:
    """`n` messages, then `n` condensations that forget nothing."""
    rows: list[Any] = [{"id": i, "timestamp": "t", "source": "user", "action": "message",
                        "args": {"content": "hi"}} for i in range(n)]
    rows += [{"id": n + i, "timestamp": "t", "source": "agent", "action": "condensation",
              "args": {"forgotten_event_ids": []}} for i in range(n)]
    return _lines(rows)


def _claude_repeated_id(n: int) -> bytes:
    """One `message.id` on `n` assistant rows, each followed by a tool result."""
    rows: list[Any] = [{"type": "user", "parentUuid": None, "uuid": "u", "isSidechain": False,
                        "message": {"role": "user", "content": "go"}}]
    for i in range(n):
        rows.append({"type": "assistant", "parentUuid": "u", "uuid": f"a{i}",
                     "message": {"id": "same", "role": "assistant", "model": "m",
                                 "content": [{"type": "tool_use", "id": f"t{i}",
                                              "name": "ls", "input": {}}],
                                 "usage": {"input_tokens": 5, "output_tokens": i}}})
        rows.append({"type": "user", "parentUuid": f"a{i}", "uuid": f"r{i}", "message": {
            "role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}",
                                         "content": "ok"}]}})
    return _lines(rows)


def _claude_side_agents(n: int) -> bytes:
    """`n` side agents of one prompt and one reply each, after one main-line exchange."""
    def row(kind: str, uuid: str, side: str | None, content: Any) -> dict[str, Any]:
        message = {"role": kind, "content": content, "id": f"m{uuid}",
                   "usage": {"input_tokens": 5, "output_tokens": 1}}
        return {"type": kind, "uuid": uuid, "parentUuid": None, "isSidechain": bool(side),
                "agentId": side, "message": message}
    rows = [row("user", "u", None, "go"), row("assistant", "a", None, "ok")]
    for i in range(n):
        rows += [row("user", f"u{i}", f"agent{i}", "look"),
                 row("assistant", f"a{i}", f"agent{i}", [{"type": "text", "text": "seen"}])]
    return _lines(rows)


def _gemini_rewinds(n: int) -> bytes:
    """`n` exchanges, each rewound away after it is written."""
    rows: list[Any] = [{"sessionId": "s", "projectHash": "h"}]
    for i in range(n):
        rows.append({"id": f"u{i}", "type": "user", "content": "go"})
        rows.append({"id": f"g{i}", "type": "gemini", "content": "ok",
                     "tokens": {"input": 9, "output": 1}})
        rows.append({"$rewindTo": f"u{i}"})
    return _lines(rows)


def _tiny_lines(n: int) -> bytes:
    """A Codex rollout of `n` tiny lines the reader skips."""
    return _lines([{"type": "session_meta", "payload": {"id": "s"}},
                   *({"type": "event_msg", "payload": {}} for _ in range(n))])


SHAPES: dict[str, tuple[AgentFormat, Callable[[int], bytes]]] = {
    "codex streamed": ("codex", _codex_streamed),
    "pi many calls": ("pi", _pi_calls),
    "openhands condense": ("openhands", _openhands_condensations),
    "claude repeated id": ("claude-code", _claude_repeated_id),
    "claude side agents": ("claude-code", _claude_side_agents),
    "gemini rewinds": ("gemini-cli", _gemini_rewinds),
    "codex tiny lines": ("codex", _tiny_lines),
}
"""Hostile shapes, each built at n and 4n records: reading at 4n costs about 4x if linear."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bytes", type=int, default=4_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dir", action="append", default=[], metavar="NAME=DIR")
    parser.add_argument("--shape-n", type=int, default=5000,
                        help="records of each hostile shape at its smaller size")
    parser.add_argument("--quick", action="store_true", help="fewer bytes, runs and records")
    args = parser.parse_args(argv)
    if args.quick:
        args.bytes, args.runs, args.shape_n = 400_000, 2, 1000
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
    print(f"\n{'grown fixture':<44} {'x':>3} {'KB':>7} {'read/parse':>10} {'per byte':>8}")
    for agent in AGENTS:
        read = reader(agent)
        for path in sorted((DATA / agent).glob("*.json*")):
            base = 0.0
            for times in (1, 4, 16):
                data = path.read_bytes() if times == 1 else repeated(path.read_bytes(), times)
                ours = best(args.runs, lambda d=data, r=read: r(d, "bench"))
                theirs = best(args.runs, lambda d=data: plain(d))
                per_byte = ours / len(data)
                base = base or per_byte
                print(f"{agent + '/' + path.name:<44} {times:>3} {len(data) / 1024:>7.0f} "
                      f"{ours / theirs:>9.2f}x {per_byte / base:>7.2f}x")
    print(f"\n{'hostile shape':<20} {'n':>7} {'MB at 4n':>8} {'time 4n/n':>9} (linear ~4)")
    steepest = 0.0
    for label, (agent, build) in SHAPES.items():
        read = reader(agent)
        small, large = build(args.shape_n), build(4 * args.shape_n)
        growth = (best(args.runs, lambda d=large, r=read: r(d, "bench"))
                  / best(args.runs, lambda d=small, r=read: r(d, "bench")))
        steepest = max(steepest, growth)
        print(f"{label:<20} {args.shape_n:>7} {len(large) / 1e6:>8.2f} {growth:>8.2f}x")
    print(f"steepest growth {steepest:.2f}x per 4x (quadratic would be ~16x)")
    return 0 if worst <= LIMIT and steepest <= 8 else 1


if __name__ == "__main__":
    sys.exit(main())
