"""ROUTE-1..4, BUDGET-1..9: route selection and the resolved capacity/budget pair of the active
provider/model. Capacity, window operand and budget are derived from one `ResolvedRuntime`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from histtrim.config import AgentConfig, ModelRoute, ProviderProfile, RuntimeProfile
from histtrim.estimate import estimate_history_tokens
from histtrim.messages import ChatMessage
from histtrim.policy import SPEC, Policy


def _model_name(model: str | None) -> str:
    return (model or "").strip()


class ResolvedRuntime(BaseModel):
    """A runtime profile resolved against the selected provider profile and model (ROUTE-1).

    Every figure is derived from these fields, so capacity and budget cannot disagree."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    profile: RuntimeProfile
    provider: ProviderProfile | None
    model: str | None
    """The selected model (stripped); None when neither the selection nor the profile names one."""
    provider_alias: str | None = None
    policy: Policy = Field(default=SPEC)
    """The constants the budget, the window operand and the estimates use (the spec's)."""

    @property
    def capacity(self) -> int | None:
        """The known capacity: a positive declared `context_window` of the same model, else None.

        An empty model name on either side matches; a different model never borrows the
        profile's metadata (ROUTE-3)."""
        provider = self.provider
        if provider is None or not provider.context_window:
            return None
        selected, configured = _model_name(self.model), _model_name(provider.model)
        if selected and configured and selected != configured:
            return None
        return provider.context_window

    @property
    def context_window(self) -> int:
        """The window operand: the known capacity, else a positive `max_context_tokens`, else
        32,000 (BUDGET-8). Always positive; the capacity check compares against it."""
        capacity = self.capacity
        if capacity is not None:
            return capacity
        configured = self.profile.max_context_tokens
        return configured if configured else self.policy.fallback_context_tokens

    @property
    def max_turns(self) -> int:
        """The profile's whole-turn limit, with this policy's default (LIMIT-2)."""
        return self.profile.max_turns(self.policy)

    @property
    def max_tool_result_chars(self) -> int:
        """The profile's per-result cap, with this policy's default (PAIR-3)."""
        return self.profile.tool_result_cap(self.policy)

    @property
    def model_context_window(self) -> int | None:
        """What protocol clients receive: the capacity, or None when it is unknown (ROUTE-4)."""
        return self.capacity

    def effective_context_budget(self) -> int:
        """The proactive trimming target (BUDGET-1..9); 0 means proactive trimming is off."""
        profile, window = self.profile, self.context_window
        configured = profile.max_context_tokens
        if configured == 0:
            return 0
        ratio = profile.valid_context_compact_ratio
        if ratio is not None:
            base = max(1, int(window * ratio))
            if configured is not None:
                base = min(base, configured)
        else:
            base = self.policy.fallback_context_tokens if configured is None else configured
        pruning = profile.history_pruning
        if pruning.enabled and pruning.max_tokens > 0:
            base = min(base, pruning.max_tokens)
        return min(base, window)

    def context_meter(
        self, history: Iterable[ChatMessage | Mapping[str, Any]]
    ) -> dict[str, str | int]:
        """The wire payload of a client's context meter; `model_context_window` only when known."""
        payload: dict[str, str | int] = {}
        if self.provider_alias is not None:
            payload["provider"] = self.provider_alias
        if self.model is not None:
            payload["model"] = self.model
        payload["estimated_tokens"] = estimate_history_tokens(history, policy=self.policy)
        payload["budget_tokens"] = self.effective_context_budget()
        if self.model_context_window is not None:
            payload["model_context_window"] = self.model_context_window
        return payload


def resolve_runtime(
    profile: RuntimeProfile,
    provider: ProviderProfile | None,
    selected_model: str | None,
    *,
    provider_alias: str | None = None,
    policy: Policy = SPEC,
) -> ResolvedRuntime:
    """Resolve capacity and budget together for one provider/model route (ROUTE-1).

    No selected model (None or blank) means the provider profile's own model."""
    model = _model_name(selected_model) or (_model_name(provider.model) if provider else "")
    return ResolvedRuntime(
        profile=profile,
        provider=provider,
        model=model or None,
        provider_alias=provider_alias,
        policy=policy,
    )


def select_route(
    config: AgentConfig,
    agent: str,
    *,
    hint: str | None = None,
    session_model: str | ModelRoute | None = None,
    policy: Policy = SPEC,
) -> ResolvedRuntime:
    """The route the next provider call dispatches to, and its resolved pair (ROUTE-2).

    An explicit session switch (a model on the agent's provider, or a `ModelRoute`) wins over
    a classifier hint; a hint selects its configured route; otherwise the agent's default."""
    if agent not in config.agents:
        raise ValueError(f"agent: unknown agent {agent!r} (known: {sorted(config.agents)})")
    spec = config.agents[agent]
    route = ModelRoute(provider=spec.provider, model=spec.model)
    if isinstance(session_model, ModelRoute):
        if session_model.provider not in config.providers:
            raise ValueError(
                f"session_model: unknown provider alias {session_model.provider!r} "
                f"(known: {sorted(config.providers)})"
            )
        route = session_model
    elif session_model is not None:
        route = ModelRoute(provider=spec.provider, model=session_model)
    elif hint is not None:
        if hint not in config.routes:
            raise ValueError(f"hint: no classifier route {hint!r} (known: {sorted(config.routes)})")
        route = config.routes[hint]
    profile = config.runtimes[spec.runtime] if spec.runtime is not None else RuntimeProfile()
    return resolve_runtime(
        profile,
        config.providers[route.provider],
        route.model,
        provider_alias=route.provider,
        policy=policy,
    )
