"""Issue 20: `histtrim review` on hostile options and files: a one-line error (or a report),
never a traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from histtrim import ChatMessage
from histtrim.cli import main
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
