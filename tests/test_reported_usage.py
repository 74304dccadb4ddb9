"""USAGE-1..6: the reported-usage trim, as the reference runtime has it.

The worked cases port the reference's own tests (zeroclaw, crates/zeroclaw-runtime/src/agent/
history_trim.rs: `reported_budget_trims_when_reported_exceeds_budget`,
`reported_budget_no_trim_when_real_tokens_fit`, `reported_budget_trims_under_extreme_ratio`,
`reported_budget_reserves_room_for_large_native_tool_schema`,
`reported_budget_calibrates_selection_against_the_measured_population`,
`insert_breadcrumb_deduped_does_not_stack`) with their numbers worked out by hand."""

from __future__ import annotations

from fractions import Fraction
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from histtrim.estimate import estimate_history_tokens, estimate_tool_schemas
from histtrim.events import TrimReason
from histtrim.messages import BREADCRUMB, ChatMessage
from histtrim.reported_usage import (
    PROVIDER_UNITS,
    calibrated,
    reported_input_tokens,
    scaled_budget,
    trim_to_reported_budget,
    trim_to_reported_budget_with_crumb,
)
from histtrim.trim import breadcrumb_message

BIG = "x" * 2000


def sys(text: str) -> ChatMessage:
    return ChatMessage.system(text)


def user(text: str) -> ChatMessage:
    return ChatMessage.user(text)


def asst(text: str) -> ChatMessage:
    return ChatMessage.assistant(text)


def three_turns() -> list[ChatMessage]:
    return [
        sys("system"), user(f"turn1 {BIG}"), asst("a1"), user(f"turn2 {BIG}"), asst("a2"),
        user("turn3 short"), asst("a3"),
    ]


# ---------------------------------------------------------------- the reference's cases


def test_usage_1_trims_when_reported_exceeds_budget() -> None:
    """USAGE-1, reference `reported_budget_trims_when_reported_exceeds_budget`: rows cost
    6, 506, 5, 506, 5, 7, 5 (EST-1), so estimated 1040, reported 4160, budget 2080; the target
    is 2080 * 1040 // 4160 = 520, which only the last turn fits (6 + 7 + 5 = 18), and
    18 * 4160 / 1040 = 72 provider tokens are left."""
    history = three_turns()
    estimated = estimate_history_tokens(history)
    assert estimated == 1040
    result = trim_to_reported_budget(history, 2080, 4160, estimated)
    assert result.trimmed and result.dropped_turns == 2 and result.dropped_messages == 4
    assert [m.content for m in result.history] == ["system", "turn3 short", "a3"]
    assert (result.tokens_before, result.tokens_after, result.kept_turns) == (4160, 72, 1)
    assert result.counter == PROVIDER_UNITS
    assert [*result.history[:1], *result.dropped, *result.history[1:]] == history


def test_usage_1_no_trim_when_real_tokens_fit() -> None:
    """USAGE-1, reference `reported_budget_no_trim_when_real_tokens_fit`: reported = estimated
    (17: 6 + 5 + 6) and the budget 4 x that: nothing moves and both figures are the report."""
    history = [sys("system"), user("hi"), asst("hello")]
    estimated = estimate_history_tokens(history)
    assert estimated == 17
    result = trim_to_reported_budget(history, estimated * 4, estimated, estimated)
    assert not result.trimmed and result.history == history
    assert (result.tokens_before, result.tokens_after, result.kept_turns) == (17, 17, 1)


@pytest.mark.parametrize(
    ("budget", "reported", "estimated"),
    [(0, 5000, 100), (100, 100, 100), (100, 99, 100), (100, 5000, 0)],
)
def test_usage_1_no_trim_cases(budget: int, reported: int, estimated: int) -> None:
    """USAGE-1: budget 0, reported within the budget, or an estimated population of 0 (no
    division) leave the history as it is; tokens_before = tokens_after = reported."""
    history = three_turns()
    result = trim_to_reported_budget(history, budget, reported, estimated)
    assert result.history == history and not result.dropped
    assert result.tokens_before == result.tokens_after == reported
    assert scaled_budget(budget, reported, estimated) is None


def test_usage_2_trims_under_extreme_ratio() -> None:
    """USAGE-2, reference `reported_budget_trims_under_extreme_ratio`: reported 5000 x the
    estimate, budget a hundredth of that: the target floors at 50 x ... and the trim still
    runs (the floor of 1 keeps it from becoming 0, which would disable it)."""
    history = [sys("system"), user(f"old {'x' * 4000}"), asst("a1"), user("recent short"),
               asst("a2")]
    estimated = estimate_history_tokens(history)
    reported = estimated * 5000
    result = trim_to_reported_budget(history, reported // 100, reported, estimated)
    assert result.trimmed
    assert [m.content for m in result.history] == ["system", "recent short", "a2"]
    assert scaled_budget(1, 10**9, 3) == 1  # 1 * 3 // 10**9 = 0, floored at 1


def test_usage_2_reserves_room_for_large_native_tool_schema() -> None:
    """USAGE-2, reference `reported_budget_reserves_room_for_large_native_tool_schema`: a
    faithful provider (reported = messages + schemas); the schemas are reserved inside the
    target, so kept history plus schemas fits, and tokens_after is exactly that total."""
    history = three_turns()
    schema = {"name": "large_schema_tool", "description": "a tool with a very large schema",
              "parameters": {"type": "object", "properties": {
                  "payload": {"type": "string", "description": "big" * 300}}}}
    tools = estimate_tool_schemas([schema])
    assert tools > 0
    estimated = estimate_history_tokens(history) + tools
    budget = estimated // 2
    assert budget > tools
    result = trim_to_reported_budget(history, budget, estimated, estimated, tools)
    assert result.trimmed
    kept_total = estimate_history_tokens(result.history) + tools
    assert kept_total <= budget
    assert result.tokens_after == kept_total
    assert result.history[-2].content == "turn3 short"


def test_usage_2_calibrates_against_the_measured_population() -> None:
    """USAGE-2, reference `reported_budget_calibrates_selection_against_the_measured_population`:
    the history has the reply appended after the request was measured; the target scales from
    the measured estimate, so the kept rows fit the budget under the measured ratio."""
    measured = [sys("system")]
    for i in range(8):
        measured += [user(f"m{i} {BIG}"), asst(f"a{i}")]
    measured_estimate = estimate_history_tokens(measured)
    reported = measured_estimate * 4
    budget = reported // 2
    history = [*measured, asst("y" * 400)]
    assert estimate_history_tokens(history) > measured_estimate
    result = trim_to_reported_budget(history, budget, reported, measured_estimate)
    assert result.trimmed and result.tokens_after <= budget
    kept = estimate_history_tokens(result.history)
    assert calibrated(kept, reported, measured_estimate) == result.tokens_after <= budget


# ---------------------------------------------------------------- USAGE-3: exact rounding


@pytest.mark.parametrize(
    ("tokens", "reported", "estimated", "expected"),
    [(5, 1, 2, 3), (1, 3, 2, 2), (3, 1, 2, 2), (7, 1, 2, 4), (1, 1, 3, 0), (2, 1, 3, 1),
     (72, 4160, 1040, 288), (10**30 + 1, 10**30 + 1, 10**30, 10**30 + 2)],
)
def test_usage_3_rounds_halves_away_from_zero_exactly(
    tokens: int, reported: int, estimated: int, expected: int
) -> None:
    """USAGE-3: 2.5 -> 3 and 1.5 -> 2 (Python's `round` gives 2 for both), in exact integers
    where a float would lose the last digits."""
    assert calibrated(tokens, reported, estimated) == expected


def test_usage_3_tokens_after_counts_the_schemas_in_provider_units() -> None:
    """USAGE-3: tokens_after = round((kept estimate + schemas) * reported / estimated)."""
    history = three_turns()
    estimated = estimate_history_tokens(history) + 100  # 1140 with 100 of schemas
    result = trim_to_reported_budget(history, 2000, 4560, estimated, 100)
    # target 2000 * 1140 // 4560 = 500, minus 100 of schemas: 400 -> only the last turn (18)
    assert scaled_budget(2000, 4560, estimated, 100) == 400
    assert result.tokens_after == calibrated(18 + 100, 4560, 1140) == 472


# ---------------------------------------------------------------- USAGE-4: low-water Policy


def test_usage_4_low_water_target_in_provider_units() -> None:
    """USAGE-4: with a target below 1 the trim fits budget * target in provider units (the
    trigger stays the budget itself): 2080 * 7/10 = 1456 -> 1456 * 1040 // 4160 = 364."""
    assert scaled_budget(2080, 4160, 1040, target=Fraction(7, 10)) == 364
    assert scaled_budget(2080, 2080, 1040, target=Fraction(7, 10)) is None  # fits: no move
    crumbed = trim_to_reported_budget_with_crumb(
        three_turns(), 2080, 4160, 1040, target=Fraction(7, 10)
    )
    assert crumbed.event is not None
    assert (crumbed.event.budget, crumbed.event.target) == (1456, "7/10")


# ---------------------------------------------------------------- USAGE-5: usage reports


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        ({"prompt_tokens": 1200, "completion_tokens": 30}, 1200),  # OpenAI chat completions
        ({"input_tokens": 10, "cache_read_input_tokens": 5000,
          "cache_creation_input_tokens": 300, "output_tokens": 7}, 5310),  # Anthropic
        ({"input_tokens": 10, "cache_read_input_tokens": None}, 10),  # Anthropic, no cache
        (SimpleNamespace(prompt_token_count=812, candidates_token_count=3), 812),  # Gemini
        (SimpleNamespace(input_tokens=44, output_tokens=1), 44),  # an SDK object
        ({"prompt_tokens": 0}, None),
        ({"prompt_tokens": -3}, None),
        ({"prompt_tokens": 12.0}, None),
        ({"prompt_tokens": True}, None),
        ({"prompt_tokens": "12"}, None),
        ({"input_tokens": 0, "cache_read_input_tokens": 0}, None),
        ({"input_tokens": 10, "cache_read_input_tokens": -1}, None),
        ({"completion_tokens": 4}, None),
        ({}, None),
        (None, None),
    ],
)
def test_usage_5_reported_input_tokens(usage: object, expected: int | None) -> None:
    """USAGE-5: each provider's input count; bad or missing usage is None (the estimate)."""
    assert reported_input_tokens(usage) == expected


def test_usage_5_a_usage_object_that_raises_is_no_report() -> None:
    """USAGE-5: reading a host's usage never raises inside its run."""

    class Broken:
        @property
        def prompt_tokens(self) -> int:
            raise RuntimeError("lazy field failed")

    assert reported_input_tokens(Broken()) is None


def test_usage_5_another_models_report_is_not_used() -> None:
    usage = {"prompt_tokens": 900}
    assert reported_input_tokens(usage, model="gpt-4o", expected_model="gpt-4o") == 900
    assert reported_input_tokens(usage, model="gpt-4o-mini", expected_model="gpt-4o") is None


# ---------------------------------------------------------------- USAGE-6: breadcrumb, event


def test_usage_6_breadcrumb_once_by_owner_flag_and_event() -> None:
    """USAGE-6, reference `insert_breadcrumb_deduped_does_not_stack`: the first trim inserts
    the breadcrumb after the system rows; a second trim, told by the owner's flag, neither
    stacks another nor counts it as a turn or a dropped message. The event is a token-budget
    event in provider units: the crumb (17 tokens) is inside tokens_after: (18 + 17) * 4 = 140."""
    first = trim_to_reported_budget_with_crumb(three_turns(), 2080, 4160, 1040)
    assert first.crumb_present and first.history[1] == breadcrumb_message()
    event = first.event
    assert event is not None and event.reason is TrimReason.TOKEN_BUDGET
    assert (event.dropped_messages, event.kept_turns, event.tokens_before) == (4, 1, 4160)
    assert event.tokens_after == (18 + estimate_history_tokens([breadcrumb_message()])) * 4 == 140
    assert (event.budget, event.counter, event.target) == (2080, PROVIDER_UNITS, None)

    grown = [*first.history, user(f"turn4 {BIG}"), asst("a4"), user("turn5"), asst("a5")]
    estimated = estimate_history_tokens(grown)
    second = trim_to_reported_budget_with_crumb(
        grown, 2 * estimated, 4 * estimated, estimated, crumb_present=True
    )
    assert [m.content for m in second.history].count(BREADCRUMB) == 1
    assert second.event is not None
    assert second.event.dropped_messages == 4  # turn3 and turn4, not the crumb
    assert second.event.kept_turns == 1


def test_usage_6_flag_decides_not_text() -> None:
    """USAGE-6: a real first user turn equal to the breadcrumb text is not mistaken for one."""
    colliding = [sys("system"), user(BREADCRUMB), asst("a1"), user(BIG), asst("a2"),
                 user("last"), asst("a3")]
    estimated = estimate_history_tokens(colliding)
    trim = trim_to_reported_budget_with_crumb(colliding, estimated, 2 * estimated, estimated)
    assert trim.result.dropped_turns >= 1
    assert trim.history[1] == breadcrumb_message()  # the synthetic one, inserted


def test_usage_6_no_trim_no_event_no_crumb() -> None:
    history = three_turns()
    trim = trim_to_reported_budget_with_crumb(history, 5000, 4000, 1040)
    assert trim.event is None and trim.history == history and not trim.crumb_present


def test_bad_arguments_name_the_field() -> None:
    with pytest.raises(ValueError, match="budget_tokens"):
        trim_to_reported_budget(three_turns(), -1, 10, 10)
    with pytest.raises(ValueError, match="reported_input_tokens"):
        trim_to_reported_budget(three_turns(), 10, 1.5, 10)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="crumb_present"):
        trim_to_reported_budget(three_turns(), 10, 20, 10, crumb_present=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="reported_population_estimated"):
        calibrated(1, 2, 0)


# ---------------------------------------------------------------- properties

_ROW = st.tuples(st.sampled_from(["user", "assistant"]), st.integers(0, 400))


@st.composite
def _histories(draw: st.DrawFn) -> list[ChatMessage]:
    rows = [sys("s")]
    for role, size in draw(st.lists(_ROW, min_size=1, max_size=14)):
        rows.append(ChatMessage(role=role, content="y" * size))
    return rows


@given(
    _histories(), st.integers(0, 3000), st.integers(1, 6000), st.integers(0, 3000),
    st.integers(0, 200),
)
def test_properties(
    history: list[ChatMessage], budget: int, reported: int, estimated: int, schemas: int
) -> None:
    """Kept plus dropped is the input, unmutated; no trim when the report fits; tokens_after is
    the calibrated kept size; a faithful report (reported = estimate + schemas) leaves history
    plus schemas within the budget whenever more than the newest turn is kept."""
    before = list(history)
    result = trim_to_reported_budget(history, budget, reported, estimated, schemas)
    assert history == before
    dropped = len(result.dropped)
    assert result.dropped == history[1 : 1 + dropped]
    assert result.history == [*history[:1], *history[1 + dropped :]]
    if budget == 0 or reported <= budget or estimated == 0:
        assert result.history == history and result.tokens_after == reported
    else:
        kept = estimate_history_tokens(result.history)
        assert result.tokens_after == calibrated(kept + schemas, reported, estimated)
    faithful = estimate_history_tokens(history) + schemas
    honest = trim_to_reported_budget(history, budget, faithful, faithful, schemas)
    if budget and faithful > budget and honest.kept_turns > 1 and schemas < budget:
        assert honest.tokens_after <= budget


@given(_histories(), st.integers(1, 3000), st.integers(1, 6000), st.integers(1, 6000))
def test_more_reported_never_keeps_more(
    history: list[ChatMessage], budget: int, reported: int, extra: int
) -> None:
    """The same request reported larger keeps no more turns."""
    estimated = estimate_history_tokens(history)
    low = trim_to_reported_budget(history, budget, reported, estimated)
    high = trim_to_reported_budget(history, budget, reported + extra, estimated)
    assert high.kept_turns <= low.kept_turns
