"""USAGE-8: the hidden prefix calibrated (issue 48, item 1): a request's count as a fixed
prefix the rows do not show plus the rows' estimate times a ratio, fitted on the session's
own reports; only the rows' part is scaled. The reference's single ratio stays the default."""

from __future__ import annotations

import json
from fractions import Fraction

from histtrim import estimate_history_tokens, trim_to_reported_budget_with_crumb
from histtrim.events import HistoryTrimmed, TrimReason
from histtrim.messages import ChatMessage
from histtrim.policy import SPEC, Policy
from histtrim.reported_usage import HiddenPrefix, fit_hidden_prefix

CALIBRATED = Policy(hidden_prefix="calibrated")


def history(turns: int) -> list[ChatMessage]:
    rows = [ChatMessage.system("be brief")]
    for i in range(turns):
        rows += [ChatMessage.user(f"question {i} " + "q" * 400),
                 ChatMessage.assistant(f"answer {i} " + "a" * 400)]
    return rows


def test_usage_8_first_report_minus_its_estimate() -> None:
    """One report: the prefix is the report minus its estimate (at least the schemas the
    caller knows), the rows counted 1:1; a report below its estimate has no prefix."""
    assert fit_hidden_prefix([(1000, 24_000)]) == HiddenPrefix(23_000, Fraction(1))
    assert fit_hidden_prefix([(1000, 1500)], 800) == HiddenPrefix(800, Fraction(7, 10))
    assert fit_hidden_prefix([(1000, 800)]) == HiddenPrefix(0, Fraction(4, 5))
    assert fit_hidden_prefix([]) is None and fit_hidden_prefix([(0, 5)]) is None


def test_usage_8_the_fit_is_robust_to_a_cut_that_moves_the_prefix() -> None:
    """Pairs on `20,000 + 1.4 x estimate`, one of them after a cut that moved the prefix by
    3,000: the median of the slopes and of the intercepts ignores it."""
    pairs = [(e, 20_000 + 7 * e // 5) for e in (1_000, 5_000, 9_000, 13_000, 17_000)]
    pairs.insert(3, (4_000, 23_000 + 7 * 4_000 // 5))
    fitted = fit_hidden_prefix(pairs)
    assert fitted is not None
    assert fitted.ratio == Fraction(7, 5) and fitted.prefix == 20_000
    assert fitted.count(10_000) == 34_000
    # (48,000 - 20,000 - margin) / 1.4: the moved pair is the fit's error, 3,000, bounded
    # by 1/8 of the smallest report (21,400)
    assert fitted.margin == 21_400 // 8
    assert fitted.rows_budget(48_000) == (48_000 - 20_000 - 2_675) * 5 // 7
    assert fitted.rows_budget(15_000) == 1  # the prefix alone is over: nothing fits
    # the same pair as the newest report: the fit stays, its undercount is kept whole
    newest = fit_hidden_prefix([*pairs[:3], *pairs[4:], pairs[3]])
    assert newest == HiddenPrefix(20_000, Fraction(7, 5), 3_000)


def test_usage_8_the_newest_report_s_undercount_is_never_bounded() -> None:
    """Fifteen reports on `20,000 + 1.4 x estimate`, then the client attaches 6,000 tokens the
    rows do not show (a changed file) and every later request carries them. Bounded to 1/8
    of the smallest report (2,675), the margin let the next request be counted 3,324 over a
    48,000 budget; the newest undercount kept whole holds it within."""
    pairs = [(e, 20_000 + 7 * e // 5) for e in range(1_000, 16_000, 1_000)]
    shifted = (16_000, 26_000 + 7 * 16_000 // 5)
    fitted = fit_hidden_prefix([*pairs, shifted])
    assert fitted == HiddenPrefix(20_000, Fraction(7, 5), 6_000)
    rows = fitted.rows_budget(48_000)
    assert rows == (48_000 - 20_000 - 6_000) * 5 // 7
    assert 26_000 + 7 * rows // 5 <= 48_000  # the next request, attachment and all
    bounded = HiddenPrefix(20_000, Fraction(7, 5), 21_400 // 8).rows_budget(48_000)
    assert 26_000 + 7 * bounded // 5 - 48_000 == 3_324
    # a report at the new level again: the newest undercount is the shift's, still whole
    again = fit_hidden_prefix([*pairs, shifted, (16_500, 26_000 + 7 * 16_500 // 5)])
    assert again is not None and again.margin == 6_000
    # a report on the old line: the newest is no undercount; the older ones, bounded, stay
    # (the 16 newest read: the smallest is now 22,800)
    back = fit_hidden_prefix([*pairs, shifted, (17_000, 20_000 + 7 * 17_000 // 5)])
    assert back == HiddenPrefix(20_000, Fraction(7, 5), 22_800 // 8)


def test_usage_8_the_rows_budget_keeps_the_fit_s_own_error_free() -> None:
    """Reports scattered about `20,000 + 1.4 x estimate` (every third 90 above, the others
    40 below): the median fit undercounts a third of its reports by 130. The margin is that
    upper envelope, so a request held to the rows' budget is counted within the budget
    wherever it falls on the scatter. A stray report widens it, never the fit, and never
    past 1/8 of the smallest report."""
    pairs = [(e, 20_000 + 7 * e // 5 + (90 if e % 3000 == 0 else -40))
             for e in range(1_000, 17_000, 1_000)]
    fitted = fit_hidden_prefix(pairs)
    assert fitted == HiddenPrefix(19_960, Fraction(7, 5), 130)
    assert all(r <= fitted.count(e) + fitted.margin for e, r in pairs)
    rows = fitted.rows_budget(48_000)
    assert rows == (48_000 - 19_960 - 130) * 5 // 7
    assert 20_000 + 7 * rows // 5 + 90 <= 48_000  # the worst of the scatter still fits
    # a prefix moved by 3,000 once, then a report as before: the fit stays, the margin widens
    # to its bound, 1/8 of the smallest report (of the 16 newest read: 24,290)
    tail = (16_000, 20_000 + 7 * 16_000 // 5 - 40)
    stray = fit_hidden_prefix([*pairs, (4_000, 23_000 + 7 * 4_000 // 5), tail])
    assert stray == HiddenPrefix(19_960, Fraction(7, 5), 24_290 // 8)
    assert fit_hidden_prefix([*pairs, (4_000, 90_000), tail]) == stray
    wild = fit_hidden_prefix([(1000, 2000), (2000, 3000), (3000, 40_000), (4000, 40_000),
                              (5000, 6000)])
    assert wild is not None and wild.margin == 2000 // 8  # at most 1/8 of the smallest
    assert HiddenPrefix(100, Fraction(1)).rows_budget(1_000) == 900  # margin 0 by default


def test_usage_8_only_the_rows_part_is_scaled() -> None:
    """Reported 24,000 + 2 x rows against a 30,000 budget: the single ratio scales the whole
    budget and keeps far too much of the rows (over again); the calibrated prefix keeps rows
    whose count fits, and the event records the prefix and the ratio."""
    rows = history(40)
    estimated = estimate_history_tokens(rows)
    reports = [(estimate_history_tokens(rows[:k]), 24_000 + 2 * estimate_history_tokens(
        rows[:k])) for k in (3, 11, 21)]
    reported = 24_000 + 2 * estimated
    single = trim_to_reported_budget_with_crumb(rows, 30_000, reported, estimated)
    fitted = trim_to_reported_budget_with_crumb(rows, 30_000, reported, estimated,
                                                policy=CALIBRATED, reports=reports)
    kept_single = estimate_history_tokens(single.history)
    kept_fitted = estimate_history_tokens(fitted.history)
    assert 24_000 + 2 * kept_single > 30_000  # the single ratio: over the budget again
    assert 24_000 + 2 * kept_fitted <= 30_000
    event = fitted.event
    assert event is not None and event.reason == TrimReason.TOKEN_BUDGET
    assert event.hidden_prefix == 24_000 and event.ratio == "2"
    assert event.tokens_after == 24_000 + 2 * kept_fitted
    assert single.event is not None and single.event.hidden_prefix is None


def test_usage_8_the_event_reads_as_before_when_unset() -> None:
    """`hidden_prefix` and `ratio` are left out of every dump while unset."""
    plain = HistoryTrimmed(reason=TrimReason.TOKEN_BUDGET, dropped_messages=2, kept_turns=1,
                           tokens_before=10, tokens_after=5, budget=8)
    assert json.loads(plain.to_json()) == {
        "type": "history_trimmed", "reason": "token_budget", "dropped_messages": 2,
        "kept_turns": 1, "tokens_before": 10, "tokens_after": 5, "budget": 8,
        "description": "context token budget exceeded"}
    assert "hidden_prefix" not in repr(plain)
    fitted = plain.model_copy(update={"hidden_prefix": 23_000, "ratio": "7/5"})
    assert json.loads(fitted.to_json())["hidden_prefix"] == 23_000


def test_usage_8_off_by_default() -> None:
    assert SPEC.hidden_prefix == "off"
    rows = history(10)
    estimated = estimate_history_tokens(rows)
    a = trim_to_reported_budget_with_crumb(rows, 2_000, 3 * estimated, estimated)
    b = trim_to_reported_budget_with_crumb(rows, 2_000, 3 * estimated, estimated,
                                           reports=[(100, 50_000)])
    assert a == b


def test_usage_8_histtrim_trim_fits_the_prefix_on_the_file_s_reports(
        tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """`histtrim trim --policy` with `hidden_prefix = "calibrated"` on a shipped Claude Code
    session: the prefix is fitted on every reply's recorded usage, the event records it, and
    the kept rows' count by that fit is within the budget."""
    from pathlib import Path

    from histtrim.cli import main

    session = (Path(__file__).resolve().parent.parent / "examples" / "real" / "claude-code"
               / "m-thisness-21037e11.jsonl")
    policy = tmp_path / "policy.toml"
    policy.write_text('hidden_prefix = "calibrated"\n', encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["trim", str(session), "--format", "anthropic", "--budget", "60000",
                 "--policy", str(policy), "-o", str(out)]) == 0
    events = [json.loads(line) for line in capsys.readouterr().err.splitlines()
              if line.startswith("{")]
    assert len(events) == 1
    event = events[0]
    assert event["counter"] == "reported_usage" and event["hidden_prefix"] > 0 and event["ratio"]
    assert event["tokens_after"] <= 60_000 < event["tokens_before"]
    assert main(["trim", str(session), "--format", "anthropic", "--budget", "60000",
                 "-o", str(out)]) == 0
    single = [json.loads(line) for line in capsys.readouterr().err.splitlines()
              if line.startswith("{")]
    assert "hidden_prefix" not in single[0]
