"""Generated cases for the rules about settings: the budget and route resolution (BUDGET-*,
ROUTE-*), the capacity check (CAP-2..4), the per-result cap (PAIR-3) and the channel sender
cache (LIMIT-3). Seeded samples of small grids; each case is tagged from its own settings."""

from __future__ import annotations

import random
from collections.abc import Iterator
from itertools import product
from typing import Any

from histtrim.conformance.codec import rows_json
from histtrim.messages import ChatMessage
from livingspec.vectors.cases import Case

MAX_TOKENS = (None, 0, 1, 6_000, 40_000, 300_000)
RATIOS = (None, -0.5, 0.0, 0.25, 0.5, 1.0, 1.5)
PRUNING: tuple[dict[str, Any], ...] = (
    {},
    {"enabled": True, "max_tokens": 4_096},
    {"enabled": True, "max_tokens": 0},
    {"enabled": False, "max_tokens": 100},
)
WINDOWS = (None, 0, 16_000, 128_000)
MODELS = ("gpt-x", " gpt-x ", "other-model", None)


def _budget_rules(
    mct: Any, ratio: Any, pruning: dict[str, Any], window: Any, model: Any
) -> list[str]:
    known = bool(window) and (model is None or model.strip() == "gpt-x")
    valid_ratio = ratio is not None and 0 < ratio <= 1
    rules: list[str] = []
    if mct is None and ratio is None:
        rules.append("BUDGET-1")
    if mct is not None and mct > 0:
        rules.append("BUDGET-2")
    if valid_ratio:
        rules.append("BUDGET-3")
    if ratio is not None and not valid_ratio:
        rules.append("BUDGET-4")
    if mct is not None and valid_ratio:
        rules.append("BUDGET-5")
    if pruning.get("enabled"):
        rules.append("BUDGET-6")
    if known and mct != 0:
        rules.append("BUDGET-7")
    if not known and mct:
        rules.append("BUDGET-8")
    if mct == 0:
        rules.append("BUDGET-9")
    if window and not known:
        rules.append("ROUTE-3")
    if not known:
        rules.append("ROUTE-4")
    return rules


def budget_cases() -> Iterator[Case]:
    grid = list(product(MAX_TOKENS, RATIOS, PRUNING, WINDOWS, MODELS))
    for n, (mct, ratio, pruning, window, model) in enumerate(random.Random(14).sample(grid, 180)):
        profile = {"max_context_tokens": mct, "context_compact_ratio": ratio,
                   "history_pruning": pruning}
        rules = ("ROUTE-1", *_budget_rules(mct, ratio, pruning, window, model))
        yield Case(
            f"generated:budget#{n}", rules,
            "resolve_runtime", None,
            {"profile": profile, "provider": {"model": "gpt-x", "context_window": window},
             "selected_model": model},
        )


CONFIG = {
    "providers": {
        "main": {"model": "gpt-x", "context_window": 128_000},
        "small": {"model": "mini", "context_window": 8_000},
        "unknown": {"model": "local"},
    },
    "runtimes": {
        "ratio": {"context_compact_ratio": 0.5},
        "fixed": {"max_context_tokens": 20_000},
    },
    "agents": {
        "coder": {"provider": "main", "runtime": "ratio"},
        "helper": {"provider": "small", "runtime": "fixed"},
        "plain": {"provider": "unknown"},
    },
    "routes": {"cheap": {"provider": "small"}, "local": {"provider": "unknown", "model": "other"}},
}


def route_cases() -> Iterator[Case]:
    sessions: list[Any] = [None, "gpt-x", "gpt-y", {"provider": "small"},
                           {"provider": "unknown", "model": "local"}, {"provider": "nowhere"}]
    agents, hints = ("coder", "helper", "plain", "ghost"), (None, "cheap", "local", "typo")
    grid = product(agents, hints, sessions)
    for n, (agent, hint, session) in enumerate(grid):
        rules = ["ROUTE-2", "ROUTE-1"] if hint is not None or session is not None else ["ROUTE-1"]
        yield Case(f"generated:route#{n}", tuple(rules), "select_route", None,
                   {"config": CONFIG, "agent": agent, "hint": hint, "session_model": session})


def _request(size: int, images: int) -> list[Any]:
    marker = "".join(f"[IMAGE:/tmp/shot{i}.png]" for i in range(images))
    return rows_json([
        ChatMessage.system("You are a careful assistant."),
        ChatMessage.user("old question " + "x" * size),
        ChatMessage.assistant("old answer"),
        ChatMessage.user("look at this " + marker),
    ])


SCHEMAS = [{"name": "read_log", "description": "Read a log.",
            "parameters": {"type": "object", "properties": {"service": {"type": "string"}}}}]


def capacity_cases() -> Iterator[Case]:
    n = 0
    for size, images, window, mct, schemas, hooks in product(
        (0, 4_000), (0, 1, 3), (2_000, 6_000), (None, 0, 1_000, 10**6), (False, True),
        ((), ("Remember the user's timezone.",)),
    ):
        if (n := n + 1) % 3:
            continue  # a third of the grid is plenty
        rules = ["CAP-2"]
        if mct is not None and mct > window:
            rules.append("CAP-3")
        if mct == 0:
            rules.append("CAP-4")
        runtime = {"profile": {"max_context_tokens": mct},
                   "provider": {"model": "m", "context_window": window}, "selected_model": None}
        arguments = {"runtime": runtime, "tool_schemas": SCHEMAS if schemas else [],
                     "hooks": list(hooks)}
        for function in ("check_request", "capacity_report"):
            yield Case(f"generated:capacity#{n}", tuple(rules), function,
                       _request(size, images), arguments)


def tool_result_cap_cases() -> Iterator[Case]:
    text = "".join(chr(ord("a") + i % 26) for i in range(120)) + "ñ😀"
    for n, (length, limit) in enumerate(product((0, 1, 2, 3, 30, 121, 122), (0, 1, 2, 3, 30, 122))):
        yield Case(f"generated:tool-result-cap#{n}", ("PAIR-3",), "cap_tool_result", None,
                   {"content": text[:length], "max_chars": limit})


def sender_cache_cases() -> Iterator[Case]:
    rng = random.Random(3)
    for n, max_rows in enumerate((0, 1, 2, 3, 0, 1, 2, 3, 50, 5)):
        count = rng.randint(1, 8) if max_rows != 50 and max_rows != 0 else 55 + rng.randint(0, 3)
        appends = [
            {"sender": rng.choice(("ana", "bo")),
             "row": {"role": rng.choice(("user", "assistant")), "content": f"message {i}"}}
            for i in range(count)
        ]
        yield Case(f"generated:sender-cache#{n}", ("LIMIT-3",), "channel_sender_cache", None,
                   {"max_rows": max_rows, "appends": appends})


def settings_cases() -> list[Case]:
    return [*budget_cases(), *route_cases(), *capacity_cases(), *tool_result_cap_cases(),
            *sender_cache_cases()]


