"""Issue 20: `histtrim review` on hostile options and files: a one-line error (or a report),
never a traceback."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from histtrim import ChatMessage
from histtrim.cli import main
from histtrim.policy import Policy
from histtrim.review.compare import Review
from histtrim.review.replay import ReplaySettings, SessionReplay
from histtrim.review.report import (
    MAX_SESSIONS_DRAWN,
    drawn_sessions,
    per_session_figure,
    report_html,
)
from histtrim.review.sessions import session_from_items

ROOT = Path(__file__).resolve().parent.parent
SESSION = ROOT / "examples" / "sessions" / "support-chat-1.json"
DEEP_TOML = "x = " + "[" * 3_000 + "]" * 3_000 + "\n"
DEEP_JSON = '{"x": ' + "[" * 3_000 + "]" * 3_000 + "}"


def _one_line(code: int, err: str, *names: str) -> None:
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("histtrim: error: "), err
    assert all(name in err for name in names), err


@pytest.mark.parametrize("option", ["--policy", "--true-policy", "--config"])
@pytest.mark.parametrize(("suffix", "text"), [(".toml", DEEP_TOML), (".json", DEEP_JSON)])
def test_review_reads_configs_with_the_depth_guard(
    option: str, suffix: str, text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 20 item 12: `review --policy/--true-policy/--config` read their file with the
    one config reader `explain` and `trim` use (a RecursionError traceback before)."""
    deep = tmp_path / f"deep{suffix}"
    deep.write_text(text)
    extra = ["--agent", "a"] if option == "--config" else []
    code = main(["review", str(SESSION), option, str(deep), *extra, "--workers", "1"])
    _one_line(code, capsys.readouterr().err, str(deep), "nested too deeply")


@pytest.mark.parametrize(
    "option", ["--window", "--budget", "--max-tool-iterations", "--true-window", "--workers"]
)
def test_review_refuses_numbers_past_64_bits(
    option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 20 item 13: a count above 2**64-1 is argparse's one-line usage error (was a
    pydantic traceback)."""
    code = main(["review", str(SESSION), option, str(2**64)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "expected a whole number" in err and "Traceback" not in err


def test_review_with_a_window_of_one(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 20 item 13: `--window 1` replays (its default true window, 3/4 of it, is at
    least 1 token; it was 0 and a validation traceback)."""
    code = main(["review", str(SESSION), "--window", "1", "--workers", "1"])
    assert code == 0, capsys.readouterr().err


@pytest.mark.parametrize("restored", [-1, True, 2.0])
def test_restored_turns_must_be_a_whole_number_from_zero(
    restored: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 20 item 9: `"restored_turns": -1` counted from the end (a 2-turn session
    replayed 3 turns); it is refused, naming the field."""
    rows = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}] * 2
    session = tmp_path / "s.json"
    session.write_text(json.dumps({"messages": rows, "restored_turns": restored}))
    code = main(["review", str(session), "--workers", "1"])
    _one_line(code, capsys.readouterr().err, "restored_turns")
    items = [ChatMessage.user("a"), ChatMessage.assistant("b")] * 2
    with pytest.raises(ValueError, match="restored_turns"):
        session_from_items("s", items, restored_turns=-1)


def test_review_html_shows_file_names_literally(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 20 item 14: a session or policy named `$\\frac$` is shown as text in the
    report's figures (the cache figure's labels too), never parsed as mathtext (no report was
    written)."""
    pytest.importorskip("matplotlib")
    shutil.copy(SESSION, tmp_path / "a$\\frac$.json")
    policy = tmp_path / "p$\\frac$.toml"
    policy.write_text('reactive_target = "1/2"\n')
    report = tmp_path / "report.html"
    code = main(
        [
            "review",
            str(tmp_path / "a$\\frac$.json"),
            "--policy",
            str(policy),
            "--workers",
            "1",
            "--html",
            str(report),
            "--cache",
            "anthropic",
            "--budget",
            "16000",  # above the true window: the policies differ, the session is named
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert "a$\\frac$" in report.read_text()


def test_dask_help_says_the_cluster_must_be_trusted(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 20 (worth fixing): `--dask` unpickles what the scheduler sends; `--help` says so."""
    assert main(["review", "--help"]) == 0
    assert "cluster you trust" in " ".join(capsys.readouterr().out.split())


def test_review_html_into_a_symlink_loop_says_cannot_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 20 item 5: the report's writer is the one writer; a loop is "cannot write"."""
    pytest.importorskip("matplotlib")
    loop = tmp_path / "a"
    loop.symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(loop)
    code = main(["review", str(SESSION), "--workers", "1", "--html", str(loop)])
    err = capsys.readouterr().err.splitlines()[-1]
    assert code == 2 and "cannot write" in err and str(loop) in err


# Issue 31 §5 and issue 30 items 13 and 16 (round three).

SESSIONS = ROOT / "examples" / "sessions"


def _replay(name: str, label: str, trims: int) -> SessionReplay:
    return SessionReplay(
        session=name, policy=label, turns=3, calls=3, tokens=(10, 20, 30),
        true_tokens=(10, 20, 30), token_trims=trims, turn_limit_trims=0, dropped_turns=trims,
        dropped_messages=2 * trims, reactive_retries=0, model_refusals=0, capacity_refusals=0,
        failed_turns=0, kept_turns=3, trace=(),
    )


def _review(sessions: int) -> Review:
    rows = tuple(
        (_replay(f"s{i}", "spec", i % 3), _replay(f"s{i}", "other", i % 7))
        for i in range(sessions)
    )
    return Review(("spec", "other"), (Policy(), Policy()), rows)


def test_review_html_stays_bounded_at_any_corpus_size() -> None:
    """Issue 30 item 13: each per-session figure was 0.9 x sessions + 2 inches wide (1,000
    sessions: about 1 GB). Now at most MAX_SESSIONS_DRAWN sessions are drawn, the ones where
    the policies differ most, and the figure's title and alt text say so."""
    pytest.importorskip("matplotlib")
    small, large = _review(MAX_SESSIONS_DRAWN), _review(10 * MAX_SESSIONS_DRAWN)
    metrics = ["token_trims", "dropped_turns"]
    width = per_session_figure(small, metrics, "t").get_figwidth()
    assert per_session_figure(large, metrics, "t").get_figwidth() == width
    drawn = drawn_sessions(large, metrics)
    assert len(drawn) == MAX_SESSIONS_DRAWN and drawn == sorted(drawn)
    spread = [abs(i % 3 - i % 7) for i in range(10 * MAX_SESSIONS_DRAWN)]
    assert min(spread[i] for i in drawn) >= max(
        s for i, s in enumerate(spread) if i not in set(drawn)
    )
    page = report_html(large, ReplaySettings())
    assert len(page) < 2 * len(report_html(small, ReplaySettings()))
    assert f"the {MAX_SESSIONS_DRAWN} of {10 * MAX_SESSIONS_DRAWN} sessions where the policies" \
        " differ most" in page


def test_review_html_figures_are_described_and_zero_panels_start_at_zero() -> None:
    """Issue 31 §5: every figure's alt was "figure N"; an all-zero panel got a -0.06..0.06
    axis; stacked panels' long y-labels ran into each other; a long line scrolled."""
    pytest.importorskip("matplotlib")
    review = _review(4)
    page = report_html(review, ReplaySettings())
    alts = re.findall(r'alt="([^"]*)"', page)
    assert len(alts) == 3 and not any(re.fullmatch(r"figure \d+", alt) for alt in alts)
    assert "one bar per policy (spec, other)" in alts[0] and "Box plots" in alts[2]
    assert "white-space:pre-wrap" in page and "overflow:auto" not in page
    figure = per_session_figure(review, ["reactive_retries", "capacity_refusals"], "t")
    for axes in figure.axes:
        assert axes.get_ylim()[0] == 0 and axes.get_ylim()[1] >= 1
        assert all(len(line) <= 18 for line in axes.get_ylabel().split("\n"))


def test_review_prints_its_settings_and_budget_trims_apart_from_overflow_retries(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 31 §5: the defaults put the hidden window (12,000) below the budget (16,000), so
    every "token budget" trim was an overflow retry, and the table never said which window,
    budget or cache it assumed."""
    code = main(["review", str(SESSIONS / "coding-agent-1.jsonl"), "--workers", "1"])
    out = capsys.readouterr().out
    assert code == 0
    for line in ("declared window  16000 tokens", "true window      12000 tokens",
                 "token budget     8000 tokens", "prompt cache     none"):
        assert line in out
    assert int(re.search(r"^trims: token budget \(RUN-1\)\s+(\d+)$", out, re.M)[1]) > 0
    main(["review", str(SESSIONS / "coding-agent-1.jsonl"), "--workers", "1",
          "--budget", "16000"])
    out = capsys.readouterr().out
    assert re.search(r"^trims: token budget \(RUN-1\)\s+0$", out, re.M)
    assert int(re.search(r"^reactive retries\s+(\d+)$", out, re.M)[1]) > 0


def test_review_skips_what_is_not_a_session_with_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 31 §5: `histtrim review examples/sessions/*` failed on a script in the folder."""
    shutil.copy(SESSION, tmp_path / "a.json")
    (tmp_path / "build.py").write_text("print('not a session')\n")
    code = main(["review", str(tmp_path / "a.json"), str(tmp_path / "build.py"),
                 "--workers", "1"])
    out, err = capsys.readouterr()
    assert code == 0 and re.search(r"^sessions\s+1$", out, re.M)
    assert err == f"histtrim: skipped {tmp_path / 'build.py'}: not a session file " \
        "(.json or .jsonl)\n"


def test_review_names_reach_the_terminal_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 30 item 16: the cache model's name and source, policy labels and differing
    session names reached the terminal raw."""
    session = tmp_path / "s\x1b[2J.json"
    shutil.copy(SESSION, session)
    policy = tmp_path / "p\x1b[31m.toml"
    policy.write_text('reactive_target = "1/2"\n')
    cache = tmp_path / "cache.toml"
    cache.write_text('name = "c\\u001b]0;x\\u0007"\nsource = "s\\u202e"\nmin_prefix = 1024\n'
                     'granularity = 1\nread = "1/10"\nwrite = "5/4"\n')
    code = main(["review", str(session), "--policy", str(policy), "--cache", str(cache),
                 "--budget", "16000", "--workers", "1"])
    out = capsys.readouterr().out
    assert code == 0
    assert "p\\x1b[31m" in out and "c\\x1b]0;x\\x07" in out and "s\\u202e" in out
    assert "s\\x1b[2J" in out  # the session differs: its name is listed
    assert not any(c in out for c in "\x1b\x07\u202e")


def _table_value(out: str, row: str) -> int | None:
    """The first column of a review table row, or None when the table has no such row."""
    found = re.search(rf"^{re.escape(row)}\s+(\d+)", out, flags=re.MULTILINE)
    return None if found is None else int(found.group(1))


def test_review_reports_turns_the_tool_iteration_limit_cuts_short(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 38 item 10: 3 of the 5 shipped SWE-agent sessions record turns of more tool
    rounds than `--max-tool-iterations` (10): the replay ended them early, made 44 of the 49
    recorded calls and still said "failed turns 0". Now such a turn is a failed turn, with
    its own rows; by default the replay runs as many rounds as a turn recorded, so every
    recorded call is replayed."""
    from histtrim.cli.review import load_sessions

    folder = ROOT / "examples" / "real" / "swe-agent"
    sessions = load_sessions([str(folder)])
    recorded = sum(len(turn.steps) for s in sessions for turn in s.turns)
    long_turns = [len(turn.steps) for s in sessions for turn in s.turns if len(turn.steps) > 10]
    assert long_turns  # the corpus has turns longer than the runtime's default
    assert main(["review", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "tool rounds      10 per turn, or as many as a turn recorded" in out
    assert _table_value(out, "provider calls") == recorded
    assert _table_value(out, "failed turns") == 0
    assert _table_value(out, "  of which cut short (tool rounds)") is None

    assert main(["review", str(folder), "--max-tool-iterations", "10"]) == 0
    out = capsys.readouterr().out
    unreplayed = sum(steps - 11 for steps in long_turns)  # 10 rounds, then the final summary
    assert _table_value(out, "failed turns") == len(long_turns)
    assert _table_value(out, "  of which cut short (tool rounds)") == len(long_turns)
    assert _table_value(out, "recorded calls not replayed") == unreplayed
    assert _table_value(out, "provider calls") == recorded - unreplayed
