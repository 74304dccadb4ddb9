"""Cases that let a port of the reference runtime show every TURN rule through the
functions any port has (the trims), not only through histtrim-shaped answers such as
`index_turns` or `to_chat_messages`. Each history is built by hand around one rule, and
each budget falls strictly inside a turn (never an exact fit, which checks KEEP-1)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from histtrim.conformance.reference import evaluate
from livingspec.vectors.cases import Case

Row = dict[str, Any]


def _row(role: str, content: str) -> Row:
    return {"role": role, "content": content}


def _call_rows(call_id: str, output: str) -> list[Row]:
    """A tool exchange as provider-facing rows: the assistant's call and the tool's result."""
    call = {"content": None, "tool_calls": [{"id": call_id, "name": "read_log",
                                             "arguments": "{}"}]}
    result = {"tool_call_id": call_id, "content": output}
    return [_row("assistant", json.dumps(call, separators=(",", ":"))),
            _row("tool", json.dumps(result, separators=(",", ":")))]


def _turn(n: int, tools: int = 0) -> list[Row]:
    rows = [_row("user", f"question {n}: " + "q" * (20 + 7 * n))]
    for t in range(tools):
        rows += _call_rows(f"call_{n}_{t}", f"log line {t}\n" * (5 + n))
    return [*rows, _row("assistant", f"answer {n}: " + "a" * (15 + 5 * n))]


def _costs(history: list[Row]) -> list[int]:
    result: list[int] = evaluate("message_costs", history, {})["result"]["costs"]
    return result


def _budgets_inside(history: list[Row], starts: list[int], prefix: int) -> Iterator[int]:
    """For each kept suffix from turn k: budgets that cut inside turn k - 1 (between its
    rows), so a trim that split a turn would keep part of it."""
    costs = _costs(history)
    fixed = sum(costs[:prefix])
    for k in range(1, len(starts)):
        for cut in range(starts[k - 1] + 1, starts[k]):
            yield fixed + sum(costs[cut:]) + 1


def _trims(name: str, rule: str, history: list[Row], starts: list[int],
           prefix: int = 0) -> Iterator[Case]:
    for n, budget in enumerate(_budgets_inside(history, starts, prefix)):
        yield Case(f"port:{name}#{n}", (rule,), "trim_to_recent_turns", history,
                   {"budget_tokens": budget, "crumb_present": False})


def port_cases() -> Iterator[Case]:
    # TURN-2: a turn runs from a real user message through its tool rows and replies.
    turns = [_turn(0, tools=1), _turn(1, tools=2), _turn(2)]
    history = [row for turn in turns for row in turn]
    starts = [0, len(turns[0]), len(turns[0]) + len(turns[1])]
    yield from _trims("turn-extent", "TURN-2", history, starts)
    # TURN-4: a budget inside a tool exchange drops the whole turn, the call with its result.
    exchange = [*_turn(0, tools=3), *_turn(1, tools=1)]
    yield from _trims("atomic-exchange", "TURN-4", exchange, [0, len(_turn(0, tools=3))])
    # TURN-5: leading system rows stay, whatever the budget drops.
    systems = [_row("system", "You are a careful assistant."), _row("system", "Be brief.")]
    body = [*_turn(0), *_turn(1), *_turn(2)]
    prefixed = [*systems, *body]
    yield from _trims("system-prefix", "TURN-5", prefixed, [2, 4, 6], prefix=2)
    yield Case("port:system-prefix-over", ("TURN-5",), "trim_to_recent_turns", prefixed,
               {"budget_tokens": 1, "crumb_present": False})
    # TURN-1: the structured history keeps its items (a limit no unit reaches leaves it as
    # it is), and its provider-facing form is trimmed by the same whole turns.
    items: list[Any] = [
        _row("user", "Read the deploy log."),
        {"kind": "assistant_tool_calls", "text": None,
         "tool_calls": [{"id": "c1", "name": "read_log", "arguments": "{}"}]},
        {"kind": "tool_results", "results": [{"tool_call_id": "c1",
                                              "content": "deploy ok\n" * 8}]},
        _row("assistant", "The deploy went through."),
        _row("user", "And the tests?"),
        _row("assistant", "All green."),
    ]
    yield Case("port:two-histories", ("TURN-1",), "trim_conversation_to_recent_turns", items,
               {"max_turns": len(items), "has_leading_breadcrumb": False})
    rows = evaluate("to_chat_messages", items, {})["result"]["history"]
    yield from _trims("two-histories-rows", "TURN-1", rows, [0, 4])
