"""`histtrim trim`, `estimate` and `review` on agents' own session files, told apart by
their content: the request the agent would send, the recorded input beside the estimate,
and a review whose window comes from the recorded model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from histtrim.adapters.claude_code import read_session as read_claude
from histtrim.adapters.codex import read_session as read_codex
from histtrim.cli import main

DATA = Path(__file__).parent / "data" / "agent_sessions"
CLAUDE = DATA / "claude-code" / "vibe-claude-code.jsonl"
CODEX = DATA / "codex" / "vibe-codex.jsonl"


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_estimate_prints_each_recorded_call_beside_the_estimate(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "estimate", CODEX)
    assert code == 0
    assert "a Codex CLI session" in err and "OpenAI request" in err
    calls = read_codex(CODEX.read_bytes(), "x").parts[-1].calls
    turns = [line.split() for line in out.split("total:", 1)[0].splitlines()[1:]]
    lines = [int(cells[1]) for cells in turns]  # one message a line: a line names one
    assert lines[0] == 2 and lines == sorted(set(lines))
    table = out.split("recorded calls:", 1)[1].splitlines()[2:]
    assert [int(line.split()[2]) for line in table] == [c.input_tokens for c in calls]
    assert all(int(line.split()[3]) > 0 for line in table)


def test_trim_writes_the_anthropic_request_and_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    target = tmp_path / "request.json"
    code, _, err = run(capsys, "trim", CLAUDE, "--budget", 20_000, "-o", target)
    assert code == 0
    assert "wrote the Anthropic request it would send next" in err
    body = json.loads(target.read_text())
    part = read_claude(CLAUDE.read_bytes(), "x").parts[-1]
    assert body["model"] == part.calls[-1].model
    assert 0 < len(body["messages"]) < len(part.records)
    assert body["messages"][-1] == part.records[-1]
    assert not any("usage" in m for m in body["messages"])


def test_trim_keeps_a_request_within_the_budget_whole(
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    target = tmp_path / "request.json"
    code, _, _ = run(capsys, "trim", CODEX, "--budget", 10**9, "--ignore-usage", "-o", target)
    assert code == 0
    body = json.loads(target.read_text())
    assert body["messages"] == list(read_codex(CODEX.read_bytes(), "x").parts[-1].records)


def test_review_of_a_folder_takes_the_recorded_model_window_and_usage(
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    shutil.copy(CLAUDE, folder / "one.jsonl")
    shutil.copy(CLAUDE, folder / "two.jsonl")
    # a project folder also holds files with no conversation: reviewed as empty, not refused
    (folder / "summary.jsonl").write_text(
        '{"type":"summary","summary":"Go version fix","leafUuid":"u1"}\n')
    (folder / "snapshot.jsonl").write_text(
        '{"type":"file-history-snapshot","messageId":"m","snapshot":{},'
        '"isSnapshotUpdate":false}\n')
    code, out, _ = run(capsys, "review", folder, "--workers", 1)
    assert code == 0
    assert "window: 200000 tokens, claude-sonnet-4-20250514's (the recorded model)" in out
    assert "declared window  200000 tokens" in out
    calls = len(read_claude(CLAUDE.read_bytes(), "x").parts[0].calls)
    assert f"recorded usage (2 of 4 sessions, {2 * calls} calls)" in out
