"""The reference runtime's own unit tests for the rules histtrim took from its code, as
vectors: the tool-context collapse (CTX-1..5), the reported-usage trim (USAGE-1..3) and its
caller `enforce_reported_budget` (USAGE-6). Each case is one `#[test]` of zeroclaw's
`history_trim.rs` or `turn/mod.rs`, its inputs written here as rows;
tests/test_reference_vectors.py holds what each asserts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from histtrim.estimate import estimate_history_tokens, estimate_tool_schemas
from histtrim.messages import BREADCRUMB, ChatMessage
from livingspec.vectors.cases import Case

FILE = "crates/zeroclaw-runtime/src/agent/history_trim.rs"
TURN_FILE = "crates/zeroclaw-runtime/src/agent/turn/mod.rs"
USIZE_MAX = 2**64 - 1
Row = dict[str, Any]


def source(test: str, file: str = FILE) -> str:
    return f"reference: {file}::{test}"


def _r(role: str, content: str) -> Row:
    return {"role": role, "content": content}


def _carrier(*ids: str) -> Row:
    """The reference's minimal native carrier: an assistant row naming only call ids."""
    return _r("assistant", '{"tool_calls":[' + ",".join(f'{{"id":"{i}"}}' for i in ids) + "]}")


def native_turn(n: int) -> list[Row]:
    """user, the call, its native result, the closing reply (the reference's `native_turn`)."""
    return [
        _r("user", f"request {n}"), _carrier(f"call_{n}"),
        _r("tool", f'{{"tool_call_id":"call_{n}","content":"result {n}"}}'),
        _r("assistant", f"answer {n}"),
    ]


def prompt_mode_turn(n: int) -> list[Row]:
    return [
        _r("user", f"request {n}"), _r("assistant", f"[tool_call] shell {n}"),
        _r("user", f"[Tool results]\nresult {n}"), _r("assistant", f"answer {n}"),
    ]


def _tokens(rows: list[Row]) -> int:
    return estimate_history_tokens([ChatMessage.model_validate(r) for r in rows])


def _collapse(test: str, rows: list[Row], keep: int, crumb: bool = False) -> Case:
    return Case(source(test), ("CTX-1", "CTX-2", "CTX-3", "CTX-4", "CTX-5"),
                "collapse_tool_context", rows, {"keep_turns": keep, "crumb_present": crumb})


def collapse_cases() -> Iterator[Case]:
    yield _collapse("keeps_running_turn_plus_prior_turns_and_summarises_older_ones",
                    [_r("system", "s"), *(r for n in range(1, 5) for r in native_turn(n))], 1)
    yield _collapse("prompt_mode_results_carrier_is_not_a_turn_boundary",
                    [_r("system", "s"), *(r for n in range(1, 4) for r in prompt_mode_turn(n))],
                    0)
    yield _collapse("zero_keeps_tool_context_for_the_running_turn_only",
                    [*native_turn(1), *native_turn(2)], 0)
    yield _collapse("breadcrumb_and_system_prefix_are_copied_and_not_counted",
                    [_r("system", "a"), _r("system", "b"), _r("user", BREADCRUMB),
                     *native_turn(1), *native_turn(2)], 0, crumb=True)
    yield _collapse("aborted_turn_keeps_prompt_and_summary_but_never_a_dangling_carrier",
                    [_r("user", "request 1"), _carrier("call_1"),
                     _r("tool", '{"tool_call_id":"call_1","content":"done"}'),
                     _carrier("call_2", "call_3"), *native_turn(2)], 0)
    feedback = _r("user", "[Tool call parse error]\nYour previous response looked like...")
    yield _collapse("runtime_feedback_rows_do_not_split_the_running_turn",
                    [*native_turn(1), *native_turn(2)[:-1], feedback, feedback], 0)
    # The test's first history of three (text-only turns before a tool turn, keep 0).
    yield _collapse("text_only_turns_and_small_histories_pass_through_unchanged",
                    [_r("user", "hi"), _r("assistant", "hello"), _r("user", "again"),
                     _r("assistant", "hello again"), *native_turn(3)], 0)


def _three_turns() -> list[Row]:
    big = "x" * 2000
    return [_r("system", "system"), _r("user", f"turn1 {big}"), _r("assistant", "a1"),
            _r("user", f"turn2 {big}"), _r("assistant", "a2"), _r("user", "turn3 short"),
            _r("assistant", "a3")]


def large_schema_tokens() -> int:
    """The reference test's `large_schema_tool`, priced by histtrim's schema estimate."""
    spec = {"name": "large_schema_tool",
            "description": "a tool with a very large parameter schema",
            "parameters": {"type": "object", "properties": {"payload": {
                "type": "string", "description": "big" * 300}}}}
    return estimate_tool_schemas([spec])


def _reported(test: str, rows: list[Row], budget: int, reported: int, estimated: int,
              schemas: int = 0) -> Case:
    rules = ("USAGE-1",) if reported <= budget else ("USAGE-2", "USAGE-3")
    return Case(source(test), rules, "trim_to_reported_budget", rows,
                {"budget_tokens": budget, "reported_input_tokens": reported,
                 "reported_population_estimated": estimated, "tool_schema_tokens": schemas,
                 "crumb_present": False})


def reported_cases() -> Iterator[Case]:
    rows = _three_turns()
    estimated = _tokens(rows)
    yield _reported("reported_budget_trims_when_reported_exceeds_budget", rows,
                    estimated * 4 // 2, estimated * 4, estimated)
    small = [_r("system", "system"), _r("user", "hi"), _r("assistant", "hello")]
    estimated = _tokens(small)
    yield _reported("reported_budget_no_trim_when_real_tokens_fit", small, estimated * 4,
                    estimated, estimated)
    extreme = [_r("system", "system"), _r("user", "old " + "x" * 4000), _r("assistant", "a1"),
               _r("user", "recent short"), _r("assistant", "a2")]
    estimated = _tokens(extreme)
    yield _reported("reported_budget_trims_under_extreme_ratio", extreme,
                    estimated * 5000 // 100, estimated * 5000, estimated)
    schemas = large_schema_tokens()
    estimated = _tokens(rows) + schemas
    yield _reported("reported_budget_reserves_room_for_large_native_tool_schema", rows,
                    estimated // 2, estimated, estimated, schemas)
    measured = [_r("system", "system")]
    for i in range(8):
        measured += [_r("user", f"m{i} {'x' * 2000}"), _r("assistant", f"a{i}")]
    estimated = _tokens(measured)
    yield _reported("reported_budget_calibrates_selection_against_the_measured_population",
                    [*measured, _r("assistant", "y" * 400)], estimated * 4 // 2, estimated * 4,
                    estimated)


def _enforce(test: str, rows: list[Row], reported: int, budget: int) -> Case:
    """`enforce_reported_budget` trims with the estimate of the history it is given and
    inserts the breadcrumb: histtrim's `trim_to_reported_budget_with_crumb`."""
    return Case(source(test, TURN_FILE), ("USAGE-6", "USAGE-1"),
                "trim_to_reported_budget_with_crumb", rows,
                {"budget_tokens": budget, "reported_input_tokens": reported,
                 "reported_population_estimated": _tokens(rows), "tool_schema_tokens": 0,
                 "crumb_present": False})


def enforce_cases() -> Iterator[Case]:
    big = [*_three_turns()[:-1], _r("assistant", "final answer")]
    estimated = _tokens(big)
    yield _enforce("enforce_trims_when_reported_exceeds_budget", big, estimated * 4,
                   estimated * 4 // 2)
    small = [_r("system", "system"), _r("user", "hi"), _r("assistant", "hello")]
    yield _enforce("enforce_noop_when_within_budget", small, _tokens(small),
                   _tokens(small) * 4)
    yield _enforce("enforce_noop_when_budget_disabled", big, USIZE_MAX, 0)


def reference_test_cases() -> list[Case]:
    return [*collapse_cases(), *reported_cases(), *enforce_cases()]
