"""The prompt-cache model of the review (`histtrim.review.cache`): the cached part of each call
is the longest common prefix with the previous billed request, then the provider's minimum
and granularity; hand-computed cases, a trim in the middle of a session among them (KEEP-1,
SEEN-1: the breadcrumb takes the dropped turn's place, so the prefix breaks there)."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
from pydantic import ValidationError

from histtrim.cli import main
from histtrim.policy import Policy
from histtrim.review.cache import (
    ANTHROPIC,
    ANTHROPIC_1H,
    GEMINI,
    OPENAI,
    PROVIDERS,
    CacheModel,
    Prompt,
    cache_model,
    common_prefix,
    price_call,
    price_calls,
    totals,
)
from histtrim.review.compare import run_review
from histtrim.review.replay import ReplaySettings
from histtrim.review.sessions import session_from_items
from livingspec.synth import generate_long

ROOT = Path(__file__).resolve().parent.parent
POLICIES = ROOT / "examples" / "policies"
LONG = ROOT / "examples" / "sessions" / "very-long-coding-agent.jsonl"

# tools, system, two turns' rows; later a third turn, then a trim drops the first turn and
# the breadcrumb takes its place
T, S, R1, R2, R3, CRUMB, R4, R5 = (
    ("tools", 600), ("system", 500), ("r1", 400), ("r2", 300), ("r3", 200), ("crumb", 10),
    ("r4", 100), ("r5", 50),
)
P1: Prompt = (T, S, R1, R2)
P2: Prompt = (T, S, R1, R2, R3)
P3: Prompt = (T, S, CRUMB, R2, R3, R4)  # after the trim
P4: Prompt = (*P3, R5)


def test_common_prefix_is_row_by_row() -> None:
    assert common_prefix(P1, P2) == 1800
    assert common_prefix(P2, P3) == 1100  # tools and system only: the crumb breaks it
    assert common_prefix((), P1) == 0
    # the same row priced differently (an image dispatched, then not) is another block
    assert common_prefix((T, ("r1", 1600)), (T, ("r1", 400))) == 600


def test_provider_granularity_and_minimum() -> None:
    assert ANTHROPIC.cacheable(1400) == 1400 and ANTHROPIC.cacheable(1023) == 0
    assert OPENAI.cacheable(1400) == 1024 + 2 * 128  # hits in 128-token steps
    assert OPENAI.cacheable(1024) == 1024 and OPENAI.cacheable(1151) == 1024
    # Gemini's implicit cache in steps of 2,048 (measured on the recorded mini-swe-agent runs)
    assert GEMINI.cacheable(2047) == 0 and GEMINI.cacheable(3000) == 2048
    assert GEMINI.cacheable(4096) == 4096


def test_one_call_by_hand() -> None:
    """Anthropic: 1,400 tokens read at 0.1, 100 written at 1.25."""
    call = price_call((*P1, ("x", 0)), (*P1, ("new", 100)), ANTHROPIC)
    assert (call.tokens, call.cached, call.written, call.uncached) == (1900, 1800, 100, 100)
    assert call.cost == Fraction(180) + Fraction(125)
    small = price_call(None, (("a", 900),), ANTHROPIC)  # below the minimum: plain input
    assert (small.cached, small.written, small.cost) == (0, 0, 900)
    openai = price_call(P1, P2, OPENAI)  # prefix 1,800 -> 1,792 cached at 0.5, 208 at 1
    assert (openai.cached, openai.written, openai.cost) == (1792, 208, 896 + 208)


def test_a_trim_in_the_middle_of_a_session() -> None:
    """Four calls; the third follows a trim. Anthropic: 2,250, 430, 872.5, 233.5."""
    calls = price_calls([P1, P2, P3, P4], ANTHROPIC)
    assert [c.tokens for c in calls] == [1800, 2000, 1710, 1760]
    assert [c.cached for c in calls] == [0, 1800, 1100, 1710]
    assert [c.written for c in calls] == [1800, 200, 610, 50]
    assert [c.cost for c in calls] == [2250, 430, Fraction(1745, 2), Fraction(467, 2)]
    summed = totals(calls)
    assert (summed.calls, summed.tokens, summed.cached) == (4, 7270, 4610)
    assert summed.cost == Fraction(3786)
    assert summed.relative_cost == pytest.approx(3786 / 7270)
    assert summed.cached_share == pytest.approx(4610 / 7270)
    # OpenAI: the trimmed call keeps only 1,024 of its 1,100 common tokens
    openai = price_calls([P1, P2, P3, P4], OPENAI)
    assert [c.cached for c in openai] == [0, 1792, 1024, 1664]
    assert [c.cost for c in openai] == [1800, 896 + 208, 512 + 686, 832 + 96]


def test_user_numbers_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "gpt5.toml"
    path.write_text(
        'name = "gpt-5"\nsource = "my invoice, 2025-11"\nmin_prefix = 1024\ngranularity = 128\n'
        'read = "1/10"\ninput_price_per_mtok = "1.25"\n'
    )
    model = cache_model(str(path))
    assert (model.read, model.write, model.input_price_per_mtok) == (
        Fraction(1, 10), 1, Fraction(5, 4)
    )
    assert totals(price_calls([P1], model)).money(model) == pytest.approx(1800 * 1.25 / 1e6)
    assert cache_model("anthropic") is ANTHROPIC
    assert cache_model("openai-gpt-5").read == Fraction(1, 10) == GEMINI.read
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nsource = "y"\nmin_prefix = 1\ngranularity = 0\nread = "2"\n')
    with pytest.raises(ValidationError) as caught:
        CacheModel.load(bad)
    assert [e["loc"][0] for e in caught.value.errors()] == ["granularity", "read"]


def test_replay_records_each_billed_request() -> None:
    """A long session: every billed request becomes a prompt; the first blocks are the tool
    schemas and the system row, and calls after the first share a cached prefix."""
    session = session_from_items("long", generate_long(3, 60))
    settings = ReplaySettings(record_prompts=True)
    review = run_review(
        [session], [("spec", Policy()), ("half", Policy.load(POLICIES / "trim-to-50.toml"))],
        settings.model_copy(update={"profile": settings.profile.model_copy(
            update={"max_context_tokens": 4000}
        )}),
        workers=1,
    )
    spec, half = review.replays[0]
    assert len(spec.prompts) == spec.calls - spec.model_refusals
    assert [sum(size for _, size in p) for p in spec.prompts] == list(spec.true_tokens)
    assert spec.token_trims > half.token_trims > 0
    spec_cost, half_cost = (
        s.cache.relative_cost for s in review.summaries(ANTHROPIC) if s.cache is not None
    )
    assert half_cost < spec_cost < 1
    plain = run_review([session], [("spec", Policy())], ReplaySettings(), workers=1)
    assert plain.replays[0][0].prompts == ()  # not recorded unless asked: it costs time
    with pytest.raises(ValueError, match="record_prompts=True"):
        plain.summaries(ANTHROPIC)


def test_review_command_prints_the_cache_rows(capsys: pytest.CaptureFixture[str]) -> None:
    code = main([
        "review", str(LONG), "--policy", str(POLICIES / "trim-to-70.toml"), "--cache",
        "anthropic", "--input-price", "3", "--workers", "1",
    ])
    out = capsys.readouterr().out
    assert code == 0
    for row in ("cached share of input (anthropic)", "input cost vs no cache (anthropic)",
                "input cost, USD (anthropic)", "history tokens per call, mean",
                "cache model anthropic: docs.anthropic.com"):
        assert row in out


def test_html_report_carries_the_cache(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the review extra (matplotlib) is absent")
    report = tmp_path / "r.html"
    code = main([
        "review", str(LONG), "--policy", str(POLICIES / "trim-to-50.toml"), "--cache",
        "openai", "--workers", "1", "--html", str(report),
    ])
    page = report.read_text(encoding="utf-8")
    assert code == 0 and "cached share of input (openai)" in page
    assert page.count("<figure>") == 4  # trims, retries, tokens, cost against context


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--cache", "nosuch"], "nosuch: "),
        (["--input-price", "3"], "--input-price: needs --cache"),
        (["--cache", "openai", "--input-price", "-1"], "--input-price: "),
    ],
)
def test_review_cache_errors_are_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["review", str(LONG), "--workers", "1", *argv])
    err = capsys.readouterr().err
    assert code != 0 and message in err and len(err.strip().splitlines()) == 1


# A clock for the lifetime tests: seconds since the session's first request.
CLOCK = (0.0, 30.0, 30.0 + 301, 30.0 + 301 + 200)


def test_a_request_after_a_gap_longer_than_the_lifetime_reads_nothing() -> None:
    # P1, P2 (30 s later: warm), P2 + R5 after 301 s idle (cold: 5 minutes passed), then
    # once more 200 s later (warm again: the cold call wrote it)
    prompts = [P1, P2, (*P2, R5), (*P2, R5, R4)]
    warm = price_calls(prompts, ANTHROPIC)  # no times: always warm, as before
    timed = price_calls(prompts, ANTHROPIC, CLOCK)
    assert [c.cached for c in warm] == [0, 1800, 2000, 2050]
    assert [c.cached for c in timed] == [0, 1800, 0, 2050]
    assert timed[2].written == 2050 and timed[2].cost == Fraction(2050 * 5, 4)
    # the hour-long lifetime keeps it; so does the 5-minute one for a write bought for an hour
    assert [c.cached for c in price_calls(prompts, ANTHROPIC_1H, CLOCK)] == [0, 1800, 2000, 2050]
    bought = price_calls(prompts, ANTHROPIC, CLOCK, lifetimes=[None, 3600, None, None])
    assert [c.cached for c in bought] == [0, 1800, 2000, 2050]


def test_a_hit_renews_the_lifetime_unless_the_provider_does_not() -> None:
    # every 200 s: each hit restarts the 300 s lifetime, so the whole prefix stays warm; a
    # cache that does not renew on a hit loses what was written more than 300 s ago
    prompts = [P1, P2, (*P2, R5)]
    times = [0.0, 200.0, 400.0]
    assert [c.cached for c in price_calls(prompts, ANTHROPIC, times)] == [0, 1800, 2000]
    fixed = ANTHROPIC.model_copy(update={"renew_on_hit": False})
    assert [c.cached for c in price_calls(prompts, fixed, times)] == [0, 1800, 0]


def test_the_prefix_other_sessions_keep_warm_is_read_on_a_cold_call() -> None:
    prompts = [P1, P2, (*P2, R5)]
    times = [0.0, 30.0, 1000.0]
    # the tool schemas (one block, 600 tokens) are kept warm by the client's other sessions:
    # read on the first call and on the cold one
    calls = price_calls(prompts, ANTHROPIC, times, warm=1)
    assert [c.cached for c in calls] == [0, 1800, 0]  # 600 is below Anthropic's minimum
    big = ((("tools", 5000),), (("tools", 5000), ("r", 10)), (("tools", 5000), ("r", 10)))
    assert [c.cached for c in price_calls(big, ANTHROPIC, times, warm=1)] == [5000, 5000, 5000]
    assert [c.cached for c in price_calls(big, ANTHROPIC, times)] == [0, 5000, 0]


def test_times_are_checked() -> None:
    with pytest.raises(ValueError, match="times: expected 2"):
        price_calls([P1, P2], ANTHROPIC, [0.0])
    with pytest.raises(ValueError, match=r"times\[1\]: 5.0 is before"):
        price_calls([P1, P2], ANTHROPIC, [10.0, 5.0])
    with pytest.raises(ValueError, match=r"times\[0\]: expected a finite"):
        price_calls([P1], ANTHROPIC, [float("nan")])
    # an unknown time (None) is taken as warm
    assert [c.cached for c in price_calls([P1, P2], ANTHROPIC, [0.0, None])] == [0, 1800]


def test_every_shipped_model_has_its_lifetime_and_source() -> None:
    assert {name: m.lifetime for name, m in PROVIDERS.items()} == {
        "anthropic": 300, "anthropic-1h": 3600, "openai": 300, "openai-gpt-5": 300,
        "gemini": 3600,
    }
    assert ANTHROPIC_1H.write == 2 and ANTHROPIC.write == Fraction(5, 4)
    assert all(m.eviction and m.source for m in PROVIDERS.values())
    with pytest.raises(ValidationError, match="hit_rate"):
        CacheModel(name="x", source="y", min_prefix=0, granularity=1, read="1/10",
                   hit_rate="3/2")


def test_the_call_times_file_lines_up_with_the_recorded_sessions() -> None:
    """examples/real/call-times.json (tools/call_times.py) holds one entry per recorded call
    of every Claude Code and mini-swe-agent session, in order: a rebuilt corpus whose calls
    moved fails here until the file is rebuilt too."""
    import json

    real = ROOT / "examples" / "real"
    times = json.loads((real / "call-times.json").read_text())
    for corpus in ("claude-code", "mini-swe-agent"):
        files = sorted((real / corpus).glob("*.jsonl"))
        assert sorted(times[corpus]) == [p.stem for p in files]
        timed = total = 0
        for path in files:
            calls = [json.loads(line) for line in path.read_text().splitlines()]
            entries = times[corpus][path.stem]
            assert len(entries) == sum(1 for m in calls if m["role"] == "assistant")
            known = [e[0] for e in entries if e is not None]
            assert known == sorted(known)  # in the order the calls were made
            timed, total = timed + len(known), total + len(entries)
        assert timed >= 0.98 * total
