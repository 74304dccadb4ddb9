"""histtrim as the reference implementation of every protocol function, and the rules each
function's result can demonstrate."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from histtrim.conformance.codec import INVALID_INPUT, JsonObject, ProtocolError
from histtrim.conformance.functions import STATELESS, Function
from histtrim.conformance.scenario import SCENARIOS
from histtrim.conformance.schema import FUNCTIONS as SCHEMAS

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "integer": (int,), "boolean": (bool,), "string": (str,), "object": (dict,),
    "array": (list,), "null": (type(None),),
}


def _typed(name: str, function: Function) -> Function:
    """`function` behind its arguments schema: one rule for every argument. An argument the
    function declares a default for (the schema's `defaults`) may be left out and takes that
    default; any other missing argument, an unknown one or one of another JSON type is
    `invalid_input` naming it, before histtrim sees it (a boolean is not an integer)."""
    properties: dict[str, Any] = SCHEMAS[name]["arguments"]["properties"]
    defaults: dict[str, Any] = SCHEMAS[name]["defaults"]

    def call(history: Any, arguments: Mapping[str, Any]) -> JsonObject:
        unknown = next((a for a in arguments if a not in properties), None)
        if unknown is not None:
            raise ProtocolError(INVALID_INPUT, f"arguments.{str(unknown)[:80]}: not an "
                                f"argument of {name}")
        given = dict(arguments)
        for argument, schema in properties.items():
            if argument not in given:
                if argument not in defaults:
                    raise ProtocolError(INVALID_INPUT, f"arguments.{argument}: missing "
                                        "(it has no default)")
                given[argument] = copy.deepcopy(defaults[argument])
                continue
            names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
            value = given[argument]
            kinds = tuple(k for n in names for k in _JSON_TYPES[n])
            if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
                raise ProtocolError(INVALID_INPUT, f"arguments.{argument}: expected "
                                    f"{' or '.join(names)}")
        return function(history, given)

    call.__name__ = name
    return call


FUNCTIONS: dict[str, Function] = {
    name: _typed(name, function) for name, function in {**STATELESS, **SCENARIOS}.items()
}
"""Protocol function name -> histtrim's answer (the order is the README's order)."""


def _ids(spec: str) -> tuple[str, ...]:
    """`"TURN-2..5 PAIR-1"` -> every ID it names."""
    found: list[str] = []
    for part in spec.split():
        name, _, numbers = part.rpartition("-")
        low, _, high = numbers.partition("..")
        found.extend(f"{name}-{n}" for n in range(int(low), int(high or low) + 1))
    return tuple(found)


FUNCTION_RULES: dict[str, tuple[str, ...]] = {
    "estimate_history_tokens": _ids("EST-1..4"),
    "message_costs": _ids("EST-1..4"),
    "index_turns": _ids("TURN-2..3 TURN-5"),
    "trim_to_recent_turns": _ids("KEEP-1 KEEP-3 CAP-1 TURN-1..6 PAIR-1"),
    "trim_to_recent_turn_count": _ids("KEEP-2..3 LIMIT-1..2 TURN-2..6 PAIR-1"),
    "trim_conversation_to_recent_turns": _ids("KEEP-2..3 LIMIT-1..2 TURN-1..6 PAIR-1"),
    "drop_oldest_whole_turn": _ids("TURN-4 TURN-2..3 TURN-5 PAIR-1"),
    "insert_breadcrumb": _ids("SEEN-1"),
    "to_chat_messages": _ids("TURN-1"),
    "resolve_runtime": _ids("BUDGET-1..9 ROUTE-1 ROUTE-3..4"),
    "select_route": _ids("ROUTE-2 ROUTE-1 ROUTE-3..4 BUDGET-1..9"),
    "capacity_report": _ids("CAP-2..4"),
    "check_request": _ids("CAP-2..4"),
    "sweep_orphans": _ids("PAIR-2"),
    "cap_tool_result": _ids("PAIR-3"),
    "channel_sender_cache": _ids("LIMIT-3"),
    "agent_turn": _ids(
        "RUN-1..3 SEEN-1..3 CAP-1..4 LIMIT-1..2 PAIR-1..4 ROUTE-2 TURN-1 KEEP-2..3"
    ),
    "legacy_run": _ids("SEEN-4 LIMIT-1..2"),
    "held_cut": _ids("RUN-1 LIMIT-1..2 SEEN-1 CACHE-1..3"),
    "collapse_tool_context": _ids("CTX-1..5"),
    "clear_tool_results": _ids("CTX-6..8 CTX-10..12"),
    "tool_context_requests": _ids("CTX-9 CTX-1 CTX-6 CTX-10 CACHE-1..2"),
    "trim_to_reported_budget": _ids("USAGE-1..4 KEEP-1 TURN-4..6 PAIR-1"),
    "trim_to_reported_budget_with_crumb": _ids("USAGE-6 USAGE-1..4 SEEN-1..2"),
    "reported_input_tokens": _ids("USAGE-5"),
    "refused_report": _ids("USAGE-7"),
    "fit_hidden_prefix": _ids("USAGE-8"),
}
"""The rules a function's result can check; the first is its rule when a source names none."""


def evaluate(function: str, history: Any, arguments: Mapping[str, Any]) -> JsonObject:
    """The expected outcome of one call: `{"result": ...}` or `{"error": {"kind": ...}}`."""
    try:
        return {"result": FUNCTIONS[function](history, arguments)}
    except ProtocolError as error:
        return {"error": {"kind": error.kind}}
