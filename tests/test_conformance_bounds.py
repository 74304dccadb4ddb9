"""The runner's bounds and one-line errors (issue 30 items 11-12, issue 33 §3): an answer
line far longer than any expected answer is refused unparsed, a judged answer is not kept,
a malformed vector or an impossible `--max-answer-bytes` is one line, and a failing
vector's report shows the differing field whole (bounded)."""

from __future__ import annotations

import gc
import json
import sys
import weakref
from pathlib import Path

import pytest

from histtrim.cli import main
from histtrim.conformance.compare import SHOWN_CHARS
from histtrim.conformance.report import tally, text_report
from histtrim.conformance.runner import Implementation, RunResult, judge, run
from histtrim.conformance.vectors import Vector, load

TRIM = "trim_to_recent_turn_count"


def vector(expected: dict[str, object], ident: str = f"{TRIM}-000000000001") -> Vector:
    return Vector(ident, ("KEEP-2",), TRIM, "test:bounds", [], {"max_turns": 1,
                  "has_leading_breadcrumb": False}, expected)


def vector_file(folder: Path, expected: object) -> Path:
    rows = {"id": f"{TRIM}-000000000001", "rules": ["KEEP-2"], "function": TRIM,
            "source": "test:bounds", "history": [], "arguments": {}, "expected": expected}
    (folder / "KEEP.json").write_text(json.dumps({
        "format": "histtrim-conformance/1", "group": "KEEP", "index": 0,
        "rules": {"KEEP-2": "text"}, "vectors": [rows]}))
    return folder


class Answer(dict):  # type: ignore[type-arg]
    """A dict that can be watched with a weak reference."""


def test_an_error_without_kind_is_a_one_line_load_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"vector 0: expected must hold either result or"):
        load(vector_file(tmp_path, {"error": {}}))


def test_the_cli_reports_a_kindless_error_vector_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    vector_file(tmp_path, {"error": {}})
    code = main(["conformance", "run", "--vectors", str(tmp_path), "--", sys.executable, "-c",
                 "pass"])
    err = capsys.readouterr().err
    assert code != 0 and err.count("\n") == 1 and "KEEP.json" in err


@pytest.mark.parametrize("value", [str(2**63 - 1), str(2**64 - 1), str(2**40 + 1)])
def test_an_impossible_max_answer_bytes_is_refused_in_one_line(
        value: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "run", "--max-answer-bytes", value, "--", "true"]) != 0
    err = capsys.readouterr().err
    assert "--max-answer-bytes" in err and "from 1 to 1099511627776" in err
    with pytest.raises(ValueError, match="max_answer_bytes"):
        Implementation(["true"], timeout=1, max_answer_bytes=int(value))


def test_a_line_far_longer_than_any_expected_answer_is_refused_unparsed(tmp_path: Path) -> None:
    """A 3 MB answer to a vector whose expected answer is a few bytes fails as too long:
    it is never parsed (parsing costs tens of times the line)."""
    script = tmp_path / "impl.py"
    script.write_text(
        "import sys, json\n"
        "for line in sys.stdin:\n"
        "    r = json.loads(line)\n"
        "    sys.stdout.write(json.dumps({'id': r['id'], 'result': {'pad': 'x' * 3_000_000}})"
        " + '\\n'); sys.stdout.flush()\n")
    result = run([vector({"result": {"x": 1}})], [sys.executable, str(script)], timeout=20)
    [outcome] = result.outcomes
    assert outcome.status == "failed" and "answer line longer than" in outcome.reason


def test_a_judged_answer_is_not_kept() -> None:
    """Only the lines the report shows outlive the judgement, not the answer."""
    answer = Answer(id=f"{TRIM}-000000000001", result=Answer(history=["y" * 100_000]))
    watched = (weakref.ref(answer), weakref.ref(answer["result"]))
    outcome = judge(vector({"result": {"history": ["x"]}}), answer)
    del answer
    gc.collect()
    assert outcome.status == "failed"
    assert all(ref() is None for ref in watched)
    assert sum(map(len, outcome.differences)) < 3 * SHOWN_CHARS


def test_the_report_shows_the_differing_field_whole() -> None:
    expected = "a" * 300 + "X"
    answer = {"id": f"{TRIM}-000000000001", "result": {"reply": "a" * 300 + "Y"}}
    outcome = judge(vector({"result": {"reply": expected}}), answer)
    report = text_report(tally([outcome], ["KEEP-2"], ("*",)), RunResult([outcome]))
    assert json.dumps(expected) in report and json.dumps("a" * 300 + "Y") in report


def test_a_long_field_is_shown_around_its_first_difference() -> None:
    expected = "a" * 9000 + "X" + "b" * 9000
    answer = {"id": f"{TRIM}-000000000001", "result": {"reply": "a" * 9000 + "Y" + "b" * 9000}}
    outcome = judge(vector({"result": {"reply": expected}}), answer)
    [line] = outcome.differences
    assert "aX" in line and "aY" in line and len(line) < 2 * SHOWN_CHARS + 200
    assert "from character" in line and "more characters" in line


def test_an_unexpected_result_is_shown_in_bounded_lines() -> None:
    """A result where an error was expected is shown as a diff whose lines are bounded."""
    answer = {"id": f"{TRIM}-000000000001", "result": {"history": ["z" * 100_000]}}
    outcome = judge(vector({"error": {"kind": "invalid_input"}}), answer)
    assert outcome.status == "failed" and outcome.differences
    assert max(map(len, outcome.differences)) <= SHOWN_CHARS
