"""USAGE-7: one rule for what a report is worth, on every path that reads one (issue 46,
items 3 and 4): a report far above its request's estimate is refused with a warning, and a
report kept by a trim (it counts the rows the trim dropped) is no report for the trimmed
rows, so `histtrim trim` on its own output at the same budget drops nothing more."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from histtrim import estimate_history_tokens
from histtrim.adapters.openai import from_openai
from histtrim.cli import main
from histtrim.policy import SPEC, Policy
from histtrim.reported_usage import refused_report, usable_report

ROOT = Path(__file__).resolve().parent.parent
CLAUDE = ROOT / "examples" / "real" / "claude-code" / "m-thisness-21037e11.jsonl"


def transcript(turns: int, usage: dict[str, Any] | None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "be brief"}]
    for i in range(turns):
        out += [{"role": "user", "content": f"question {i} " + "q" * 300},
                {"role": "assistant", "content": f"answer {i} " + "a" * 300}]
    if usage is not None:
        out[-1] = {**out[-1], "usage": usage}
    return out


def write(path: Path, messages: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(m) + "\n" for m in messages), encoding="utf-8")
    return path


def lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_usage_7_the_ceiling_is_the_policy_s() -> None:
    """USAGE-7: refused above `ceiling * (estimate + schemas) + headroom` (8x + 131,072 by
    default, measured against every real report in examples/real); a tighter policy refuses
    sooner; the rule names what it refused."""
    assert refused_report(8 * 1000 + 131_072, 1000) is None
    reason = refused_report(8 * 1000 + 131_073, 1000)
    assert reason is not None and "139,073" in reason and "USAGE-7" in reason
    assert refused_report(10**30, 1000) == (
        "a usage report of about 10^30 input tokens is refused: a request estimated at "
        "1,000 tokens counts at most 139,072 (USAGE-7)")
    tight = Policy(reported_ratio_ceiling="2", reported_headroom_tokens=0)
    assert refused_report(2001, 1000, policy=tight) is not None
    assert refused_report(2000, 900, 100, policy=tight) is None
    warned: list[str] = []
    assert usable_report(10**30, 1000, warn=warned.append) is None and len(warned) == 1
    assert usable_report(5000, 1000, describes=False, warn=warned.append) is None
    assert usable_report(5000, 1000, warn=warned.append) == 5000 and len(warned) == 1
    with pytest.raises(ValueError, match="reported_ratio_ceiling"):
        Policy(reported_ratio_ceiling="1/2")


def test_usage_7_cli_refuses_a_report_of_ten_to_the_thirty(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 46 item 3: a 10^30-token report used to drop 6 of 7 turns and print 31-digit
    figures; it is refused with a warning and the estimate (which fits) drops nothing."""
    source = write(tmp_path / "s.jsonl", transcript(7, {"prompt_tokens": 10**30}))
    budget = estimate_history_tokens(from_openai(transcript(7, None))) + 100
    out = tmp_path / "out.jsonl"
    assert main(["trim", str(source), "--format", "openai", "--budget", str(budget),
                 "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "history_trimmed" not in err
    assert "histtrim: warning: a usage report of about 10^30 input tokens is refused" in err
    assert "000000000000" not in err
    assert lines(out) == lines(source)


def test_usage_7_agent_refuses_a_report_of_ten_to_the_thirty(
        caplog: pytest.LogCaptureFixture) -> None:
    """The same rule on the library's read path (`usable_report`, logged)."""
    with caplog.at_level(logging.WARNING, logger="histtrim.reported_usage"):
        assert usable_report(10**30, 10) is None
    assert "refused" in caplog.text


def test_usage_7_trim_of_its_own_output_is_idempotent(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 46 item 4: the kept reply's usage counts the request before the trim; applied
    again to the trimmed rows it dropped more at each pass (11 -> 6 -> 3 -> 1)."""
    rows = transcript(11, None)
    estimated = estimate_history_tokens(from_openai(rows[:-1]))
    source = write(tmp_path / "s.jsonl", transcript(11, {"prompt_tokens": 2 * estimated}))
    budget = str(estimated)
    first, second = tmp_path / "1.jsonl", tmp_path / "2.jsonl"
    assert main(["trim", str(source), "--format", "openai", "--budget", budget,
                 "-o", str(first)]) == 0
    assert "history_trimmed" in capsys.readouterr().err
    assert lines(first) < lines(source)
    assert main(["trim", str(first), "--format", "openai", "--budget", budget,
                 "-o", str(second)]) == 0
    assert "history_trimmed" not in capsys.readouterr().err
    assert second.read_bytes() == first.read_bytes()


@pytest.mark.parametrize("budget", [40_000, 60_000])
def test_usage_7_trim_is_idempotent_on_a_shipped_claude_code_session(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], budget: int) -> None:
    """Issue 46 item 4 on examples/real/claude-code (the second pass dropped 97 more
    messages): the second pass at the same budget writes the same bytes."""
    first, second = tmp_path / "1.jsonl", tmp_path / "2.jsonl"
    assert main(["trim", str(CLAUDE), "--format", "anthropic", "--budget", str(budget),
                 "-o", str(first)]) == 0
    assert "history_trimmed" in capsys.readouterr().err
    assert main(["trim", str(first), "--format", "anthropic", "--budget", str(budget),
                 "-o", str(second)]) == 0
    assert "history_trimmed" not in capsys.readouterr().err
    assert second.read_bytes() == first.read_bytes()


def test_spec_policy_keeps_the_reference_ceiling_off_the_library_function() -> None:
    """The reference's own function takes the report as given (its vector trims at 5000x):
    USAGE-7 is applied where a report is read, never inside `trim_to_reported_budget`."""
    from histtrim import trim_to_reported_budget
    from histtrim.messages import ChatMessage
    history = [ChatMessage.system("s"), ChatMessage.user("old " + "x" * 4000),
               ChatMessage.assistant("a1"), ChatMessage.user("recent"),
               ChatMessage.assistant("a2")]
    estimated = estimate_history_tokens(history)
    assert refused_report(estimated * 5000, estimated, policy=SPEC) is not None
    assert trim_to_reported_budget(history, estimated * 50, estimated * 5000, estimated).trimmed


def test_usage_7_trim_anthropic_with_usage_is_idempotent() -> None:
    """The library's `trim_anthropic(usage=True)` reads the same rule (`recorded_report`):
    its own output, trimmed again at the same budget, keeps every message."""
    from histtrim.adapters.anthropic import trim_anthropic

    messages = [json.loads(line) for line in CLAUDE.read_text(encoding="utf-8").splitlines()]
    body, first = trim_anthropic({"messages": messages}, budget_tokens=40_000, usage=True)
    assert first.trimmed
    again, second = trim_anthropic(body, budget_tokens=40_000, usage=True)
    assert not second.trimmed and again == body
