"""Issue 15: `histtrim trim` and `histtrim estimate` read the three formats (histtrim rows,
OpenAI messages, Anthropic request bodies), detected or named with --format, and write back
the format they read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from histtrim import BREADCRUMB
from histtrim.adapters.anthropic import from_anthropic
from histtrim.adapters.formats import read_history
from histtrim.cli import main
from histtrim.turn_sizes import turn_stats


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def histtrim_turns(turns: int) -> list[list[dict[str, Any]]]:
    return [
        [
            {"kind": "chat", "role": "user", "content": f"question {t}"},
            {"kind": "chat", "role": "assistant", "content": f"answer {t} " + "x" * t},
        ]
        for t in range(turns)
    ]


def openai_turns(turns: int) -> list[list[dict[str, Any]]]:
    out = []
    for t in range(turns):
        call = {"id": f"call_{t}", "type": "function",
                "function": {"name": "grep", "arguments": json.dumps({"q": t})}}
        out.append([
            {"role": "user", "content": f"question {t}"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"call_{t}", "content": f"found {t}"},
            {"role": "assistant", "content": f"answer {t}"},
        ])
    return out


def anthropic_turns(turns: int) -> list[list[dict[str, Any]]]:
    out = []
    for t in range(turns):
        out.append([
            {"role": "user", "content": f"question {t}"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "looking"},
                {"type": "tool_use", "id": f"tu_{t}", "name": "grep", "input": {"q": t}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"tu_{t}", "content": f"found {t}",
                 "is_error": t % 2 == 1}]},
            {"role": "assistant", "content": [{"type": "text", "text": f"answer {t}"}]},
        ])
    return out


def write(path: Path, fmt: str, turns: list[list[dict[str, Any]]]) -> bytes:
    """JSON Lines for histtrim and OpenAI (a system row first), a request body for
    Anthropic (its top-level `system`)."""
    records = [record for turn in turns for record in turn]
    if fmt == "anthropic":
        body = {"model": "claude-x", "max_tokens": 512, "system": "be brief",
                "messages": records}
        data = (json.dumps(body, indent=2) + "\n").encode()
    else:
        system = {"role": "system", "content": "be brief"}
        if fmt == "histtrim":
            system = {"kind": "chat", **system}
        data = "".join(json.dumps(r) + "\n" for r in [system, *records]).encode()
    path.write_bytes(data)
    return data


def crumb(fmt: str) -> dict[str, Any]:
    record: dict[str, Any] = {"role": "user", "content": BREADCRUMB}
    return {"kind": "chat", **record} if fmt == "histtrim" else record


def records_of(data: bytes, fmt: str) -> tuple[dict[str, Any] | None, list[Any]]:
    if fmt == "anthropic":
        body = json.loads(data)
        return {k: v for k, v in body.items() if k != "messages"}, body["messages"]
    return None, [json.loads(line) for line in data.splitlines()]


MAKERS = {"histtrim": histtrim_turns, "openai": openai_turns, "anthropic": anthropic_turns}


@pytest.mark.parametrize("fmt", list(MAKERS))
@pytest.mark.parametrize("named", [False, True])
def test_trim_round_trips_each_format(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fmt: str, named: bool
) -> None:
    """The newest two turns are kept whole, after the system prefix and the breadcrumb, in
    the format read; the output reads back as that format; untrimmed, the input's bytes."""
    turns = MAKERS[fmt](6)
    source, output = tmp_path / "in", tmp_path / "out"
    original = write(source, fmt, turns)
    extra = ["--format", fmt] if named else []
    code, _, err = run(capsys, "trim", source, "--max-turns", 2, "-o", output, *extra)
    assert code == 0, err
    data = output.read_bytes()
    assert read_history(data).format == fmt
    head, records = records_of(data, fmt)
    kept = [record for turn in turns[-2:] for record in turn]
    if fmt == "anthropic":
        assert head == {"model": "claude-x", "max_tokens": 512, "system": "be brief"}
        assert records == [crumb(fmt), *kept]
    else:
        assert records[0]["role"] == "system"
        assert records[1:] == [crumb(fmt), *kept]
    assert '"reason":"turn_limit"' in err.replace(" ", "") and "6 -> 2 turns" in err
    # the trimmed file trims again to itself; nothing dropped means the same bytes
    code, _, err = run(capsys, "trim", output, "--max-turns", 2, "--crumb-present", *extra,
                       "-o", tmp_path / "again")
    assert code == 0, err
    assert (tmp_path / "again").read_bytes() == data
    code, out, err = run(capsys, "trim", source, "--max-turns", 99, *extra)
    assert code == 0, err
    assert out.encode() == original


def test_format_override_reads_a_plain_body_as_anthropic(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Plain role/content messages read as OpenAI unless --format says Anthropic: then the
    body's `system` is the system prefix and a trim keeps the body's other fields."""
    records = [{"role": r, "content": f"{r} {t}"} for t in range(3)
               for r in ("user", "assistant")]
    path = tmp_path / "body.json"
    path.write_text(json.dumps({"model": "m", "messages": records}), encoding="utf-8")
    code, out, err = run(capsys, "trim", path, "--max-turns", 1, "--format", "anthropic")
    assert code == 0, err
    assert json.loads(out) == {"model": "m", "messages": [crumb("anthropic"), *records[-2:]]}


def test_estimate_reads_an_anthropic_body(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The table of an Anthropic body: its turns, each on the line its message starts on,
    and the totals of the adapter's own rows (the `system` row included)."""
    turns = anthropic_turns(3)
    path = tmp_path / "body.json"
    data = write(path, "anthropic", turns)
    code, out, err = run(capsys, "estimate", path)
    assert code == 0, err
    body = json.loads(data)
    rows = from_anthropic(body).rows
    stats = turn_stats(rows)
    lines = out.splitlines()
    assert lines[0].split() == ["turn", "line", "messages", "tokens", "images", "cumulative"]
    table = [line.split() for line in lines[1:5]]
    text = data.decode().splitlines()
    user_lines = [n for n, line in enumerate(text, 1) if line == '    {' and
                  text[n].strip() == '"role": "user",' and text[n + 1].strip().startswith(
                      '"content": "question')]
    assert [row[0] for row in table] == ["prefix", "1", "2", "3"]
    assert [int(row[1]) for row in table[1:]] == user_lines
    assert [int(row[2]) for row in table] == [1, 4, 4, 4]
    assert [int(row[3]) for row in table] == [s.tokens for s in stats]
    assert f"total: 3 turns, 13 messages, {stats[0].cumulative} tokens, 0 images" in out


def test_a_bad_anthropic_file_names_its_line_and_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """One line on stderr, exit 2, nothing written: the message's line and the field."""
    turns = anthropic_turns(2)
    del turns[1][1]["content"][1]["id"]  # a tool_use block without its id
    path, output = tmp_path / "body.json", tmp_path / "out.json"
    data = write(path, "anthropic", turns)
    line = [n for n, text in enumerate(data.decode().splitlines(), 1) if text == "    {"][5]
    for command in (["trim", path, "--max-turns", 1, "-o", output], ["estimate", path]):
        code, out, err = run(capsys, *command)
        assert code == 2 and out == ""
        assert err.count("\n") == 1, err
        assert err.startswith(f"histtrim: error: {path}: line {line}: field '"), err
        assert "id" in err.split("field '")[1].split("'")[0], err
    assert not output.exists()


def test_tokenizer_refuses_anthropic_bodies_clearly(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "body.json"
    write(path, "anthropic", anthropic_turns(1))
    code, _, err = run(capsys, "estimate", path, "--tokenizer", "cl100k_base")
    assert code == 2 and "Anthropic request body" in err and err.count("\n") == 1


@pytest.mark.parametrize("fmt", list(MAKERS))
def test_nan_values_are_refused_in_every_format_and_nan_text_is_kept(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fmt: str
) -> None:
    """NaN as a value is not standard JSON in any format (the fast parser would read it);
    the word NaN in a message's text is text."""
    turns = MAKERS[fmt](3)
    turns[2][0]["content"] = "is NaN: Infinity?"
    path, output = tmp_path / "in", tmp_path / "out"
    write(path, fmt, turns)
    code, _, err = run(capsys, "trim", path, "--max-turns", 1, "-o", output)
    assert code == 0, err
    assert records_of(output.read_bytes(), fmt)[1][-len(turns[2]):] == turns[2]
    text = path.read_text(encoding="utf-8").replace('"max_tokens": 512', '"max_tokens": NaN')
    text = text.replace('"content": "be brief"}', '"content": "be brief", "x": NaN}')
    path.write_text(text, encoding="utf-8")
    code, _, err = run(capsys, "trim", path, "--max-turns", 1, "-o", tmp_path / "never")
    assert code == 2 and "NaN is not standard JSON" in err and err.count("\n") == 1, err
    assert not (tmp_path / "never").exists()


@pytest.mark.parametrize(("number", "shown"), [
    ("1e400", "1e400"),
    ("-1E+999", "-1E+999"),
    # issue 38 item 5: no exponent, 310 digits before the point: it was written as Infinity
    ("1" + "0" * 309 + ".0", "100000000000...0000000000.0 (312 characters)"),
    ("-" + "9" * 400 + ".25", "-99999999999...999999999.25 (404 characters)"),
])
@pytest.mark.parametrize("where", ["max_tokens", "pretty record", "record a line"])
def test_an_anthropic_number_past_a_double_is_refused_not_written_as_infinity(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, number: str, shown: str, where: str
) -> None:
    """A number past a double's range in an Anthropic body, which is written again: refused
    in one line (the strict reader), never written back as `Infinity`; in the body's head,
    in a pretty-printed record and in the one-message-a-line layout."""
    path = tmp_path / "body.json"
    data = write(path, "anthropic", anthropic_turns(2)).decode()
    if where == "max_tokens":
        data = data.replace('"max_tokens": 512', f'"max_tokens": {number}')
    elif where == "pretty record":
        data = data.replace('"q": 1\n', f'"q": {number}\n')
    else:
        records = [m for turn in anthropic_turns(2) for m in turn]
        data = '{"system": "s", "messages": [\n' + ",\n".join(
            json.dumps(m) for m in records).replace('"q": 1}', f'"q": {number}}}') + "\n]}\n"
    assert number in data
    path.write_text(data, encoding="utf-8")
    code, out, err = run(capsys, "trim", path, "--max-turns", 1)
    assert code == 2 and shown in err and err.count("\n") == 1, err
    assert "Infinity" not in out


@pytest.mark.parametrize("layout", ["whole", "lines"])
def test_pair_1_an_anthropic_body_pairs_tool_use_with_the_next_messages_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], layout: str
) -> None:
    """PAIR-1 in an Anthropic body: a `tool_use` is answered by a `tool_result` in the very
    next message (every call of every Anthropic body was reported unanswered before); a call
    with no result there, and a result naming no call of the message before, are reported
    with their ids, whether the message takes the reader's fast path or not."""
    calls = {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "ls", "input": {}},
        {"type": "tool_use", "id": "t2", "name": "ls", "input": {}}]}
    body = {"system": "s", "messages": [
        {"role": "user", "content": "hi"}, calls,
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a"},
                                     {"type": "tool_result", "tool_use_id": "t2", "content": "b"}]},
        calls,
        {"role": "user", "content": [  # a list content: not the reader's fast path
            {"type": "tool_result", "tool_use_id": "t1",
             "content": [{"type": "text", "text": "a"}]},
            {"type": "tool_result", "tool_use_id": "zz", "content": "b"}]},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "c"}]},
        {"role": "assistant", "content": "done"},
    ]}
    good = {**body, "messages": body["messages"][:3]}
    for name, document in (("good.json", good), ("body.json", body)):
        text = (json.dumps(document, indent=2) if layout == "whole"
                else "{\"system\": \"s\", \"messages\": [\n" + ",\n".join(
                    json.dumps(m) for m in document["messages"]) + "\n]}\n")
        (tmp_path / name).write_text(text, encoding="utf-8")
    code, _, err = run(capsys, "trim", tmp_path / "good.json", "--budget", 9999,
                       "-o", tmp_path / "out.json")
    assert code == 0 and "warning" not in err
    code, _, err = run(capsys, "trim", tmp_path / "body.json", "--budget", 9999,
                       "-o", tmp_path / "out.json")
    assert code == 0
    assert [line for line in err.splitlines() if "warning" in line] == [
        "histtrim: warning: row 4: a call no tool row right after it answers (tool_call_id='t2')",
        "histtrim: warning: row 5: a result not right after the assistant row that issued its "
        "id (tool_call_id='zz')",
        "histtrim: warning: row 7: a result not right after the assistant row that issued its "
        "id (tool_call_id='t2')",
    ]


@pytest.mark.parametrize("layout", ["whole", "lines"])
def test_pair_1_an_anthropic_body_edited_by_a_clear_is_checked_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], layout: str
) -> None:
    """After a clear (CTX-10) edits an Anthropic body, the pairing warnings are those of the
    body written, read as the input was: a paired body gets none (every call was reported
    unanswered, its results in the next message not being `tool` rows), and a broken one
    keeps its problems, at their rows in the output."""
    calls = {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "ls", "input": {}},
        {"type": "tool_use", "id": "t2", "name": "ls", "input": {}}]}
    results = {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "a" * 4000},
        {"type": "tool_result", "tool_use_id": "t2", "content": "b" * 4000}]}
    good = [{"role": "user", "content": "hi"}, calls, results, calls, results,
            {"role": "assistant", "content": "done"}]
    broken = [*good, calls, {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "zz", "content": "c"}]},
              {"role": "assistant", "content": "done"}]
    policy = tmp_path / "clear.toml"
    policy.write_text('[tool_context]\nmode = "clear"\nkeep = 1\ntrigger_tokens = 100000\n')
    warnings = {}
    for name, messages in (("good", good), ("broken", broken)):
        text = (json.dumps({"system": "s", "messages": messages}, indent=2) if layout == "whole"
                else "\n".join(json.dumps(m) for m in messages) + "\n")
        (tmp_path / f"{name}.json").write_text(text, encoding="utf-8")
        code, _, err = run(capsys, "trim", tmp_path / f"{name}.json", "--budget", 2000,
                           "--policy", policy, "-o", tmp_path / f"{name}-out.json")
        assert code == 0 and "results cleared" in err, err
        warnings[name] = [line for line in err.splitlines() if "warning" in line]
    assert warnings["good"] == []
    row = 7 if layout == "whole" else 6  # the body's system is row 0
    assert warnings["broken"] == [
        f"histtrim: warning: row {row}: a call no tool row right after it answers "
        "(tool_call_id='t1')",
        f"histtrim: warning: row {row}: a call no tool row right after it answers "
        "(tool_call_id='t2')",
        f"histtrim: warning: row {row + 1}: a result not right after the assistant row that "
        "issued its id (tool_call_id='zz')",
    ]


def test_issue_32_an_array_with_a_huge_exponent_stays_on_the_fast_reader(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 32: an array is written back as its records' own bytes, so a number past a
    double's range (`1e400`) needs no strict reader (it cost every array a pass over the
    text with its digits replaced); the number is written back as it was."""
    from histtrim.cli.rowfiles import read_rows

    lines = ['{"role": "system", "content": "s"}', '{"role": "user", "content": "a"}',
             '{"role": "assistant", "content": "b", "score": 1e400}',
             '{"role": "user", "content": "c"}', '{"role": "assistant", "content": "d"}']
    data = ("[\n" + ",\n".join(lines) + "\n]\n").encode()
    hf = read_rows("h.json", data, None)
    assert hf is not None and (hf.format, hf.layout) == ("openai", "array")
    source, out = tmp_path / "h.json", tmp_path / "out.json"
    source.write_bytes(data)
    assert main(["trim", str(source), "--max-turns", "1", "-o", str(out)]) == 0
    kept = [lines[0], json.dumps({"role": "user", "content": BREADCRUMB}), *lines[3:]]
    assert out.read_bytes() == ("[\n" + ",\n".join(kept) + "\n]\n").encode()
    assert "1 turn" in capsys.readouterr().err
