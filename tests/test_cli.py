"""The `histtrim` command: every command, and every bad-input path (exit 2, one line naming
the file, the line and the field, never a traceback)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from histtrim import (
    BREADCRUMB,
    ChatMessage,
    HistoryPruning,
    ProviderProfile,
    RuntimeProfile,
    estimate_history_tokens,
    resolve_runtime,
    to_chat_messages,
    trim_conversation_to_recent_turns,
)
from histtrim.adapters.openai import from_openai, trim_openai
from histtrim.cli import main
from histtrim.cli.explain import explain_route
from livingspec.examples import structured_session

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "coding_session.json"
EXAMPLE_JSONL = ROOT / "examples" / "coding_session.jsonl"
CONFIG = ROOT / "examples" / "agents.toml"


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def example() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    return data


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def events(err: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in err.splitlines() if line.startswith("{")]


# ------------------------------------------------------------------ the shipped examples


def test_the_jsonl_example_is_the_json_example_in_histtrim_rows() -> None:
    rows = [
        ChatMessage.model_validate_json(line)
        for line in EXAMPLE_JSONL.read_text(encoding="utf-8").splitlines()
    ]
    assert rows == from_openai(example())
    roles = [m["role"] for m in example()]
    assert roles.count("system") == 2 and roles[0] == "system"  # one late system message
    assert any(isinstance(m.get("content"), list) for m in example())  # an image part
    assert sum(len(m.get("tool_calls") or []) for m in example()) >= 8


# ------------------------------------------------------------------ trim


def test_trim_openai_session_by_budget_seen_2(capsys: pytest.CaptureFixture[str]) -> None:
    """SEEN-2: the HistoryTrimmed event is printed; the history is written in the same format."""
    code, out, err = run(capsys, "trim", EXAMPLE, "--budget", 2500)
    assert code == 0
    expected = trim_openai(example(), budget_tokens=2500)
    assert json.loads(out) == expected.records
    assert out.startswith("[\n  {")  # a JSON array in, a JSON array out
    (event,) = events(err)
    assert expected.event is not None
    assert event == expected.event.to_wire()
    assert event["reason"] == "token_budget" and event["budget"] == 2500
    summary = err.splitlines()[-1]
    assert summary == (
        f"histtrim: trimmed {EXAMPLE}: 6 -> {event['kept_turns']} turns, "
        f"{event['tokens_before']} -> {event['tokens_after']} tokens, "
        f"{event['dropped_messages']} messages dropped (budget 2500)"
    )


def test_trim_jsonl_by_turns_writes_jsonl_to_a_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """KEEP-2 / SEEN-1 through the CLI: two turns kept, the breadcrumb inserted once."""
    target = tmp_path / "out.jsonl"
    code, out, err = run(capsys, "trim", EXAMPLE_JSONL, "--max-turns", 2, "-o", target)
    assert code == 0 and out == ""
    lines = target.read_text(encoding="utf-8").splitlines()
    rows = [ChatMessage.model_validate_json(line) for line in lines]
    assert rows[1] == ChatMessage.user(BREADCRUMB)
    assert [r.content for r in rows].count(BREADCRUMB) == 1
    (event,) = events(err)
    assert event["reason"] == "turn_limit" and event["kept_turns"] == 2
    assert event["tokens_after"] == estimate_history_tokens(rows)


def test_nothing_to_trim_writes_the_input_back_turn_6(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """TURN-6: no trim, the same messages out and no event."""
    code, out, err = run(capsys, "trim", EXAMPLE, "--budget", 100_000)
    assert code == 0
    assert out == EXAMPLE.read_text(encoding="utf-8")  # byte for byte, not just equal JSON
    assert events(err) == []
    assert err.startswith(f"histtrim: nothing to trim in {EXAMPLE}: 6 turns")


def test_trim_with_config_applies_the_route_budget_route_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """ROUTE-2: a classifier hint selects the route whose budget the trim uses."""
    code, out, err = run(
        capsys, "trim", EXAMPLE, "--config", CONFIG, "--agent", "codey", "--hint", "local"
    )
    assert code == 0
    (event,) = events(err)
    assert event["budget"] == 2048 and event["reason"] == "token_budget"
    assert json.loads(out) == trim_openai(example(), budget_tokens=2048).records
    assert "route local/qwen2.5-coder:7b" in err.splitlines()[-1]
    code, out, err = run(capsys, "trim", EXAMPLE, "--config", CONFIG, "--agent", "codey")
    assert code == 0 and events(err) == []  # 48000 tokens and 20 turns: nothing to drop


def test_config_turn_limit_then_budget_emit_two_events(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = write(
        tmp_path / "a.json",
        json.dumps(
            {
                "providers": {"p": {"model": "m", "context_window": 4000}},
                "runtimes": {"r": {"max_history_messages": 4, "max_context_tokens": 1500}},
                "agents": {"a": {"provider": "p", "runtime": "r"}},
            }
        ),
    )
    code, out, err = run(capsys, "trim", EXAMPLE, "--config", config, "--agent", "a")
    assert code == 0
    first, second = events(err)
    assert (first["reason"], first["kept_turns"], first["budget"]) == ("turn_limit", 4, 1500)
    assert (second["reason"], second["budget"]) == ("token_budget", 1500)
    records = json.loads(out)
    assert [m["content"] for m in records].count(BREADCRUMB) == 1
    assert second["tokens_after"] == estimate_history_tokens(from_openai(records))


def test_crumb_present_flag_keeps_one_breadcrumb(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    once = tmp_path / "once.json"
    assert main(["trim", str(EXAMPLE), "--max-turns", "3", "-o", str(once)]) == 0
    capsys.readouterr()
    code, out, _ = run(capsys, "trim", once, "--max-turns", 1, "--crumb-present")
    assert code == 0
    assert [m["content"] for m in json.loads(out)].count(BREADCRUMB) == 1


def test_request_body_files_keep_their_other_fields(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    body = {"model": "gpt-4o", "temperature": 0, "messages": example()}
    path = write(tmp_path / "request.json", json.dumps(body, indent=1))
    code, out, _ = run(capsys, "trim", path, "--max-turns", 1)
    assert code == 0
    written = json.loads(out)
    assert (written["model"], written["temperature"]) == ("gpt-4o", 0)
    assert written["messages"] == trim_openai(example(), max_turns=1).records


def test_structured_sessions_trim_by_turns(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    items = structured_session()
    path = write(
        tmp_path / "agent.jsonl",
        "".join(json.dumps(i.model_dump(mode="json")) + "\n" for i in items),
    )
    code, out, err = run(capsys, "trim", path, "--max-turns", 1)
    assert code == 0
    result = trim_conversation_to_recent_turns(items, 1)
    written = [json.loads(line) for line in out.splitlines()]
    systems = sum(1 for i in result.history if getattr(i, "role", None) == "system")
    assert written[systems] == {"kind": "chat", "role": "user", "content": BREADCRUMB}
    assert len(written) == len(result.history) + 1
    assert events(err)[0]["dropped_messages"] == result.dropped_messages


# ------------------------------------------------------------------ estimate


def test_estimate_prints_a_table_per_turn(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "estimate", EXAMPLE)
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["turn", "line", "messages", "tokens", "images", "cumulative"]
    table = [line.split() for line in lines[1:8]]
    assert [row[0] for row in table] == ["prefix", "1", "2", "3", "4", "5", "6"]
    total = estimate_history_tokens(from_openai(example()))
    assert sum(int(row[3]) for row in table) == total
    assert int(table[0][5]) == total  # the cumulative size of everything
    assert [int(row[4]) for row in table] == [0, 0, 0, 1, 0, 0, 0]  # the pasted screenshot
    assert lines[8] == f"total: 6 turns, 33 messages, {total} tokens, 1 image"
    # the line column points into the file: turn 1 starts at its user message
    assert '"role": "user"' in EXAMPLE.read_text().splitlines()[int(table[1][1])]


def test_estimate_reads_both_formats_alike(capsys: pytest.CaptureFixture[str]) -> None:
    _, json_out, _ = run(capsys, "estimate", EXAMPLE)
    _, jsonl_out, _ = run(capsys, "estimate", EXAMPLE_JSONL)
    strip_lines = [[c for i, c in enumerate(r.split()) if i != 1] for r in json_out.splitlines()]
    jsonl_rows = [[c for i, c in enumerate(r.split()) if i != 1] for r in jsonl_out.splitlines()]
    assert strip_lines == jsonl_rows


# ------------------------------------------------------------------ explain


def test_explain_names_a_rule_for_every_step(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "explain", "--config", CONFIG, "--agent", "codey")
    assert code == 0
    lines = out.splitlines()
    assert all(line.split()[0].rsplit("-", 1)[1].isdigit() for line in lines)
    assert lines[0].startswith("ROUTE-2 ")
    assert "BUDGET-3  context_compact_ratio 0.5 x window 128000 -> 64000" in lines
    assert "BUDGET-5  max_context_tokens 48000 caps it -> 48000" in lines
    assert any(line.startswith("ROUTE-1   effective budget 48000") for line in lines)


def test_explain_a_model_switch_has_unknown_capacity_route_3_route_4(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """ROUTE-3: a different model does not borrow the profile's window; ROUTE-4: no wire value."""
    code, out, _ = run(
        capsys, "explain", "--config", CONFIG, "--agent", "codey", "--model", "gpt-4o-mini"
    )
    assert code == 0
    assert "-> capacity unknown" in out
    assert "ROUTE-4   clients receive no model_context_window (capacity unknown)" in out
    assert "BUDGET-8  window operand 48000" in out


@st.composite
def routes(draw: st.DrawFn) -> tuple[RuntimeProfile, ProviderProfile, str | None]:
    ratio = draw(st.none() | st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5, -1.0, float("nan")]))
    profile = RuntimeProfile(
        max_context_tokens=draw(st.none() | st.integers(0, 200_000)),
        context_compact_ratio=ratio,
        history_pruning=HistoryPruning(
            enabled=draw(st.booleans()), max_tokens=draw(st.integers(0, 100_000))
        ),
        max_history_messages=draw(st.none() | st.integers(0, 60)),
    )
    provider = ProviderProfile(
        model=draw(st.sampled_from([None, "gpt-4o", " gpt-4o "])),
        context_window=draw(st.none() | st.integers(0, 200_000)),
    )
    return profile, provider, draw(st.sampled_from([None, "gpt-4o", "other"]))


@given(routes())
def test_explain_agrees_with_the_library_budget_1_to_9(
    route: tuple[RuntimeProfile, ProviderProfile, str | None],
) -> None:
    """BUDGET-1..BUDGET-9: the explained steps end at `effective_context_budget()`."""
    profile, provider, model = route
    runtime = resolve_runtime(profile, provider, model, provider_alias="p")
    lines = explain_route(runtime, agent="a", model=model, hint=None)
    final = next(line for line in lines if line.startswith("ROUTE-1"))
    assert f"effective budget {runtime.effective_context_budget()} " in final
    if profile.max_context_tokens == 0:
        assert any(line.startswith("BUDGET-9") for line in lines)


# ------------------------------------------------------------------ bad input


OPENAI_OK = '{"role": "user", "content": "hi"}'


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("bad.json", '[\n  {"role": "user",\n   "content": }\n]', "bad.json: line 3: invalid JSON"),
        ("bad.jsonl", OPENAI_OK + "\n{oops\n", "bad.jsonl: line 2: invalid JSON"),
        ("bad.jsonl", OPENAI_OK + "\n[1, 2]\n", "bad.jsonl: line 2: expected a JSON object"),
        (
            "bad.json",
            '[\n {"role": "user", "content": "hi"},\n {"role": "robot", "content": "x"}\n]',
            "bad.json: line 3: field 'role': expected one of",
        ),
        (
            "bad.jsonl",
            OPENAI_OK + '\n{"role": "assistant", "tool_calls": [{"id": "c", "function": '
            '{"name": "f", "arguments": {"a": 1}}}]}\n',
            "bad.jsonl: line 2: field 'tool_calls[0].function.arguments': expected a JSON string",
        ),
        (
            "bad.jsonl",
            '{"kind": "chat", "role": "user", "content": "hi"}\n'
            '{"kind": "chat", "role": "user", "content": 5}\n',
            "bad.jsonl: line 2: field 'content': Input should be a valid string",
        ),
        (
            "bad.jsonl",
            '{"kind": "assistant_tool_calls", "tool_calls": [{"id": "", "name": "f"}]}\n',
            "bad.jsonl: line 1: field 'tool_calls.0.id': String should have at least 1 character",
        ),
        (
            "bad.jsonl",
            '{"kind": "chat", "role": "user", "content": "hi"}\n'
            '{"role": "tool", "tool_call_id": "c", "content": "x"}\n',
            "bad.jsonl: line 2: mixes histtrim items (line 1) with OpenAI messages",
        ),
        (
            "bad.json",
            '{"model": "m", "messages": {"role": "user"}}',
            "bad.json: line 1: field 'messages': expected a list of messages",
        ),
    ],
)
def test_bad_sessions_exit_2_naming_file_line_and_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, text: str, message: str
) -> None:
    path = write(tmp_path / name, text)
    for argv in (["trim", path, "--max-turns", 1], ["estimate", path]):
        code, out, err = run(capsys, *argv)
        assert code == 2, err
        assert out == ""
        assert err == f"histtrim: error: {tmp_path}/{message}" + err.split(message, 1)[1]
        assert len(err.splitlines()) == 1 and "Traceback" not in err


def test_unreadable_and_non_utf8_files(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    code, _, err = run(capsys, "estimate", missing)
    assert code == 2
    assert err == f"histtrim: error: {missing}: cannot read: No such file or directory\n"
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'{"role": "user", "content": "caf\xe9"}\n')
    code, _, err = run(capsys, "estimate", latin)
    assert (code, err) == (2, f"histtrim: error: {latin}: not UTF-8 text\n")


def test_crumb_present_without_a_breadcrumb_slot(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The flag names the row after the system rows; an assistant row there is an error."""
    session = tmp_path / "no_slot.json"
    rows = [example()[0], {"role": "assistant", "content": "hi"}, *example()[1:]]
    session.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    code, out, err = run(capsys, "trim", session, "--max-turns", 1, "--crumb-present")
    assert code == 2 and out == ""
    assert err.startswith(f"histtrim: error: {session}: line 6: field 'content': --crumb-present:")


def test_crumb_present_flag_is_authoritative_whatever_the_slot_text(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 9 item 1: with --crumb-present the user row after the system rows is the slot,
    whatever its text; it stays in place and is not counted as a turn."""
    code, out, _ = run(capsys, "trim", EXAMPLE, "--max-turns", 1, "--crumb-present")
    assert code == 0
    kept, rows = json.loads(out), example()
    assert kept[:2] == rows[:2]  # the slot stays in place, no breadcrumb is added
    assert kept[2]["content"].startswith("Great. Run the whole suite once more")
    assert kept[2:] == rows[len(rows) - len(kept) + 2 :]


def test_a_structured_array_one_item_per_line_stays_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Issue 23: the session reader (structured items) wrote every array re-indented by 2;
    an array written one item per line comes back one item per line."""
    items = [json.dumps(i.model_dump(mode="json")) for i in structured_session()]
    path = write(tmp_path / "agent.json", "[\n" + ",\n".join(items) + "\n]\n")
    code, out, _ = run(capsys, "trim", path, "--max-turns", 1)
    kept = json.loads(out)
    assert code == 0 and len(kept) < len(items)
    assert out == "[\n" + ",\n".join(json.dumps(i, ensure_ascii=False) for i in kept) + "\n]\n"


def test_structured_items_refuse_a_token_budget(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(
        tmp_path / "agent.jsonl",
        "".join(json.dumps(i.model_dump(mode="json")) + "\n" for i in structured_session()),
    )
    code, out, err = run(capsys, "trim", path, "--budget", 100)
    assert code == 2 and out == ""
    assert err.startswith(f"histtrim: error: {path}: line 3: field 'kind': structured items")


def test_unwritable_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "dir.json"
    code, _, err = run(capsys, "trim", EXAMPLE, "--max-turns", 1, "-o", target)
    assert (code, err.splitlines()[-1]) == (
        2,
        f"histtrim: error: {target}: cannot write: No such file or directory",
    )


@pytest.mark.parametrize(
    ("config_text", "suffix", "argv", "message"),
    [
        (None, ".toml", ["--agent", "codey"], "cannot read: No such file or directory"),
        ("[providers.p\n", ".toml", ["--agent", "a"], "Expected ']'"),
        ("{}", ".yaml", ["--agent", "a"], "path: expected a .toml or .json file"),
        (
            '{"providers": {"p": {"context_window": -1}}}',
            ".json",
            ["--agent", "a"],
            "field 'providers.p.context_window': Input should be greater than or equal to 0",
        ),
        (
            '{"providers": {"p": {}}, "agents": {"a": {"provider": "q"}}}',
            ".json",
            ["--agent", "a"],
            "agents.a.provider: unknown provider alias 'q'",
        ),
        (None, "", ["--agent", "nobody"], "agent: unknown agent 'nobody'"),
        (None, "", ["--agent", "codey", "--hint", "fast"], "hint: no classifier route 'fast'"),
    ],
)
def test_bad_configs_exit_2(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    config_text: str | None,
    suffix: str,
    argv: list[str],
    message: str,
) -> None:
    if suffix == "":
        config = CONFIG
    else:
        config = tmp_path / f"agents{suffix}"
        if config_text is not None:
            write(config, config_text)
    for command in (["explain"], ["trim", str(EXAMPLE)]):
        code, out, err = run(capsys, *command, "--config", config, *argv)
        assert code == 2 and out == ""
        assert err.startswith(f"histtrim: error: {config}: ")
        assert message in err and len(err.splitlines()) == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["trim", "x.json"], "one of --budget, --max-turns or --config is required"),
        (["trim", "x.json", "--budget", "1", "--max-turns", "1"], "not allowed with argument"),
        (["trim", "x.json", "--budget", "-3"], "from 0 to 18446744073709551615, got '-3'"),
        (["trim", "x.json", "--max-turns", "two"], "from 0 to 18446744073709551615, got 'two'"),
        (["review", "x.json", "--budget", "-1"], "from 0 to 18446744073709551615, got '-1'"),
        (["review", "x.json", "--window", "0"], "from 1 to 18446744073709551615, got '0'"),
        (["review", "x.json", "--workers", "1.5"], "from 1 to 18446744073709551615, got '1.5'"),
        (["conformance", "run", "--timeout", "3600", "x"], "expected seconds in (0, 3600)"),
        (["trim", "x.json", "--budget", "1", "--config", "c.toml", "--agent", "a"], "--config"),
        (["trim", "x.json", "--config", "c.toml"], "--config and --agent go together"),
        (["trim", "x.json", "--budget", "1", "--model", "m"], "--model and --hint need --config"),
        (["explain", "--agent", "a"], "the following arguments are required: --config"),
        (["estimate"], "the following arguments are required: session"),
        (["frobnicate"], "invalid choice"),
        ([], "the following arguments are required: command"),
    ],
)
def test_bad_arguments_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert message in err and "Traceback" not in err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "trim", "--help")
    assert code == 0 and "--max-turns" in out


def test_the_installed_command_runs(tmp_path: Path) -> None:
    """The console script end to end, in a subprocess: success, then bad input."""
    ok = subprocess.run(
        [sys.executable, "-m", "histtrim.cli", "trim", str(EXAMPLE), "--max-turns", "1"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ok.returncode == 0
    assert json.loads(ok.stdout)[1]["content"] == BREADCRUMB
    bad = write(tmp_path / "bad.jsonl", '{"role": "user"}\n')
    failed = subprocess.run(
        [sys.executable, "-m", "histtrim.cli", "estimate", str(bad)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert failed.returncode == 2
    assert failed.stderr == f"histtrim: error: {bad}: line 1: field 'content': required\n"


def test_estimate_prices_structured_items_as_their_rows(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    items = structured_session()
    path = write(
        tmp_path / "agent.json", json.dumps([i.model_dump(mode="json") for i in items])
    )
    code, out, _ = run(capsys, "estimate", path)
    assert code == 0
    total = estimate_history_tokens(to_chat_messages(items))
    assert f"total: 3 turns, {len(items)} messages, {total} tokens, 0 images" in out


def test_histtrim_rows_without_kind_are_detected(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A native tool row (no tool_call_id) marks histtrim rows even without `kind`."""
    rows = from_openai(example())
    path = write(
        tmp_path / "rows.jsonl",
        "".join(json.dumps(r.model_dump(mode="json", exclude={"kind"})) + "\n" for r in rows),
    )
    _, expected, _ = run(capsys, "estimate", EXAMPLE)
    code, out, _ = run(capsys, "estimate", path)
    assert code == 0
    assert [line.split()[2:] for line in out.splitlines()] == [
        line.split()[2:] for line in expected.splitlines()
    ]


def test_format_override(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path / "plain.jsonl", OPENAI_OK + "\n")
    code, out, _ = run(capsys, "trim", path, "--format", "histtrim", "--max-turns", 1)
    assert code == 0 and out == OPENAI_OK + "\n"
    code, out, err = run(capsys, "estimate", EXAMPLE, "--format", "histtrim")
    assert code == 2 and out == ""
    problem = "field 'content': Input should be a valid string"
    assert err == f"histtrim: error: {EXAMPLE}: line 10: {problem}\n"  # message 2: content null


@pytest.mark.parametrize("text", ["", " \n\t\r\n", "\ufeff\n"])
@pytest.mark.parametrize("command", [["trim", "--budget", 10], ["estimate"]])
def test_an_empty_file_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, command: list[object]
) -> None:
    """A file with no messages (0 bytes, whitespace, a BOM) is most likely a wrong path or a
    truncated write, not a history of 0 turns: one line naming the file, exit 2."""
    path = write(tmp_path / "empty.jsonl", text)
    code, out, err = run(capsys, command[0], path, *command[1:])
    assert (code, out) == (2, "")
    assert err == f"histtrim: error: {path}: empty: no messages\n"


def test_a_closed_pipe_is_not_a_traceback(tmp_path: Path) -> None:
    command = (
        f"{shlex.quote(sys.executable)} -m histtrim.cli trim {shlex.quote(str(EXAMPLE_JSONL))}"
        " --budget 100000 | head -c 10"
    )
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=False)
    assert done.stdout == '{"kind": "'
    assert "Traceback" not in done.stderr


def test_trim_config_with_a_policy_applies_its_turn_limit_and_fallback_budget_as_review(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Issue 38 item 12: under `--config --policy` the summary listed the policy's
    `default_max_history_turns` and `fallback_context_tokens` as applied, but the trim used
    the spec's (50 turns, 32,000 tokens). A profile that sets neither takes the policy's, as
    `review` resolves them for the agent it replays."""
    from histtrim import AgentConfig, Policy, select_route
    from histtrim.review.replay import ReplaySettings

    document = {"providers": {"p": {"model": "m"}}, "runtimes": {"r": {}},
                "agents": {"a": {"provider": "p", "runtime": "r"}}}
    config = write(tmp_path / "a.json", json.dumps(document))
    policy_text = "default_max_history_turns = 3\nfallback_context_tokens = 300\n"
    policy_file = write(tmp_path / "p.toml", policy_text)
    policy = Policy(default_max_history_turns=3, fallback_context_tokens=300)
    route = select_route(AgentConfig.model_validate(document), "a")
    review = ReplaySettings(profile=route.profile, provider=route.provider,
                            selected_model=route.model).runtime(policy)
    assert (review.max_turns, review.effective_context_budget()) == (3, 300)

    code, out, err = run(capsys, "trim", EXAMPLE, "--config", config, "--agent", "a",
                         "--policy", policy_file)
    assert code == 0
    first, second = events(err)
    assert (first["reason"], first["kept_turns"], first["budget"]) == ("turn_limit", 3, 300)
    assert (second["reason"], second["budget"]) == ("token_budget", 300)
    assert second["tokens_after"] == estimate_history_tokens(from_openai(json.loads(out)))
    assert "budget 300, max turns 3" in err
