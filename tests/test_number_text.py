"""Issue 46 item 15: a rewritten file keeps every number's text. Bodies written again (and
sessions read whole, cleared or collapsed records included) went through doubles: `1e-400`
and `0.000…1` were written `0.0`, `2.5e-324` as `5e-324`, `1.0e5` as `100000.0`, `-0` as
`0`; the README promises kept records untouched."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from histtrim.adapters.numbers import KEEPING, dumps_kept
from histtrim.cli import main

POLICIES = Path(__file__).resolve().parent.parent / "examples" / "policies"
NUMBERS = ["1e-400", "0." + "0" * 80 + "1", "2.5e-324", "1.0e5", "1E2", "-0.0", "-0",
           "12345678901234567890.5", "0.1e1", "7"]
META = "[" + ", ".join(NUMBERS) + "]"


def openai_records(turns: int) -> list[str]:
    out = []
    for t in range(turns):
        call = json.dumps({"id": f"c{t}", "type": "function",
                           "function": {"name": "bash", "arguments": "{}"}})
        out += [
            f'{{"role": "user", "content": "question {t} {"q" * 300}", "n": {META}}}',
            f'{{"role": "assistant", "content": null, "tool_calls": [{call}], "n": {META}}}',
            f'{{"role": "tool", "tool_call_id": "c{t}", "content": "{"o" * 2000}", '
            f'"n": {META}}}',
            f'{{"role": "assistant", "content": "done {t}", "n": {META}}}',
        ]
    return out


def anthropic_records(turns: int) -> list[str]:
    out = []
    for t in range(turns):
        out += [
            f'{{"role": "user", "content": "question {t} {"q" * 300}"}}',
            f'{{"role": "assistant", "content": [{{"type": "tool_use", "id": "t{t}", '
            f'"name": "plot", "input": {{"n": {META}}}}}]}}',
            f'{{"role": "user", "content": [{{"type": "tool_result", "tool_use_id": "t{t}", '
            f'"content": "{"o" * 2000}"}}]}}',
            f'{{"role": "assistant", "content": "done {t}"}}',
        ]
    return out


def layouts(records: list[str]) -> dict[str, str]:
    head = '{"model": "m", "temperature": 0.1e1, "top_p": 1.0e0, '
    return {
        "lines.jsonl": "\n".join(records) + "\n",
        "array.json": "[\n" + ",\n".join(records) + "\n]\n",
        "compact.json": "[" + ", ".join(records) + "]",
        "body.json": head + '"messages": [\n' + ",\n".join(records) + "\n]}\n",
        "one-line-body.json": head + '"messages": [' + ", ".join(records) + "]}\n",
    }


def numbers_in(text: str) -> list[str]:
    """Each `[...]` list of the numbers, as written (whitespace removed)."""
    squeezed = re.sub(r"\s+", "", text)
    return re.findall(r'"n":(\[[^]]*\])', squeezed)


def run_trim(tmp_path: Path, name: str, text: str, *extra: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    out = tmp_path / f"out-{name}"
    assert main(["trim", str(path), "--budget", "2500", "-o", str(out), *extra]) == 0
    return out.read_text()


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
@pytest.mark.parametrize("layout", sorted(layouts([])))
def test_a_trim_keeps_every_numbers_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str, layout: str
) -> None:
    records = openai_records(5) if fmt == "openai" else anthropic_records(5)
    written = run_trim(tmp_path, layout, layouts(records)[layout])
    capsys.readouterr()
    found = numbers_in(written)
    assert 0 < len(found) < len(numbers_in(layouts(records)[layout]))  # turns were dropped
    assert set(found) == {re.sub(r"\s+", "", META)}
    if fmt == "openai":  # every kept record but the breadcrumb
        assert len(found) == written.count('"role"') - 1
    if "body" in layout:
        assert '"temperature": 0.1e1' in written and '"top_p": 1.0e0' in written


@pytest.mark.parametrize("policy", ["cheap-images", "clear-openai-trimmer", "collapse-2"])
@pytest.mark.parametrize("layout", ["lines.jsonl", "body.json", "one-line-body.json"])
def test_the_session_reader_keeps_every_numbers_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], policy: str, layout: str
) -> None:
    """A policy that prices or edits otherwise reads the file whole (`read_session`): kept
    records, and the untouched fields of cleared ones, keep their numbers' text."""
    text = layouts(openai_records(5))[layout]
    written = run_trim(tmp_path, layout, text, "--policy", str(POLICIES / f"{policy}.toml"))
    capsys.readouterr()
    found = numbers_in(written)
    assert found and set(found) == {re.sub(r"\s+", "", META)}
    assert len(found) == written.count('"role"') - 1  # every kept record but the breadcrumb
    if policy == "clear-openai-trimmer":
        assert "[tool output trimmed]" in written  # a record was rewritten
    if "body" in layout:
        assert '"temperature": 0.1e1' in written


def test_keeping_reads_and_writes_each_number_as_written() -> None:
    text = "[" + ", ".join([*NUMBERS, "1e400", "-1E-7", "3.14"]) + "]"
    assert dumps_kept(KEEPING.decode(text), json.dumps) == text
