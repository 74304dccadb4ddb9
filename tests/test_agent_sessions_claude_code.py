"""The Claude Code reader (`histtrim.adapters.claude_code`): each provider call's recorded
usage, cache-write lifetimes and time against what plain `json` computes from the raw file;
contexts (`/clear`, compaction, side agents) as their own parts; the client's own rows left
out and counted; the `logs/chat.json` array read like the JSON Lines it holds."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from histtrim.adapters.agent_sessions import detect
from histtrim.adapters.anthropic_items import anthropic_items
from histtrim.adapters.claude_code import read_session, sniff
from histtrim.pairing import validate_tool_pairing

REAL = Path(__file__).parent / "data" / "agent_sessions" / "claude-code" / "vibe-claude-code.jsonl"


def _seconds(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _expected(path: Path) -> list[tuple[int, int, int, int | None, int | None, int, float]]:
    """Per message id, in order: whole input (Anthropic: input + cache read + creation),
    cache read, cache write, its 5-minute and 1-hour parts, the last row's output, and the
    first row's time."""
    calls: dict[str, list[Any]] = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        message = row.get("message")
        if row.get("type") != "assistant" or row.get("isSidechain"):
            continue
        if message.get("model") == "<synthetic>" or not message.get("usage"):
            continue
        u = message["usage"]
        read, write = u.get("cache_read_input_tokens", 0), u.get("cache_creation_input_tokens", 0)
        life = u.get("cache_creation") or {}
        figures = [u["input_tokens"] + read + write, read, write,
                   life.get("ephemeral_5m_input_tokens"), life.get("ephemeral_1h_input_tokens"),
                   u["output_tokens"]]
        if message["id"] in calls:
            calls[message["id"]][:6] = figures
        else:
            calls[message["id"]] = [*figures, _seconds(row["timestamp"])]
    return [tuple(c) for c in calls.values()]  # type: ignore[misc]


def test_real_file_every_call_as_recorded_and_paired() -> None:
    read = read_session(REAL.read_bytes(), "vibe")
    assert read.agent == "claude-code" and read.unpaired == 0
    (part,) = read.parts
    got = [(c.input_tokens, c.cache_read_tokens, c.cache_write_tokens, c.cache_write_5m_tokens,
            c.cache_write_1h_tokens, c.output_tokens, c.timestamp) for c in part.calls]
    assert got == _expected(REAL)
    assert all(part.records[c.record]["role"] == "assistant" for c in part.calls)
    assert validate_tool_pairing(anthropic_items(list(part.records))) == []
    assert detect(REAL.read_bytes()) == "claude-code"


def _row(kind: str, content: Any, n: int, **extra: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "type": kind, "uuid": f"u{n}", "parentUuid": f"u{n - 1}" if n else None,
        "sessionId": "s1", "timestamp": f"2025-10-01T10:00:{n:02d}.000Z",
        "message": {"role": kind, "content": content},
    }
    row.update(extra)
    return row


def _assistant(n: int, msg_id: str, blocks: list[Any], output: int, **usage: Any) -> dict[str, Any]:
    row = _row("assistant", blocks, n)
    row["message"].update({"id": msg_id, "model": "claude-sonnet-4-5", "usage": {
        "input_tokens": 10, "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 50,
        "output_tokens": output, **usage}})
    return row


LIFE = {"ephemeral_5m_input_tokens": 20, "ephemeral_1h_input_tokens": 30}


def _session() -> list[dict[str, Any]]:
    use = {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file": "a"}}
    use2 = {"type": "tool_use", "id": "t2", "name": "Read", "input": {"file": "b"}}
    preview = ("<persisted-output>\nOutput too large (52.1KB). Full output saved to: "
               "tool-results/t1.txt\n\nPreview (first 2KB):\nline 1\n</persisted-output>")
    return [
        _row("user", "read the files", 0),
        _assistant(1, "m1", [{"type": "thinking", "thinking": "hmm", "signature": "x"}], 1,
                   cache_creation=LIFE),
        _assistant(2, "m1", [{"type": "text", "text": "Reading."}], 5, cache_creation=LIFE),
        _assistant(3, "m1", [use], 40, cache_creation=LIFE),
        _row("user", [{"type": "tool_result", "tool_use_id": "t1", "content": preview}], 4),
        _assistant(5, "m1", [use2], 60, cache_creation=LIFE),  # split by a result row
        _row("user", [{"type": "tool_result", "tool_use_id": "t2", "content": "b"}], 6),
        _assistant(7, "m2", [{"type": "text", "text": "Done."}], 3),
        {"type": "queue-operation-v9", "operation": "enqueue", "sessionId": "s1"},
        _row("user", "<command-name>/model</command-name>", 8),
        _assistant(9, "m3", [{"type": "text", "text": "API Error"}], 0, input_tokens=0)
        | {"message": {"role": "assistant", "id": "m3", "model": "<synthetic>",
                       "content": [{"type": "text", "text": "API Error"}]}},
        _row("user", "<command-name>/clear</command-name>", 10),
        _row("user", "new task", 11, parentUuid=None),
        _assistant(12, "m4", [{"type": "text", "text": "OK."}], 7),
        {"type": "system", "subtype": "compact_boundary", "parentUuid": None, "uuid": "u13",
         "sessionId": "s1", "timestamp": "2025-10-01T10:00:13.000Z", "content": "compacted"},
        _row("user", "This session is being continued... summary", 14, isCompactSummary=True),
        _row("user", "go on", 15),
        _assistant(16, "m5", [{"type": "text", "text": "Going on."}], 9),
        _row("user", "side task", 17, isSidechain=True, agentId="a1"),
        _assistant(18, "m6", [{"type": "text", "text": "Side done."}], 2)
        | {"isSidechain": True, "agentId": "a1"},
    ]


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def test_contexts_are_parts_and_client_rows_are_counted() -> None:
    data = _jsonl(_session()) + b'{"type": "user", "message": {"role": "us\n'
    read = read_session(data, "s")
    kinds = [(p.kind, p.name) for p in read.parts]
    assert kinds == [("session", "s-part1"), ("after-clear", "s-part2"),
                     ("after-compaction", "s-part3"), ("side-agent", "s-agent-a1")]
    first = read.parts[0]
    assert [m["role"] for m in first.records] == ["user", "assistant", "user", "assistant"]
    # thinking left out; m1's rows split by a result are one message, as the API returned
    # it and the client sends it back, its results one user message after it
    assert first.records[1]["content"] == [{"type": "text", "text": "Reading."},
                                           _session()[3]["message"]["content"][0],
                                           _session()[5]["message"]["content"][0]]
    assert [b["tool_use_id"] for b in first.records[2]["content"]] == ["t1", "t2"]
    # the preview the model saw kept as written
    assert "<persisted-output>" in json.dumps(first.records[2])
    # one call per message id, the last row's output
    assert [(c.record, c.output_tokens) for c in first.calls] == [(1, 60), (3, 3)]
    m1 = first.calls[0]
    assert (m1.input_tokens, m1.cache_read_tokens, m1.cache_write_tokens) == (1060, 1000, 50)
    assert (m1.cache_write_5m_tokens, m1.cache_write_1h_tokens) == (20, 30)
    assert m1.timestamp == _seconds("2025-10-01T10:00:01.000Z")
    assert read.parts[2].records[0]["content"].startswith("This session is being continued")
    assert read.skipped["queue-operation-v9"] == 1
    assert read.skipped["garbled"] == 1
    assert read.skipped["synthetic"] == 1 and read.skipped["command"] == 1
    assert read.skipped["thinking only"] == 1 and read.skipped["system"] == 1
    assert read.unpaired == 0
    assert all(len(p.calls) == 1 for p in read.parts[1:])


def test_chat_json_array_reads_as_its_rows() -> None:
    rows = _session()
    as_array = read_session(json.dumps(rows, indent=2).encode(), "s")
    assert as_array == read_session(_jsonl(rows), "s")
    assert sniff(json.dumps(rows, indent=2).encode()[:4096])


def test_unanswered_call_is_reported() -> None:
    rows = _session()[:4]  # the call's result never written
    read = read_session(_jsonl(rows), "s")
    assert read.unpaired == 1


def test_input_is_never_mutated() -> None:
    rows = _session()
    before = json.dumps(rows)
    from histtrim.adapters.claude_code import read_rows

    read_rows(rows, "s")
    assert json.dumps(rows) == before


ODD: tuple[Any, ...] = (None, 7, True, "x", [1, {"a": 2}], {"content": {"id": [1]}})


def test_any_value_in_any_field_is_read_or_counted_never_raised() -> None:
    """Every field of every row (the row's own and its message's) replaced in turn by a value
    of another type: the reader still answers, its records are provider records."""
    rows = _session()
    for k, row in enumerate(rows):
        places = [(row, key) for key in row]
        if isinstance(row.get("message"), dict):
            places += [(row["message"], key) for key in row["message"]]
        for holder, key in places:
            for odd in ODD:
                original = holder[key]
                holder[key] = odd
                try:
                    read = read_session(_jsonl(rows), "s")
                finally:
                    holder[key] = original
                for part in read.parts:
                    assert all(m["role"] in ("user", "assistant") for m in part.records), (
                        k, key, odd)
                    assert all(isinstance(m["content"], str | list) for m in part.records)
