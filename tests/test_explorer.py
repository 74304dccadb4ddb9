"""The explorer: `explore` lays out a replay (the CLI's), and the widget's callback recomputes
it from the controls (SEEN-1, SEEN-2: every drop shows up as a trim event in the view)."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from histtrim import Policy
from histtrim.cli.review import load_sessions
from histtrim.policy import SPEC
from histtrim.review.compare import run_review
from histtrim.review.explorer import explore
from histtrim.review.replay import replay_session
from histtrim.turn_sizes import turn_stats

SESSIONS = Path(__file__).resolve().parent.parent / "examples" / "sessions"


@pytest.fixture(scope="module")
def corpus():  # type: ignore[no-untyped-def]
    return load_sessions([str(SESSIONS)])


def _check_view(view, session, policy) -> None:  # type: ignore[no-untyped-def]
    """The view's numbers are the CLI's replay and the session's own turn sizes."""
    [[cli]] = run_review([session], [("explorer", policy)], view.settings, workers=1).replays
    assert view.replay == cli
    stats = [s for s in turn_stats(session.history(), crumb_present=session.crumb_present,
                                   policy=policy) if s.turn > 0]
    assert [row.tokens for row in view.turns] == [s.tokens for s in stats]
    assert view.turn_map().count("#") == cli.kept_turns
    assert len(view.turn_map()) - cli.kept_turns == cli.dropped_turns
    assert all(row.kept for row in view.turns[len(view.turns) - cli.kept_turns :])
    dropped = [row for row in view.turns if not row.kept]
    assert [row.dropped_by for row in dropped] == [
        t for t in cli.trace for _ in range(t.dropped_turns)
    ]
    assert len(view.events().splitlines()) == max(1, len(cli.trace))


def test_explore_is_the_cli_replay(corpus) -> None:  # type: ignore[no-untyped-def]
    for session in corpus:
        view = explore(session, budget=12_000, window=16_000, true_window=12_000)
        _check_view(view, session, SPEC)


def test_explore_restored_session_numbers_turns_from_the_recording(corpus) -> None:  # type: ignore[no-untyped-def]
    session = next(s for s in corpus if s.crumb_present)
    view = explore(session, budget=12_000, true_window=12_000)
    assert view.restored_turns == len(view.turns) - len(session.turns) > 0
    first = view.replay.trace[0]
    assert view.events().startswith(f"turn {first.turn_id + view.restored_turns}:")


def test_widget_callback_recomputes_the_view(corpus) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("ipywidgets", reason="the notebooks extra (ipywidgets) is absent")
    from histtrim.review.explorer import Explorer

    explorer = Explorer(corpus)
    controls = explorer.controls
    controls["session"].value = "research-agent-1"
    controls["window"].value = 200_000
    controls["true_window"].value = 200_000
    controls["budget"].value = 60_000
    controls["image_tokens"].value = 400
    controls["reactive"].value = "1/2"
    controls["max_turns"].value = 8  # each change ran the callback
    view = explorer.view
    assert view is not None
    policy = Policy(image_tokens=400, reactive_target=Fraction(1, 2))
    assert view.policy == policy
    session = next(s for s in corpus if s.name == "research-agent-1")
    assert view.replay == replay_session(session, policy, view.settings, label="explorer")
    assert view.settings.profile.max_context_tokens == 60_000
    assert view.settings.profile.max_history_messages == 8
    _check_view(view, session, policy)
    assert view.replay.turn_limit_trims > 0 and view.replay.kept_turns <= 8
    before = view
    controls["max_turns"].value = 100
    assert explorer.view is not before
    assert explorer.view.replay.turn_limit_trims == 0


def test_widget_shows_the_view_as_text(corpus) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("ipywidgets", reason="the notebooks extra (ipywidgets) is absent")
    from histtrim.review.explorer import Explorer

    explorer = Explorer(corpus[:2])
    assert explorer.view is not None
    assert explorer.output.value.startswith("<pre>" + explorer.view.summary())


def test_widget_targets_and_cache(corpus) -> None:  # type: ignore[no-untyped-def]
    """The low-water marks and the prompt cache are controls: a 1/2 token target trims less
    often, and the summary prices the requests with the chosen provider's cache."""
    pytest.importorskip("ipywidgets", reason="the notebooks extra (ipywidgets) is absent")
    from histtrim.review.cache import ANTHROPIC, price_calls, totals
    from histtrim.review.explorer import Explorer

    explorer = Explorer(corpus)
    controls = explorer.controls
    controls["session"].value = "very-long-coding-agent"
    controls["window"].value = 200_000
    controls["true_window"].value = 200_000
    controls["budget"].value = 8_000
    controls["max_turns"].value = 100
    spec = explorer.view
    assert spec is not None and "cache" not in spec.summary()
    controls["token_target"].value = "1/2"
    controls["turn_target"].value = "7/10"
    controls["cache"].value = "anthropic"
    view = explorer.view
    assert view is not None and view.cache is ANTHROPIC
    assert view.policy == Policy(
        token_trim_target=Fraction(1, 2), turn_trim_target=Fraction(7, 10)
    )
    assert 0 < view.replay.token_trims < spec.replay.token_trims
    priced = totals(price_calls(view.replay.prompts, ANTHROPIC))
    assert view.summary().endswith(
        f"; anthropic cache: {priced.cached_share:.1%} of input cached, input cost "
        f"{priced.relative_cost:.3f}x of no cache"
    )
