"""What the `histtrim` command says about itself: a version, each command's own usage and
description, help for every option, and counts in good English."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from histtrim.cli import build_parser, main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "coding_session.json"


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.startswith("histtrim ") and out.split()[1][0].isdigit()


def test_trim_without_a_limit_shows_trims_usage(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "trim", EXAMPLE)
    assert code == 2
    assert err.startswith("usage: histtrim trim ")
    assert err.rstrip().endswith("histtrim trim: error: one of --budget, --max-turns or "
                                 "--config is required")


def test_every_command_and_option_is_described() -> None:
    """`histtrim CMD --help` opens with what CMD does, and every option says what it is."""
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    undescribed, unexplained = [], []
    for name, command in commands.items():
        if not command.description:
            undescribed.append(name)
        for action in command._actions:
            if action.option_strings and not action.help:
                unexplained.append(f"{name} {action.option_strings[0]}")
    assert not undescribed
    assert not unexplained


def test_one_turn_is_singular(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    session = tmp_path / "one.json"
    session.write_text(json.dumps([{"role": "user", "content": "hi"}]), encoding="utf-8")
    code, out, _ = run(capsys, "estimate", session)
    assert code == 0
    assert "total: 1 turn, 1 message, " in out and " 1 turns" not in out


def test_the_cap1_note_follows_the_limits(capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    """One parenthesis, then the CAP-1 note: not "kept whole (CAP-1) (budget 1)"."""
    session = tmp_path / "one.json"
    session.write_text(json.dumps([{"role": "user", "content": "a long request " * 20}]),
                       encoding="utf-8")
    code, _, err = run(capsys, "trim", session, "--budget", 1, "-o", tmp_path / "out.json")
    assert code == 0
    assert err.rstrip().endswith("(budget 1); the newest turn alone is over the budget of "
                                 "1 token and is kept whole (CAP-1)")


def test_an_orphan_tool_row_is_warned_about(capsys: pytest.CaptureFixture[str],
                                            tmp_path: Path) -> None:
    """A tool row whose call is not in the history, or a call with no result: `trim` says
    what `validate_tool_pairing` says about the rows written, on stderr (exit status 0)."""
    rows = [
        {"role": "user", "content": "hi"},
        {"role": "tool", "tool_call_id": "c1", "content": "result"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c2", "type": "function", "function": {"name": "f", "arguments": "{}"}},
        ]},
        {"role": "assistant", "content": "ok"},
    ]
    session = tmp_path / "orphan.json"
    session.write_text(json.dumps(rows), encoding="utf-8")
    code, _, err = run(capsys, "trim", session, "--max-turns", 5)
    assert code == 0
    assert err == (
        f"histtrim: nothing to trim in {session}: 1 turn, 46 tokens (max turns 5)\n"
        "histtrim: warning: row 1: a result not right after the assistant row that issued "
        "its id (tool_call_id='c1')\n"
        "histtrim: warning: row 2: a call no tool row right after it answers "
        "(tool_call_id='c2')\n"
    )


def test_pairing_warnings_are_capped(capsys: pytest.CaptureFixture[str],
                                     tmp_path: Path) -> None:
    rows = [{"role": "user", "content": "hi"}] + [
        {"role": "tool", "tool_call_id": f"c{k}", "content": "r"} for k in range(7)
    ]
    session = tmp_path / "orphans.jsonl"
    session.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code, _, err = run(capsys, "trim", session, "--max-turns", 5)
    assert code == 0
    warnings = [line for line in err.splitlines() if line.startswith("histtrim: warning:")]
    assert warnings == [
        f"histtrim: warning: row {k + 1}: a result not right after the assistant row that "
        f"issued its id (tool_call_id='c{k}')"
        for k in range(5)
    ] + ["histtrim: warning: 2 more pairing problems not shown"]


def test_pairing_warnings_name_rows_of_the_whole_output(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The check runs a turn at a time; the row numbers are still the output's."""
    rows = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
        {"role": "tool", "tool_call_id": "c9", "content": "r"},
    ]
    session = tmp_path / "late.jsonl"
    session.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code, _, err = run(capsys, "trim", session, "--max-turns", 5)
    assert code == 0
    assert err.splitlines()[1:] == [
        "histtrim: warning: row 4: a result not right after the assistant row that issued "
        "its id (tool_call_id='c9')"
    ]
