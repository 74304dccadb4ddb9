"""Generated edge cases per rule: the test suite's hypothesis strategies, drawn with a fixed
seed and small sizes (and a few shrunk to the smallest history with a property), plus small
enumerations for the configuration rules. Needs hypothesis (the `dev` extra)."""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

from histtrim.conformance.codec import rows_json
from histtrim.estimate import estimate_history_tokens, message_costs
from histtrim.low_water import request_points
from histtrim.messages import TOOL_RESULTS_PREFIX, ChatMessage
from histtrim.turns import index_turns
from livingspec.vectors.cases import Case

EXAMPLES = 24
"""Hypothesis examples drawn per family (each family is a few rules)."""


def _without_local_constants() -> None:
    """Hypothesis mixes in constants found in the local modules loaded so far, so the same
    seed draws other examples in another process; vectors must not depend on that."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - another hypothesis layout: nothing to pin
        return
    if hasattr(providers, "_get_local_constants") and hasattr(providers, "Constants"):
        empty = getattr(providers, "Constants")()  # noqa: B009 - not in its __all__
        setattr(providers, "_get_local_constants", lambda: empty)  # noqa: B010
        providers.CONSTANTS_CACHE.cache.clear()


def draw(strategy: Any, count: int) -> list[Any]:
    """`count` examples of a strategy, the same ones on every run (derandomized, no database)."""
    from hypothesis import HealthCheck, Phase, given, settings

    found: list[Any] = []

    @settings(
        max_examples=count,
        derandomize=True,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        deadline=None,
    )
    @given(strategy)
    def collect(value: Any) -> None:
        found.append(value)

    collect()
    return found


def shrunk(strategy: Any, condition: Callable[[Any], bool]) -> Any:
    """The smallest example with `condition` that hypothesis finds (seeded)."""
    from hypothesis import HealthCheck, find, settings

    return find(
        strategy,
        condition,
        settings=settings(
            max_examples=2000, derandomize=True, database=None,
            suppress_health_check=list(HealthCheck), deadline=None,
        ),
    )


def _has_carrier(rows: list[Any]) -> bool:
    return any(
        isinstance(r, ChatMessage) and r.role == "user"
        and r.content.startswith(TOOL_RESULTS_PREFIX)
        for r in rows
    )


def _has_tools(rows: list[Any]) -> bool:
    return any(
        getattr(r, "role", "tool") == "tool" or getattr(r, "kind", "") != "chat" for r in rows
    )


def _turn_rules(g: Any) -> tuple[str, ...]:
    rules = ["TURN-2"]
    if _has_carrier(g.history):
        rules.append("TURN-3")
    if g.prefix_len:
        rules.append("TURN-5")
    return tuple(rules)


def _suffix_sizes(rows: list[ChatMessage], crumb: bool) -> list[int]:
    """The size of every whole-turn suffix (prefix and crumb included): the budget edges."""
    index = index_turns(rows, crumb_present=crumb)
    costs = message_costs(rows, index)
    fixed = sum(costs[: index.body_start])
    return [fixed + sum(costs[index.turn_start(t) :]) for t in range(index.turn_count)]


def token_trim_cases(s: ModuleType) -> Iterator[Case]:
    histories = draw(s.chat_histories(max_turns=4, max_steps=3, carriers=False), EXAMPLES * 2)
    for n, g in enumerate(histories):
        rows, crumb = g.history, g.crumb
        total = estimate_history_tokens(rows)
        edges = sorted({max(e + d, 0) for e in _suffix_sizes(rows, crumb) for d in (-1, 0, 1)})
        budgets = [*edges[:6], total, total + 1, 1] if g.turn_count > 1 else [total, 1]
        for budget in dict.fromkeys(budgets):
            rules = ["KEEP-1"]
            if budget >= total:
                rules = ["TURN-6"]
            elif budget < min(_suffix_sizes(rows, crumb) or [0]):
                rules = ["KEEP-3", "CAP-1"]
            yield Case(
                f"generated:token-trim#{n}", tuple(rules), "trim_to_recent_turns",
                rows_json(rows), {"budget_tokens": budget, "crumb_present": crumb},
            )


def turn_count_cases(s: ModuleType) -> Iterator[Case]:
    for n, g in enumerate(draw(s.chat_histories(max_turns=4, max_steps=3, carriers=False),
                               EXAMPLES)):
        for limit in (0, 1, 2, 3):
            rules = ["KEEP-3", "LIMIT-2"] if limit == 0 else ["KEEP-2"]
            if _has_tools(g.history) and limit:
                rules.append("LIMIT-1")
            if limit >= g.turn_count:
                rules = ["TURN-6"]
            yield Case(
                f"generated:turn-count#{n}", tuple(rules), "trim_to_recent_turn_count",
                rows_json(g.history), {"max_turns": limit, "has_leading_breadcrumb": g.crumb},
            )
    for n, g in enumerate(draw(s.conversation_histories(max_turns=4, max_steps=3,
                                                        carriers=False), EXAMPLES)):
        for limit in (0, 1, 2):
            rules = ["KEEP-3", "LIMIT-2"] if limit == 0 else ["KEEP-2", "TURN-1"]
            if limit >= g.turn_count:
                rules = ["TURN-6", "TURN-1"]
            yield Case(
                f"generated:conversation-turn-count#{n}", tuple(rules),
                "trim_conversation_to_recent_turns",
                rows_json(g.history), {"max_turns": limit, "has_leading_breadcrumb": g.crumb},
            )


def turn_cases(s: ModuleType) -> Iterator[Case]:
    for n, g in enumerate(draw(s.chat_histories(max_turns=4, max_steps=3), EXAMPLES)):
        yield Case(f"generated:turns#{n}", _turn_rules(g), "index_turns",
                   rows_json(g.history), {"crumb_present": g.crumb})
        rules = ("TURN-4", "PAIR-1") if _has_tools(g.history) else ("TURN-4",)
        yield Case(f"generated:drop-oldest#{n}", rules, "drop_oldest_whole_turn",
                   rows_json(g.history), {"crumb_present": g.crumb})
        yield Case(f"generated:breadcrumb#{n}", ("SEEN-1",), "insert_breadcrumb",
                   rows_json(g.history), {"crumb_present": g.crumb})
    for n, g in enumerate(draw(s.conversation_histories(max_turns=3, max_steps=3), EXAMPLES)):
        yield Case(f"generated:two-representations#{n}", ("TURN-1",), "to_chat_messages",
                   rows_json(g.history), {})
    carrier = shrunk(s.chat_histories(min_turns=2), lambda g: _has_carrier(g.history))
    yield Case("shrunk:carrier-continues-turn", ("TURN-3",), "index_turns",
               rows_json(carrier.history), {"crumb_present": carrier.crumb})
    system = shrunk(s.chat_histories(min_turns=2), lambda g: g.prefix_len > 0)
    yield Case("shrunk:system-prefix-kept", ("TURN-5",), "trim_to_recent_turn_count",
               rows_json(system.history), {"max_turns": 1, "has_leading_breadcrumb": system.crumb})


def _estimate_rules(g: Any) -> tuple[str, ...]:
    rules = ["EST-1"]
    if any(p is not None for p in g.pricing):
        rules.append("EST-2")
    if any(p is not None and p.scope == "current" for p in g.pricing):
        rules.append("EST-3")
    last_user = max((i for i, r in enumerate(g.history) if r.facts.opens_turn), default=-1)
    if any(r.role == "tool" for r in g.history[:last_user]):
        rules.append("EST-4")
    return tuple(rules)


def estimate_cases(s: ModuleType) -> Iterator[Case]:
    for n, g in enumerate(draw(s.chat_histories(max_turns=3, max_steps=3, free_text=True),
                               EXAMPLES * 2)):
        yield Case(f"generated:estimate#{n}", _estimate_rules(g), "message_costs",
                   rows_json(g.history), {})
        yield Case(f"generated:estimate#{n}", _estimate_rules(g), "estimate_history_tokens",
                   rows_json(g.history), {})


def sweep_cases(s: ModuleType) -> Iterator[Case]:
    """Consistent histories with rows removed: what a restored, edited session looks like."""
    rng = random.Random(14)
    for n, g in enumerate(draw(s.chat_histories(max_turns=3, max_steps=3), EXAMPLES * 2)):
        rows = g.history
        body = range(g.prefix_len + g.crumb, len(rows))
        if len(body) > 1:
            for gone in sorted(rng.sample(list(body), k=min(2, len(body) - 1)), reverse=True):
                del rows[gone]
        yield Case(f"generated:sweep#{n}", ("PAIR-2",), "sweep_orphans",
                   rows_json(rows), {"crumb_present": g.crumb})


def held_cut_cases(s: ModuleType) -> Iterator[Case]:
    """A caller passing the whole history on every request holds the agent's cut (RUN-1,
    LIMIT-1..2): low-water marks below 1, budgets between a third and a half of the total."""
    histories = draw(s.chat_histories(min_turns=3, max_turns=7, max_steps=3, crumb=False,
                                      malformed=False, carriers=False), EXAMPLES)
    for n, g in enumerate(histories):
        total = estimate_history_tokens(g.history)
        for budget, limit, token, turn in (
            (total // 3, None, "7/10", "1"), (total // 2, None, "1/2", "1"),
            (0, 2, "1", "1/2"), (total // 2, 3, "7/10", "2/3"),
        ):
            rules = ("LIMIT-1",) if budget == 0 else ("RUN-1",)
            yield Case(
                f"generated:held-cut#{n}", rules, "held_cut", rows_json(g.history),
                {"budget_tokens": budget, "max_turns": limit, "token_target": token,
                 "turn_target": turn},
            )


def _gap(times: list[float], at: int, seconds: float) -> list[float]:
    """`times` (a minute apart) with the gap before request `at` made `seconds` long."""
    return [t + (seconds - 60 if k >= at else 0) for k, t in enumerate(times)]


def cold_cache_cases(s: ModuleType) -> Iterator[Case]:
    """The held cut on a clock (CACHE-1..3): requests a minute apart (warm: no cut the budget
    does not force), one more than the cache's lifetime after the one before (cold: the cut
    moves to the cold low-water mark now, and the event says cold_cache), the gap at the
    last request or earlier (the cut then held), a gap of exactly the lifetime, unknown
    times, the rule off, a budget that forces the cut anyway, and times of the wrong count;
    and the same clocks through a clear whose trigger the requests never reach warm (a
    cold one clears now, in one batch, and the clear holds)."""
    drawn = draw(s.chat_histories(min_turns=4, max_turns=8, max_steps=3, crumb=False,
                                  malformed=False, carriers=False), EXAMPLES)
    histories = [g for g in drawn if len(request_points(g.history)) >= 4][:EXAMPLES // 3]
    lifetime, hour = 300, 3600.0
    for n, g in enumerate(histories):
        rows, total = rows_json(g.history), estimate_history_tokens(g.history)
        points = request_points(g.history)
        count = len(points)
        budget = total * 21 // 20  # the whole history fits, but is over budget * 9/10
        middle = (2 * count - 2) // 3  # an earlier request, fitting a budget the same way
        early = estimate_history_tokens(g.history[:points[middle]]) * 21 // 20
        rule: dict[str, Any] = {"lifetime": lifetime} if n % 2 else {
            "lifetime": lifetime, "cut_from": "9/10", "target": "1/2"}
        minutes = [60.0 * k for k in range(count)]
        last = count - 1
        unknown: list[float | None] = [*minutes[:-2], None, hour * 9][-count:]
        for rules, times, chosen, budget_tokens, target in (
            (("CACHE-2", "CACHE-1"), minutes, rule, budget, "1"),  # warm: nothing is cut
            (("CACHE-2", "CACHE-3", "CACHE-1"), _gap(minutes, last, hour), rule, budget, "1"),
            (("CACHE-2", "CACHE-1"), _gap(minutes, middle, hour), rule, early, "7/10"),
            # cold earlier: the cut is held until the budget moves it
            (("CACHE-1",), _gap(minutes, last, lifetime), rule, budget, "1"),  # not over it
            (("CACHE-1",), unknown, rule, budget, "1"),  # an unknown time is never cold
            (("CACHE-1",), _gap(minutes, last, hour), {}, budget, "1"),  # off: the spec
            (("CACHE-3",), _gap(minutes, last, hour), rule, total // 2, "7/10"),  # forced
        ):
            yield Case(f"generated:cold-cache#{n}", rules, "held_cut", rows,
                       {"budget_tokens": budget_tokens, "max_turns": None,
                        "token_target": target, "turn_target": "1", "times": times,
                        "cold_cache": chosen})
        if n == 0:  # one time per request the history records, or none
            yield Case("generated:cold-cache-times", ("CACHE-1",), "held_cut", rows,
                       {"budget_tokens": budget, "max_turns": None, "token_target": "1",
                        "turn_target": "1", "times": [*minutes, hour], "cold_cache": rule})

    drawn = draw(s.chat_histories(min_turns=4, max_turns=8, max_steps=3, crumb=False,
                                  malformed=False, carriers=False, images=False), EXAMPLES)
    for n, g in enumerate([g for g in drawn if len(request_points(g.history)) >= 4][:6]):
        rows, total = rows_json(g.history), estimate_history_tokens(g.history)
        points = request_points(g.history)
        count, middle = len(points), (2 * len(points) - 2) // 3
        minutes = [60.0 * k for k in range(count)]
        early = estimate_history_tokens(g.history[:points[middle]])
        for times, trigger in ((minutes, total), (_gap(minutes, count - 1, hour), total),
                               (_gap(minutes, middle, hour), early)):
            clear = {"mode": "clear", "keep": 1, "trigger_tokens": trigger * 21 // 20,
                     "clear_to": "1/2"}  # a trigger the cold request does not reach warm
            yield Case(f"generated:cold-clear#{n}", ("CACHE-2", "CACHE-1"),
                       "tool_context_requests", rows,
                       {"tool_context": clear, "budget_tokens": 10 * total, "times": times,
                        "cold_cache": {"lifetime": lifetime, "cut_from": "9/10"}})


PARSE_ERROR = ChatMessage.user("[Tool call parse error] expected a JSON object")


def tool_context_cases(s: ModuleType) -> Iterator[Case]:
    """Tool context retention (CTX-1..10): the collapse at several `keep_turns`, on histories
    with native and prompt-mode exchanges, the breadcrumb and a parse error row in the
    running turn; placeholder clearing with each of its settings, and fitted to a budget its
    own trigger never reaches (CTX-10); and every recorded request
    through the edit, stateless and held (the stable prefix)."""
    histories = draw(s.chat_histories(min_turns=2, max_turns=6, max_steps=3, malformed=False),
                     EXAMPLES)
    collapse_rules = ("CTX-1", "CTX-2", "CTX-3", "CTX-4", "CTX-5")
    for n, g in enumerate(histories):
        rows = list(g.history)
        if n % 3 == 0:
            rows.append(PARSE_ERROR)  # CTX-3: it belongs to the running turn
        total = estimate_history_tokens(rows)
        for keep in (0, 1, 2):
            yield Case(f"generated:collapse#{n}", collapse_rules, "collapse_tool_context",
                       rows_json(rows), {"keep_turns": keep, "crumb_present": g.crumb})
        settings: tuple[dict[str, Any], ...] = (
            {"mode": "clear", "keep": 1, "trigger_tokens": 0},
            {"mode": "clear", "keep": 1, "keep_unit": "turns", "trigger_tokens": 0,
             "clear_inputs": True, "preview_chars": 8},
            {"mode": "clear", "keep": 0, "trigger_tokens": total // 2, "clear_at_least": 20,
             "exclude_tools": ["read"], "min_chars": 10},
        )
        for k, chosen in enumerate(settings):
            rules = ("CTX-6", "CTX-7") if k < 2 else ("CTX-8", "CTX-6")
            yield Case(f"generated:clear#{n}", rules, "clear_tool_results", rows_json(rows),
                       {"tool_context": chosen, "crumb_present": g.crumb})
        for budget, target in ((total // 2, "1"), (total // 3, "7/10")):  # CTX-10
            fitted = {"mode": "clear", "keep": 1, "trigger_tokens": 10 * total}
            yield Case(f"generated:fit#{n}", ("CTX-10",), "clear_tool_results",
                       rows_json(rows), {"tool_context": fitted, "crumb_present": g.crumb,
                                         "budget_tokens": budget, "token_trim_target": target})
        worded = {"mode": "clear", "keep": 1, "trigger_tokens": 10 * total,
                  "clear_inputs": True, "clear_text": True}  # CTX-11, fitted (CTX-10)
        yield Case(f"generated:fit-text#{n}", ("CTX-10", "CTX-11"), "clear_tool_results",
                   rows_json(rows), {"tool_context": worded, "crumb_present": g.crumb,
                                     "budget_tokens": total // 2, "token_trim_target": "1"})
        dropping = {**worded, "drop_cleared": True}  # CTX-12, fitted (CTX-10)
        yield Case(f"generated:fit-drop#{n}", ("CTX-10", "CTX-12"), "clear_tool_results",
                   rows_json(rows), {"tool_context": dropping, "crumb_present": g.crumb,
                                     "budget_tokens": total // 4, "token_trim_target": "1"})
        if not g.crumb:
            for chosen in (
                {},  # the default: the edit off, every request the history's own rows
                {"mode": "clear", "keep": 1, "trigger_tokens": total // 3},
                {"mode": "clear", "keep": 1, "trigger_tokens": total // 3, "hold": True,
                 "clear_to": "1/2"},
                {"mode": "collapse", "keep_turns": 1},
            ):
                yield Case(f"generated:tool-context-requests#{n}", ("CTX-9",),
                           "tool_context_requests", rows_json(rows), {"tool_context": chosen})


def reported_usage_cases(s: ModuleType) -> Iterator[Case]:
    """The reported-usage trim (USAGE-1..4, 6): reports below, at and over the budget, at
    ratios of 1/2 to 3 times the estimate, with and without tool schemas and a low-water
    mark; an estimate of 0; and each provider's usage shape (USAGE-5)."""
    histories = draw(s.chat_histories(min_turns=2, max_turns=5, max_steps=3, carriers=False),
                     EXAMPLES)
    for n, g in enumerate(histories):
        rows = rows_json(g.history)
        total = estimate_history_tokens(g.history)
        for ratio, schemas, target, share in (
            ((1, 1), 0, "1", (1, 1)), ((3, 1), 0, "1", (3, 2)), ((2, 1), 20, "1", (1, 1)),
            ((3, 2), 0, "7/10", (5, 4)), ((1, 2), 0, "1", (1, 4)), ((3, 1), 0, "1", (0, 1)),
        ):
            estimated = total + schemas
            reported = estimated * ratio[0] // ratio[1]
            budget = reported * share[1] // share[0] if share[0] else 0
            fits = budget == 0 or reported <= budget
            rules = ("USAGE-1",) if fits else ("USAGE-2", "USAGE-3") if schemas or n % 2 else (
                "USAGE-4",) if target != "1" else ("USAGE-1", "USAGE-2")
            arguments = {"budget_tokens": budget, "reported_input_tokens": reported,
                         "reported_population_estimated": estimated,
                         "tool_schema_tokens": schemas, "crumb_present": g.crumb,
                         "token_target": target}
            yield Case(f"generated:reported#{n}", rules, "trim_to_reported_budget", rows,
                       arguments)
            if not fits and n % 3 == 0:
                yield Case(f"generated:reported-crumb#{n}", ("USAGE-6",),
                           "trim_to_reported_budget_with_crumb", rows, arguments)
        yield Case(f"generated:reported-zero#{n}", ("USAGE-1",), "trim_to_reported_budget",
                   rows, {"budget_tokens": 1, "reported_input_tokens": total + 5,
                          "reported_population_estimated": 0})
    usages: list[Any] = [
        {"prompt_tokens": 1200, "completion_tokens": 30},
        {"input_tokens": 12, "cache_read_input_tokens": 21000,
         "cache_creation_input_tokens": 850, "output_tokens": 9},
        {"input_tokens": 40, "cache_read_input_tokens": None},
        {"prompt_token_count": 812, "candidates_token_count": 3},
        {"prompt_tokens": 0}, {"prompt_tokens": -3}, {"prompt_tokens": 12.5},
        {"prompt_tokens": True}, {"prompt_tokens": "12"}, {"completion_tokens": 4}, {}, None,
        {"input_tokens": 0, "cache_read_input_tokens": 0},
        {"input_tokens": 10, "cache_read_input_tokens": -1},
    ]
    for n, usage in enumerate(usages):
        yield Case(f"generated:usage#{n}", ("USAGE-5",), "reported_input_tokens", None,
                   {"usage": usage})
    yield Case("generated:usage-model", ("USAGE-5",), "reported_input_tokens", None,
               {"usage": {"prompt_tokens": 900}, "model": "gpt-4o-mini",
                "expected_model": "gpt-4o"})
    for n, (reported, estimated, schemas) in enumerate((
        (139_072, 1000, 0), (139_073, 1000, 0), (10**30, 1000, 0), (140_000, 1000, 200),
        (21_715, 4, 0), (5, 0, 0), (131_072, 0, 0), (131_073, 0, 0),
    )):
        yield Case(f"generated:refused#{n}", ("USAGE-7",), "refused_report", None,
                   {"reported_input_tokens": reported,
                    "reported_population_estimated": estimated, "tool_schema_tokens": schemas})
    line = [(e, 20_000 + 7 * e // 5) for e in (1_000, 5_000, 9_000, 13_000, 17_000)]
    for n, (pairs, schemas) in enumerate((
        ([], 0), ([(1000, 24_000)], 0), ([(1000, 1500)], 800), ([(1000, 800)], 0),
        ([(0, 500)], 0), (line, 0), ([*line, (4_000, 28_600)], 0),
        ([(1000, 5000), (1000, 5200)], 0), ([(1000, 900_000), (2000, 900_100)], 0),
        ([(e, 3 * e) for e in range(100, 2100, 100)], 0),
        ([(e, 20_000 + 7 * e // 5 + (90 if e % 3000 == 0 else -40))
          for e in range(1_000, 17_000, 1_000)], 0),
        ([(1000, 2000), (2000, 3000), (3000, 40_000), (4000, 40_000)], 0),
        ([*line[:3], (4_000, 28_600), *line[3:]], 0),
        ([*line, (18_000, 26_000 + 7 * 18_000 // 5), (18_500, 26_000 + 7 * 18_500 // 5)], 0),
        ([*line, (18_000, 26_000 + 7 * 18_000 // 5), (19_000, 20_000 + 7 * 19_000 // 5)], 0),
    )):
        yield Case(f"generated:hidden-prefix#{n}", ("USAGE-8",), "fit_hidden_prefix", None,
                   {"pairs": [list(p) for p in pairs], "tool_schema_tokens": schemas})


ALL = (token_trim_cases, turn_count_cases, turn_cases, estimate_cases, sweep_cases,
       held_cut_cases, reported_usage_cases, tool_context_cases, cold_cache_cases)


def generated_cases() -> list[Case]:
    from livingspec import strategies

    return [case for family in ALL for case in family(strategies)]


def generated_cases_isolated() -> list[Case]:
    """`generated_cases` in a fresh interpreter: hypothesis draws are reproducible run to run,
    but not after arbitrary code (a pytest session, the notebooks) has run in the process."""
    import json
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "livingspec.vectors.generate"],
        capture_output=True, text=True, encoding="utf-8", check=False,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    if done.returncode != 0:
        raise RuntimeError(f"generating the hypothesis cases failed:\n{done.stderr}")
    return [Case(c["source"], tuple(c["rules"]), c["function"], c["history"], c["arguments"])
            for c in json.loads(done.stdout)]


if __name__ == "__main__":
    import json

    _without_local_constants()
    cases = generated_cases()
    json.dump([{"source": c.source, "rules": c.rules, "function": c.function,
                "history": c.history, "arguments": c.arguments} for c in cases], sys.stdout)
