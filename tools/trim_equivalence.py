"""Run `histtrim trim` and `histtrim estimate` of two source trees on the same varied and
hostile history files and report every difference in exit code, stdout, stderr and output
bytes: a change to the reading, pricing or writing paths must leave them byte-identical.

Usage: `python tools/trim_equivalence.py OLD_TREE [NEW_TREE]` (a folder holding a `histtrim/`
package, e.g. `git archive main histtrim | tar -x -C /tmp/old`; NEW_TREE defaults to this
checkout). Exit status 1 when anything differs. Expected differences: the warnings of the
`long-ids` files, which quote at most 80 characters of a call id since issue 30's item 14."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _call(cid: str, name: str = "f", arguments: str = "{}") -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": arguments}}


def _env(content: Any) -> str:
    return json.dumps(content, separators=(",", ":"), ensure_ascii=False)


def openai_cases() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    sys_ = {"role": "system", "content": "be brief"}
    user = {"role": "user", "content": "hello there " * 5}
    yield "plain", [sys_, user, {"role": "assistant", "content": "hi"},
                    {"role": "user", "content": "again"}, {"role": "assistant", "content": "ok"}]
    rounds = [sys_]
    for t in range(12):
        rounds.append({"role": "user", "content": f"question {t} " * (t + 1)})
        rounds.append({"role": "assistant", "content": None,
                       "tool_calls": [_call(f"c{t}a"), _call(f"c{t}b", "g", '{"x":1}')]})
        rounds.append({"role": "tool", "tool_call_id": f"c{t}a", "content": "out a"})
        if t % 3:
            rounds.append({"role": "tool", "tool_call_id": f"c{t}b", "content": "out b"})
        if t % 4 == 0:
            rounds.append({"role": "tool", "tool_call_id": f"zz{t}", "content": "orphan"})
        if t % 5 == 0:
            rounds.append({"role": "tool", "content": "no id at all"})
        rounds.append({"role": "assistant", "content": f"answer {t}"})
    yield "tool-rounds", rounds
    orphans = [sys_, {"role": "tool", "tool_call_id": "x", "content": "early"}, user]
    orphans += [{"role": "tool", "tool_call_id": f"o{k}", "content": "o"} for k in range(9)]
    orphans += [{"role": "assistant", "content": "  {\"tool_calls\":[{\"id\":\"hidden\"}]}"}]
    calls = '{"tool_calls":[{"id":"h2"},{"id":"h2"},{"id":3},{"no":1}]}'
    orphans += [user, {"role": "assistant", "content": calls}]
    orphans += [{"role": "tool", "tool_call_id": "h2", "content": "r"}, user]
    yield "orphans", orphans
    long_ids = [user]
    for k in range(7):
        long_ids.append({"role": "assistant", "content": None,
                         "tool_calls": [_call("L" * (100 + k) + "\u00e9\x00")]})
    long_ids.append(user)
    yield "long-ids", long_ids
    one_turn = [sys_, user]
    for k in range(300):
        one_turn.append({"role": "assistant", "content": "thinking",
                         "tool_calls": [_call(f"r{k}")]})
        one_turn.append({"role": "tool", "tool_call_id": f"r{k}" if k % 50 else f"q{k}",
                         "content": "result " * (k % 7)})
    yield "one-turn", one_turn
    odd = [sys_, {"role": "user", "content": "look [IMAGE:/a.png] and [IMAGE:x]"},
           {"role": "assistant", "content": "{\"not\": \"calls\"}"},
           {"role": "user", "content": [{"type": "text", "text": "parts"},
                                        {"type": "image_url", "image_url": {"url": "/b.png"}}]},
           {"role": "assistant", "content": "caf\u00e9 \u2603", "name": "bot"},
           {"role": "user", "content": "quote \" backslash \\ ctrl \x01 \u2028 tab\t"},
           {"role": "assistant", "content": None,
            "tool_calls": [_call("k1", "t", '{"a": [1, 2.5e3]}')]},
           {"role": "tool", "tool_call_id": "k1",
            "content": "{\"attachments\": [\"/c.png\"]} \\u0041"},
           {"role": "user", "content": "[Tool results]\nfake carrier"},
           {"role": "user", "content": "last"}]
    yield "odd", odd


def histtrim_cases() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    rows: list[dict[str, Any]] = [{"kind": "chat", "role": "system", "content": "s"}]
    for t in range(10):
        rows.append({"kind": "chat", "role": "user", "content": f"turn {t} " * 4})
        rows.append({"kind": "chat", "role": "assistant", "content": _env(
            {"content": None, "tool_calls": [{"id": f"h{t}", "name": "f", "arguments": "{}"}]})})
        if t % 2:
            rows.append({"kind": "chat", "role": "tool",
                         "content": _env({"tool_call_id": f"h{t}", "content": "r"})})
        if t % 3 == 0:
            rows.append({"kind": "chat", "role": "tool", "content": "legacy text"})
        rows.append({"role": "assistant", "content": " {\"tool_calls\": [{\"id\": \"sp\"}]} "})
        rows.append({"role": "tool", "content": "{\"tool_call_id\": \"sp\", \"content\": NaN}"})
        rows.append({"role": "tool", "content": "{\"tool_call_id\": \"sp\", \"c\": 1e999}"})
    yield "rows", rows
    structured = [{"kind": "chat", "role": "user", "content": "go"},
                  {"kind": "assistant_tool_calls", "tool_calls": [{"id": "s1", "name": "f"}]},
                  {"kind": "tool_results", "results": [{"tool_call_id": "s2", "content": "x"}]},
                  {"kind": "chat", "role": "user", "content": "next"},
                  {"kind": "chat", "role": "assistant", "content": "done"}]
    yield "structured", structured


def anthropic_body(turns: int, broken: bool) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for t in range(turns):
        messages.append({"role": "user", "content": f"do {t} " * 3})
        messages.append({"role": "assistant", "content": [
            {"type": "text", "text": "sure"},
            {"type": "tool_use", "id": f"tu{t}", "name": "f", "input": {"q": t}}]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"tu{t}" if not broken else "nope",
             "content": "res"}]})
        messages.append({"role": "assistant", "content": f"done {t}"})
    return {"model": "m", "system": [{"type": "text", "text": "sys"}], "max_tokens": 10,
            "messages": messages}


def write(folder: Path) -> list[Path]:
    files: list[Path] = []

    def put(name: str, data: bytes) -> None:
        path = folder / name
        path.write_bytes(data)
        files.append(path)

    for fmt_cases in (openai_cases(), histtrim_cases()):
        for name, records in fmt_cases:
            lines = [json.dumps(r, ensure_ascii=False) for r in records]
            put(f"{name}.jsonl", ("\n".join(lines) + "\n").encode())
            put(f"{name}-crlf.jsonl", ("\r\n".join(lines) + "\r\n").encode())
            put(f"{name}-bom.jsonl", b"\xef\xbb\xbf" + ("\n".join(lines)).encode())
            put(f"{name}.json", json.dumps(records, indent=2, ensure_ascii=False).encode())
            put(f"{name}-lines.json", ("[\n" + ",\n".join(lines) + "\n]\n").encode())
            put(f"{name}-flat.json", json.dumps(records).encode())
            put(f"{name}-body.json", json.dumps({"model": "m", "messages": records}).encode())
            put(f"{name}-ascii.jsonl", ("\n".join(json.dumps(r) for r in records)).encode())
    for broken in (False, True):
        body = anthropic_body(6, broken)
        put(f"anthropic-{broken}.json", json.dumps(body, indent=2).encode())
        put(f"anthropic-{broken}-lines.json", (
            '{"model": "m", "system": "s", "messages": [\n'
            + ",\n".join(json.dumps(m) for m in body["messages"]) + "\n]}\n").encode())
        put(f"anthropic-{broken}.jsonl",
            ("\n".join(json.dumps(m) for m in body["messages"]) + "\n").encode())
    put("bad-line.jsonl", b'{"role": "user", "content": "a"}\n{"role": "user", "content": \n')
    put("bad-array.json", b'[\n{"role": "user", "content": "a"},\n{"role": "user"\n]\n')
    put("not-object.json", b'[\n1,\n2\n]\n')
    put("split-record.json", b'[\n{"role": "user",\n "content": "a"},\n{"role": "assistant", '
                             b'"content": "b"}\n]\n')
    put("two-per-line.json", b'[\n{"role": "user", "content": "a"}, {"role": "assistant", '
                             b'"content": "b"},\n{"role": "user", "content": "c"}\n]\n')
    put("space-comma.json", b'[ {"role": "user", "content": "a"} ,\n\t{"role": "assistant", '
                            b'"content": "b"}  ,  {"role": "user", "content": "c"}  ]')
    put("surrogate.jsonl", b'{"role": "user", "content": "a\\ud800"}\n')
    put("nan.jsonl", b'{"role": "user", "content": "a", "x": NaN}\n')
    put("huge.json", b'[\n{"role": "user", "content": "a", "x": 1e999}\n]\n')
    put("empty.jsonl", b"\n\n")
    put("config.json", b'{\n  "model": "x",\n  "budget": 3\n}\n')
    return files


COMMANDS: list[list[str]] = [
    ["trim", "{f}", "--budget", "60", "-o", "{o}"],
    ["trim", "{f}", "--budget", "200", "-o", "{o}"],
    ["trim", "{f}", "--budget", "5000"],
    ["trim", "{f}", "--max-turns", "2", "-o", "{o}"],
    ["trim", "{f}", "--max-turns", "1", "--budget", "40", "-o", "{o}"],
    ["trim", "{f}", "--max-turns", "3", "--crumb-present", "-o", "{o}"],
    ["estimate", "{f}"],
    ["estimate", "{f}", "--crumb-present"],
]


def child(folder: str, plan: str) -> None:
    """In the tree under test: run every (file, command) of the plan in this process and
    print each outcome as JSON (exit code, stdout, stderr, output file)."""
    import contextlib
    import io

    from histtrim.cli import main as cli

    results = []
    for command, out in json.loads(Path(plan).read_text()):
        Path(out).unlink(missing_ok=True)
        stdout, stderr = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                code = cli(command)
            except Exception as error:  # a traceback is an outcome too
                code = f"{type(error).__name__}: {error}"
        stdout.flush()
        written = Path(out).read_bytes() if Path(out).exists() else b""
        results.append([code, stdout.buffer.getvalue().hex(),  # type: ignore[attr-defined]
                        stderr.getvalue(), written.hex()])
    print(json.dumps(results))


def run(tree: Path, folder: Path, plan: Path) -> list[Any]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, __file__, "--child", str(folder), str(plan)],
                          capture_output=True, env=env, cwd=folder, check=True)
    return json.loads(done.stdout)


def main() -> int:
    if sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
        return 0
    old = Path(sys.argv[1]).resolve()
    new = Path(sys.argv[2]).resolve() if len(sys.argv) > 2 else ROOT
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        files = write(folder)
        files.extend(sorted((ROOT / "examples").glob("coding_session.json*")))
        plan = []
        for path in files:
            for template in COMMANDS:
                out = folder / f"out{path.suffix}"
                plan.append(([a.format(f=path, o=out) for a in template], str(out)))
        (folder / "plan.json").write_text(json.dumps(plan))
        a, b = run(old, folder, folder / "plan.json"), run(new, folder, folder / "plan.json")
    differ = 0
    for (command, _), x, y in zip(plan, a, b, strict=True):
        if Path(command[1]).name.startswith("long-ids") and x[:2] + x[3:] == y[:2] + y[3:]:
            continue  # warnings quote at most 80 characters of an id (issue 30, item 14)
        if x != y:
            differ += 1
            print(f"DIFFERS: {' '.join([command[0], Path(command[1]).name, *command[2:]])}")
            for label, u, v in zip(("exit", "stdout", "stderr", "output"), x, y, strict=True):
                if u != v:
                    print(f"  {label}: old {str(u)[:400]}\n  {label}: new {str(v)[:400]}")
    print(f"{len(plan)} runs compared, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
