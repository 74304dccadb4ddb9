"""The pre-dispatch capacity check (CAP-2..4) and its report's image part (EST-2..3)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from histtrim import (
    IMAGE_TOKENS,
    CapacityReport,
    ChatMessage,
    ContextCapacityExceeded,
    HistoryPruning,
    ProviderProfile,
    ResolvedRuntime,
    RuntimeProfile,
    capacity_report,
    check_request,
    dispatched_images,
    estimate_history_tokens,
    message_cost,
    resolve_runtime,
)
from histtrim.estimate import (
    ToolSchema,
    estimate_hooks,
    estimate_image_tokens,
    estimate_tool_schemas,
)
from livingspec import examples
from livingspec.strategies import GeneratedHistory, chat_histories

SEARCH = ToolSchema(
    name="search_files",
    description="Search the repository for a regular expression.",
    parameters={"type": "object", "properties": {"pattern": {"type": "string"}}},
)
READ = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
}
HOOKS = ("Today is Monday.", "The user prefers short answers.")


def runtime(window: int | None, model: str = "m", **settings: object) -> ResolvedRuntime:
    provider = ProviderProfile(model="m", context_window=window)
    return resolve_runtime(RuntimeProfile.model_validate(settings), provider, model)


def test_cap_2_the_report_breaks_the_request_down() -> None:
    """CAP-2: messages (without images), images, hooks and tool schemas add up to the total."""
    history = examples.agent_session()
    report = check_request(
        history, runtime=runtime(200_000), tool_schemas=[SEARCH, READ], hooks=HOOKS
    )
    # The pasted screenshot (a user turn) and the browser's declared attachment (a tool
    # result of the current turn) are both dispatched.
    assert report.images == 2 * IMAGE_TOKENS
    assert report.messages + report.images == estimate_history_tokens(history)
    assert report.hooks == estimate_hooks(HOOKS)
    assert report.tool_schemas == estimate_tool_schemas([SEARCH, READ])
    assert report.total == report.messages + report.images + report.hooks + report.tool_schemas
    assert report.system == message_cost(history[0], current_turn=False)
    assert (report.window, report.budget, report.capacity_known, report.fits) == (
        200_000,
        32_000,
        True,
        True,
    )


def test_cap_2_a_request_fits_up_to_the_window_inclusive() -> None:
    """CAP-2: `total <= window` passes; one token more fails before dispatch."""
    history = examples.agent_session()
    total = capacity_report(history, runtime=runtime(10**6), hooks=HOOKS).total
    assert check_request(history, runtime=runtime(total), hooks=HOOKS).total == total
    with pytest.raises(ContextCapacityExceeded) as caught:
        check_request(history, runtime=runtime(total - 1), hooks=HOOKS)
    report = caught.value.report
    assert (report.total, report.window, report.fits) == (total, total - 1, False)
    assert str(caught.value) == (
        f"request of {total} tokens exceeds the model context window ({total - 1} tokens) by 1: "
        f"messages {report.messages}, images {report.images}, hooks {report.hooks}, "
        "tool schemas 0; shorten the newest turn, remove images or unused tools, or route to a "
        "model with a larger context_window"
    )


def test_cap_2_unknown_capacity_checks_against_the_fallback_and_says_so() -> None:
    """CAP-2, ROUTE-4: an unknown capacity is checked against the window operand (32,000 or a
    positive max_context_tokens), and the error asks for the model's context_window."""
    history = examples.session_ending_with_oversized_turn()
    tight = runtime(200_000, model="other", max_context_tokens=4_000)
    assert (tight.capacity, tight.context_window) == (None, 4_000)
    with pytest.raises(ContextCapacityExceeded) as caught:
        check_request(history, runtime=tight)
    assert "the fallback context window (4000 tokens; " in str(caught.value)
    assert "declare the model's context_window on its provider profile" in str(caught.value)
    assert check_request(history, runtime=runtime(None)).window == 32_000


def test_cap_2_system_prompt_and_tools_alone_name_the_context_window() -> None:
    """CAP-2: when system rows plus tool schemas alone reach the window, the message says so."""
    system = ChatMessage.system("Follow the style guide. " * 300)
    history = [system, ChatMessage.user("hi")]
    fixed = message_cost(system, current_turn=False) + estimate_tool_schemas([SEARCH])
    for window in (fixed, fixed - 1):
        with pytest.raises(ContextCapacityExceeded) as caught:
            check_request(history, runtime=runtime(window), tool_schemas=[SEARCH])
        assert str(caught.value) == (
            f"system prompt and tool definitions ({fixed} tokens) alone meet or exceed the "
            f"model context window ({window} tokens); route to a model with a larger "
            "context_window or disable unused tools"
        )
        assert caught.value.report.fixed == fixed


def test_cap_2_inputs_are_not_changed_and_dict_rows_are_accepted() -> None:
    history = examples.agent_session()
    before = list(history)
    rows = [m.model_dump() for m in history]
    assert capacity_report(rows, runtime=runtime(10**6)) == capacity_report(
        history, runtime=runtime(10**6)
    )
    assert history == before


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"max_context_tokens": 1_000},
        {"max_context_tokens": 10**9},
        {"context_compact_ratio": 1.0},
        {"context_compact_ratio": 1.0, "max_context_tokens": 10**9},
        {"history_pruning": {"enabled": True, "max_tokens": 10**9}},
    ],
)
def test_cap_3_raising_only_the_proactive_target_cannot_make_a_request_fit(
    settings: dict[str, object],
) -> None:
    """CAP-3: with a known capacity, no budget setting moves the window operand."""
    history = examples.session_ending_with_oversized_turn()
    total = capacity_report(history, runtime=runtime(10**6)).total
    resolved = runtime(total - 100, **settings)
    assert resolved.context_window == total - 100
    with pytest.raises(ContextCapacityExceeded) as caught:
        check_request(history, runtime=resolved)
    assert caught.value.report.window == total - 100
    assert caught.value.report.budget == resolved.effective_context_budget()


@pytest.mark.parametrize("window", [None, 5_000])
def test_cap_4_the_check_applies_with_proactive_trimming_disabled(window: int | None) -> None:
    """CAP-4: `max_context_tokens = 0` turns the proactive trim off, not the capacity check."""
    history = [*examples.agent_session(), *examples.oversized_turn()]
    history[-2] = ChatMessage.tool_result("call_9", examples.big_log_text(lines=2_500))
    off = runtime(window, max_context_tokens=0)
    assert off.effective_context_budget() == 0
    with pytest.raises(ContextCapacityExceeded) as caught:
        check_request(history, runtime=off)
    assert caught.value.report.budget == 0
    assert caught.value.report.window == (window or 32_000)


def test_cap_4_the_final_summary_request_is_checked_too() -> None:
    """CAP-4: the summary request after the tool-iteration limit (no tool schemas) is checked."""
    history = examples.session_ending_with_oversized_turn()
    summary = [*history, ChatMessage.user("Tool limit reached: summarise what you found.")]
    total = capacity_report(summary, runtime=runtime(10**6)).total
    with pytest.raises(ContextCapacityExceeded):
        check_request(summary, runtime=runtime(total - 1, max_context_tokens=0))
    assert check_request(summary, runtime=runtime(total, max_context_tokens=0)).fits


def test_hooks_must_be_a_collection_of_texts() -> None:
    with pytest.raises(ValueError, match="hooks: expected an iterable of hook texts"):
        check_request([ChatMessage.user("hi")], runtime=runtime(100), hooks="Today is Monday.")


def test_the_exception_carries_the_report() -> None:
    with pytest.raises(ContextCapacityExceeded) as caught:
        check_request([ChatMessage.user("x" * 400)], runtime=runtime(10))
    assert isinstance(caught.value.report, CapacityReport)
    assert caught.value.report.total == 104


# ------------------------------------------------------------------ image part (EST-2..3)


def test_dispatched_images_follow_the_estimate_rules() -> None:
    """EST-2, EST-3: user markers always, declared attachments only in the current turn."""
    user = ChatMessage.user("see [IMAGE:/a.png] and [IMAGE:https://x/b.jpg] and [IMAGE:c.png]")
    tool = ChatMessage.tool_result("c1", "shot [IMAGE:/x.png]", attachments=["/s.png", "rel.png"])
    plain_tool = ChatMessage.tool_result("c1", "shot [IMAGE:/x.png]")
    assert dispatched_images(user, current_turn=False) == 2
    assert dispatched_images(tool, current_turn=True) == 1
    assert dispatched_images(tool, current_turn=False) == 0
    assert dispatched_images(plain_tool, current_turn=True) == 0
    assert dispatched_images(ChatMessage.assistant("[IMAGE:/a.png]"), current_turn=True) == 0


def _expected_images(generated: GeneratedHistory[ChatMessage]) -> int:
    """The image count from how the history was built: `always` rows, and `current` rows after
    the last user row (the breadcrumb row counts as one for the estimate's current turn);
    with no user row at all, every row is current."""
    starts = list(generated.turn_starts)
    if generated.crumb:
        starts.insert(0, generated.prefix_len)
    last = starts[-1] if starts else -1  # no user row: every row is current
    return sum(
        p.images
        for row, p in enumerate(generated.pricing)
        if p is not None and (p.scope == "always" or row > last)
    )


@given(chat_histories(max_turns=4, max_steps=3))
def test_property_the_image_part_matches_how_the_history_was_built(
    generated: GeneratedHistory[ChatMessage],
) -> None:
    """EST-2, EST-3: the report's images are IMAGE_TOKENS per dispatched image."""
    history = generated.history
    assert estimate_image_tokens(history) == IMAGE_TOKENS * _expected_images(generated)


# ------------------------------------------------------------------ properties (CAP-2..4)

schemas = st.lists(
    st.builds(
        ToolSchema,
        name=st.sampled_from(["search_files", "read_file", "run_tests"]),
        description=st.text(max_size=40),
        parameters=st.dictionaries(st.sampled_from(["type", "path"]), st.text(max_size=8)),
    ),
    max_size=3,
)
hooks = st.lists(st.text(max_size=40), max_size=3)
windows = st.one_of(st.none(), st.integers(0, 60), st.integers(0, 20_000))
settings = st.fixed_dictionaries(
    {
        "max_context_tokens": st.none() | st.integers(0, 20_000),
        "context_compact_ratio": st.none() | st.floats(allow_nan=True, allow_infinity=True),
        "history_pruning": st.builds(
            HistoryPruning, enabled=st.booleans(), max_tokens=st.integers(0, 20_000)
        ),
    }
)


@given(
    chat_histories(max_turns=4, max_steps=3),
    windows,
    st.sampled_from(["m", "other"]),
    settings,
    schemas,
    hooks,
)
def test_property_the_check_never_passes_a_request_over_the_window(
    generated: GeneratedHistory[ChatMessage],
    window: int | None,
    model: str,
    profile: dict[str, object],
    tools: list[ToolSchema],
    hook_texts: list[str],
) -> None:
    """CAP-2, CAP-4: pass iff total <= window operand, whatever the budget (0 included)."""
    resolved = runtime(window, model=model, **profile)
    history = generated.history
    total = (
        estimate_history_tokens(history) + estimate_tool_schemas(tools) + estimate_hooks(hook_texts)
    )
    try:
        report = check_request(history, runtime=resolved, tool_schemas=tools, hooks=hook_texts)
    except ContextCapacityExceeded as error:
        report = error.report
        assert report.total > report.window
    else:
        assert report.total <= report.window
    assert report.total == total
    assert report.window == resolved.context_window
    assert report.budget == resolved.effective_context_budget()
    assert history == list(generated.rows)


@given(chat_histories(max_turns=3, max_steps=3), st.integers(1, 3_000), settings, settings)
def test_property_budget_settings_never_change_the_outcome_with_known_capacity(
    generated: GeneratedHistory[ChatMessage],
    window: int,
    first: dict[str, object],
    second: dict[str, object],
) -> None:
    """CAP-3: with a known capacity, two profiles give the same verdict and figures (budget
    aside), so raising only the proactive target cannot make a request fit."""

    def verdict(profile: dict[str, object]) -> tuple[bool, int, int]:
        try:
            report = check_request(generated.history, runtime=runtime(window, **profile))
        except ContextCapacityExceeded as error:
            report = error.report
        return report.fits, report.total, report.window

    assert verdict(first) == verdict(second)
