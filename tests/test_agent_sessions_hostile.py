"""Issue 47's readers against hostile files and a user's own folders: a line past the bound,
values nested to the limit, a project folder's side files, and a folder reviewed serially,
on a process pool and on Dask with the same answer. Linearity is shown by
bench/read_sessions.py (its `shapes` ratios), never by a timed test here."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from histtrim.adapters import session_rows
from histtrim.adapters.agent_sessions import AGENTS, detect, reader
from histtrim.adapters.codex import read_session as read_codex
from histtrim.adapters.pi import read_session as read_pi
from histtrim.cli import main
from histtrim.cli.review import session_source

DATA = Path(__file__).parent / "data" / "agent_sessions"
CLAUDE = DATA / "claude-code" / "vibe-claude-code.jsonl"
CODEX = DATA / "codex" / "vibe-codex.jsonl"
LINES = {
    "claude-code": CLAUDE, "codex": CODEX, "gemini-cli": DATA / "gemini-cli" / "vibe-gemini.jsonl",
    "pi": DATA / "pi" / "before-compaction-first-407.jsonl",
}
"""A JSON Lines fixture per format that writes JSON Lines."""


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("agent", sorted(LINES))
def test_a_line_past_the_bound_is_counted_and_never_parsed(
    agent: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A line over `MAX_LINE_BYTES` (a 1 GB line in a real file; 4 kB here) is counted as
    `over-long line`, in every reader's report, and never handed to the JSON parser."""
    data = LINES[agent].read_bytes()
    longest = max(len(line) for line in data.splitlines())
    monkeypatch.setattr(session_rows, "MAX_LINE_BYTES", longest)
    parsed: list[int] = []
    real = session_rows.loads

    def counting(text: bytes) -> object:
        value = real(text)
        if value is not None:  # a whole-document attempt fails at its second line
            parsed.append(len(text))
        return value

    monkeypatch.setattr(session_rows, "loads", counting)
    huge = b'{"type":"user","pad":"' + b"x" * longest + b'"}'
    read = reader(agent)(data + huge + b"\n", "x")  # type: ignore[arg-type]
    assert read.skipped.get("over-long line") == 1
    assert max(parsed) <= longest
    assert read.parts  # the rest of the file is read as before


def test_lines_split_on_carriage_returns_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines are found one at a time, on `\\n`, `\\r\\n` or a bare `\\r` as before."""
    data = CODEX.read_bytes()
    assert read_codex(data.replace(b"\n", b"\r"), "x") == read_codex(data, "x")
    assert read_codex(data.replace(b"\n", b"\r\n"), "x") == read_codex(data, "x")


def _nested(depth: int) -> object:
    value: object = "bottom"
    for _ in range(depth):
        value = {"k": value}
    return value


def _deepest_claude_file(tmp_path: Path) -> Path:
    """The fixture with one tool input nested as deep as the JSON parser reads."""
    rows = [json.loads(line) for line in CLAUDE.read_bytes().splitlines()]
    at = next(i for i, r in enumerate(rows) if r.get("type") == "assistant" and any(
        b.get("type") == "tool_use" for b in r["message"]["content"]))
    depth = 990
    while depth > 0:
        block = next(b for b in rows[at]["message"]["content"] if b.get("type") == "tool_use")
        block["input"] = _nested(depth)
        try:
            line = json.dumps(rows[at])
            json.loads(line)
            break
        except RecursionError:
            depth -= 10
    lines = [json.dumps(r) if i != at else line for i, r in enumerate(rows)]
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("command", ["estimate", "trim", "review"])
def test_a_value_nested_to_the_parsers_limit_is_one_line_or_an_answer(
    command: str, capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    """The deepest tool input the JSON parser reads reaches `estimate`, `trim` and `review`:
    each answers, or stops with one line naming the file, exit 2; never a traceback."""
    path = _deepest_claude_file(tmp_path)
    extra = ["--workers", 1] if command == "review" else ["--budget", 10**6] if (
        command == "trim") else []
    if command == "trim":
        extra += ["-o", tmp_path / "out.json"]
    code, _, err = run(capsys, command, path, *extra)
    assert code in (0, 2), err
    if code == 2:
        assert len(err.strip().splitlines()) == 1 and str(path) in err, err


def _project(tmp_path: Path, sessions: int) -> Path:
    """A Claude Code project folder: short sessions (the fixture's first 40 rows), one with
    a side agent's file under `<session>/subagents/` and its large results under
    `<session>/tool-results/` (one `.txt`, one `.json`), its description
    `subagents/agent-a1.meta.json`, and a summary-only file that sorts first."""
    folder = tmp_path / "project"
    folder.mkdir()
    head = b"\n".join(CLAUDE.read_bytes().splitlines()[:40]) + b"\n"
    for n in range(sessions):
        (folder / f"s{n:02d}.jsonl").write_bytes(head)
    (folder / "0-summary.jsonl").write_text(
        '{"type":"summary","summary":"Go version fix","leafUuid":"u1"}\n')
    side = folder / "s00" / "subagents"
    side.mkdir(parents=True)
    rows = [{**json.loads(line), "isSidechain": True, "agentId": "a1"}
            for line in head.splitlines()]
    (side / "agent-a1.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (side / "agent-a1.meta.json").write_text(
        '{"agentType": "Explore", "description": "Map endpoints", "spawnDepth": 1}\n')
    results = folder / "s00" / "tool-results"
    results.mkdir()
    (results / "toolu_01.txt").write_text("a long listing\n" * 100)
    (results / "toolu_02.json").write_text('{"rows": [1, 2, 3]}\n')
    return folder


def test_a_project_folder_reviews_with_its_side_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    """A summary-only file first no longer stops the window search, and the tool results
    Claude Code moved aside and its side agents' `.meta.json` descriptions are left out
    (said on stderr), not read as sessions."""
    folder = _project(tmp_path, 2)
    code, out, err = run(capsys, "review", folder, "--workers", 1)
    assert code == 0, err
    assert "skipped 2 files Claude Code keeps beside its transcripts" in err
    assert "window: 200000 tokens, claude-sonnet-4-20250514's (the recorded model)" in out
    assert "recorded usage (3 of 4 sessions" in out  # two sessions, the side agent, the summary


def test_a_project_folder_reviews_alike_serially_on_two_workers_and_on_dask(
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    """Enough sessions for two batches: `--workers 2` runs a process pool, `--dask` a local
    cluster; both print the serial table, recorded usage included, with no `--window`."""
    distributed = pytest.importorskip("distributed", reason="the review extra is absent")
    folder = _project(tmp_path, 26)
    code, serial, err = run(capsys, "review", folder, "--workers", 1)
    assert code == 0, err
    assert re.search(r"^refused by the model \(overflow\) +0$", serial, re.MULTILINE)
    assert "recorded usage (27 of 28 sessions" in serial
    code, pooled, err = run(capsys, "review", folder, "--workers", 2)
    assert code == 0, err
    assert pooled == serial
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        code, on_dask, err = run(capsys, "review", folder, "--dask", cluster.scheduler_address)
    assert code == 0, err
    assert on_dask == serial


def test_a_bad_file_in_a_folder_on_workers_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    """A session no request can hold, loaded in a worker, stops the review with one line
    naming it (exit 2)."""
    folder = _project(tmp_path, 26)
    (folder / "zz.jsonl").write_text("\n".join([
        _row("user", "u1", None, "hi \\ud800 there"),
        _row("assistant", "a1", "u1", [{"type": "text", "text": "ok"}])]).replace(
            "\\\\ud800", "\\ud800") + "\n")
    code, _, err = run(capsys, "review", folder, "--workers", 2)
    assert code == 2
    assert len(err.strip().splitlines()) == 2  # the tool-results note, then the error
    assert "zz.jsonl" in err.strip().splitlines()[-1]
    assert "lone surrogate" in err.strip().splitlines()[-1]


def _agent_home(tmp_path: Path) -> Path:
    """An agent's home folder as Codex and Claude Code leave it: sessions, and beside them
    the prompt history, settings, credentials and todo lists, which are no sessions."""
    home = tmp_path / "home"
    rollouts = home / ".codex" / "sessions" / "2026" / "12" / "01"
    rollouts.mkdir(parents=True)
    shutil.copy(CODEX, rollouts / "rollout-2026-12-01T10-00-00-abc.jsonl")
    (home / ".codex" / "history.jsonl").write_text(
        '{"session_id":"abc","ts":1764583200,"text":"fix the bug"}\n')
    (home / ".codex" / "auth.json").write_text('{"OPENAI_API_KEY": null}\n')
    project = home / ".claude" / "projects" / "-work-app"
    project.mkdir(parents=True)
    shutil.copy(CLAUDE, project / "s1.jsonl")
    (home / ".claude" / "history.jsonl").write_text(
        '{"display":"fix the bug","pastedContents":{},"project":"/work/app"}\n')
    (home / ".claude" / "settings.json").write_text('{"model": "opus"}\n')
    (home / ".claude" / "todos").mkdir()
    (home / ".claude" / "todos" / "s1-agent-s1.json").write_text("[]\n")
    return home


def test_an_agents_home_folder_reviews_its_sessions_and_names_what_it_skipped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    """`review ~/.codex` or `~/.claude` reads the sessions and skips, naming them, the
    files beside them no reader takes for a session (it stopped at the first of them with
    "field 'role'": the prompt history was read as a chat)."""
    home = _agent_home(tmp_path)
    code, out, err = run(capsys, "review", home / ".codex", "--workers", 1)
    assert code == 0, err
    assert err.splitlines() == [
        f"histtrim: skipped 2 files in {home / '.codex'} that no agent's reader takes for a "
        "session (auth.json, history.jsonl): the folder holds an agent's sessions; name a "
        "plain history file to review it"]
    assert "recorded usage (1 of 1 sessions, 19 calls)" in out
    code, out, err = run(capsys, "review", home, "--workers", 1)
    assert code == 0, err
    assert "skipped 5 files" in err
    assert ("(.claude/history.jsonl, .claude/settings.json, .claude/todos/s1-agent-s1.json, "
            "...)") in err
    assert "(2 of 2 sessions" in out


def test_a_folder_of_plain_history_files_reviews_every_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    """With no agent's session in it, every file of a folder is a history to review, and a
    file that is none is an error naming it, as before."""
    rows = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    for name in ("a", "b"):
        (tmp_path / f"{name}.json").write_text(json.dumps(rows))
    code, out, err = run(capsys, "review", tmp_path, "--workers", 1, "--budget", 100)
    assert code == 0, err
    assert err == "" and "sessions" in out and "2" in out
    (tmp_path / "c.json").write_text('{"model": "opus"}\n')
    code, _, err = run(capsys, "review", tmp_path, "--workers", 1, "--budget", 100)
    assert code == 2 and "c.json" in err


def test_pi_results_find_their_calls_among_many() -> None:
    """One Pi reply calling 3,000 tools, then their results in reverse order: every result
    pairs (a set of waiting calls, not a scan of a list: see the bench's shapes)."""
    n = 3000
    lines = [{"type": "session", "version": 3, "id": "s", "cwd": "/w",
              "timestamp": "2026-01-01T00:00:00Z"},
             {"type": "message", "id": "u", "parentId": None,
              "message": {"role": "user", "content": "go"}},
             {"type": "message", "id": "a", "parentId": "u", "message": {
                 "role": "assistant", "stopReason": "toolUse",
                 "content": [{"type": "toolCall", "id": f"c{i}", "name": "ls",
                              "arguments": {}} for i in range(n)]}}]
    parent = "a"
    for i in reversed(range(n)):
        lines.append({"type": "message", "id": f"r{i}", "parentId": parent, "message": {
            "role": "toolResult", "toolCallId": f"c{i}", "content": "ok"}})
        parent = f"r{i}"
    read = read_pi("\n".join(json.dumps(x) for x in lines).encode(), "x")
    assert read.unpaired == 0
    assert len(read.parts[0].records[2]["content"]) == n  # type: ignore[arg-type]


def test_codex_streamed_text_is_joined_in_order() -> None:
    """A Codex reply whose text comes in 5,000 message items is one assistant message,
    its text in order (joined once at the end, not re-copied per item)."""
    rows = [{"type": "session_meta", "payload": {"id": "s"}},
            {"type": "response_item", "payload": {"type": "message", "role": "user",
                                                  "content": [{"type": "input_text",
                                                               "text": "go"}]}}]
    rows += [{"type": "response_item", "payload": {
        "type": "message", "role": "assistant",
        "content": [{"type": "output_text", "text": f"{i},"}]}} for i in range(5000)]
    read = read_codex("\n".join(json.dumps(r) for r in rows).encode(), "x")
    assert read.parts[0].records[-1]["content"] == "".join(f"{i}," for i in range(5000))


def test_every_fixture_is_told_from_its_content() -> None:
    for agent in AGENTS:
        for path in sorted((DATA / agent).glob("*.json*")):
            assert detect(path.read_bytes()) == agent, path


def test_copies_of_the_fixtures_read_the_same(tmp_path: Path) -> None:
    """Reading never mutates what it was given (the bytes are read twice, equal answers)."""
    for agent in AGENTS:
        for path in sorted((DATA / agent).glob("*.json*")):
            data = path.read_bytes()
            assert reader(agent)(data, "x") == reader(agent)(bytes(data), "x")
            shutil.copy(path, tmp_path / path.name)


def _row(kind: str, uuid: str, parent: str | None, content: object, **extra: object) -> str:
    message: dict[str, object] = {"role": kind, "content": content}
    if kind == "assistant":
        message.update(id=f"msg-{uuid}", model="claude-sonnet-4-5",
                       usage={"input_tokens": 3, "cache_read_input_tokens": 100,
                              "cache_creation_input_tokens": 7, "output_tokens": 9})
    return json.dumps({"type": kind, "uuid": uuid, "parentUuid": parent, "isSidechain": False,
                       "timestamp": "2026-05-01T10:00:00Z", "message": message, **extra})


def _boundary(uuid: str) -> str:
    return json.dumps({"type": "system", "subtype": "compact_boundary", "uuid": uuid,
                       "parentUuid": None, "logicalParentUuid": "a1", "isSidechain": False,
                       "content": "Conversation compacted", "compactMetadata": {
                           "trigger": "manual", "preTokens": 120000}})


def test_a_compact_boundary_starts_a_part_even_without_its_summary_row() -> None:
    """`compact_boundary` (`parentUuid: null`) is where the new context starts: with the
    `isCompactSummary` row after it, that row opens the part (one part, not two); without
    it (a file cut there), the next prompt does."""
    head = [_row("user", "u1", None, "fix the build"),
            _row("assistant", "a1", "u1", [{"type": "text", "text": "done"}])]
    summary = _row("user", "s1", "b1", "This session is being continued ... summary",
                   isCompactSummary=True)
    tail = [_row("user", "u2", "s1", "now the tests"),
            _row("assistant", "a2", "u2", [{"type": "text", "text": "ok"}])]
    from histtrim.adapters.claude_code import read_session as read_claude

    with_summary = read_claude("\n".join([*head, _boundary("b1"), summary, *tail]).encode(), "x")
    assert [p.kind for p in with_summary.parts] == ["session", "after-compaction"]
    assert with_summary.parts[1].records[0]["content"] == (
        "This session is being continued ... summary")
    without = read_claude("\n".join([*head, _boundary("b1"), *tail]).encode(), "x")
    assert [p.kind for p in without.parts] == ["session", "after-compaction"]
    assert [r["role"] for r in without.parts[1].records] == ["user", "assistant"]
    assert without.skipped["system"] == 1


def test_a_persisted_output_preview_is_the_result_the_model_saw() -> None:
    """Claude Code moves a large result to `<session>/tool-results/` and gives the model a
    `<persisted-output>` preview: the reader keeps the preview, as written, as the result."""
    preview = ("<persisted-output>\nOutput too large (257.8KB). Full output saved to: "
               "/home/u/.claude/projects/p/s/tool-results/b1.txt\n\nPreview (first 2KB):\n"
               "line 1\nline 2\n</persisted-output>")
    rows = [_row("user", "u1", None, "list it"),
            _row("assistant", "a1", "u1", [{"type": "tool_use", "id": "t1", "name": "Bash",
                                            "input": {"command": "ls -R"}}]),
            _row("user", "r1", "a1", [{"type": "tool_result", "tool_use_id": "t1",
                                       "content": preview}]),
            _row("assistant", "a2", "r1", [{"type": "text", "text": "many files"}])]
    from histtrim.adapters.claude_code import read_session as read_claude

    read = read_claude("\n".join(rows).encode(), "x")
    assert read.unpaired == 0
    assert read.parts[0].records[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": preview}]


def test_a_notification_row_is_a_prompt_the_model_answers() -> None:
    """A `<task-notification>` user row (a background command finished) is sent to the model,
    which answers it (the M-Claude transcripts show the reply reasoning about it): a user
    message opening a turn, not a dropped row that would leave two replies back to back."""
    notice = ("<task-notification>\n<task-id>b1</task-id>\n<status>failed</status>\n"
              "<summary>Background command \"ssh\" failed with exit code 255</summary>\n"
              "</task-notification>")
    rows = [_row("user", "u1", None, "connect"),
            _row("assistant", "a1", "u1", [{"type": "text", "text": "started"}]),
            _row("user", "n1", "a1", notice),
            _row("assistant", "a2", "n1", [{"type": "text", "text": "it failed"}])]
    from histtrim.adapters.claude_code import read_session as read_claude

    read = read_claude("\n".join(rows).encode(), "x")
    assert [r["role"] for r in read.parts[0].records] == ["user", "assistant", "user",
                                                          "assistant"]
    assert read.parts[0].records[2]["content"] == notice
    assert "notice" not in read.skipped


@pytest.mark.parametrize("command", ["estimate", "trim", "review"])
@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_a_lone_surrogate_is_one_line_naming_the_message_and_field(
    agent: str, command: str, capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    """JSON's `\\ud800` escape parses (a tool output cut inside an emoji writes one), but no
    UTF-8 request can hold it: one line naming the file, message and field, exit 2 (it was
    a UnicodeEncodeError traceback from `estimate` and `trim`)."""
    if agent == "claude-code":
        text = "\n".join([
            _row("user", "u1", None, "hi \\ud800 there"),
            _row("assistant", "a1", "u1", [{"type": "text", "text": "ok"}])])
    else:
        text = "\n".join(json.dumps(r) for r in [
            {"type": "session_meta", "payload": {"id": "s"}},
            {"type": "response_item", "payload": {"type": "message", "role": "user",
                                                  "content": "hi \\ud800 there"}},
            {"type": "response_item", "payload": {"type": "message", "role": "assistant",
                                                  "content": "ok"}}])
    path = tmp_path / "lone.jsonl"
    path.write_text(text.replace("\\\\ud800", "\\ud800") + "\n")
    extra = {"estimate": [], "trim": ["--budget", 100, "-o", tmp_path / "o.json"],
             "review": ["--workers", 1]}
    code, _, err = run(capsys, command, path, *extra[command])
    assert code == 2
    assert err.strip().splitlines() == [
        f"histtrim: error: {path}: field 'message 1.content': a lone surrogate ('\\ud800') "
        "is not Unicode text"]


def _openhands_home(tmp_path: Path, source: Path) -> Path:
    """OpenHands' own store: `sessions/<id>/events/<n>.json`, one pretty-printed event per
    file, beside a page cache of the same events and the conversation's metadata."""
    home = tmp_path / ".openhands"
    conversation = home / "sessions" / "abc123"
    (conversation / "events").mkdir(parents=True)
    (conversation / "event_cache").mkdir()
    events = json.loads(source.read_text())
    for event in reversed(events):  # written out of order: the id orders them
        (conversation / "events" / f"{event['id']}.json").write_text(json.dumps(event, indent=2))
    (conversation / "event_cache" / "0-25.json").write_text(json.dumps(events[:25]))
    (conversation / "metadata.json").write_text('{"title": "Fix the bug"}\n')
    return home


@pytest.mark.parametrize("name", ["basic_interactions", "basic"])
def test_an_openhands_events_folder_is_one_session(
    name: str, capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    """A conversation OpenHands stored one event per file reviews as one session, equal to
    the same events in one file (each event file was a session of its own, and the event
    cache a copy of them); the cache and the metadata are skipped and named."""
    source = DATA / "openhands" / f"{name}.json"
    home = _openhands_home(tmp_path, source)
    code, out, err = run(capsys, "review", home, "--workers", 1)
    assert code == 0, err
    assert err.splitlines() == [
        f"histtrim: skipped 1 file OpenHands keeps as a cache of its events in {home} "
        "(event_cache/): not sessions",
        f"histtrim: skipped 1 file in {home} that no agent's reader takes for a session "
        "(sessions/abc123/metadata.json): the folder holds an agent's sessions; name a "
        "plain history file to review it"]
    assert run(capsys, "review", source, "--workers", 1)[1] == out
    assert re.search(r"^sessions +1$", out, re.M)


def test_a_garbled_event_file_is_one_garbled_event(tmp_path: Path) -> None:
    """One event file cut short is counted as garbled; the events after it still read."""
    events = json.loads((DATA / "openhands" / "basic_interactions.json").read_text())
    folder = tmp_path / "s1" / "events"
    folder.mkdir(parents=True)
    for event in events:
        text = json.dumps(event, indent=2)
        (folder / f"{event['id']}.json").write_text(
            text[: len(text) // 2] if event is events[1] else text)
    name, data = session_source(str(folder))
    read = reader("openhands")(data, name)
    assert (name, len(data.splitlines())) == ("s1", len(events))
    assert read.skipped.get("garbled") == 1
    assert read.parts and read.parts[0].records
