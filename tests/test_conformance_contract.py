"""The vectors folder is the whole contract (issue 33 §2-§3, issue 38): one rule for arguments
that `serve` follows (an argument with a declared default may be left out and takes it; any
other missing argument, or an unknown one, is invalid_input), `tool_name` answered only when it
is a string, and every normative rule the vectors rely on stated in the folder's README."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from histtrim.conformance.schema import FUNCTIONS as SCHEMAS
from histtrim.conformance.serve import answer

ROOT = Path(__file__).resolve().parent.parent
VECTORS = ROOT / "conformance" / "vectors"
README = (VECTORS / "README.md").read_text(encoding="utf-8")
TRIM = {"max_turns": 1, "has_leading_breadcrumb": False}
HISTORY = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]


def reply(function: str, history: object, arguments: dict[str, object]) -> dict[str, object]:
    return answer({"id": "x", "function": function, "history": history,
                   "arguments": arguments})


def kind(function: str, history: object, arguments: dict[str, object]) -> str | None:
    got = reply(function, history, arguments)
    error = got.get("error")
    return error["kind"] if isinstance(error, dict) else None


@pytest.mark.parametrize("arguments", [
    {"has_leading_breadcrumb": False},  # max_turns has no default
    {},
    {**TRIM, "crumb_present": False},
    {**TRIM, "extra": 1},
])
def test_serve_refuses_a_missing_or_unknown_argument(arguments: dict[str, object]) -> None:
    assert kind("trim_to_recent_turn_count", HISTORY, arguments) == "invalid_input"


def test_serve_answers_a_request_with_exactly_its_arguments() -> None:
    assert kind("trim_to_recent_turn_count", HISTORY, TRIM) is None
    assert kind("estimate_history_tokens", HISTORY, {}) is None
    assert kind("estimate_history_tokens", HISTORY, {"crumb_present": False}) == "invalid_input"


@pytest.mark.parametrize("function", [n for n, s in SCHEMAS.items() if s["defaults"]])
def test_an_argument_left_out_takes_its_declared_default(function: str) -> None:
    """A committed vector of the function, sent without the arguments that hold their
    default, gets the answer it gets with them written out; the schema requires just the
    arguments without a default."""
    spec = SCHEMAS[function]
    properties = spec["arguments"]["properties"]
    assert spec["arguments"]["required"] == [a for a in properties if a not in spec["defaults"]]
    vectors = [v for path in sorted(VECTORS.glob("[A-Z]*.json"))
               for v in json.loads(path.read_text("utf-8"))["vectors"]
               if v["function"] == function]
    sent = 0
    for vector in vectors:
        bare = {a: v for a, v in vector["arguments"].items()
                if a not in spec["defaults"] or v != spec["defaults"][a]}
        if bare != vector["arguments"] and sent < 3:
            sent += 1
            assert reply(function, vector["history"], bare) == reply(
                function, vector["history"], vector["arguments"])
    assert sent, f"no vector of {function} uses a default"


def test_a_result_sent_without_tool_name_is_answered_without_it() -> None:
    history = [{"role": "user", "content": "go"},
               {"kind": "assistant_tool_calls", "text": None,
                "tool_calls": [{"id": "c1", "name": "read", "arguments": "{}"}]},
               {"kind": "tool_results", "results": [{"tool_call_id": "c1", "content": "ok"}]},
               {"kind": "tool_results", "results": [{"tool_call_id": "c1", "content": "ok",
                                                     "tool_name": "read"}]}]
    reply = answer({"id": "x", "function": "trim_conversation_to_recent_turns",
                    "history": history, "arguments": {"max_turns": 5,
                                                      "has_leading_breadcrumb": False}})
    results = [item["results"][0] for item in reply["result"]["history"][2:]]
    assert results == [{"tool_call_id": "c1", "content": "ok"},
                       {"tool_call_id": "c1", "content": "ok", "tool_name": "read"}]


def test_the_readme_states_the_one_rule_and_each_default() -> None:
    rule = "may leave out an\nargument marked (optional) below: it takes the default shown"
    assert rule in README
    for name, spec in SCHEMAS.items():
        section = README.split(f"### `{name}`\n", 1)[1].split("\n### ", 1)[0]
        for argument, default in spec["defaults"].items():
            line = next(x for x in section.splitlines() if f"argument `{argument}`" in x)
            assert f"`{argument}` (optional)" in line
            assert f"Default: `{json.dumps(default, separators=(',', ':'))}`." in line
        for argument in spec["arguments"]["required"]:
            assert f"argument `{argument}`:" in section


@pytest.mark.parametrize("rule", [
    "1,600 tokens",  # the image price
    "U+3000",  # the whitespace set around image targets
    "UNC path",  # which targets load
    "C:/",
    "[Tool attachments: N]",  # how a carrier declares images
    '"attachments"',  # the envelope format
    "nested 128 levels or deeper",  # when a row is not an envelope
    "strip",  # the sweep's passes
    "histtrim's extra step",
])
def test_the_readme_states_the_rules_the_vectors_rely_on(rule: str) -> None:
    assert rule in README


def test_the_readme_lists_the_vectors_each_deliberate_difference_decides() -> None:
    """Each decision's worked example is among the vectors listed under it."""
    section = README.split("## Where histtrim differs from the reference runtime")[1]
    section = section.split("\n## ")[0]
    blocks = dict(
        (block.split('"')[0], block) for block in section.split('- Decision "')[1:]
    )
    assert "`sweep_orphans-680a009a011f`" in blocks["The orphan-sweep pairing"]
    assert "`message_costs-a249048ef143`" in blocks["Declared attachments of tool results"]
    assert "`trim_to_recent_turns-2c68db83050a`" in blocks["The breadcrumb owner flag"]
    assert "`cap_tool_result-" in blocks["The tool-result cap"]


def test_the_reference_cap_model_matches_the_decision_example() -> None:
    """The decision's table: 50,001 characters with the default cap come back as 50,036 in
    the reference (33,333 head, 16,667 tail, the marker for 1 character)."""
    from livingspec.vectors.deviations import _reference_cap

    capped = _reference_cap("a" * 50_001)
    assert len(capped) == 50_036
    assert capped[33_333:33_369] == "\n\n[... 1 characters truncated ...]\n\n"
