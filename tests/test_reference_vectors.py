"""The reference runtime's own tests for the rules histtrim took from its code (CTX-1..5,
USAGE-1..3 and USAGE-6 through `enforce_reported_budget`) are kit vectors: one each, and each
vector's expected answer holds what the reference test asserts (zeroclaw,
crates/zeroclaw-runtime/src/agent/history_trim.rs and turn/mod.rs)."""

from __future__ import annotations

import json
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from histtrim.estimate import estimate_history_tokens
from histtrim.messages import BREADCRUMB, ChatMessage
from histtrim.tool_context import collapse_tool_context
from livingspec.vectors.reference_tests import (
    FILE,
    TURN_FILE,
    native_turn,
    prompt_mode_turn,
    reference_test_cases,
)

VECTORS = Path(__file__).resolve().parents[1] / "conformance" / "vectors"
Result = dict[str, Any]


def summary(calls: int) -> dict[str, str]:
    """The reference's `pruned_tool_exchange_summary(calls)` row."""
    return {"role": "assistant",
            "content": f"[Tool exchange: {calls} tool call(s) — results collapsed]"}


def pairs(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(r["role"], r["content"]) for r in rows]


def contents(result: Result) -> list[str]:
    return [r["content"] for r in result["history"]]


def tokens(rows: list[dict[str, Any]]) -> int:
    return estimate_history_tokens([ChatMessage.model_validate(r) for r in rows])


def keeps_running_turn(r: Result, args: Result) -> None:
    assert (r["collapsed_turns"], r["dropped_messages"]) == (2, 4)
    assert pairs(r["rows"]) == pairs([
        {"role": "system", "content": "s"}, {"role": "user", "content": "request 1"},
        summary(1), {"role": "assistant", "content": "answer 1"},
        {"role": "user", "content": "request 2"}, summary(1),
        {"role": "assistant", "content": "answer 2"}, *native_turn(3), *native_turn(4)])
    assert r["source_rows"] == [0, 1, 2, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16]


def prompt_mode_carrier(r: Result, args: Result) -> None:
    assert (r["collapsed_turns"], r["dropped_messages"]) == (2, 4)
    texts = [m["content"] for m in r["rows"]]
    turns = [m for m in r["rows"]
             if m["role"] == "user" and not m["content"].startswith("[Tool results]")]
    assert len(turns) == 3
    assert "[Tool results]\nresult 1" not in texts
    assert "[Tool results]\nresult 3" in texts
    assert r["rows"][2]["content"] == summary(1)["content"]


def zero_keeps_running(r: Result, args: Result) -> None:
    assert r["collapsed_turns"] == 1
    assert pairs(r["rows"]) == pairs([{"role": "user", "content": "request 1"}, summary(1),
                                      {"role": "assistant", "content": "answer 1"},
                                      *native_turn(2)])


def breadcrumb_prefix(r: Result, args: Result) -> None:
    assert r["collapsed_turns"] == 1
    assert pairs(r["rows"][:3]) == [("system", "a"), ("system", "b"), ("user", BREADCRUMB)]
    assert [m["content"] for m in r["rows"][3:6]] == [
        "request 1", summary(1)["content"], "answer 1"]
    assert r["source_rows"][:6] == [0, 1, 2, 3, 4, 6]


def aborted_turn(r: Result, args: Result) -> None:
    assert r["dropped_messages"] == 3
    assert pairs(r["rows"]) == pairs([{"role": "user", "content": "request 1"}, summary(3),
                                      *native_turn(2)])


def feedback_rows(r: Result, args: Result) -> None:
    feedback = {"role": "user",
                "content": "[Tool call parse error]\nYour previous response looked like..."}
    assert r["collapsed_turns"] == 1
    assert pairs(r["rows"]) == pairs([{"role": "user", "content": "request 1"}, summary(1),
                                      {"role": "assistant", "content": "answer 1"},
                                      *native_turn(2)[:-1], feedback, feedback])
    assert any(m["role"] == "tool" and "result 2" in m["content"] for m in r["rows"])


def text_only_identity(r: Result, args: Result, history: list[dict[str, Any]]) -> None:
    assert pairs(r["rows"]) == pairs(history)
    assert r["source_rows"] == list(range(len(history)))
    assert (r["dropped_messages"], r["collapsed_turns"]) == (0, 0)


def trims_when_reported_exceeds(r: Result, args: Result) -> None:
    assert r["trimmed"] and r["dropped_turns"] >= 1
    assert any("turn3 short" in c for c in contents(r))


def no_trim_when_fit(r: Result, args: Result) -> None:
    assert not r["trimmed"]


def extreme_ratio(r: Result, args: Result) -> None:
    assert r["trimmed"]
    assert any("recent short" in c for c in contents(r))


def large_schema(r: Result, args: Result) -> None:
    assert r["trimmed"]
    assert args["tool_schema_tokens"] > 0 and args["budget_tokens"] > args["tool_schema_tokens"]
    kept_total = tokens(r["history"]) + args["tool_schema_tokens"]
    assert kept_total <= args["budget_tokens"]
    assert r["tokens_after"] == kept_total
    assert any("turn3 short" in c for c in contents(r))


def calibrates(r: Result, args: Result) -> None:
    budget, reported = args["budget_tokens"], args["reported_input_tokens"]
    measured = args["reported_population_estimated"]
    assert r["trimmed"]
    assert r["tokens_after"] <= budget
    calibrated = Fraction(tokens(r["history"]) * reported, max(measured, 1))
    assert round(calibrated) <= budget  # the reference rounds its f64 product; ties absent


def enforce_trims(r: Result, args: Result, history: list[dict[str, Any]]) -> None:
    assert len(r["history"]) < len(history)
    assert r["history"][0]["role"] == "system"
    assert any("final answer" in c for c in contents(r))


def enforce_untouched(r: Result, args: Result, history: list[dict[str, Any]]) -> None:
    assert contents(r) == [m["content"] for m in history]


CHECKS: dict[str, Callable[..., None]] = {
    "keeps_running_turn_plus_prior_turns_and_summarises_older_ones": keeps_running_turn,
    "prompt_mode_results_carrier_is_not_a_turn_boundary": prompt_mode_carrier,
    "zero_keeps_tool_context_for_the_running_turn_only": zero_keeps_running,
    "breadcrumb_and_system_prefix_are_copied_and_not_counted": breadcrumb_prefix,
    "aborted_turn_keeps_prompt_and_summary_but_never_a_dangling_carrier": aborted_turn,
    "runtime_feedback_rows_do_not_split_the_running_turn": feedback_rows,
    "text_only_turns_and_small_histories_pass_through_unchanged": text_only_identity,
    "reported_budget_trims_when_reported_exceeds_budget": trims_when_reported_exceeds,
    "reported_budget_no_trim_when_real_tokens_fit": no_trim_when_fit,
    "reported_budget_trims_under_extreme_ratio": extreme_ratio,
    "reported_budget_reserves_room_for_large_native_tool_schema": large_schema,
    "reported_budget_calibrates_selection_against_the_measured_population": calibrates,
    f"{TURN_FILE}::enforce_trims_when_reported_exceeds_budget": enforce_trims,
    f"{TURN_FILE}::enforce_noop_when_within_budget": enforce_untouched,
    f"{TURN_FILE}::enforce_noop_when_budget_disabled": enforce_untouched,
}
WITH_HISTORY = (text_only_identity, enforce_trims, enforce_untouched)


def full(name: str) -> str:
    """The vector source of a reference test: names without a file are in history_trim.rs."""
    return f"reference: {name if '::' in name else f'{FILE}::{name}'}"


def exported() -> list[dict[str, Any]]:
    vectors: list[dict[str, Any]] = []
    for path in sorted(VECTORS.glob("*.json")):
        if path.name != "vectors.schema.json":
            vectors += json.loads(path.read_text(encoding="utf-8"))["vectors"]
    return vectors


@pytest.fixture(scope="module")
def by_source() -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for vector in exported():
        found.setdefault(vector["source"], []).append(vector)
    return found


def test_the_generator_writes_one_case_per_reference_test() -> None:
    sources = [case.source for case in reference_test_cases()]
    assert sources == [full(name) for name in CHECKS]


@pytest.mark.parametrize("name", list(CHECKS))
def test_each_reference_test_is_one_vector_holding_its_assertions(
    name: str, by_source: dict[str, list[dict[str, Any]]]
) -> None:
    vectors = by_source.get(full(name), [])
    assert len(vectors) == 1, f"{name}: {len(vectors)} vectors"
    vector = vectors[0]
    result = vector["expected"]["result"]
    check = CHECKS[name]
    if check in WITH_HISTORY:
        check(result, vector["arguments"], vector["history"])
    else:
        check(result, vector["arguments"])


def test_a_check_fails_on_a_wrong_answer() -> None:
    """The checks can fail: the collapse's answer with one summary row dropped does."""
    wrong = {"rows": [{"role": "user", "content": "request 1"},
                      {"role": "assistant", "content": "answer 1"}, *native_turn(2)],
             "collapsed_turns": 1, "source_rows": [], "dropped_messages": 2}
    with pytest.raises(AssertionError):
        zero_keeps_running(wrong, {})
    assert prompt_mode_turn(1)[2]["content"].startswith("[Tool results]")


@pytest.mark.parametrize(("turns", "keep", "system"), [(2, 1, False), (6, 2**64 - 1, True)])
def test_the_identity_tests_other_histories(turns: int, keep: int, system: bool) -> None:
    """`text_only_turns_and_small_histories_pass_through_unchanged` also collapses two
    native turns keeping 1 and six (after a system row) keeping usize::MAX: its vector holds
    the first history only, these two are checked here against the same assertions."""
    rows = [*([{"role": "system", "content": "s"}] if system else []),
            *(r for n in range(1, turns + 1) for r in native_turn(n))]
    edit = collapse_tool_context([ChatMessage.model_validate(r) for r in rows], keep)
    text_only_identity({"rows": [m.model_dump(mode="json") for m in edit.messages],
                        "source_rows": edit.source_rows,
                        "dropped_messages": edit.dropped_messages,
                        "collapsed_turns": edit.collapsed_turns}, {}, rows)
