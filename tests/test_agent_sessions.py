"""The agent-session readers on real files of the five formats (tests/data/agent_sessions,
built by tools/agent_session_fixtures.py): every call paired or reported, each call's
recorded usage equal to what plain `json` computes from the raw file here, unknown and
garbled rows skipped and counted, and each file detected as its own format only."""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from histtrim.adapters.agent_sessions import AGENTS, SessionRead, detect, reader
from histtrim.adapters.formats import read_history

DATA = Path(__file__).parent / "data" / "agent_sessions"
Usage = tuple[int, int, int, int, str | None]
"""(whole input, cache read, cache write, output, model) of one call."""


def _module(agent: str) -> str:
    return f"histtrim.adapters.{agent.replace('-', '_')}"


def _present(agent: str) -> bool:
    return importlib.util.find_spec(_module(agent)) is not None


def _files(agent: str) -> list[Path]:
    return sorted(p for p in (DATA / agent).iterdir()
                  if p.suffix in (".json", ".jsonl"))


FILES = [(agent, path) for agent in AGENTS for path in _files(agent)]
IDS = [f"{agent}/{path.name}" for agent, path in FILES]


def _needs(agent: str) -> None:
    if not _present(agent):
        pytest.skip(f"{_module(agent)} is not on this branch (readers-a writes it)")


def _read(agent: str, data: bytes, name: str = "s") -> SessionRead:
    _needs(agent)
    return reader(agent)(data, name)  # type: ignore[arg-type]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# Usage computed from the raw files with plain json, independently of the readers.

def _claude_code(path: Path) -> list[Usage]:
    """One call per `message.id`: input (and cache) as the rows repeat it, the last row's
    output; Anthropic's convention, so input + cache read + cache creation."""
    calls: dict[str, Usage] = {}
    for row in _lines(path):
        message = row.get("message")
        if row.get("type") != "assistant" or not isinstance(message, dict):
            continue
        usage = message.get("usage")
        if not usage or message.get("model") == "<synthetic>":
            continue
        read = usage.get("cache_read_input_tokens") or 0
        write = usage.get("cache_creation_input_tokens") or 0
        calls[message["id"]] = (usage["input_tokens"] + read + write, read, write,
                                usage["output_tokens"], message.get("model"))
    return list(calls.values())


def _codex(path: Path) -> list[Usage]:
    """One call per `token_count` event that has `info` and a new `total_token_usage`
    (each is written twice); OpenAI's convention: input holds the cached tokens."""
    calls: list[Usage] = []
    model, total = None, None
    for row in _lines(path):
        payload = row.get("payload") or {}
        if row.get("type") == "turn_context":
            model = payload.get("model")
        if payload.get("type") != "token_count" or not payload.get("info"):
            continue
        info = payload["info"]
        if info.get("total_token_usage") == total:
            continue
        total = info.get("total_token_usage")
        last = info["last_token_usage"]
        calls.append((last["input_tokens"], last.get("cached_input_tokens", 0), 0,
                      last["output_tokens"], model))
    return calls


def _gemini(path: Path) -> list[Usage]:
    """One call per `gemini` message with `tokens` (the last record of each id);
    `input` is promptTokenCount (cached included), output is output + thoughts."""
    text = path.read_text()
    if path.suffix == ".json":
        messages = json.loads(text)["messages"]
    else:
        assert "$rewindTo" not in text  # the fixture has none; rewinds are tested below
        latest: dict[str, dict[str, Any]] = {}
        for row in _lines(path):
            if isinstance(row.get("id"), str):
                latest[row["id"]] = row
        messages = list(latest.values())
    return [
        (t["input"], t["cached"], 0, t["output"] + t.get("thoughts", 0), m.get("model"))
        for m in messages if m.get("type") == "gemini" and (t := m.get("tokens"))
    ]


def _pi(path: Path) -> list[Usage]:
    """One call per assistant message pi replays (not aborted or errored), in Anthropic's
    convention: input + cacheRead + cacheWrite."""
    calls: list[Usage] = []
    for row in _lines(path):
        message = row.get("message") or {}
        if row.get("type") != "message" or message.get("role") != "assistant":
            continue
        if message.get("stopReason") in ("aborted", "error"):
            continue
        u = message["usage"]
        calls.append((u["input"] + u["cacheRead"] + u["cacheWrite"], u["cacheRead"],
                      u["cacheWrite"], u["output"], message.get("model")))
    return calls


def _openhands(path: Path) -> list[Usage]:
    """One call per model response id; LiteLLM's usage: prompt_tokens is the whole input."""
    calls: dict[str, Usage] = {}
    for event in json.loads(path.read_text()):
        meta = event.get("tool_call_metadata")
        if not meta or "action" not in event:
            continue
        response = meta["model_response"]
        usage = response["usage"]
        read = usage.get("cache_read_input_tokens")
        if read is None:
            read = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
        calls.setdefault(response["id"], (
            usage["prompt_tokens"], read, usage.get("cache_creation_input_tokens") or 0,
            usage["completion_tokens"], response.get("model")))
    return list(calls.values())


EXPECTED: dict[str, Callable[[Path], list[Usage]]] = {
    "claude-code": _claude_code, "codex": _codex, "gemini-cli": _gemini, "pi": _pi,
    "openhands": _openhands,
}


def _calls(read: SessionRead) -> list[Usage]:
    return [(c.input_tokens, c.cache_read_tokens, c.cache_write_tokens, c.output_tokens,
             c.model) for part in read.parts for c in part.calls]


@pytest.mark.parametrize(("agent", "path"), FILES, ids=IDS)
def test_every_call_is_paired_and_the_records_read(agent: str, path: Path) -> None:
    read = _read(agent, path.read_bytes(), path.name)
    assert read.agent == agent
    assert read.unpaired == 0
    assert read.parts
    for part in read.parts:
        data = "".join(json.dumps(r) + "\n" for r in part.records).encode()
        assert len(read_history(data, part.provider_format)) == len(part.records)
        assert all(part.records[c.record]["role"] == "assistant" for c in part.calls)


@pytest.mark.parametrize(("agent", "path"), FILES, ids=IDS)
def test_recorded_usage_equals_the_raw_file(agent: str, path: Path) -> None:
    got = _calls(_read(agent, path.read_bytes(), path.name))
    expected = EXPECTED[agent](path)
    assert expected
    if agent == "codex":  # a rollout names its model per turn, not per call
        got = [(*u[:4], None) for u in got]
        expected = [(*u[:4], None) for u in expected]
    if agent == "claude-code":  # side agents' calls are in parts of their own
        got, expected = sorted(got, key=repr), sorted(expected, key=repr)
    assert got == expected


@pytest.mark.parametrize(("agent", "path"), FILES, ids=IDS)
def test_each_file_is_told_apart_by_every_sniffer(agent: str, path: Path) -> None:
    head = path.read_bytes()[:1 << 16]
    for other in AGENTS:
        if not _present(other):
            continue
        sniff = importlib.import_module(_module(other)).sniff
        assert sniff(head) is (other == agent), other
    if all(_present(a) for a in AGENTS):
        assert detect(path.read_bytes()) == agent
    else:
        pytest.skip("detect() needs all five readers (readers-a writes two)")


_UNKNOWN = {
    "claude-code": {"type": "a-row-type-from-the-future", "uuid": "x"},
    "codex": {"timestamp": "2026-01-01T00:00:00Z", "type": "a-row-type-from-the-future",
              "payload": {}},
    "gemini-cli": {"$a-record-from-the-future": {}},
    "pi": {"type": "a-row-type-from-the-future", "timestamp": "2026-01-01T00:00:00Z"},
    "openhands": {"id": 9999, "timestamp": "2026-01-01T00:00:00", "source": "agent",
                  "a-kind-from-the-future": "x"},
}
_GARBLED = b'{"type": "message", "message": {"role": "assist'


def _injected(agent: str, path: Path) -> bytes:
    """The file with an unknown row and a truncated line after its second record."""
    data = path.read_bytes()
    unknown = json.dumps(_UNKNOWN[agent]).encode()
    if agent == "openhands":
        events = json.loads(data)
        lines = [json.dumps(e).encode() for e in events]
        return b"\n".join([*lines[:2], unknown, _GARBLED, *lines[2:]]) + b"\n"
    lines = data.splitlines()
    return b"\n".join([*lines[:2], unknown, _GARBLED, *lines[2:]]) + b"\n"


@pytest.mark.parametrize(("agent", "path"), [
    (a, p) for a, p in FILES if p.suffix == ".jsonl" or a == "openhands"], ids=[
    i for (a, p), i in zip(FILES, IDS, strict=True) if p.suffix == ".jsonl" or a == "openhands"])
def test_unknown_rows_and_garbled_lines_are_skipped_and_counted(agent: str,
                                                                path: Path) -> None:
    before = _read(agent, path.read_bytes())
    after = _read(agent, _injected(agent, path))
    assert after.skipped.get("garbled", 0) == before.skipped.get("garbled", 0) + 1
    assert sum(after.skipped.values()) == sum(before.skipped.values()) + 2
    assert _calls(after) == _calls(before)
    assert after.unpaired == before.unpaired


def test_gemini_json_skips_a_message_type_it_does_not_know() -> None:
    path = DATA / "gemini-cli" / "vibe-gemini-2026-03.json"
    chat = json.loads(path.read_text())
    chat["messages"].insert(1, {"id": "new", "type": "from-the-future", "content": "x"})
    before = _read("gemini-cli", path.read_bytes())
    after = _read("gemini-cli", json.dumps(chat).encode())
    assert after.skipped == {**before.skipped, "from-the-future": 1}
    assert _calls(after) == _calls(before)


# Gemini CLI: $rewindTo and a compressing $set start parts; each call counts once.

def _gemini_lines() -> list[dict[str, Any]]:
    return _lines(DATA / "gemini-cli" / "vibe-gemini.jsonl")


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


_ANSWER = {"id": "new-answer", "timestamp": "2026-04-23T13:00:00.000Z", "type": "gemini",
           "content": "ok", "model": "gemini-3-flash-preview",
           "tokens": {"input": 50, "output": 7, "cached": 20, "thoughts": 3, "total": 60}}


def test_gemini_rewind_starts_a_part_from_what_it_kept() -> None:
    rows = _gemini_lines()
    prompt = next(r for r in rows if r.get("type") == "user" and "uv run" in str(r))
    ask = {"id": "new-ask", "timestamp": "2026-04-23T12:59:00.000Z", "type": "user",
           "content": [{"text": "again"}]}
    read = _read("gemini-cli", _jsonl([*rows, {"$rewindTo": prompt["id"]}, ask, _ANSWER]))
    first, second = read.parts
    assert (first.kind, second.kind) == ("session", "after-rewind")
    assert len(first.calls) == 6 and len(second.calls) == 1
    at = next(i for i, r in enumerate(first.records)
              if r["role"] == "user" and "uv run" in str(r["content"]))
    assert second.records == (*first.records[:at], {"role": "user", "content": "again"},
                              {"role": "assistant", "content": "ok"})
    call = second.calls[0]
    assert (call.record, call.input_tokens, call.cache_read_tokens, call.output_tokens) == (
        len(second.records) - 1, 50, 20, 10)


def test_gemini_rewind_to_an_unknown_id_clears_the_chat() -> None:
    rows = _gemini_lines()
    read = _read("gemini-cli", _jsonl([*rows, {"$rewindTo": "nowhere"}, _ANSWER]))
    assert [len(p.calls) for p in read.parts] == [6, 1]
    assert read.parts[1].records == ({"role": "assistant", "content": "ok"},)


def test_gemini_set_of_fewer_messages_is_a_compaction() -> None:
    rows = _gemini_lines()
    summary = {"id": "summary", "timestamp": "2026-04-23T13:00:00.000Z", "type": "user",
               "content": [{"text": "<state_snapshot>all so far</state_snapshot>"}]}
    last = [r for r in rows if r.get("id") == "0752be32-e23d-4786-bc5f-e06ee1d8a56c"][-1]
    read = _read("gemini-cli", _jsonl([*rows, {"$set": {"messages": [summary, last]}},
                                       _ANSWER]))
    assert [(p.kind, len(p.calls)) for p in read.parts] == [
        ("session", 6), ("after-compaction", 1)]
    assert read.parts[1].records[0] == {"role": "user", "content":
                                        "<state_snapshot>all so far</state_snapshot>"}
    masked = _read("gemini-cli", _jsonl([*rows, {"$set": {"messages": [
        r for r in {r["id"]: r for r in rows if "id" in r and r.get("type") in (
            "user", "gemini")}.values()]}}]))
    assert [p.kind for p in masked.parts] == ["session"]


def test_gemini_rewinds_copy_a_bounded_number_of_records() -> None:
    rows: list[dict[str, Any]] = [{"sessionId": "s", "projectHash": "p"}]
    rows += [{"id": f"u{i}", "type": "user", "content": "x"} for i in range(2000)]
    for i in range(3000):
        rows += [dict(_ANSWER, id=f"a{i}"), {"$rewindTo": f"a{i}"}]
    read = _read("gemini-cli", _jsonl(rows))
    copied = sum(len(p.records) for p in read.parts)
    assert copied <= len(rows) + 4096 + 2001
    assert read.skipped["context-over-budget"] > 0
    assert sum(len(p.calls) for p in read.parts) < 3000


def test_bad_usage_is_counted_not_recorded() -> None:
    rows = _gemini_lines()
    bad = dict(_ANSWER, tokens={"input": -1, "output": True, "cached": "3"})
    read = _read("gemini-cli", _jsonl([*rows, bad]))
    assert read.skipped["bad-usage"] == 1
    assert len(_calls(read)) == 6


# Pi: a version 3 file (ids and parentId) reads its live branch only.

def _pi_v3(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """pi's own migration of a version 1 file (session-manager's migrateV1ToV2): ids in
    order, each entry's parent the previous one, kept index -> kept id."""
    out: list[dict[str, Any]] = []
    previous = None
    for n, row in enumerate(rows):
        row = dict(row)
        if row["type"] == "session":
            row["version"] = 3
        else:
            row["id"], row["parentId"] = f"e{n}", previous
            previous = row["id"]
            if "firstKeptEntryIndex" in row:
                row["firstKeptEntryId"] = f"e{row.pop('firstKeptEntryIndex')}"
        out.append(row)
    return out


def test_pi_version_3_reads_the_live_branch() -> None:
    path = DATA / "pi" / "before-compaction-first-407.jsonl"
    rows = _lines(path)
    v3 = _pi_v3(rows)
    dead = [dict(v3[50], id="dead1", parentId=v3[49]["id"]),
            dict(v3[51], id="dead2", parentId="dead1")]
    v3[60:60] = dead
    v1_read = _read("pi", path.read_bytes())
    v3_read = _read("pi", _jsonl(v3))
    assert [p.records for p in v3_read.parts] == [p.records for p in v1_read.parts]
    assert _calls(v3_read) == _calls(v1_read)
    assert v3_read.skipped == {**v1_read.skipped, "off-branch": 2}


def test_pi_compaction_part_starts_with_its_summary_and_kept_entries() -> None:
    path = DATA / "pi" / "before-compaction-first-407.jsonl"
    rows = _lines(path)
    compaction = next(r for r in rows if r["type"] == "compaction")
    read = _read("pi", path.read_bytes())
    first, second = read.parts
    assert (first.kind, second.kind) == ("session", "after-compaction")
    assert second.records[0] == {"role": "user", "content": (
        "The conversation history before this point was compacted into the following "
        f"summary:\n\n<summary>\n{compaction['summary']}\n</summary>")}
    kept = rows[compaction["firstKeptEntryIndex"]]["message"]
    assert second.records[1]["content"] == kept["content"]
    assert all(c.record > 1 for c in second.calls)


def test_pi_call_without_result_gets_pi_s_error_result_and_is_reported() -> None:
    path = DATA / "pi" / "before-compaction-first-407.jsonl"
    rows = _lines(path)
    at = next(i for i, r in enumerate(rows) if r["type"] == "message"
              and r["message"]["role"] == "toolResult")
    read = _read("pi", _jsonl(rows[:at] + rows[at + 1:]))
    assert read.unpaired == 1
    texts = [b["content"] for p in read.parts for r in p.records if r["role"] == "user"
             and isinstance(r["content"], list) for b in r["content"]
             if b.get("type") == "tool_result" and b.get("is_error")]
    assert [{"type": "text", "text": "No result provided"}] in texts


# OpenHands: a condensation starts a part; the view keeps what it did not forget.

def test_openhands_condensation_starts_a_part() -> None:
    path = DATA / "openhands" / "wrong_initial_state.json"
    events = json.loads(path.read_text())
    late = [dict(e, id=e["id"] + 100) for e in events[5:7]]
    for event in late:
        meta = json.loads(json.dumps(event["tool_call_metadata"]))
        meta["model_response"]["id"] += "-late"
        meta["tool_call_id"] += "-late"
        for call in meta["model_response"]["choices"][0]["message"]["tool_calls"]:
            call["id"] += "-late"
        event["tool_call_metadata"] = meta
    condensation = {"id": 50, "timestamp": "2025-01-27T23:17:00", "source": "agent",
                    "action": "condensation", "args": {
                        "forgotten_event_ids": [3, 4], "summary": "read the folder",
                        "summary_offset": 1}}
    read = _read("openhands", json.dumps([*events, condensation, *late]).encode())
    first, second = read.parts
    assert second.kind == "after-compaction"
    assert len(first.calls) == 4 and len(second.calls) == 1
    assert second.records[0]["content"] == "Please rename game_2048.py to 2048.py"
    assert second.records[1] == {"role": "user", "content": "read the folder"}
    assert second.records[-2]["role"] == "assistant"
    assert second.calls[0].record == len(second.records) - 2
    assert read.unpaired == 0


def test_openhands_result_of_no_call_is_reported() -> None:
    path = DATA / "openhands" / "wrong_initial_state.json"
    events = json.loads(path.read_text())
    read = _read("openhands", json.dumps([e for e in events if e["id"] != 5]).encode())
    assert read.unpaired == 1
    assert len(_calls(read)) == 3


# Hostile files: any cut and any value of the wrong type is counted or read, never raised.

def _mutated(value: Any, kind: str, depth: int = 0) -> Any:
    if isinstance(value, dict):
        if kind == "dicts" and depth > 0:
            return "x"
        return {k: _mutated(v, kind, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return {} if kind == "lists" else [_mutated(v, kind, depth + 1) for v in value]
    if isinstance(value, str) and kind == "strings":
        return 12345
    if isinstance(value, int) and not isinstance(value, bool) and kind == "ints":
        return -1 if value % 2 else True
    return value


def _variant(path: Path, kind: str) -> bytes:
    data = path.read_bytes()
    try:
        whole = json.loads(data)
    except ValueError:
        rows = _lines(path)
        return _jsonl([rows[0], *(_mutated(r, kind) for r in rows[1:])])
    if isinstance(whole, list):
        return json.dumps([_mutated(e, kind) for e in whole]).encode()
    return json.dumps({**whole, "messages": [_mutated(m, kind, 1)
                                             for m in whole["messages"]]}).encode()


@pytest.mark.parametrize(("agent", "path"), FILES, ids=IDS)
def test_values_of_the_wrong_type_never_raise(agent: str, path: Path) -> None:
    for kind in ("strings", "lists", "dicts", "ints"):
        read = _read(agent, _variant(path, kind))
        assert all(c.input_tokens >= 0 for part in read.parts for c in part.calls)


@pytest.mark.parametrize(("agent", "path"), FILES, ids=IDS)
def test_a_file_cut_anywhere_reads(agent: str, path: Path) -> None:
    data = path.read_bytes()
    whole = _read(agent, data)
    for n in range(1, 12):
        cut = _read(agent, data[: len(data) * n // 12])
        assert len(_calls(cut)) <= len(_calls(whole))


def test_openhands_truncated_array_keeps_its_whole_events() -> None:
    path = DATA / "openhands" / "wrong_initial_state.json"
    data = path.read_bytes()
    events = json.loads(data)
    cut = data[: data.index(b'"id": 7')]  # inside the event that asks the third call
    read = _read("openhands", cut)
    assert read.skipped == {"garbled": 1}
    assert _calls(read) == _openhands(path)[:2]
    assert len(events) == 8


def test_gemini_jsonl_whose_first_line_holds_messages_reads_them() -> None:
    """Gemini CLI's loader takes the messages of a header line (a chat it rewrote whole)."""
    chat = json.loads((DATA / "gemini-cli" / "vibe-gemini-2026-03.json").read_text())
    header = dict(chat, messages=chat["messages"][:4])
    data = _jsonl([header, *chat["messages"][4:], {"$set": {"lastUpdated": "x"}}])
    read = _read("gemini-cli", data)
    assert _calls(read) == _gemini(DATA / "gemini-cli" / "vibe-gemini-2026-03.json")


def _fixtures_tool() -> Any:
    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location(
        "agent_session_fixtures", root / "tools" / "agent_session_fixtures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_every_fixture_is_the_file_its_provenance_pins() -> None:
    """The committed files are what tools/agent_session_fixtures.py writes: each one's
    SHA-256 is pinned there, named in its folder's PROVENANCE.md, and has a licence."""
    import hashlib

    tool = _fixtures_tool()
    written = {(f.agent, f.out) for f in tool.FIXTURES}
    assert written == {(agent, path.name) for agent, path in FILES}
    for fixture in tool.FIXTURES:
        folder = DATA / fixture.agent
        data = (folder / fixture.out).read_bytes()
        assert hashlib.sha256(data).hexdigest() == fixture.out_sha256, fixture.out
        provenance = (folder / "PROVENANCE.md").read_text()
        assert fixture.out_sha256 in provenance and fixture.blob in provenance
        assert (folder / tool.licence_name(fixture.repo)).is_file()
        assert (folder / "PROVENANCE.md").read_text() == tool.provenance(
            fixture.agent, [f for f in tool.FIXTURES if f.agent == fixture.agent])


@pytest.mark.parametrize(("agent", "path"), FILES, ids=IDS)
def test_a_byte_order_mark_changes_nothing(agent: str, path: Path) -> None:
    data = path.read_bytes()
    assert _read(agent, b"\xef\xbb\xbf" + data) == _read(agent, data)
    assert importlib.import_module(_module(agent)).sniff(b"\xef\xbb\xbf" + data[:4096])
