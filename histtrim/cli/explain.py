"""`histtrim explain`: how a configuration resolves the budget and capacity of a route, one
step a line, each with its rule ID."""

from __future__ import annotations

import argparse

from histtrim.cli.configs import load_config
from histtrim.cli.errors import EXIT_OK, InputError
from histtrim.cli.output import say
from histtrim.config import FALLBACK_CONTEXT_TOKENS, AgentConfig, RuntimeProfile
from histtrim.policy import SPEC, Policy
from histtrim.route import ResolvedRuntime, select_route


def load_route(args: argparse.Namespace, policy: Policy = SPEC) -> ResolvedRuntime:
    """Load `--config` and select the route of `--agent` (with `--hint` / `--model`), its
    defaults (turn limit, fallback budget) taken from `policy`, as the `Agent` takes them."""
    config = load_config(args.config, AgentConfig)
    try:
        return select_route(config, args.agent, hint=args.hint, session_model=args.model,
                            policy=policy)
    except ValueError as error:
        raise InputError(args.config, str(error)) from None


def explain_route(runtime: ResolvedRuntime, *, agent: str, model: str | None,
                  hint: str | None) -> list[str]:
    """The resolution of capacity, window and budget, one step a line, each with its rule ID.

    The figures are recomputed step by step for the explanation, and the result is checked
    against `ResolvedRuntime` (the library's answer), which always wins."""
    profile, provider = runtime.profile, runtime.provider
    alias, selected = runtime.provider_alias, runtime.model
    if model is not None:
        why = f"explicit session switch to model {model!r}"
    elif hint is not None:
        why = f"classifier hint {hint!r}"
    else:
        why = "the agent's default route"
    out = [
        f"ROUTE-2   route: agent {agent!r} -> provider {alias!r}, model {selected!r} ({why})"
    ]
    declared = provider.context_window if provider is not None else None
    configured = (provider.model or "").strip() if provider is not None else ""
    capacity = runtime.capacity
    if not declared:
        reason = f"provider {alias!r} declares no context_window"
    elif capacity is None:
        reason = (
            f"selected model {selected!r} is not the profile's model {configured!r}; "
            "its context_window is not borrowed"
        )
    else:
        reason = f"provider {alias!r} declares context_window {declared} for this model"
    verdict = f"capacity {capacity}" if capacity is not None else "capacity unknown"
    out.append(f"ROUTE-3   {reason} -> {verdict}")
    window = runtime.context_window
    if capacity is not None:
        source = "the known capacity"
    elif profile.max_context_tokens:
        source = "capacity unknown: max_context_tokens stands in for it"
    else:
        source = f"capacity unknown: the {runtime.policy.fallback_context_tokens} fallback"
    out.append(f"BUDGET-8  window operand {window} ({source})")
    meter = runtime.model_context_window
    out.append(
        f"ROUTE-4   clients receive model_context_window={meter}"
        if meter is not None
        else "ROUTE-4   clients receive no model_context_window (capacity unknown)"
    )
    budget = _explain_budget(profile, window, out)
    final = runtime.effective_context_budget()
    if budget != final:
        raise RuntimeError(f"explain computed {budget}, the library {final}")
    out.append(
        f"ROUTE-1   effective budget {final} and capacity "
        f"{capacity if capacity is not None else 'unknown'}, resolved together for "
        f"{alias}/{selected or '-'}"
    )
    limit = profile.max_turns()
    unit = "turns (whole user turns, not rows)"
    if profile.max_history_messages is None:
        out.append(f"LIMIT-2   max_history_messages unset -> default {limit} {unit}")
    elif limit == 0:
        out.append("LIMIT-2   max_history_messages = 0 -> authoritative; the newest turn is kept")
    else:
        out.append(f"LIMIT-2   max_history_messages = {limit} {unit}")
    out.append(f"CAP-2     before dispatch, the request must fit {window} tokens")
    return out


def _explain_budget(profile: RuntimeProfile, window: int, out: list[str]) -> int:
    configured = profile.max_context_tokens
    if configured == 0:
        out.append("BUDGET-2  max_context_tokens = 0 -> budget 0: proactive trimming is off")
        out.append("BUDGET-9  the zero sentinel stays zero whatever else is set")
        return 0
    ratio, raw = profile.valid_context_compact_ratio, profile.context_compact_ratio
    if raw is not None and ratio is None:
        out.append(f"BUDGET-4  context_compact_ratio {raw} is outside (0.0, 1.0] -> unset")
    if ratio is not None:
        base = max(1, int(window * ratio))
        out.append(f"BUDGET-3  context_compact_ratio {ratio} x window {window} -> {base}")
        if configured is not None and configured < base:
            out.append(f"BUDGET-5  max_context_tokens {configured} caps it -> {configured}")
            base = configured
    elif configured is not None:
        base = configured
        out.append(f"BUDGET-2  max_context_tokens {configured} is the budget")
    else:
        base = FALLBACK_CONTEXT_TOKENS
        out.append(f"BUDGET-1  neither max_context_tokens nor a ratio -> the historical {base}")
    pruning = profile.history_pruning
    if pruning.enabled and pruning.max_tokens > 0:
        if pruning.max_tokens < base:
            out.append(f"BUDGET-6  history_pruning.max_tokens {pruning.max_tokens} lowers it")
            base = pruning.max_tokens
        else:
            out.append(
                f"BUDGET-6  history_pruning.max_tokens {pruning.max_tokens} is not lower: "
                "no change"
            )
    if window < base:
        out.append(f"BUDGET-7  capped by the window operand {window} -> {window}")
        base = window
    else:
        out.append(f"BUDGET-7  within the window operand {window}: no cap")
    return base


def cmd_explain(args: argparse.Namespace) -> int:
    runtime = load_route(args)
    lines = explain_route(runtime, agent=args.agent, model=args.model, hint=args.hint)
    say(*lines)
    return EXIT_OK
