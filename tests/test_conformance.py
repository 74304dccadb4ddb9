"""The conformance kit (issue 14): the committed vectors are a fresh export, every rule has
vectors, the runner passes histtrim's own `serve` and fails each broken variant on exactly
the rules it breaks, and a crashing, hanging or babbling implementation is a failure."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import jsonschema
import pytest

from histtrim.cli import main
from histtrim.conformance.compare import same
from histtrim.conformance.reference import FUNCTION_RULES, FUNCTIONS
from histtrim.conformance.report import tally
from histtrim.conformance.runner import CannotStart, judge, run
from histtrim.conformance.schema import VECTOR_FILE_SCHEMA
from histtrim.conformance.serve import answer
from histtrim.conformance.vectors import Vector, load, patterns, select
from livingspec.specindex import rule_ids
from livingspec.vectors.broken import BROKEN
from livingspec.vectors.export import MissingRules, build, check_coverage, render
from livingspec.vectors.record import record_notebook
from livingspec.vectors.tags import narrow
from livingspec.vectors.vectorset import VectorSet

ROOT = Path(__file__).resolve().parent.parent
VECTORS = ROOT / "conformance" / "vectors"
RULES_MD = ROOT / "notebooks" / "spec" / "RULES.md"
SERVE = [sys.executable, "-m", "histtrim.cli", "conformance", "serve"]
BROKEN_SERVE = [sys.executable, "-m", "livingspec.vectors", "serve", "--broken"]


@pytest.fixture(scope="module")
def committed() -> list[Vector]:
    return load(VECTORS)[0]


def test_committed_vectors_equal_a_fresh_export() -> None:
    fresh = render(build(ROOT))
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in VECTORS.iterdir() if p.is_file()}
    stale = sorted(n for n in fresh.keys() | on_disk.keys() if fresh.get(n) != on_disk.get(n))
    assert not stale, f"conformance/vectors is stale ({', '.join(stale)}): run make vectors"


def test_every_file_follows_the_schema() -> None:
    files = sorted(p for p in VECTORS.glob("*.json") if p.name != "vectors.schema.json")
    schema = json.loads((VECTORS / "vectors.schema.json").read_text(encoding="utf-8"))
    assert schema == VECTOR_FILE_SCHEMA
    jsonschema.Draft202012Validator.check_schema(schema)
    for path in files:
        jsonschema.validate(json.loads(path.read_text(encoding="utf-8")), schema)
    assert [p.stem for p in files] == sorted(
        {rule.split("-")[0] for rule in rule_ids(RULES_MD)}
    )


def test_at_least_500_vectors_and_every_rule_covered(committed: list[Vector]) -> None:
    assert len(committed) >= 500
    assert len({v.id for v in committed}) == len(committed)
    covered = {rule for v in committed for rule in v.rules}
    assert covered == set(rule_ids(RULES_MD))
    for vector in committed:
        assert vector.function in FUNCTIONS
        assert set(vector.rules) <= set(FUNCTION_RULES[vector.function]) | {"TURN-3", "KEEP-1"}


def test_every_source_kind_contributes(committed: list[Vector]) -> None:
    kinds = {v.source.split(":")[0] for v in committed}
    assert kinds == {"notebook", "generated", "shrunk", "hostile", "port", "real", "reference"}
    notebooks = {v.source.split(":")[1].split("#")[0] for v in committed
                 if v.source.startswith("notebook:")}
    assert {"01_turns.ipynb", "05_route_and_capacity.ipynb", "08_pairing_safety.ipynb"} <= notebooks


def test_every_turn_rule_has_vectors_through_the_functions_any_port_has(
    committed: list[Vector],
) -> None:
    """index_turns and to_chat_messages are histtrim's shapes; a port shows each TURN rule
    through the trims or the estimate."""
    port = {"trim_to_recent_turns", "trim_to_recent_turn_count",
            "trim_conversation_to_recent_turns", "estimate_history_tokens"}
    turn_rules = {r for r in rule_ids(RULES_MD) if r.startswith("TURN-")}
    shown = {r for v in committed if v.function in port for r in v.rules}
    assert turn_rules <= shown


def test_every_vector_carries_every_argument(committed: list[Vector]) -> None:
    from histtrim.conformance.schema import FUNCTIONS as SCHEMAS

    for vector in committed:
        assert set(SCHEMAS[vector.function]["defaults"]) <= set(vector.arguments), vector.id
        if "result" in vector.expected:
            assert set(vector.arguments) == set(
                SCHEMAS[vector.function]["arguments"]["properties"]), vector.id


def test_a_rule_without_vectors_fails_the_build(committed: list[Vector]) -> None:
    found = build_from(committed)
    check_coverage(found)  # the real set is complete
    without = VectorSet(found.rules, [v for v in found.vectors if "LIMIT-3" not in v["rules"]])
    with pytest.raises(MissingRules, match="LIMIT-3"):
        check_coverage(without)


def build_from(vectors: list[Vector]) -> VectorSet:
    from livingspec.specindex import rules

    return VectorSet(rules(RULES_MD), [{"rules": list(v.rules)} for v in vectors])


def test_the_runner_passes_histtrim_serve_on_every_vector(committed: list[Vector]) -> None:
    outcomes = run(committed, SERVE, timeout=30).outcomes
    failed = [(o.vector.id, o.reason) for o in outcomes if o.status != "passed"]
    assert not failed
    assert len(outcomes) == len(committed)


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_each_broken_implementation_fails_exactly_the_rules_it_breaks(
    committed: list[Vector], name: str
) -> None:
    outcomes = run(committed, [*BROKEN_SERVE, name], timeout=30).outcomes
    rows = tally(outcomes, rule_ids(RULES_MD), ("*",))
    failing = {row.rule_id for row in rows if not row.ok}
    assert failing == set(BROKEN[name].breaks)
    # it fails by the rule it changes, never by crashing (a patched function that no longer
    # takes its caller's arguments fails every vector of that path for the wrong reason)
    crashed = [o.vector.id for o in outcomes if "internal_error" in o.reason]
    assert not crashed


def test_the_exported_readme_documents_the_protocol_and_counts(committed: list[Vector]) -> None:
    text = (VECTORS / "README.md").read_text(encoding="utf-8")
    assert f"{len(committed)} vectors." in text
    for function in FUNCTIONS:
        assert f"`{function}`" in text
    assert "not_implemented" in text and "--rules" in text


# The runner against misbehaving implementations: failures, never a hang.

def _fake(tmp_path: Path, body: str) -> list[str]:
    script = tmp_path / "impl.py"
    script.write_text("import sys, json, time\n" + body, encoding="utf-8")
    return [sys.executable, str(script)]


def _few(committed: list[Vector]) -> list[Vector]:
    return [v for v in committed if v.function == "cap_tool_result"][:3]


def test_a_crash_before_any_answer_twice_stops_the_run(
    committed: list[Vector], tmp_path: Path
) -> None:
    command = _fake(tmp_path, "sys.stdin.readline()\nsys.exit(3)\n")
    with pytest.raises(CannotStart, match=r"exited \(code 3\) twice without answering"):
        run(_few(committed), command, timeout=5)


def test_a_hang_costs_one_timeout_per_vector(committed: list[Vector], tmp_path: Path) -> None:
    command = _fake(tmp_path, "time.sleep(60)\n")
    outcomes = run(_few(committed)[:2], command, timeout=0.3).outcomes
    assert [o.status for o in outcomes] == ["failed", "failed"]
    assert "no answer within 0.3 s" in outcomes[0].reason


def test_malformed_and_foreign_responses_fail(committed: list[Vector], tmp_path: Path) -> None:
    body = (
        "for n, line in enumerate(sys.stdin):\n"
        "    r = json.loads(line)\n"
        "    out = ['not json', json.dumps({'id': r['id'], 'result': {}}),\n"
        "           json.dumps({'id': r['id'], 'error': {'kind': 'not_implemented'}})][n % 3]\n"
        "    print(out, flush=True)\n"
    )
    outcomes = run(_few(committed), _fake(tmp_path, body), timeout=5, window=1).outcomes
    assert [o.status for o in outcomes] == ["failed", "failed", "not_implemented"]
    assert outcomes[0].reason.startswith("malformed answer line")


def test_judge_compares_json_values_strictly() -> None:
    assert same({"a": [1, 2.0]}, {"a": [1.0, 2]})
    assert not same({"trimmed": True}, {"trimmed": 1})
    assert not same([0], [False])
    assert not same({"a": 1}, {"a": 1, "b": None})
    expected = {"error": {"kind": "k"}}
    vector = Vector("x-1", ("PAIR-3",), "cap_tool_result", "test", None, {}, expected)
    assert judge(vector, {"id": "x-1", "error": {"kind": "k", "message": "any"}}).status == "passed"
    assert judge(vector, {"id": "x-1", "error": {"kind": "other"}}).status == "failed"
    assert judge(vector, {"id": "x-1", "result": {}}).status == "failed"


def test_rules_patterns_narrow_the_scope(committed: list[Vector]) -> None:
    scope = patterns("KEEP-*, EST-1")
    chosen = select(committed, scope)
    assert chosen and all(
        any(r.startswith("KEEP-") or r == "EST-1" for r in v.rules) for v in chosen
    )
    assert patterns(None) == ("*",)
    with pytest.raises(ValueError, match="rules"):
        patterns(" , ")


def test_serve_answers_bad_requests_without_dying() -> None:
    lines = "not json\n" + json.dumps({"id": "a", "function": "nope", "arguments": {}}) + "\n" + \
        json.dumps({"id": "b", "function": "trim_to_recent_turns", "history": [],
                    "arguments": {"budget_tokens": -1}}) + "\n"
    done = subprocess.run(SERVE, input=lines, capture_output=True, text=True, timeout=60)
    kinds = [json.loads(line)["error"]["kind"] for line in done.stdout.splitlines()]
    assert kinds == ["invalid_input", "not_implemented", "invalid_input"]
    assert answer({"id": 1, "function": "cap_tool_result", "arguments": []})["error"]["kind"] == \
        "invalid_input"
    refused = answer({"id": 2, "function": "trim_to_recent_turns",
                      "history": [{"role": "root", "content": "x"}],
                      "arguments": {"budget_tokens": 1, "crumb_present": False}})["error"]
    assert refused["kind"] == "invalid_input" and refused["message"].startswith("0.role: ")


def test_serve_answers_every_bad_line_and_keeps_serving() -> None:
    """Issue 20 item 10: deep nesting, an id of 1e999 or NaN, a lone surrogate, invalid
    UTF-8, an over-long line: each gets an invalid_input answer, the next request its own."""
    good = json.dumps({"id": "ok", "function": "cap_tool_result", "history": None,
                       "arguments": {"content": "abc", "max_chars": 2}}).encode()
    route = {"config": {"providers": {"p": {"model": "m"}}, "agents": {"a": {"provider": "p"}}},
             "agent": "a", "hint": {"x": 1}, "session_model": None}
    bad = [
        b"[" * 100000,
        b'{"id": 1e999, "function": "cap_tool_result", "arguments": {}}',
        b'{"id": NaN, "function": "cap_tool_result", "arguments": {}}',
        b'{"id": "\\ud800", "function": "cap_tool_result", "arguments": {"content": 1}}',
        b'{"id": "x", "function": "cap_tool_result", "arguments": {"content": "\xff"}}',
        json.dumps({"id": "h", "function": "select_route", "arguments": route}).encode(),
        json.dumps({"id": "t", "function": "agent_turn", "history": [],
                    "arguments": {"text": "hi", "turn_id": "7"}}).encode(),
    ]
    stdin = b"".join(line + b"\n" + good + b"\n" for line in bad)
    done = subprocess.run(SERVE, input=stdin, capture_output=True, timeout=60)
    assert done.returncode == 0 and b"Traceback" not in done.stderr
    answers = [json.loads(line) for line in done.stdout.decode("ascii").splitlines()]
    assert len(answers) == 2 * len(bad)
    assert [a["error"]["kind"] for a in answers[::2]] == ["invalid_input"] * len(bad)
    assert answers[6]["id"] == "\ud800"  # echoed, escaped
    assert all(a == {"id": "ok", "result": {"content": "ab"}} for a in answers[1::2])


def test_serve_skips_an_over_long_line_without_holding_it() -> None:
    import io

    from histtrim.conformance.serve import serve

    out = io.BytesIO()
    good = b'{"id":"ok","function":"cap_tool_result","arguments":{"content":"abc","max_chars":2}}'
    serve(io.BytesIO(b"x" * 5000 + b"\n" + good + b"\n"), out, max_line=1000)
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first["error"]["kind"] == "invalid_input" and "longer than 1000" in \
        first["error"]["message"]
    assert second["result"] == {"content": "ab"}


def test_cli_run_reports_per_rule_writes_junit_and_sets_the_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "junit.xml"
    code = main(["conformance", "run", "--vectors", str(VECTORS), "--rules", "PAIR-3",
                 "--junit", str(report), "--", *SERVE])
    out = capsys.readouterr().out
    assert code == 0 and "PAIR-3" in out and "KEEP-1" not in out
    suites = ElementTree.parse(report).getroot()
    assert {s.get("name") for s in suites} == {"agent_turn", "cap_tool_result"}
    assert all(s.get("failures") == "0" for s in suites)
    code = main(["conformance", "run", "--vectors", str(VECTORS), "--rules", "KEEP-1", "--",
                 *BROKEN_SERVE, "lt-budget-fit"])
    out = capsys.readouterr().out
    assert code == 1
    assert "trim_to_recent_turns / KEEP-1: " in out and "result.tokens_after: expected" in out


def test_cli_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "run", "--vectors", str(VECTORS)]) == 2
    assert main(["conformance", "run", "--vectors", str(tmp_path), "--", "true"]) == 2
    assert main(["conformance", "run", "--vectors", str(VECTORS), "--rules", "NOPE-*", "--",
                 "true"]) == 2
    assert main(["conformance", "serve", "--broken", "carrier-opens-turn"]) == 2
    assert "unrecognized arguments: --broken" in capsys.readouterr().err  # the living spec's


# Sources and tags.

def test_the_recorder_records_calls_under_their_heading_rules(tmp_path: Path) -> None:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "# Chapter\n## KEEP-3 the newest"},
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": "from histtrim import ChatMessage, trim_to_recent_turns\n"
                   "rows = [ChatMessage.user('a' * 40), ChatMessage.user('b')]\n"
                   "trim_to_recent_turns(rows, 1)\n"},
        {"cell_type": "code", "metadata": {"tags": ["raises-exception"]}, "outputs": [],
         "execution_count": None, "source": "trim_to_recent_turns(rows, -1)\n"},
    ]
    path = tmp_path / "x.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                "nbformat_minor": 5}), encoding="utf-8")
    calls = record_notebook(path)
    assert [(c.cell, c.heading_rules, c.arguments["budget_tokens"]) for c in calls] == [
        (1, ("KEEP-3",), 1), (2, ("KEEP-3",), -1)
    ]
    assert {c.function for c in calls} == {"trim_to_recent_turns"}
    assert calls[0].history == [{"role": "user", "content": "a" * 40},
                                {"role": "user", "content": "b"}]
    cells[2]["metadata"] = {}
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                "nbformat_minor": 5}), encoding="utf-8")
    with pytest.raises(ValueError, match="budget_tokens"):
        record_notebook(path)


def test_narrow_keeps_the_deciding_rule() -> None:
    carrier = [{"role": "user", "content": "q"}, {"role": "user", "content": "[Tool results]\nx"}]
    plain = [{"role": "user", "content": "q"}]
    fit = {"result": {"trimmed": True, "tokens_after": 9}}
    assert narrow(("KEEP-1", "TURN-2"), "index_turns", carrier, {}, {"result": {}}) == ("TURN-3",)
    assert narrow(("TURN-4",), "trim_to_recent_turns", plain, {"budget_tokens": 9}, fit) == \
        ("KEEP-1",)
    assert narrow(("TURN-4",), "trim_to_recent_turns", carrier, {"budget_tokens": 9}, fit) is None
    assert narrow(("TURN-6", "LIMIT-2"), "trim_to_recent_turn_count", plain, {}, fit) == \
        ("LIMIT-2",)
    assert narrow(("TURN-2",), "trim_to_recent_turn_count", plain, {}, fit) == ("KEEP-2",)
    overflowed = {"result": {"requests": [{"outcome": "overflow"}]}}
    assert narrow(("RUN-1", "PAIR-4"), "agent_turn", [], {"text": "x"}, overflowed) == ("PAIR-4",)
    assert narrow(("EST-1",), "message_costs", plain, {}, {"result": {}}) == ("EST-1",)
