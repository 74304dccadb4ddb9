"""The Codex CLI reader (`histtrim.adapters.codex`): each provider call's usage against what
plain `json` computes from the raw rollout, repeated `token_count` events and rate-limit
notices dropped and counted, counts written before or after their call's items, compactions
as new parts, tool calls paired with their outputs."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from histtrim.adapters.agent_sessions import detect
from histtrim.adapters.codex import read_session
from histtrim.adapters.openai import from_openai
from histtrim.pairing import validate_tool_pairing

REAL = Path(__file__).parent / "data" / "agent_sessions" / "codex" / "vibe-codex.jsonl"


def _seconds(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _expected(path: Path) -> list[tuple[int, int, int, str | None, float]]:
    """One call per `token_count` whose `info` is set and whose total differs from the
    previous one: (input with cached, cached, output, model in force, time)."""
    out: list[tuple[int, int, int, str | None, float]] = []
    model = total = None
    for line in path.read_text().splitlines():
        row = json.loads(line)
        payload = row["payload"]
        if row["type"] == "turn_context":
            model = payload["model"]
        if row["type"] != "event_msg" or payload["type"] != "token_count":
            continue
        if payload["info"] is None or payload["info"]["total_token_usage"] == total:
            continue
        total = payload["info"]["total_token_usage"]
        last = payload["info"]["last_token_usage"]
        out.append((last["input_tokens"], last["cached_input_tokens"], last["output_tokens"],
                    model, _seconds(row["timestamp"])))
    return out


def test_real_rollout_every_call_as_recorded_and_paired() -> None:
    data = REAL.read_bytes()
    read = read_session(data, "vibe")
    assert detect(data) == "codex"
    assert read.unpaired == 0
    (part,) = read.parts
    got = [(c.input_tokens, c.cache_read_tokens, c.output_tokens, c.model, c.timestamp)
           for c in part.calls]
    assert got == _expected(REAL)
    assert all(part.records[c.record]["role"] == "assistant" for c in part.calls)
    assert validate_tool_pairing(from_openai(list(part.records))) == []


def _line(kind: str, payload: dict[str, Any], second: int = 0) -> dict[str, Any]:
    return {"timestamp": f"2025-11-02T08:00:{second:02d}.000Z", "type": kind,
            "payload": payload}


def _item(**payload: Any) -> dict[str, Any]:
    return _line("response_item", payload)


def _user(text: str) -> dict[str, Any]:
    return _item(type="message", role="user",
                 content=[{"type": "input_text", "text": text}])


def _count(total: int, last_input: int, cached: int, output: int, second: int
           ) -> dict[str, Any]:
    usage = {"input_tokens": last_input, "cached_input_tokens": cached,
             "output_tokens": output, "reasoning_output_tokens": 0,
             "total_tokens": last_input + output}
    return _line("event_msg", {"type": "token_count", "info": {
        "total_token_usage": {"total_tokens": total}, "last_token_usage": usage}}, second)


def _rollout() -> list[dict[str, Any]]:
    """Newer Codex: a call's items, then its count written twice, a rate-limit notice."""
    notice = _line("event_msg", {"type": "token_count", "info": None,
                                 "rate_limits": {"primary": {"used_percent": 3.0}}})
    return [
        _line("session_meta", {"id": "x", "cwd": "/w", "cli_version": "0.60.0"}),
        _line("turn_context", {"cwd": "/w", "model": "gpt-5-codex"}),
        _item(type="message", role="developer",
              content=[{"type": "input_text", "text": "<permissions>on-request"}]),
        _user("fix the bug"),
        _item(type="reasoning", summary=[], encrypted_content="..."),
        _item(type="function_call", name="shell", arguments='{"command":["ls"]}',
              call_id="c1"),
        _count(1000, 1000, 0, 50, 1), _count(1000, 1000, 0, 50, 1), notice,
        _item(type="function_call_output", call_id="c1", output="a.py"),
        _item(type="custom_tool_call", name="apply_patch", input="*** Begin Patch",
              call_id="c2", status="completed"),
        _count(2100, 1100, 1000, 60, 2), _count(2100, 1100, 1000, 60, 2),
        _item(type="custom_tool_call_output", call_id="c2", output="Done"),
        _item(type="message", role="assistant",
              content=[{"type": "output_text", "text": "Fixed."}]),
        _count(3300, 1200, 1100, 20, 3),
        _item(type="future_item", data=1),
        _line("compacted", {"message": "summary", "replacement_history": [
            _user("fix the bug")["payload"],
            _item(type="message", role="user",
                  content=[{"type": "input_text", "text": "summary"}])["payload"],
        ]}),
        _user("and the tests"),
        _item(type="message", role="assistant",
              content=[{"type": "output_text", "text": "Added."}]),
        _count(3600, 300, 0, 10, 4),
    ]


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def test_repeats_and_notices_dropped_and_compaction_is_a_part() -> None:
    read = read_session(_jsonl(_rollout()) + b'{"timestamp": "2025-11-02T08', "r")
    assert [(p.kind, p.name) for p in read.parts] == [
        ("session", "r-part1"), ("after-compaction", "r-part2")]
    first, second = read.parts
    assert [(c.input_tokens, c.cache_read_tokens, c.output_tokens) for c in first.calls] == [
        (1000, 0, 50), (1100, 1000, 60), (1200, 1100, 20)]
    assert [c.model for c in first.calls] == ["gpt-5-codex"] * 3
    assert [m["role"] for m in first.records] == [
        "developer", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert first.records[4]["tool_calls"][0]["function"] == {
        "name": "apply_patch", "arguments": "*** Begin Patch"}
    assert [m["content"] for m in second.records] == [
        "fix the bug", "summary", "and the tests", "Added."]
    assert [(c.record, c.input_tokens) for c in second.calls] == [(3, 300)]
    assert read.skipped["repeated token_count"] == 2
    assert read.skipped["rate-limit notice"] == 1
    assert read.skipped["response_item future_item"] == 1
    assert read.skipped["garbled"] == 1
    assert read.unpaired == 0
    for part in read.parts:
        assert validate_tool_pairing(from_openai(list(part.records))) == []


def test_counts_written_before_their_items_go_to_the_next_call() -> None:
    """Older Codex wrote a call's count before its items: the same calls either way."""
    rows = _rollout()[:16]
    order = (0, 1, 2, 3, 6, 7, 8, 4, 5, 9, 11, 12, 10, 13, 15, 14)
    moved = [rows[k] for k in order]
    after = read_session(_jsonl(rows), "r").parts[0]
    before = read_session(_jsonl(moved), "r").parts[0]
    assert [(c.input_tokens, c.output_tokens) for c in before.calls] == [
        (c.input_tokens, c.output_tokens) for c in after.calls]
    assert [before.records[c.record]["role"] for c in before.calls] == ["assistant"] * 3


def test_counts_written_after_the_tool_outputs_go_to_their_call() -> None:
    """Newer Codex runs a call's tools while it streams: their outputs are written before
    the call's count (twice). The count is still that call's, not the next one's."""
    rows = _rollout()[:16]
    order = (0, 1, 2, 3, 4, 5, 9, 6, 7, 8, 10, 13, 11, 12, 14, 15)
    moved = [rows[k] for k in order]
    assert [moved[k]["payload"]["type"] for k in (5, 6, 7)] == [
        "function_call", "function_call_output", "token_count"]
    after = read_session(_jsonl(rows), "r").parts[0]
    late = read_session(_jsonl(moved), "r").parts[0]
    assert [(c.record, c.input_tokens) for c in late.calls] == [
        (c.record, c.input_tokens) for c in after.calls]


def test_a_rollback_starts_a_part_without_the_turns_it_drops() -> None:
    """`thread_rolled_back` drops the last user turns (Codex's own context messages open
    none); what is left, and what follows, is a new context whose calls are its own."""
    rows = _rollout()[:16]
    rows[2:2] = [_user("<environment_context>\n  <cwd>/w</cwd>\n</environment_context>")]
    rows += [
        _user("second task"),
        _item(type="message", role="assistant",
              content=[{"type": "output_text", "text": "Second."}]),
        _count(4000, 400, 0, 5, 5),
        _line("event_msg", {"type": "thread_rolled_back", "num_turns": 1}),
        _user("another second task"),
        _item(type="message", role="assistant",
              content=[{"type": "output_text", "text": "Other."}]),
        _count(4500, 500, 0, 6, 6),
    ]
    first, rewound = read_session(_jsonl(rows), "r").parts
    assert rewound.kind == "after-rewind"
    assert [m["content"] for m in rewound.records][-3:] == [
        "Fixed.", "another second task", "Other."]
    assert "second task" not in [m["content"] for m in rewound.records]
    assert [(rewound.records[c.record]["content"], c.input_tokens)
            for c in rewound.calls] == [("Other.", 500)]
    assert [c.input_tokens for c in first.calls][-1] == 400


def test_unanswered_call_is_reported() -> None:
    rows = _rollout()[:7]
    assert read_session(_jsonl(rows), "r").unpaired == 1


ODD: tuple[Any, ...] = (None, 7, True, "x", [1, {"a": 2}], {"content": {"content": [1]}})


def test_any_value_in_any_field_is_read_or_counted_never_raised() -> None:
    """Every field of every line (its own and its payload's) replaced in turn by a value of
    another type: the reader still answers with OpenAI messages."""
    rows = _rollout()
    for k, row in enumerate(rows):
        places = [(row, key) for key in row]
        if isinstance(row.get("payload"), dict):
            places += [(row["payload"], key) for key in row["payload"]]
        for holder, key in places:
            for odd in ODD:
                original = holder[key]
                holder[key] = odd
                try:
                    read = read_session(_jsonl(rows), "r")
                finally:
                    holder[key] = original
                for part in read.parts:
                    assert all(m["role"] in ("user", "assistant", "tool", "developer", "system")
                               for m in part.records), (k, key, odd)
                    assert all(isinstance(m["content"], str | list) for m in part.records)
                    from_openai(list(part.records))
