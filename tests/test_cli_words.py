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
