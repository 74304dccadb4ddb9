"""The conformance runner against deliberately bad implementations (issue 21, issue 20 item
11): every report names the problem (answers out of order, a stray line, a crash with its
stderr, a command not found, one wrong field in a long trim), and hostile answers (deep
nesting, a lone surrogate, an endless line) fail one vector, never the run."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

from histtrim.cli import main
from histtrim.conformance.compare import differences, judge_result, same
from histtrim.conformance.report import junit, tally, text_report
from histtrim.conformance.runner import CannotStart, RunResult, run
from histtrim.conformance.vectors import Vector, load

ROOT = Path(__file__).resolve().parent.parent
VECTORS = ROOT / "conformance" / "vectors"

HEADER = (
    "import sys, json, time\n"
    "from histtrim.conformance.serve import answer\n"
    "def reply(obj):\n"
    "    sys.stdout.write(json.dumps(obj) + '\\n'); sys.stdout.flush()\n"
)


@pytest.fixture(scope="module")
def committed() -> list[Vector]:
    return load(VECTORS)[0]


def _fake(tmp_path: Path, body: str) -> list[str]:
    script = tmp_path / "impl.py"
    script.write_text(HEADER + body, encoding="utf-8")
    return [sys.executable, str(script)]


def _of(committed: list[Vector], function: str, n: int) -> list[Vector]:
    return [v for v in committed if v.function == function][:n]


def _report(result: RunResult, vectors: list[Vector]) -> str:
    rules = list(dict.fromkeys(r for v in vectors for r in v.rules))
    return text_report(tally(result.outcomes, rules, ("*",)), result)


def test_answers_out_of_order_are_matched_by_id(committed: list[Vector], tmp_path: Path) -> None:
    body = (
        "held = []\n"
        "for line in sys.stdin:\n"
        "    held.append(json.loads(line))\n"
        "    if len(held) == 2:\n"
        "        for r in reversed(held): reply(answer(r))\n"
        "        held = []\n"
        "for r in held: reply(answer(r))\n"
    )
    vectors = _of(committed, "cap_tool_result", 6)
    result = run(vectors, _fake(tmp_path, body), timeout=20, window=2)
    assert [o.status for o in result.outcomes] == ["passed"] * 6
    assert result.stray_count == 0
    assert "3 answer(s) arrived out of order, matched by id" in _report(result, vectors)


def test_a_stray_line_is_reported_once_and_shifts_nothing(
    committed: list[Vector], tmp_path: Path
) -> None:
    body = (
        "for n, line in enumerate(sys.stdin):\n"
        "    if n == 1: reply({'id': 'debug-0', 'note': 'warming up'})\n"
        "    reply(answer(json.loads(line)))\n"
    )
    vectors = _of(committed, "cap_tool_result", 5)
    result = run(vectors, _fake(tmp_path, body), timeout=20)
    assert [o.status for o in result.outcomes] == ["passed"] * 5
    report = _report(result, vectors)
    assert "1 stray output line(s)" in report and "debug-0" in report


def test_a_crash_shows_the_stderr_tail_and_the_next_vector_restarts(
    committed: list[Vector], tmp_path: Path
) -> None:
    vectors = _of(committed, "cap_tool_result", 6)
    fatal = [vectors[1].id, vectors[2].id, vectors[4].id]
    body = (
        "for line in sys.stdin:\n"
        "    r = json.loads(line)\n"
        f"    if r['id'] in {fatal!r}:\n"
        "        print('Traceback: KeyError: max_chars in my_port.cap', file=sys.stderr)\n"
        "        sys.exit(3)\n"
        "    reply(answer(r))\n"
    )
    result = run(vectors, _fake(tmp_path, body), timeout=20, window=1)
    crashed = [o for o in result.outcomes if o.status == "failed"]
    assert [o.vector.id for o in crashed] == fatal
    assert "exited (code 3)" in crashed[0].reason
    report = _report(result, vectors)
    assert "KeyError: max_chars in my_port.cap" in report and "stderr (last lines)" in report


def test_a_command_not_found_stops_at_once_with_one_line(
    committed: list[Vector], capsys: pytest.CaptureFixture[str]
) -> None:
    vectors = _of(committed, "cap_tool_result", 3)
    with pytest.raises(CannotStart, match="cannot start 'no-such-shim-xyz'"):
        run(vectors, ["no-such-shim-xyz"], timeout=5)
    code = main(["conformance", "run", "--vectors", str(VECTORS), "--", "no-such-shim-xyz"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert "cannot start 'no-such-shim-xyz'" in err


def test_a_shim_dying_at_start_stops_the_run_in_seconds(
    committed: list[Vector], tmp_path: Path
) -> None:
    command = _fake(tmp_path, "print('ModuleNotFoundError: no module my_port', "
                    "file=sys.stderr)\nsys.exit(1)\n")
    with pytest.raises(CannotStart, match=r"twice without answering.*no module my_port"):
        run(committed, command, timeout=10)  # after two starts, not one per vector


def test_one_wrong_field_in_a_long_trim_is_named_first(
    committed: list[Vector], tmp_path: Path
) -> None:
    body = (
        "for line in sys.stdin:\n"
        "    a = answer(json.loads(line))\n"
        "    a['result']['tokens_after'] += 1\n"
        "    reply(a)\n"
    )
    long = max((v for v in committed if v.function == "trim_to_recent_turns"
                and "result" in v.expected), key=lambda v: len(v.history))
    result = run([long], _fake(tmp_path, body), timeout=20)
    (outcome,) = result.outcomes
    assert outcome.status == "failed"
    report = _report(result, [long])
    after = long.expected["result"]["tokens_after"]
    lines = report.splitlines()
    named = next(n for n, line in enumerate(lines) if "result.tokens_after" in line)
    assert f"expected {after}, got {after + 1}" in lines[named]
    assert lines[named - 1].strip().startswith(long.id)  # the first line under the vector


def test_rows_that_differ_are_named_by_position() -> None:
    expected = {"history": [{"role": "user", "content": str(n)} for n in range(6)],
                "dropped_messages": 1}
    actual = {"history": [{"role": "user", "content": str(n)} for n in (0, 1, 2, 9, 4, 8)],
              "dropped_messages": 2}
    lines = differences("trim_to_recent_turns", expected, actual)
    assert lines[0] == "result.dropped_messages: expected 1, got 2"
    assert lines[1] == "result.history: 6 expected, 6 got; differ at positions 3, 5"


def test_every_failing_vector_is_listed_by_function_and_rule(committed: list[Vector],
                                                             tmp_path: Path) -> None:
    body = (
        "for line in sys.stdin:\n"
        "    r = json.loads(line)\n"
        "    a = answer(r)\n"
        "    if r['function'] == 'cap_tool_result': a = {'id': r['id'], 'result': {}}\n"
        "    reply(a)\n"
    )
    vectors = [*_of(committed, "cap_tool_result", 7), *_of(committed, "message_costs", 2)]
    result = run(vectors, _fake(tmp_path, body), timeout=20)
    report = _report(result, vectors)
    failing = [v for v in vectors if v.function == "cap_tool_result"]
    for vector in failing:
        assert vector.id in report
    assert f"Failing vectors: {len(failing)}" in report


def test_hostile_answers_fail_one_vector_each(committed: list[Vector], tmp_path: Path) -> None:
    vectors = _of(committed, "cap_tool_result", 6)
    body = (
        "for line in sys.stdin:\n"
        "    r = json.loads(line)\n"
        f"    n = {[v.id for v in vectors]!r}.index(r['id'])\n"
        "    if n == 0: sys.stdout.write('[' * 1500 + ']' * 1500 + '\\n')\n"
        "    elif n == 1: reply({'id': r['id'], 'result': {'content': '\\ud800\\x1b[2J'}})\n"
        "    elif n == 2: sys.stdout.write('{\"id\": \"' + r['id'] + '\", \"x\": ' + '[' * 90"
        " + ']' * 90 + '}\\n')\n"
        "    elif n == 3:\n"
        "        sys.stdout.write('x' * 5000); sys.stdout.flush(); time.sleep(60)\n"
        "    else: reply(answer(r))\n"
        "    sys.stdout.flush()\n"
    )
    result = run(vectors, _fake(tmp_path, body), timeout=20, window=1, max_answer_bytes=4000)
    reasons = [o.reason for o in result.outcomes]
    assert "nested" in reasons[0] and "nested" in reasons[2]
    assert reasons[1] == "result differs"
    assert "longer than 4000 bytes" in reasons[3]
    assert [o.status for o in result.outcomes[4:]] == ["passed", "passed"]
    report = _report(result, vectors)
    report.encode("utf-8")  # printable: the lone surrogate is escaped
    assert "\x1b" not in report and "\\ud800" in report
    junit(result.outcomes, tmp_path / "j.xml")
    ElementTree.parse(tmp_path / "j.xml")


def test_a_vectors_file_that_is_an_array_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "KEEP.json").write_text("[1, 2]", encoding="utf-8")
    assert main(["conformance", "run", "--vectors", str(tmp_path), "--", "true"]) == 2
    err = capsys.readouterr().err
    assert "not a vector file" in err and err.count("\n") == 1
    (tmp_path / "KEEP.json").write_text("[" * 100000, encoding="utf-8")
    assert main(["conformance", "run", "--vectors", str(tmp_path), "--", "true"]) == 2
    assert "nested too deeply" in capsys.readouterr().err
    (tmp_path / "KEEP.json").write_text('{"format": NaN}', encoding="utf-8")
    assert main(["conformance", "run", "--vectors", str(tmp_path), "--", "true"]) == 2
    assert "NaN is not JSON" in capsys.readouterr().err


def test_a_junit_file_that_cannot_be_written_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    serve = [sys.executable, "-m", "histtrim.cli", "conformance", "serve"]
    code = main(["conformance", "run", "--vectors", str(VECTORS), "--rules", "LIMIT-3",
                 "--junit", str(tmp_path / "missing" / "j.xml"), "--", *serve])
    err = capsys.readouterr().err
    assert code == 2 and "cannot write" in err and "Traceback" not in err


def test_functions_selects_and_reports_the_other_rules_not_covered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "junit.xml"
    serve = [sys.executable, "-m", "histtrim.cli", "conformance", "serve"]
    code = main(["conformance", "run", "--vectors", str(VECTORS), "--rules", "PAIR-*,LIMIT-3",
                 "--functions", "cap_tool_result,channel_sender_cache", "--junit", str(report),
                 "--", *serve])
    out = capsys.readouterr().out
    assert code == 0
    assert re.search(r"PAIR-2 +0 +0 +0  \(not covered", out)
    assert "rules not covered" in out
    cases = ElementTree.parse(report).getroot().findall(".//testcase")
    assert len(cases) == len({c.get("name") for c in cases})  # one case per vector
    rules = {p.get("value") for p in ElementTree.parse(report).getroot().iter("property")
             if p.get("name") == "rule"}
    assert rules == {"PAIR-3", "LIMIT-3"}
    assert main(["conformance", "run", "--vectors", str(VECTORS), "--functions", "nope",
                 "--", *serve]) == 2


def test_the_comparison_rules() -> None:
    expected = {"history": [{"role": "tool", "content": '{"b":1,"a":[1,2]}'}],
                "removed": [{"kind": "result", "tool_call_id": "c", "position": 1}]}
    sorted_keys = {"history": [{"role": "tool", "content": '{"a":[1,2],"b":1}'}]}
    assert judge_result("sweep_orphans", expected, sorted_keys)  # JSON content, removed optional
    assert not judge_result("sweep_orphans", expected, {**sorted_keys, "removed": []})
    assert not same({"content": "a b"}, {"content": "a  b"}, "content")
    assert not same({"content": '{"a":1}'}, {"content": '{"a":2}'})
    assert not judge_result("trim_to_recent_turns", {"removed": 1}, {})
    assert not same({"x": '{"a":1}'}, {"x": '{ "a":1}'})  # only `content` is JSON-valued
