"""Generated agent-loop scenarios (seeded): proactive trims between tool iterations (RUN-1),
the reactive two-thirds retry and the provider's own window (RUN-2, PAIR-4), the turn limit
in the loop (LIMIT-1..2, SEEN-1..3) and the capacity-checked final summary (CAP-4)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from livingspec.vectors.cases import Case

SYSTEM = "You are the on-call assistant."
TOOL = {"name": "read_log", "description": "Read the last lines of a log.", "parameters": {}}


def _past_turns(rng: random.Random, turns: int) -> list[dict[str, Any]]:
    """Restored turns: a question, a tool round (sometimes) and an answer."""
    items: list[dict[str, Any]] = []
    for t in range(turns):
        items.append({"role": "user", "content": f"question {t}: " + "q" * rng.randint(0, 400)})
        if rng.random() < 0.6:
            call_id = f"r{t}"
            items.append({"kind": "assistant_tool_calls", "text": None, "tool_calls": [
                {"id": call_id, "name": "read_log", "arguments": '{"lines":10}'}]})
            items.append({"kind": "tool_results", "results": [
                {"tool_call_id": call_id, "content": "log " * rng.randint(10, 300),
                 "tool_name": "read_log"}]})
        items.append({"role": "assistant", "content": f"answer {t}: " + "a" * rng.randint(0, 200)})
    return items


def _call(call_id: str) -> dict[str, Any]:
    return {"text": None, "tool_calls": [{"id": call_id, "name": "read_log", "arguments": "{}"}]}


def _say(text: str) -> dict[str, Any]:
    return {"text": text, "tool_calls": []}


def _runtime(window: int, **profile: Any) -> dict[str, Any]:
    return {"profile": profile, "provider": {"model": "m", "context_window": window},
            "selected_model": None}


def _scenario(source: str, rules: tuple[str, ...], history: list[Any], runtime: dict[str, Any],
              script: list[Any], outputs: list[str], *, hidden_window: int | None = None,
              text: str = "What happened overnight?") -> Case:
    return Case(source, rules, "agent_turn", history, {
        "runtime": runtime, "system_prompt": SYSTEM, "crumb_present": False, "tools": [TOOL],
        "turn_id": 0, "text": text, "script": script, "hidden_window": hidden_window,
        "tool_outputs": outputs,
    })


def loop_cases() -> Iterator[Case]:
    rng = random.Random(2026)
    for n in range(16):
        history = _past_turns(rng, rng.randint(1, 5))
        rounds = rng.randint(0, 3)
        script = [*(_call(f"c{i}") for i in range(rounds)), _say("Done.")]
        outputs = ["line\n" * rng.randint(20, 200) for _ in range(rounds)]
        budget = rng.choice((400, 700, 1_000, 1_500))
        yield _scenario(f"generated:loop-proactive#{n}", ("RUN-1", "RUN-3", "SEEN-2"),
                        history, _runtime(20_000, max_context_tokens=budget), script, outputs)
    for n in range(10):
        history = _past_turns(rng, rng.randint(1, 5))
        script = [{"overflow": "context window exceeded"}] * rng.randint(1, 2) + [_say("ok")]
        yield _scenario(f"generated:loop-reactive#{n}", ("RUN-2",), history,
                        _runtime(64_000, max_context_tokens=0), script, [])
    for n in range(8):
        history = _past_turns(rng, rng.randint(2, 6))
        hidden = rng.choice((300, 500, 800))
        yield _scenario(f"generated:loop-provider-window#{n}", ("PAIR-4", "RUN-2"), history,
                        _runtime(64_000, max_context_tokens=0), [_say("ok")], [],
                        hidden_window=hidden)
    for n in range(10):
        history = _past_turns(rng, rng.randint(1, 4))
        limit = n % 3
        rules = ("LIMIT-1", "SEEN-1", "SEEN-3") + (("LIMIT-2",) if limit == 0 else ())
        yield _scenario(f"generated:loop-turn-limit#{n}", rules, history,
                        _runtime(64_000, max_history_messages=limit),
                        [_call("c1"), _say("Checked.")], ["ok"])
    for n in range(8):
        history = _past_turns(rng, rng.randint(0, 2))
        window = rng.choice((300, 600, 2_000))
        yield _scenario(f"generated:loop-final-summary#{n}", ("CAP-4",), history,
                        _runtime(window, max_context_tokens=0, max_tool_iterations=1),
                        [_call("c1"), _say("Summary.")], ["x" * rng.randint(10, 2_000)])


def legacy_cases() -> Iterator[Case]:
    rng = random.Random(4)
    for n in range(8):
        items = _past_turns(rng, rng.randint(1, 4))
        rows = [row for row in items if "role" in row]  # the legacy path holds plain rows
        limit = rng.choice((0, 1, 2, 50))
        yield Case(f"generated:legacy#{n}", ("SEEN-4",), "legacy_run", rows, {
            "runtime": _runtime(64_000, max_history_messages=limit), "tools": [TOOL],
            "text": "And now?", "script": [_say("Fine.")], "hidden_window": None,
            "tool_outputs": [],
        })
