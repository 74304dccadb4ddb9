"""Budget resolution (BUDGET-1..9) and route selection (ROUTE-1..4): table-driven cases per rule
plus hypothesis properties over random profiles."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from histtrim import (
    FALLBACK_CONTEXT_TOKENS,
    AgentConfig,
    ChatMessage,
    HistoryPruning,
    ProviderProfile,
    ResolvedRuntime,
    RuntimeProfile,
    estimate_history_tokens,
    resolve_runtime,
    select_route,
)
from histtrim.config import ModelRoute

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
BIG = ProviderProfile(model="big-model", context_window=200_000)
SMALL = ProviderProfile(model="small-model", context_window=8_192)
UNDECLARED = ProviderProfile(model="big-model")
MCT, RATIO, PRUNE = "max_context_tokens", "context_compact_ratio", "history_pruning"


def budget(
    provider: ProviderProfile | None = BIG,
    model: str | None = None,
    **settings: object,
) -> ResolvedRuntime:
    return resolve_runtime(RuntimeProfile.model_validate(settings), provider, model)


def figures(runtime: ResolvedRuntime) -> tuple[int | None, int, int]:
    return runtime.capacity, runtime.context_window, runtime.effective_context_budget()


# (provider, selected model, settings) -> (capacity, window operand, budget)
Case = tuple[ProviderProfile | None, str | None, dict[str, object], tuple[int | None, int, int]]


def _cases(*cases: Case) -> pytest.MarkDecorator:
    return pytest.mark.parametrize(("provider", "model", "settings", "expected"), cases)


def _check(
    provider: ProviderProfile | None,
    model: str | None,
    settings: dict[str, object],
    expected: tuple[int | None, int, int],
) -> None:
    assert figures(budget(provider, model, **settings)) == expected


@_cases(
    (BIG, None, {}, (200_000, 200_000, 32_000)),
    (SMALL, None, {}, (8_192, 8_192, 8_192)),
    (UNDECLARED, None, {}, (None, 32_000, 32_000)),
    (None, "any", {}, (None, 32_000, 32_000)),
    (ProviderProfile(model="m", context_window=32_000), "m", {}, (32_000, 32_000, 32_000)),
)
def test_budget_1_no_settings_is_32000_capped_by_a_smaller_capacity(
    provider: ProviderProfile | None,
    model: str | None,
    settings: dict[str, object],
    expected: tuple[int | None, int, int],
) -> None:
    """BUDGET-1"""
    _check(provider, model, settings, expected)


@_cases(
    (BIG, None, {MCT: 50_000}, (200_000, 200_000, 50_000)),
    (BIG, None, {MCT: 1}, (200_000, 200_000, 1)),
    (BIG, None, {MCT: 0}, (200_000, 200_000, 0)),
    (SMALL, None, {MCT: 0}, (8_192, 8_192, 0)),
    (UNDECLARED, None, {MCT: 0}, (None, 32_000, 0)),
)
def test_budget_2_max_context_tokens_is_absolute_and_zero_disables(
    provider: ProviderProfile | None,
    model: str | None,
    settings: dict[str, object],
    expected: tuple[int | None, int, int],
) -> None:
    """BUDGET-2"""
    _check(provider, model, settings, expected)


@_cases(
    (BIG, None, {RATIO: 0.5}, (200_000, 200_000, 100_000)),
    (BIG, None, {RATIO: 1.0}, (200_000, 200_000, 200_000)),
    (SMALL, None, {RATIO: 0.75}, (8_192, 8_192, 6_144)),
    (UNDECLARED, None, {RATIO: 0.5}, (None, 32_000, 16_000)),
    (BIG, "other-model", {RATIO: 0.25}, (None, 32_000, 8_000)),
    # IEEE multiply, truncated: 200000 * (0.1 + 0.2) == 60000.00000000001
    (BIG, None, {RATIO: 0.3}, (200_000, 200_000, 60_000)),
    (BIG, None, {RATIO: 0.1 + 0.2}, (200_000, 200_000, 60_000)),
    (SMALL, None, {RATIO: 0.1}, (8_192, 8_192, 819)),
    # max(1, ...): a tiny positive ratio still gives a positive budget
    (BIG, None, {RATIO: 1e-9}, (200_000, 200_000, 1)),
    (BIG, None, {RATIO: 5e-324}, (200_000, 200_000, 1)),
)
def test_budget_3_ratio_is_relative_to_the_route_window(
    provider: ProviderProfile | None,
    model: str | None,
    settings: dict[str, object],
    expected: tuple[int | None, int, int],
) -> None:
    """BUDGET-3"""
    _check(provider, model, settings, expected)


@pytest.mark.parametrize(
    ("window", "ratio", "expected"), [(100, 0.29, 28), (8_191, 0.29, 2_375), (3, 0.5, 1)]
)
def test_budget_3_truncates_the_ieee_product(window: int, ratio: float, expected: int) -> None:
    """BUDGET-3: the product is a double, truncated: 100 * 0.29 is 28.999999999999996 -> 28,
    although the decimal product is 29."""
    runtime = budget(ProviderProfile(context_window=window), None, context_compact_ratio=ratio)
    assert runtime.effective_context_budget() == expected


INVALID_RATIOS = [0.0, -0.0, -0.25, 1.5, 2.0, math.nan, math.inf, -math.inf]


@pytest.mark.parametrize("ratio", INVALID_RATIOS)
@pytest.mark.parametrize(
    ("provider", "settings", "expected"),
    [
        (BIG, {}, (200_000, 200_000, 32_000)),
        (BIG, {MCT: 90_000}, (200_000, 200_000, 90_000)),
        (SMALL, {}, (8_192, 8_192, 8_192)),
        (UNDECLARED, {MCT: 64_000}, (None, 64_000, 64_000)),
        (BIG, {MCT: 0}, (200_000, 200_000, 0)),
    ],
)
def test_budget_4_invalid_ratio_is_treated_as_unset(
    ratio: float,
    provider: ProviderProfile,
    settings: dict[str, object],
    expected: tuple[int | None, int, int],
) -> None:
    """BUDGET-4"""
    with_ratio = budget(provider, None, context_compact_ratio=ratio, **settings)
    assert figures(with_ratio) == figures(budget(provider, None, **settings)) == expected


@_cases(
    (BIG, None, {RATIO: 0.5, MCT: 60_000}, (200_000, 200_000, 60_000)),
    (BIG, None, {RATIO: 0.5, MCT: 150_000}, (200_000, 200_000, 100_000)),
    (SMALL, None, {RATIO: 0.5, MCT: 4_000}, (8_192, 8_192, 4_000)),
    (SMALL, None, {RATIO: 0.5, MCT: 100_000}, (8_192, 8_192, 4_096)),
)
def test_budget_5_max_context_tokens_caps_the_ratio_budget(
    provider: ProviderProfile | None,
    model: str | None,
    settings: dict[str, object],
    expected: tuple[int | None, int, int],
) -> None:
    """BUDGET-5: a downward cap only; it never raises the ratio-derived value."""
    _check(provider, model, settings, expected)


ON = {"enabled": True, "max_tokens": 8_192}


@_cases(
    (BIG, None, {PRUNE: ON}, (200_000, 200_000, 8_192)),
    (BIG, None, {PRUNE: {"enabled": True, "max_tokens": 100_000}}, (200_000, 200_000, 32_000)),
    (BIG, None, {PRUNE: {"enabled": True, "max_tokens": 0}}, (200_000, 200_000, 32_000)),
    (BIG, None, {PRUNE: {"enabled": False, "max_tokens": 10}}, (200_000, 200_000, 32_000)),
    (BIG, None, {PRUNE: ON, RATIO: 0.5}, (200_000, 200_000, 8_192)),
    (BIG, None, {PRUNE: ON, MCT: 4_000}, (200_000, 200_000, 4_000)),
    (BIG, None, {PRUNE: ON, MCT: 0}, (200_000, 200_000, 0)),
    (SMALL, None, {PRUNE: {"enabled": True, "max_tokens": 50_000}}, (8_192, 8_192, 8_192)),
)
def test_budget_6_history_pruning_lowers_but_never_raises(
    provider: ProviderProfile | None,
    model: str | None,
    settings: dict[str, object],
    expected: tuple[int | None, int, int],
) -> None:
    """BUDGET-6"""
    _check(provider, model, settings, expected)


@_cases(
    (SMALL, None, {MCT: 100_000}, (8_192, 8_192, 8_192)),
    (SMALL, None, {}, (8_192, 8_192, 8_192)),
    (SMALL, None, {RATIO: 1.0, MCT: 9_000}, (8_192, 8_192, 8_192)),
    (BIG, None, {MCT: 10**9}, (200_000, 200_000, 200_000)),
    (ProviderProfile(context_window=1), None, {}, (1, 1, 1)),
)
def test_budget_7_every_positive_budget_is_capped_by_capacity(
    provider: ProviderProfile | None,
    model: str | None,
    settings: dict[str, object],
    expected: tuple[int | None, int, int],
) -> None:
    """BUDGET-7"""
    _check(provider, model, settings, expected)


@_cases(
    (UNDECLARED, None, {MCT: 100_000}, (None, 100_000, 100_000)),
    (UNDECLARED, None, {MCT: 100_000, RATIO: 0.5}, (None, 100_000, 50_000)),
    (UNDECLARED, None, {MCT: 10_000}, (None, 10_000, 10_000)),
    (ProviderProfile(model="m", context_window=0), "m", {MCT: 48_000}, (None, 48_000, 48_000)),
    (BIG, "other-model", {MCT: 150_000}, (None, 150_000, 150_000)),
    (UNDECLARED, None, {RATIO: 0.5}, (None, 32_000, 16_000)),
)
def test_budget_8_fallback_is_a_stub_and_a_positive_budget_becomes_the_window(
    provider: ProviderProfile | None,
    model: str | None,
    settings: dict[str, object],
    expected: tuple[int | None, int, int],
) -> None:
    """BUDGET-8"""
    _check(provider, model, settings, expected)


@_cases(
    (UNDECLARED, None, {MCT: 0}, (None, 32_000, 0)),
    (UNDECLARED, None, {MCT: 0, RATIO: 0.5}, (None, 32_000, 0)),
    (BIG, None, {MCT: 0, RATIO: 1.0, PRUNE: ON}, (200_000, 200_000, 0)),
    (BIG, "other-model", {MCT: 0}, (None, 32_000, 0)),
)
def test_budget_9_explicit_zero_stays_zero(
    provider: ProviderProfile | None,
    model: str | None,
    settings: dict[str, object],
    expected: tuple[int | None, int, int],
) -> None:
    """BUDGET-9: zero is never the window operand (the fallback is) and the budget stays 0."""
    _check(provider, model, settings, expected)


# ------------------------------------------------------------------------------- routes


@pytest.mark.parametrize(
    ("configured", "selected", "known"),
    [
        ("big-model", "big-model", True),
        ("big-model", "  big-model ", True),
        ("big-model", None, True),
        ("big-model", "", True),
        (None, "anything", True),
        ("", "anything", True),
        ("big-model", "big-model-2", False),
        ("big-model", "Big-Model", False),
    ],
)
def test_route_3_a_different_model_means_unknown_capacity(
    configured: str | None, selected: str | None, known: bool
) -> None:
    """ROUTE-3: names compare after stripping; an empty side matches; case matters."""
    provider = ProviderProfile(model=configured, context_window=200_000)
    runtime = resolve_runtime(RuntimeProfile(), provider, selected)
    assert runtime.capacity == (200_000 if known else None)
    assert runtime.model_context_window == runtime.capacity


def test_route_3_the_selected_model_is_recorded_stripped_or_the_profiles() -> None:
    assert resolve_runtime(RuntimeProfile(), BIG, "  x ").model == "x"
    assert resolve_runtime(RuntimeProfile(), BIG, None).model == "big-model"
    assert resolve_runtime(RuntimeProfile(), ProviderProfile(), " ").model is None


def test_route_4_unknown_capacity_keeps_the_fallback_but_sends_no_wire_value() -> None:
    """ROUTE-4"""
    history = [ChatMessage.system("Be brief."), ChatMessage.user("hello")]
    unknown = resolve_runtime(RuntimeProfile(), BIG, "other-model", provider_alias="claude")
    assert unknown.capacity is None
    assert unknown.context_window == FALLBACK_CONTEXT_TOKENS
    assert unknown.model_context_window is None
    assert unknown.context_meter(history) == {
        "provider": "claude",
        "model": "other-model",
        "estimated_tokens": estimate_history_tokens(history),
        "budget_tokens": 32_000,
    }
    known = resolve_runtime(RuntimeProfile(), BIG, "big-model", provider_alias="claude")
    assert known.context_meter(history)["model_context_window"] == 200_000


CONFIG = AgentConfig.load(EXAMPLES / "routing.toml")


@pytest.mark.parametrize(
    ("kwargs", "alias", "model", "expected"),
    [
        ({}, "claude", "claude-sonnet-4", (200_000, 200_000, 100_000)),
        ({"hint": "fast"}, "local", "qwen2.5-coder-7b", (32_768, 32_768, 16_384)),
        ({"hint": "vision"}, "claude", "claude-haiku-4", (None, 120_000, 60_000)),
        ({"session_model": "claude-opus-4"}, "claude", "claude-opus-4", (None, 120_000, 60_000)),
        (
            {"session_model": "claude-sonnet-4"},
            "claude",
            "claude-sonnet-4",
            (200_000, 200_000, 100_000),
        ),
        (
            {"session_model": ModelRoute(provider="local"), "hint": "vision"},
            "local",
            "qwen2.5-coder-7b",
            (32_768, 32_768, 16_384),
        ),
    ],
)
def test_route_1_capacity_and_budget_are_resolved_together_for_the_route(
    kwargs: dict[str, object],
    alias: str,
    model: str,
    expected: tuple[int | None, int, int],
) -> None:
    """ROUTE-1, ROUTE-2: a hint or a session switch selects the pair that dispatch uses."""
    runtime = select_route(CONFIG, "coder", **kwargs)  # type: ignore[arg-type]
    assert (runtime.provider_alias, runtime.model) == (alias, model)
    assert figures(runtime) == expected
    assert runtime == resolve_runtime(
        CONFIG.runtimes["default"], CONFIG.providers[alias], model, provider_alias=alias
    )


def test_route_2_the_meter_follows_the_hinted_route() -> None:
    """ROUTE-2: the client's meter reports the selected route's pair, not the agent default."""
    history = [ChatMessage.user("Summarise the failing tests.")]
    default = select_route(CONFIG, "coder").context_meter(history)
    fast = select_route(CONFIG, "coder", hint="fast").context_meter(history)
    assert (default["model"], default["budget_tokens"], default["model_context_window"]) == (
        "claude-sonnet-4",
        100_000,
        200_000,
    )
    assert (fast["model"], fast["budget_tokens"], fast["model_context_window"]) == (
        "qwen2.5-coder-7b",
        16_384,
        32_768,
    )


def test_route_2_an_agent_without_a_runtime_uses_the_defaults() -> None:
    config = AgentConfig.model_validate(
        {
            "providers": {"p": {"model": "m", "context_window": 16_000}},
            "agents": {"a": {"provider": "p"}},
        }
    )
    assert figures(select_route(config, "a")) == (16_000, 16_000, 16_000)


@pytest.mark.parametrize(
    ("agent", "kwargs", "message"),
    [
        ("nobody", {}, "agent: unknown agent 'nobody'"),
        ("coder", {"hint": "creative"}, "hint: no classifier route 'creative'"),
        (
            "coder",
            {"session_model": ModelRoute(provider="nope")},
            "session_model: unknown provider",
        ),
    ],
)
def test_select_route_rejects_unknown_names(
    agent: str, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        select_route(CONFIG, agent, **kwargs)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------- properties

MODELS = st.sampled_from([None, "", " ", "big-model", " big-model ", "other-model"])
ratios = st.one_of(
    st.none(),
    st.floats(min_value=0.0, max_value=1.0, exclude_min=True),
    st.floats(allow_nan=True, allow_infinity=True),
)
token_counts = st.one_of(
    st.integers(0, 10), st.integers(0, 300_000), st.integers(0, 2**64 - 1)
)
providers = st.one_of(
    st.none(),
    st.builds(ProviderProfile, model=MODELS, context_window=st.none() | token_counts),
)
pruning = st.builds(HistoryPruning, enabled=st.booleans(), max_tokens=token_counts)
profiles = st.builds(
    RuntimeProfile,
    max_context_tokens=st.none() | token_counts,
    context_compact_ratio=ratios,
    history_pruning=pruning,
)


@given(profiles, providers, MODELS)
def test_property_budget_never_exceeds_the_window_operand(
    profile: RuntimeProfile, provider: ProviderProfile | None, model: str | None
) -> None:
    """BUDGET-7: the budget is at most the window operand, which is positive."""
    runtime = resolve_runtime(profile, provider, model)
    assert 0 <= runtime.effective_context_budget() <= runtime.context_window
    assert runtime.context_window >= 1
    if runtime.capacity is not None:
        assert runtime.context_window == runtime.capacity
    assert runtime.model_context_window == runtime.capacity


@given(profiles, providers, MODELS, token_counts)
def test_property_enabling_pruning_never_raises_the_budget(
    profile: RuntimeProfile, provider: ProviderProfile | None, model: str | None, limit: int
) -> None:
    """BUDGET-6"""
    off = profile.model_copy(update={PRUNE: HistoryPruning(max_tokens=limit)})
    on = profile.model_copy(
        update={PRUNE: HistoryPruning(enabled=True, max_tokens=limit)}
    )
    budget_off = resolve_runtime(off, provider, model).effective_context_budget()
    budget_on = resolve_runtime(on, provider, model).effective_context_budget()
    assert budget_on <= budget_off
    if limit == 0:
        assert budget_on == budget_off


@given(profiles, providers, MODELS)
def test_property_zero_max_context_tokens_always_gives_zero(
    profile: RuntimeProfile, provider: ProviderProfile | None, model: str | None
) -> None:
    """BUDGET-2, BUDGET-9; any other setting gives a positive budget."""
    zero = profile.model_copy(update={MCT: 0})
    assert resolve_runtime(zero, provider, model).effective_context_budget() == 0
    if profile.max_context_tokens != 0:
        assert resolve_runtime(profile, provider, model).effective_context_budget() >= 1


invalid_ratios = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0]),
    st.floats(max_value=0.0),
    st.floats(min_value=1.0, exclude_min=True),
)


@given(profiles, providers, MODELS, invalid_ratios)
def test_property_every_invalid_ratio_resolves_exactly_as_no_ratio(
    profile: RuntimeProfile, provider: ProviderProfile | None, model: str | None, ratio: float
) -> None:
    """BUDGET-4"""
    invalid = profile.model_copy(update={RATIO: ratio})
    unset = profile.model_copy(update={RATIO: None})
    assert figures(resolve_runtime(invalid, provider, model)) == figures(
        resolve_runtime(unset, provider, model)
    )


@given(profiles, providers, MODELS)
def test_property_max_context_tokens_only_caps_a_ratio_budget(
    profile: RuntimeProfile, provider: ProviderProfile | None, model: str | None
) -> None:
    """BUDGET-5: with a valid ratio, setting max_context_tokens can only lower the budget."""
    if profile.valid_context_compact_ratio is None or profile.max_context_tokens is None:
        return
    capped = resolve_runtime(profile, provider, model)
    uncapped = resolve_runtime(
        profile.model_copy(update={MCT: None}), provider, model
    )
    if capped.capacity is not None:  # same window operand: a pure downward cap
        assert capped.effective_context_budget() <= uncapped.effective_context_budget()
    assert capped.effective_context_budget() <= profile.max_context_tokens
