"""Which rule a vector is evidence for. A vector is tagged with the rules its source names;
then, where one rule decides the answer before the others, only that rule is kept, so a
failing vector points at the rule that was broken rather than at everything downstream:

- a history holding a `[Tool results]` carrier checks first where the carrier belongs
  (TURN-3): every limit and the estimate's current turn follow from that;
- a token trim whose kept size equals the budget checks the fit itself (KEEP-1, `<=`);
- a turn-count trim (and an agent turn where the turn limit fired) checks the limit's unit
  and its minimum (KEEP-2..3, LIMIT-1..2), and the whole-turn cut (TURN-4, PAIR-1), unless
  its limit is at least the number of rows: then no unit trims, and it keeps its rules;
- an agent turn that met a provider overflow checks the reactive trim (RUN-2, PAIR-4).

A carrier history trimmed by a turn count, or at an exact budget fit, is decided by two of
these rules at once: `narrow` returns None for it and the export leaves it out (and lists it
in the README), so that a failure always names the one rule that was broken."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from histtrim.messages import TOOL_RESULTS_PREFIX

TURN_COUNT = ("trim_to_recent_turn_count", "trim_conversation_to_recent_turns")
LIMIT_RULES = ("KEEP-2", "KEEP-3", "LIMIT-1", "LIMIT-2", "TURN-4", "PAIR-1")
OVERFLOW_RULES = ("RUN-2", "PAIR-4")
OVERFLOW_ERRORS = ("context_overflow", "context_overflow_unrecoverable")


def _has_carrier(history: Any) -> bool:
    return isinstance(history, list) and any(
        isinstance(row, Mapping) and row.get("role") == "user"
        and isinstance(row.get("content"), str) and row["content"].startswith(TOOL_RESULTS_PREFIX)
        for row in history
    )


def _keep(rules: Sequence[str], allowed: Sequence[str], fallback: str) -> tuple[str, ...]:
    return tuple(r for r in rules if r in allowed) or (fallback,)


def _beyond_any_unit(history: Any, arguments: Mapping[str, Any],
                     result: Mapping[str, Any]) -> bool:
    """A turn-count trim whose limit is at least the number of rows trims nothing whatever
    its unit (turns or messages): it checks the history's structure, not the limit."""
    limit = arguments.get("max_turns")
    return (isinstance(history, list) and isinstance(limit, int) and limit >= len(history)
            and result.get("trimmed") is False)


def narrow(
    rules: Sequence[str],
    function: str,
    history: Any,
    arguments: Mapping[str, Any],
    expected: Mapping[str, Any],
) -> tuple[str, ...] | None:
    """The rules a vector is evidence for, or None when two of them decide it (see above)."""
    result = expected.get("result") or {}
    error = (expected.get("error") or {}).get("kind")
    carrier = _has_carrier(history) or (
        function == "agent_turn" and str(arguments.get("text", "")).startswith(TOOL_RESULTS_PREFIX)
    )
    exact_fit = function == "trim_to_recent_turns" and bool(result.get("trimmed")) and (
        result.get("tokens_after") == arguments.get("budget_tokens")
    )
    limit = function in TURN_COUNT and "result" in expected
    if carrier and (exact_fit or limit):
        return None
    if carrier:
        return ("TURN-3",)
    if exact_fit:
        return ("KEEP-1",)
    if function in TURN_COUNT and _beyond_any_unit(history, arguments, result):
        return tuple(rules)
    if function in TURN_COUNT:
        return _keep(rules, LIMIT_RULES, "KEEP-2")
    if function == "agent_turn":
        requests = result.get("requests", [])
        if error in OVERFLOW_ERRORS or any(r.get("outcome") == "overflow" for r in requests):
            return _keep(rules, OVERFLOW_RULES, "RUN-2")
        if any(e.get("reason") == "turn_limit" for e in result.get("client_events", [])):
            return _keep(rules, LIMIT_RULES, "LIMIT-1")
    return tuple(rules)
