"""How a Python call of each recorded public function becomes its protocol form: the
history as rows' JSON and the arguments the vectors carry (`CONVERTERS`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from histtrim.conformance.codec import row_json
from histtrim.route import ResolvedRuntime
from histtrim.safety import DEFAULT_MAX_TOOL_RESULT_CHARS

_ROW_JSON: dict[int, tuple[Any, dict[str, Any]]] = {}
"""id(row) -> (row, its JSON): rows are frozen, and a chapter passes the same rows again and
again (a budget sweep), so each is converted once per export (the row is kept alive)."""


def _rows(history: Any) -> list[Any]:
    found = []
    for row in history:
        cached = _ROW_JSON.get(id(row))
        if cached is None or cached[0] is not row:
            cached = _ROW_JSON[id(row)] = (row, row_json(row))
        found.append(cached[1])
    return found


def runtime_json(resolved: ResolvedRuntime) -> dict[str, Any]:
    """A resolved runtime as the protocol names it: profile, provider and selected model."""
    return {
        "profile": resolved.profile.model_dump(mode="json"),
        "provider": None if resolved.provider is None else resolved.provider.model_dump(),
        "selected_model": resolved.model,
    }


def forget_rows() -> None:
    """Drop the cached rows' JSON (and the rows it keeps alive): called after each notebook."""
    _ROW_JSON.clear()


def _flag(name: str) -> Callable[..., tuple[Any, dict[str, Any]]]:
    def convert(history: Any, *, _: Any = None, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        return _rows(history), {name: bool(kwargs.get(name, False))}

    return convert


def _limit(
    name: str, flag: str, wire: str | None = None
) -> Callable[..., tuple[Any, dict[str, Any]]]:
    """`wire`: the vector's name of the library's `flag` argument, when they differ."""

    def convert(history: Any, value: Any, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        return _rows(history), {name: value, wire or flag: bool(kwargs.get(flag, False))}

    return convert


def _reported(
    history: Any, budget_tokens: Any, reported_input_tokens: Any,
    reported_population_estimated: Any, tool_schema_tokens: Any = 0, **kwargs: Any,
) -> tuple[Any, dict[str, Any]]:
    """USAGE-1..6: the reported-usage trims (a token_counter or policy is not expressible)."""
    if kwargs.get("token_counter") is not None or "policy" in kwargs:
        raise ValueError("not expressible")
    target = kwargs.get("target", 1)
    return _rows(history), {
        "budget_tokens": budget_tokens, "reported_input_tokens": reported_input_tokens,
        "reported_population_estimated": reported_population_estimated,
        "tool_schema_tokens": tool_schema_tokens,
        "crumb_present": bool(kwargs.get("crumb_present", False)), "token_target": str(target),
    }


def _capacity(messages: Any, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
    return _rows(messages), {
        "runtime": runtime_json(kwargs["runtime"]),
        "tool_schemas": [
            s.model_dump() if hasattr(s, "model_dump") else dict(s)
            for s in kwargs.get("tool_schemas", ())
        ],
        "hooks": list(kwargs.get("hooks", ())),
    }


def _resolve(profile: Any, provider: Any, selected_model: Any, **_: Any) -> tuple[Any, Any]:
    return None, {
        "profile": profile.model_dump(mode="json"),
        "provider": None if provider is None else provider.model_dump(),
        "selected_model": selected_model,
    }


def _select(config: Any, agent: str, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
    session = kwargs.get("session_model")
    return None, {
        "config": config.model_dump(mode="json"),
        "agent": agent,
        "hint": kwargs.get("hint"),
        "session_model": session if session is None or isinstance(session, str)
        else session.model_dump(),
    }


CONVERTERS: dict[str, Callable[..., tuple[Any, dict[str, Any]]]] = {
    "estimate_history_tokens": lambda history: (_rows(history), {}),
    "message_costs": lambda history, index=None: (_rows(history), {}),
    "index_turns": _flag("crumb_present"),
    "trim_to_recent_turns": _limit("budget_tokens", "crumb_present"),
    "trim_to_recent_turn_count": _limit("max_turns", "crumb_present", "has_leading_breadcrumb"),
    "trim_conversation_to_recent_turns": _limit(
        "max_turns", "crumb_present", "has_leading_breadcrumb"
    ),
    "drop_oldest_whole_turn": _flag("crumb_present"),
    "insert_breadcrumb": _flag("crumb_present"),
    "to_chat_messages": lambda history: (_rows(history), {}),
    "resolve_runtime": _resolve,
    "select_route": _select,
    "capacity_report": _capacity,
    "check_request": _capacity,
    "sweep_orphans": _flag("crumb_present"),
    "trim_to_reported_budget": _reported,
    "trim_to_reported_budget_with_crumb": _reported,
    "reported_input_tokens": lambda usage, *, model=None, expected_model=None: (None, {
        "usage": usage, "model": model, "expected_model": expected_model,
    }),
    "cap_tool_result": lambda content, max_chars=DEFAULT_MAX_TOOL_RESULT_CHARS: (None, {
        "content": content, "max_chars": max_chars,
    }),
}
"""How a Python call of each public function becomes (history, arguments)."""
