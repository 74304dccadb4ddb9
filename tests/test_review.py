"""`histtrim review`: sessions replayed through the agent loop once per policy (RUN-2, EST-2,
LIMIT-2, CAP-2), on a process pool or a Dask cluster, and the explorer built on the same replay."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from histtrim import (
    IMAGE_TOKENS,
    AssistantToolCalls,
    ChatMessage,
    Policy,
    ProviderProfile,
    RuntimeProfile,
    ToolCall,
    ToolResultMessage,
    ToolResults,
)
from histtrim.adapters.formats import sniff_format
from histtrim.cli import main
from histtrim.cli.review import load_sessions, policies_from
from histtrim.policy import SPEC
from histtrim.review.compare import format_review, run_review
from histtrim.review.replay import ReplaySettings, replay, replay_session
from histtrim.review.report import per_session, per_session_table, report_html
from histtrim.review.sessions import session_from_items
from histtrim.turn_sizes import turn_stats
from livingspec.synth import KINDS, generate

ROOT = Path(__file__).resolve().parent.parent
SESSIONS = ROOT / "examples" / "sessions"
POLICIES = ROOT / "examples" / "policies"


@pytest.fixture(scope="module")
def corpus():  # type: ignore[no-untyped-def]
    return load_sessions([str(SESSIONS)])


def _settings(window: int = 16_000, true_window: int | None = 12_000, **profile: object):
    return ReplaySettings(
        profile=RuntimeProfile.model_validate(profile),
        provider=ProviderProfile(model="replay-model", context_window=window),
        true_window=true_window,
    )


def test_corpus_has_every_kind_and_format(corpus) -> None:  # type: ignore[no-untyped-def]
    names = [s.name for s in corpus]
    for kind in ("coding-agent", "research-agent", "support-chat", "restored-session"):
        assert any(name.startswith(kind) for name in names)
    assert {p.suffix for p in SESSIONS.iterdir()} >= {".json", ".jsonl"}
    formats = {sniff_format(p.read_bytes()) for p in SESSIONS.glob("*.json*")}
    assert formats == {"histtrim", "openai", "anthropic"}
    restored = next(s for s in corpus if s.name.startswith("restored"))
    assert restored.crumb_present and restored.restored
    research = next(s for s in corpus if s.name.startswith("research"))
    assert any("[IMAGE:https://" in turn.user for turn in research.turns)
    for session in (s for s in corpus if s.name.startswith("research")):
        declared = [o for turn in session.turns for o in turn.outputs if o.attachments]
        assert declared, f"{session.name}: no tool declares an image"
        assert all(not o.content.count("[IMAGE:") for o in declared)  # EST-3: not marker text


def test_tool_images_are_replayed_and_priced_in_their_turn_only_est_3(corpus) -> None:  # type: ignore[no-untyped-def]
    """The replayed browser tool declares its screenshots again: the result rows carry them,
    and each request of the turn that ran the tool prices them (EST-2), later turns not."""
    settings = _settings(window=1_000_000, true_window=None, max_context_tokens=1_000_000)
    for session in (s for s in corpus if s.name.startswith("research")):
        agent, _ = replay(session, SPEC, settings)
        declared = [
            r for item in agent.history if isinstance(item, ToolResults)
            for r in item.results if r.attachments
        ]
        recorded = [o for turn in session.turns for o in turn.outputs if o.attachments]
        assert [r.attachments for r in declared] == [o.attachments for o in recorded]
        assert agent.history == session.history()[1:]  # nothing trimmed on a huge window


    # Priced only in the turn that ran the tool: the spec and a 400-token image differ by
    # 1,200 per declared image in that turn's second call, and nowhere else.
    items = [
        ChatMessage.system("Research."),
        ChatMessage.user("How does the page look?"),
        AssistantToolCalls(tool_calls=(ToolCall(id="c1", name="screenshot_page"),)),
        ToolResults(results=(ToolResultMessage(
            tool_call_id="c1", content="Rendered.", tool_name="screenshot_page",
            attachments=("https://example.com/a.png", "https://example.com/b.png"),  # type: ignore[arg-type]
        ),)),
        ChatMessage.assistant("Two charts."),
        ChatMessage.user("And the footer?"),
        ChatMessage.assistant("Plain text."),
    ]
    small = session_from_items("tool-images", items)
    assert small.history() == items
    spec_agent, _ = replay(small, SPEC, settings)
    cheap_agent, _ = replay(small, Policy(image_tokens=400), settings)
    differences = [a.tokens - b.tokens for a, b in zip(spec_agent.calls, cheap_agent.calls,
                                                        strict=True)]
    assert differences == [0, 2 * (IMAGE_TOKENS - 400), 0]


@pytest.mark.parametrize("kind", KINDS)
def test_session_history_round_trips(kind: str) -> None:
    """A replay holds everything the recording held: its history is the recording."""
    items = generate(kind, 7, 6)
    crumb = kind == "restored"
    session = session_from_items("s", items, crumb_present=crumb, restored_turns=2 * crumb)
    assert session.history() == items


def test_replay_accounts_for_every_turn(corpus) -> None:  # type: ignore[no-untyped-def]
    settings = _settings()
    for session in corpus:
        result = replay_session(session, SPEC, settings)
        total = len([s for s in turn_stats(session.history(), crumb_present=session.crumb_present)
                     if s.turn > 0])
        assert result.dropped_turns + result.kept_turns == total
        assert sum(t.dropped_turns for t in result.trace) == result.dropped_turns
        assert sum(t.dropped_messages for t in result.trace) == result.dropped_messages
        assert result.reactive_retries <= result.model_refusals
        assert replay_session(session, SPEC, settings) == result  # pure: same in, same out


def test_reactive_target_is_the_policys_run_2(corpus) -> None:  # type: ignore[no-untyped-def]
    """Each reactive trim's target is the policy's fraction of the estimate it overflowed with."""
    settings = _settings()
    for policy, fraction in ((SPEC, (2, 3)), (Policy(reactive_target="1/2"), (1, 2))):
        reactive = [
            trim
            for session in corpus
            for trim in replay_session(session, policy, settings).trace
            if trim.budget not in (0, settings.runtime(policy).effective_context_budget())
        ]
        assert reactive
        for trim in reactive:
            assert trim.budget == trim.tokens_before * fraction[0] // fraction[1]


def test_cheap_images_pass_requests_the_model_refuses_est_2(corpus) -> None:  # type: ignore[no-untyped-def]
    """With the spec's price the capacity check and the model agree (true window = declared);
    at 400 tokens an image, requests the check passed overflow the model."""
    settings = _settings(true_window=None)
    research = [s for s in corpus if s.name.startswith("research")]
    spec = [replay_session(s, SPEC, settings) for s in research]
    cheap = [replay_session(s, Policy(image_tokens=400), settings) for s in research]
    assert sum(r.model_refusals for r in spec) == 0
    assert sum(r.model_refusals for r in cheap) > 0
    for result in cheap:
        for estimate, true in zip(result.tokens, result.true_tokens, strict=True):
            assert estimate <= true  # the cheap estimate never prices more than the model


def test_turn_limit_20_limit_2(corpus) -> None:  # type: ignore[no-untyped-def]
    settings = _settings(window=200_000, true_window=None, max_context_tokens=150_000)
    support = [s for s in corpus if s.name.startswith("support")]
    for session in support:
        spec = replay_session(session, SPEC, settings)
        twenty = replay_session(session, Policy(default_max_history_turns=20), settings)
        assert spec.turn_limit_trims == 0 and spec.dropped_turns == 0
        assert twenty.turn_limit_trims == len(session.turns) - 20
        assert twenty.kept_turns == 20
        assert twenty.differs(spec)


def test_review_table_and_differences(corpus) -> None:  # type: ignore[no-untyped-def]
    policies = [("spec", SPEC), ("same", Policy()), ("half", Policy(reactive_target="1/2"))]
    review = run_review(corpus, policies, _settings(), workers=1)
    same, half = review.summaries()[1:]
    assert same.differing_sessions == ()
    assert half.differing_sessions
    text = format_review(review)
    assert re.search(r"^reactive retries\s+\d+\s+\d+\s+\d+$", text, re.MULTILINE)
    assert "half: reactive_target 2/3 -> 1/2" in text
    assert f"half vs spec: {len(half.differing_sessions)} of {len(corpus)} sessions differ" in text
    table = per_session_table(review, ["reactive_retries"])
    assert len(table.splitlines()) == len(corpus) + 2  # header and rule
    assert per_session(review, "reactive_retries")["spec"] == [
        r.reactive_retries for r in review.by_policy("spec")
    ]


def test_process_pool_gives_the_serial_result() -> None:
    sessions = [
        session_from_items(f"{kind}-{seed}", generate(kind, seed, 8))
        for kind in ("coding", "support") for seed in range(3)
    ]
    policies = [("spec", SPEC), ("cheap", Policy(image_tokens=400))]
    serial = run_review(sessions, policies, _settings(), workers=1)
    pooled = run_review(sessions, policies, _settings(), workers=2, batch_size=2)
    assert pooled == serial


def test_dask_local_cluster_gives_the_serial_result() -> None:
    distributed = pytest.importorskip("distributed", reason="the review extra (dask) is absent")
    sessions = [session_from_items(f"s{seed}", generate("coding", seed, 6)) for seed in range(4)]
    policies = [("spec", SPEC), ("half", Policy(reactive_target="1/2"))]
    serial = run_review(sessions, policies, _settings(), workers=1)
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        on_dask = run_review(
            sessions, policies, _settings(), dask=cluster.scheduler_address, batch_size=3
        )
    assert on_dask == serial


def test_cli_review_prints_the_comparison(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    report = tmp_path / "report.html"
    code = main([
        "review", str(SESSIONS), "--policy", str(POLICIES / "reactive-half.toml"),
        "--workers", "1", "--html", str(report),
    ])
    out = capsys.readouterr().out
    assert code == 0
    settings, table = out.split("\n\n", 1)
    assert settings.splitlines()[0] == "settings:"
    assert table.splitlines()[0].split() == ["spec", "reactive-half"]
    assert "reactive-half: reactive_target 2/3 -> 1/2" in out
    html = report.read_text(encoding="utf-8")
    assert html.count("data:image/png;base64,") == 3
    assert "reactive retries" in html


def test_cli_review_glob_and_config(capsys: pytest.CaptureFixture[str]) -> None:
    code = main([
        "review", str(SESSIONS / "support-*.json"), "--config", str(ROOT / "examples/agents.toml"),
        "--agent", "codey", "--workers", "1",
    ])
    out = capsys.readouterr().out
    assert code == 0
    assert re.search(r"^sessions\s+2$", out, re.MULTILINE)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["review", "nowhere/*.json"], "no session files"),
        (["review", str(SESSIONS), "--budget", "5", "--config", "x.toml", "--agent", "a"],
         "cannot be combined"),
        (["review", str(SESSIONS), "--policy", "BAD"], "field 'image_tokens'"),
    ],
)
def test_cli_review_bad_input(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("image_tokens = -5\n")
    code = main([str(bad) if a == "BAD" else a for a in args])
    assert code == 2
    assert message in capsys.readouterr().err


def test_policies_from_puts_the_spec_first() -> None:
    pairs = policies_from([str(POLICIES / "turns-20.toml")])
    assert [label for label, _ in pairs] == ["spec", "turns-20"]
    assert pairs[0][1] == Policy()


def test_report_is_self_contained(corpus) -> None:  # type: ignore[no-untyped-def]
    review = run_review(corpus[:2], [("spec", SPEC)], _settings(), workers=1)
    html = report_html(review, _settings())
    assert "<script" not in html and "src=\"http" not in html
    assert html == report_html(review, _settings())  # deterministic bytes


@pytest.mark.parametrize("workers", ["1", "2"])
def test_cli_review_bad_session_names_its_file(
    workers: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A session is loaded on the worker; a bad one is still reported with its file and line."""
    (tmp_path / "a.json").write_text((SESSIONS / "support-chat-1.json").read_text())
    bad = tmp_path / "b.jsonl"
    bad.write_text('{"role": "user", "content": "hi"}\n{"role": "wizard", "content": "x"}\n')
    code = main(["review", str(tmp_path), "--workers", workers])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{bad}: line 2" in err and "role" in err


def test_progress_bar_on_long_runs(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tqdm", reason="the review extra (tqdm) is absent")
    sessions = [session_from_items(f"s{n}", generate("support", n, 2)) for n in range(3)]
    run_review(sessions, [("spec", SPEC)], _settings(), workers=1, progress=True, batch_size=1)
    err = capsys.readouterr().err
    assert "review" in err and "3/3" in err


@pytest.fixture
def words_vocabulary(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in for the extra's vocabulary (one token per word), so `--tokenizer` is tested
    without histtrim[tokenizers] installed."""
    import histtrim.adapters.tokenizers

    fake = SimpleNamespace(count=lambda text: len(text.split()))
    monkeypatch.setattr(histtrim.adapters.tokenizers, "_backend", lambda name: fake)


def test_review_counts_with_the_tokenizer_it_is_given(
    words_vocabulary: None, corpus, capsys: pytest.CaptureFixture[str]  # type: ignore[no-untyped-def]
) -> None:
    """`--tokenizer`: the agent prices rows with the counter (issue 13), and says so in its
    events; without it the spec's estimate is used."""
    session = corpus[0]
    counted = _settings().model_copy(update={"tokenizer": "o200k_base"})
    agent, replayed = replay(session, SPEC, counted)
    plain_agent, plain = replay(session, SPEC, _settings())
    assert agent.token_counter is not None and agent.token_counter.name == "o200k_base"
    assert plain_agent.token_counter is None
    assert {e.counter for e in agent.events} <= {"o200k_base"}
    assert all(e.counter is None for e in plain_agent.events)
    assert replayed != plain  # one word per token prices the rows differently from bytes / 4
    with pytest.raises(ValueError, match="tokenizer"):
        ReplaySettings(tokenizer="gpt2")  # type: ignore[arg-type]
    code = main(["review", str(SESSIONS), "--tokenizer", "o200k_base", "--workers", "1"])
    assert code == 0
    assert "reactive retries" in capsys.readouterr().out
