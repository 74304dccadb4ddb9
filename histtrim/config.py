"""BUDGET-1..9, LIMIT-2, ROUTE-1..3: runtime, provider and agent configuration, pydantic models
loadable from TOML or JSON. Validation only; the budget arithmetic lives in `route.py`."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
    field_validator,
    model_validator,
)

from histtrim._files import parse_document, read_document
from histtrim.policy import SPEC, Policy

FALLBACK_CONTEXT_TOKENS = SPEC.fallback_context_tokens
"""The historical budget and the window operand of an unknown capacity (BUDGET-1, BUDGET-8)."""

DEFAULT_MAX_HISTORY_TURNS = SPEC.default_max_history_turns
"""`max_history_messages` when unset; its unit is one whole user turn (LIMIT-1..2)."""

MAX_TOKEN_COUNT = 2**64 - 1
"""Token counts are unsigned 64-bit integers, as in the runtime the spec describes."""

TokenCount = Annotated[int, Field(strict=True, ge=0, le=MAX_TOKEN_COUNT)]


class _Config(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class HistoryPruning(_Config):
    """Operator pruning: enabled with a positive `max_tokens`, it lowers the budget (BUDGET-6)."""

    enabled: StrictBool = False
    max_tokens: TokenCount = 8192


class RuntimeProfile(_Config):
    """How much history an agent keeps: token budget settings, turn limit and tool-loop limits."""

    max_context_tokens: TokenCount | None = Field(
        default=None, description="Absolute token budget; 0 disables proactive trimming."
    )
    context_compact_ratio: float | None = Field(
        default=None,
        description="Budget as a fraction of the window; outside (0.0, 1.0], NaN or infinite "
        "is treated as unset (BUDGET-4).",
    )
    history_pruning: HistoryPruning = Field(default_factory=HistoryPruning)
    max_history_messages: TokenCount | None = Field(
        default=None, description="Whole-turn limit (unit: one user turn); unset means 50."
    )
    max_tool_iterations: TokenCount = 10
    max_tool_result_chars: TokenCount = Field(
        default=SPEC.max_tool_result_chars,
        description="0 disables the cap; unset means the policy's cap (50,000).",
    )

    @field_validator("context_compact_ratio", mode="before")
    @classmethod
    def _ratio_is_a_number(cls, value: Any) -> Any:
        # Any number is accepted (invalid ones mean "unset"); text and booleans are typos.
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise ValueError(f"must be a number or null, got {value!r}")
        if isinstance(value, int) and abs(value) > sys.float_info.max:
            return math.inf if value > 0 else -math.inf  # out of range like any other: unset
        return value

    @property
    def valid_context_compact_ratio(self) -> float | None:
        """The ratio if it is finite and in (0.0, 1.0]; otherwise None, exactly as if unset."""
        ratio = self.context_compact_ratio
        if ratio is None or not math.isfinite(ratio) or not 0.0 < ratio <= 1.0:
            return None
        return float(ratio)

    def max_turns(self, policy: Policy = SPEC) -> int:
        """The effective whole-turn limit: `max_history_messages`, or the policy's default
        (50) when unset (LIMIT-2)."""
        if self.max_history_messages is None:
            return policy.default_max_history_turns
        return self.max_history_messages

    def tool_result_cap(self, policy: Policy = SPEC) -> int:
        """`max_tool_result_chars` when set explicitly (0 included), else the policy's cap."""
        if "max_tool_result_chars" in self.model_fields_set:
            return self.max_tool_result_chars
        return policy.max_tool_result_chars


class ProviderProfile(_Config):
    """A provider alias's configured model and its capacity (`context_window`, if declared)."""

    model: StrictStr | None = None
    context_window: TokenCount | None = Field(
        default=None, description="The model's capacity in tokens; unset or 0 means unknown."
    )


class ModelRoute(_Config):
    """A provider alias and model to dispatch to; no model means the profile's own model."""

    provider: StrictStr = Field(min_length=1)
    model: StrictStr | None = None


class AgentProfile(_Config):
    """An agent: the provider alias it dispatches to by default and its runtime profile name."""

    provider: StrictStr = Field(min_length=1)
    model: StrictStr | None = Field(
        default=None, description="The model to select; unset means the provider profile's model."
    )
    runtime: StrictStr | None = Field(
        default=None, description="A key of `runtimes`; unset means RuntimeProfile() defaults."
    )


class AgentConfig(_Config):
    """Named provider profiles, runtime profiles, agents and classifier routes (hint -> route)."""

    providers: dict[str, ProviderProfile] = Field(default_factory=dict)
    runtimes: dict[str, RuntimeProfile] = Field(default_factory=dict)
    agents: dict[str, AgentProfile] = Field(default_factory=dict)
    routes: dict[str, ModelRoute] = Field(
        default_factory=dict, description="Classifier hint -> provider alias and model."
    )

    @model_validator(mode="after")
    def _aliases_exist(self) -> AgentConfig:
        for name, agent in self.agents.items():
            self._check_alias(f"agents.{name}.provider", agent.provider)
            if agent.runtime is not None and agent.runtime not in self.runtimes:
                raise ValueError(
                    f"agents.{name}.runtime: unknown runtime profile {agent.runtime!r} "
                    f"(known: {sorted(self.runtimes)})"
                )
        for hint, route in self.routes.items():
            self._check_alias(f"routes.{hint}.provider", route.provider)
        return self

    def _check_alias(self, field: str, alias: str) -> None:
        if alias not in self.providers:
            raise ValueError(
                f"{field}: unknown provider alias {alias!r} (known: {sorted(self.providers)})"
            )

    @classmethod
    def loads(cls, text: str, *, format: Literal["toml", "json"]) -> AgentConfig:
        """Parse a TOML or JSON document (JSON may carry NaN/Infinity ratios)."""
        return cls.model_validate(parse_document(text, format))

    @classmethod
    def load(cls, path: str | Path) -> AgentConfig:
        """Load a `.toml` or `.json` file, chosen by its suffix."""
        text, fmt = read_document(path)
        return cls.loads(text, format=fmt)
