"""Configuration models: the Decisions chapter's defaults, validation naming the field,
TOML/JSON loading."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from pydantic import ValidationError

from histtrim import (
    DEFAULT_MAX_HISTORY_TURNS,
    AgentConfig,
    HistoryPruning,
    ProviderProfile,
    RuntimeProfile,
)
from histtrim.config import AgentProfile, ModelRoute

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_runtime_profile_defaults_are_the_design_values() -> None:
    profile = RuntimeProfile()
    assert profile.max_context_tokens is None
    assert profile.context_compact_ratio is None
    assert profile.history_pruning == HistoryPruning(enabled=False, max_tokens=8192)
    assert profile.max_history_messages is None
    assert profile.max_tool_iterations == 10
    assert profile.max_tool_result_chars == 50_000
    assert ProviderProfile() == ProviderProfile(model=None, context_window=None)


@pytest.mark.parametrize(
    ("value", "turns"), [(None, DEFAULT_MAX_HISTORY_TURNS), (0, 0), (1, 1), (7, 7), (50, 50)]
)
def test_max_turns_defaults_to_50_and_an_explicit_value_wins(
    value: int | None, turns: int
) -> None:
    """LIMIT-2: unset means 50 turns; an explicit value, 0 included, is authoritative."""
    assert DEFAULT_MAX_HISTORY_TURNS == 50
    assert RuntimeProfile(max_history_messages=value).max_turns() == turns


@pytest.mark.parametrize(
    ("model", "field", "location"),
    [
        (RuntimeProfile, {"max_context_tokens": -1}, ("max_context_tokens",)),
        (RuntimeProfile, {"max_history_messages": -5}, ("max_history_messages",)),
        (RuntimeProfile, {"max_tool_iterations": -1}, ("max_tool_iterations",)),
        (RuntimeProfile, {"max_tool_result_chars": -1}, ("max_tool_result_chars",)),
        (
            RuntimeProfile,
            {"history_pruning": {"max_tokens": -1}},
            ("history_pruning", "max_tokens"),
        ),
        (HistoryPruning, {"max_tokens": -8192}, ("max_tokens",)),
        (ProviderProfile, {"context_window": -1}, ("context_window",)),
    ],
)
def test_negative_token_counts_are_rejected_naming_the_field(
    model: type[RuntimeProfile | HistoryPruning | ProviderProfile],
    field: dict[str, object],
    location: tuple[str, ...],
) -> None:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(field)
    errors = caught.value.errors()
    assert [e["loc"] for e in errors] == [location]
    assert errors[0]["type"] == "greater_than_equal"


@pytest.mark.parametrize(
    "field",
    [
        {"max_context_tokens": "32000"},
        {"max_context_tokens": 1.5},
        {"max_context_tokens": True},
        {"context_compact_ratio": "0.5"},
        {"context_compact_ratio": True},
        {"history_pruning": {"enabled": "yes"}},
        {"max_context_token": 100},
    ],
)
def test_wrong_types_and_unknown_fields_are_rejected(field: dict[str, object]) -> None:
    with pytest.raises(ValidationError) as caught:
        RuntimeProfile.model_validate(field)
    assert caught.value.errors()[0]["loc"][0] == next(iter(field))


@pytest.mark.parametrize(
    "ratio",
    [0.0, -0.0, -0.5, 1.0000001, 1.5, 2, 100, math.nan, math.inf, -math.inf, -1e-300],
)
def test_an_invalid_ratio_is_accepted_and_treated_as_unset(ratio: float) -> None:
    """BUDGET-4: values outside (0.0, 1.0], NaN and infinities are not errors; they mean unset."""
    profile = RuntimeProfile(context_compact_ratio=ratio)
    assert profile.valid_context_compact_ratio is None


@pytest.mark.parametrize("ratio", [1, 1.0, 0.5, 1e-300, 5e-324, 0.9999999999999999])
def test_a_valid_ratio_is_kept(ratio: float) -> None:
    """BUDGET-4: the valid range is (0.0, 1.0], 1 included."""
    assert RuntimeProfile(context_compact_ratio=ratio).valid_context_compact_ratio == ratio


def test_profiles_are_frozen() -> None:
    with pytest.raises(ValidationError):
        RuntimeProfile().max_context_tokens = 5  # type: ignore[misc]


def test_the_toml_and_json_examples_are_the_same_configuration() -> None:
    toml = AgentConfig.load(EXAMPLES / "routing.toml")
    assert AgentConfig.load(EXAMPLES / "routing.json") == toml
    assert toml.providers["claude"] == ProviderProfile(
        model="claude-sonnet-4", context_window=200_000
    )
    assert toml.providers["openrouter"].context_window is None
    assert toml.runtimes["default"].context_compact_ratio == 0.5
    assert toml.runtimes["untrimmed"].max_context_tokens == 0
    assert toml.agents["coder"] == AgentProfile(provider="claude", runtime="default")
    assert toml.routes["vision"] == ModelRoute(provider="claude", model="claude-haiku-4")


def test_nan_and_infinite_ratios_load_from_toml_and_json() -> None:
    """BUDGET-4: both formats can spell NaN/infinity; loading them is not an error."""
    toml = AgentConfig.loads("[runtimes.a]\ncontext_compact_ratio = nan\n", format="toml")
    assert math.isnan(toml.runtimes["a"].context_compact_ratio or 0.0)
    data = json.dumps({"runtimes": {"a": {"context_compact_ratio": math.inf}}})
    assert "Infinity" in data
    loaded = AgentConfig.loads(data, format="json")
    assert loaded.runtimes["a"].context_compact_ratio == math.inf
    assert loaded.runtimes["a"].valid_context_compact_ratio is None


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"agents": {"a": {"provider": "nope"}}}, "agents.a.provider: unknown provider alias"),
        (
            {"providers": {"p": {}}, "agents": {"a": {"provider": "p", "runtime": "r"}}},
            "agents.a.runtime: unknown runtime profile",
        ),
        ({"routes": {"fast": {"provider": "x"}}}, "routes.fast.provider: unknown provider alias"),
    ],
)
def test_dangling_aliases_are_rejected_naming_the_field(
    document: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        AgentConfig.model_validate(document)


def test_a_negative_window_in_a_file_names_its_path(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[providers.p]\ncontext_window = -4096\n", encoding="utf-8")
    with pytest.raises(ValidationError) as caught:
        AgentConfig.load(path)
    assert caught.value.errors()[0]["loc"] == ("providers", "p", "context_window")


def test_load_rejects_an_unknown_suffix(tmp_path: Path) -> None:
    path = tmp_path / "agents.yaml"
    path.write_text("providers: {}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"path: expected a \.toml or \.json file"):
        AgentConfig.load(path)


def test_the_json_schema_documents_every_section_and_field() -> None:
    schema = AgentConfig.model_json_schema()
    assert set(schema["properties"]) == {"providers", "runtimes", "agents", "routes"}
    runtime = schema["$defs"]["RuntimeProfile"]["properties"]
    assert set(runtime) == {
        "max_context_tokens",
        "context_compact_ratio",
        "history_pruning",
        "max_history_messages",
        "max_tool_iterations",
        "max_tool_result_chars",
    }
    assert "BUDGET-4" in runtime["context_compact_ratio"]["description"]
    window = schema["$defs"]["ProviderProfile"]["properties"]["context_window"]
    assert {"type": "integer", "minimum": 0, "maximum": 2**64 - 1} in window["anyOf"]


@pytest.mark.parametrize("ratio", [10**400, -(10**400)], ids=["1e400", "-1e400"])
def test_an_integer_ratio_too_large_for_a_float_is_unset_not_an_error(ratio: int) -> None:
    """BUDGET-4: JSON can spell an integer no double holds; it is out of range like any other."""
    assert RuntimeProfile(context_compact_ratio=ratio).valid_context_compact_ratio is None
    text = json.dumps({"runtimes": {"a": {"context_compact_ratio": ratio}}})
    loaded = AgentConfig.loads(text, format="json")
    assert loaded.runtimes["a"].valid_context_compact_ratio is None
