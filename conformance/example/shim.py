"""An implementation written from the spec (RULES.md) and the vectors' README alone, behind
the conformance protocol: three functions, no histtrim import. It is the example the
README's "Connecting your implementation" section walks through; run it with

    histtrim conformance run --functions trim_to_recent_turn_count,insert_breadcrumb,\
channel_sender_cache -- python conformance/example/shim.py
"""

from __future__ import annotations

import json
import sys
from typing import Any

BREADCRUMB = "[earlier turns omitted to fit the context window]"
CARRIER = "[Tool results]"
DEFAULT_SENDER_ROWS = 50


class InvalidInput(ValueError):
    """The request cannot be answered as given: the protocol's `invalid_input`."""


# The spec, as another team would write it ---------------------------------------------------

def turn_starts(rows: list[dict[str, Any]], crumb: bool) -> tuple[int, list[int]]:
    """Where the turns start (TURN-2, TURN-3), after the leading system rows (TURN-5) and the
    breadcrumb; returns (first row after them, turn starts)."""
    prefix = 0
    while prefix < len(rows) and rows[prefix].get("role") == "system":
        prefix += 1
    body = prefix
    if crumb:
        if prefix >= len(rows) or rows[prefix].get("role") != "user":
            raise InvalidInput(f"crumb flag set but row {prefix} is not a user row")
        body += 1
    starts = [n for n in range(body, len(rows))
              if rows[n].get("role") == "user"
              and not str(rows[n].get("content", "")).startswith(CARRIER)]
    return body, starts


def trim_to_recent_turn_count(history: list[dict[str, Any]], max_turns: int,
                              has_leading_breadcrumb: bool) -> dict[str, Any]:
    """KEEP-2, KEEP-3: keep the newest max(max_turns, 1) whole turns."""
    body, starts = turn_starts(history, has_leading_breadcrumb)
    drop = len(starts) - max(max_turns, 1)
    if drop <= 0:
        kept, dropped, drop = list(history), [], 0
    else:
        cut = starts[drop]
        kept, dropped = history[:body] + history[cut:], history[body:cut]
    return {"history": kept, "dropped": dropped, "dropped_messages": len(dropped),
            "dropped_turns": drop, "kept_turns": len(starts) - drop, "trimmed": drop > 0}


def insert_breadcrumb(history: list[dict[str, Any]], crumb_present: bool) -> dict[str, Any]:
    """SEEN-1: the breadcrumb once, right after the leading system rows."""
    body, _ = turn_starts(history, crumb_present)
    if crumb_present:
        return {"history": history}
    return {"history": [*history[:body], {"role": "user", "content": BREADCRUMB},
                        *history[body:]]}


def channel_sender_cache(max_rows: int, appends: list[dict[str, Any]]) -> dict[str, Any]:
    """LIMIT-3: rows per sender, oldest dropped first; 0 means the default."""
    capacity = max_rows or DEFAULT_SENDER_ROWS
    rows: dict[str, list[dict[str, Any]]] = {}
    dropped = []
    for entry in appends:
        mine = rows.setdefault(entry["sender"], [])
        mine.append(entry["row"])
        dropped.append(1 if len(mine) > capacity else 0)
        del mine[:-capacity]
    return {"dropped": dropped, "rows": rows}


# The shim: the protocol around the functions ------------------------------------------------

def call(function: str, history: Any, arguments: dict[str, Any]) -> dict[str, Any]:
    """One request's result; raises KeyError for a function not offered."""
    if function == "trim_to_recent_turn_count":
        return trim_to_recent_turn_count(history, arguments["max_turns"],
                                         arguments["has_leading_breadcrumb"])
    if function == "insert_breadcrumb":
        return insert_breadcrumb(history, arguments["crumb_present"])
    if function == "channel_sender_cache":
        return channel_sender_cache(arguments["max_rows"], arguments["appends"])
    raise KeyError(function)


def answer(line: str) -> dict[str, Any]:
    try:
        request = json.loads(line)
    except ValueError as error:
        return {"id": None, "error": {"kind": "invalid_input", "message": str(error)}}
    ident = request.get("id")
    try:
        result = call(request["function"], request["history"], request["arguments"])
    except KeyError:
        return {"id": ident, "error": {"kind": "not_implemented"}}
    except InvalidInput as error:
        return {"id": ident, "error": {"kind": "invalid_input", "message": str(error)}}
    except Exception as error:  # a bug of ours: say so, and keep serving
        return {"id": ident, "error": {"kind": "internal_error", "message": repr(error)}}
    return {"id": ident, "result": result}


def main() -> None:
    for line in sys.stdin:
        if line.strip():
            sys.stdout.write(json.dumps(answer(line)) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
