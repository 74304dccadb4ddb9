"""`histtrim.review.usage`: the four ways of keeping a replayed session within a budget the
provider counts in its own units (bench/reported_usage.py, chapter 17), on a small session
whose provider counts every row twice what EST-1 says."""

from __future__ import annotations

from histtrim.estimate import message_costs
from histtrim.messages import TOOL_RESULTS_PREFIX, ChatMessage
from histtrim.review.cache import ANTHROPIC
from histtrim.review.usage import METHODS, Provider, replay_usage


def session(turns: int = 12) -> list[ChatMessage]:
    rows = [ChatMessage.system("You are terse.")]
    for t in range(turns):
        rows += [ChatMessage.user(f"question {t} " + "y" * 300),
                 ChatMessage.assistant(f"answer {t} " + "z" * 200)]
    return rows


def test_each_method_against_a_provider_counting_twice_the_estimate() -> None:
    """USAGE-1: the estimate alone sends most requests over; the reported-usage trim crosses
    the budget once per crossing; the provider's own counter never keeps more than fits."""
    rows = session()
    costs = message_costs(rows)
    provider = Provider(tuple(2 * c for c in costs), 2 * 17)
    runs = {m: replay_usage(rows, 1_200, m, provider) for m in METHODS}
    assert runs["estimate"].avoidable > runs["reported"].avoidable
    assert runs["reported"].repeats == 0
    assert runs["tokenizer"].avoidable == 0
    assert runs["langchain"].avoidable > 0  # its factor stops at 1.25, the provider is at 2
    assert all(r.requests == 12 for r in runs.values())
    assert runs["reported"].cost(ANTHROPIC) < runs["estimate"].cost(ANTHROPIC)


def test_recorded_calls_count_what_was_recorded_until_a_trim() -> None:
    """A recorded session: an untrimmed request counts exactly what the provider recorded; a
    trimmed one is the hidden prefix plus the recorded part scaled by what was kept."""
    rows = session(6)
    costs = message_costs(rows)
    points = [i for i, r in enumerate(rows) if r.role == "assistant"]
    recorded = tuple((p, 100 + 3 * sum(costs[:p])) for p in points)
    provider = Provider(tuple(3 * c for c in costs), 51, hidden=100, calls=recorded)
    wide = replay_usage(rows, 10**9, "estimate", provider)
    assert wide.counts == tuple(r for _, r in recorded)
    tight = replay_usage(rows, 1_500, "reported", provider)
    assert tight.over < len(tight.counts) and tight.counts != wide.counts


def test_usage_8_calibrated_and_fitted_replays() -> None:
    """USAGE-8 in the replay: a provider adding a hidden prefix of 400 tokens to twice the
    estimate. The calibrated prefix keeps every request with more than one turn within the
    budget once a report is in; "fitted" also edits a single over-budget turn with the given
    tool context edit (here: every row but the newest two emptied) and counts what it sent."""
    import pytest

    rows = [ChatMessage.system("You are terse."), ChatMessage.user("q " + "y" * 300)]
    for t in range(10):
        rows += [ChatMessage.assistant(f"step {t}"),
                 ChatMessage.user(f"{TOOL_RESULTS_PREFIX}\nresult {t} " + "z" * 400)]
    rows += [ChatMessage.user("next " + "y" * 300), ChatMessage.assistant("done")]
    costs = message_costs(rows)
    provider = Provider(tuple(2 * c for c in costs), 2 * 17, hidden=400)
    budget = 1_200

    def fit(sent: list[ChatMessage], crumb: bool, limit: int
            ) -> tuple[list[ChatMessage], list[int]]:
        kept = [m if k in (0, len(sent) - 2, len(sent) - 1) else
                ChatMessage(role=m.role, content="[cleared]") for k, m in enumerate(sent)]
        return kept, list(range(len(sent)))

    calibrated = replay_usage(rows, budget, "calibrated", provider)
    fitted = replay_usage(rows, budget, "fitted", provider, fit_turn=fit)
    assert calibrated.over > 0 and calibrated.avoidable == 0
    assert fitted.over < calibrated.over
    with pytest.raises(ValueError, match="fit_turn"):
        replay_usage(rows, budget, "fitted", provider)
