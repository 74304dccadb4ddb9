"""The `histtrim` command under hostile files and faults (issue 10, items 1-3, 7-9, 16): writes
are atomic, the input comes back byte for byte when nothing is dropped, no output is ever
non-standard JSON, and every bad input is one line naming the file, exit 2, no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sys as _sys
from pathlib import Path
from typing import Any

import pytest

import histtrim
import histtrim.adapters.rewrite
from histtrim import (
    Agent,
    EventBus,
    ProviderProfile,
    ProviderReply,
    RuntimeProfile,
    resolve_runtime,
)
from histtrim.adapters.openai import from_openai
from histtrim.adapters.openai_checks import OpenAIFormatError
from histtrim.agent.providers import ScriptedProvider
from histtrim.cli import main
from histtrim.events import InMemoryTransport

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "examples" / "agents.toml"


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code: int, err: str, name: str) -> None:
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("histtrim: error: "), err
    assert name in err
    assert "Traceback" not in err


def session(turns: int, pad: int = 0) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [{"role": "system", "content": "be brief"}]
    for n in range(turns):
        rows += [
            {"role": "user", "content": f"question {n} " + "q" * pad},
            {"role": "assistant", "content": f"answer {n} " + "a" * pad},
        ]
    return rows


def no_temp_files(folder: Path, *keep: Path) -> None:
    assert sorted(folder.iterdir()) == sorted(keep)


# -------------------------------------------------------------- item 1: atomic writes

FULL_DISK = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (50 * 1024, 50 * 1024))
from histtrim.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_item_1_a_full_disk_leaves_the_original_untouched(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_text(json.dumps(session(300, pad=150), indent=2), encoding="utf-8")
    original = big.read_bytes()
    assert len(original) > 2 * 50 * 1024
    done = subprocess.run(
        [sys.executable, "-c", FULL_DISK, "trim", str(big), "--max-turns", "150", "-o", str(big)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    one_line_error(done.returncode, done.stderr, str(big))
    assert "cannot write" in done.stderr
    assert big.read_bytes() == original
    no_temp_files(tmp_path, big)


def test_item_1_a_failed_write_to_a_new_file_leaves_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "s.json"
    source.write_text(json.dumps(session(4)), encoding="utf-8")

    def no_space(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", no_space)
    code, _, err = run(capsys, "trim", source, "--max-turns", "1", "-o", tmp_path / "out.json")
    one_line_error(code, err, "out.json")
    no_temp_files(tmp_path, source)


# -------------------------------------------------------------- item 2: lone surrogates


@pytest.mark.parametrize(
    "record",
    [
        '{"role": "user", "content": "hi", "meta": "\\ud800"}',
        '{"role": "user", "content": "hi", "name": "\\ud800"}',
        '{"role": "user", "content": "hello \\ud800"}',
        '{"role": "user", "content": "hi", "meta": {"deep": ["\\udfff"]}}',
    ],
)
def test_item_2_lone_surrogates_are_one_line_and_the_file_survives(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, record: str
) -> None:
    rows = [json.dumps(r) for r in session(3)]
    text = "[\n" + ",\n".join([*rows, record]) + "\n]\n"
    path = tmp_path / "f.json"
    path.write_text(text, encoding="utf-8")
    for limit in ("1", "50"):
        code, _out, err = run(capsys, "trim", path, "--max-turns", limit, "-o", path)
        one_line_error(code, err, "line 9")
        assert "surrogate" in err
        assert path.read_text(encoding="utf-8") == text
    code, _out, err = run(capsys, "estimate", path)
    one_line_error(code, err, "line 9")


# -------------------------------------------------------------- item 3: bytes and standard JSON


def test_item_3_nothing_to_trim_writes_the_input_bytes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = (
        '[{"role":"user","content":"hi","x":1e400, "y": 1.50,"z":"caf\\u00e9"},\n'
        '  {"role": "assistant", "content": "ok"}]'
    )
    path = tmp_path / "s.json"
    path.write_bytes(text.encode("utf-8"))
    code, out, err = run(capsys, "trim", path, "--max-turns", "5")
    assert code == 0, err
    assert out == text
    code, _, err = run(capsys, "trim", path, "--budget", "0", "-o", tmp_path / "o.json")
    assert code == 0 and (tmp_path / "o.json").read_bytes() == text.encode("utf-8")


def _strict_loads(text: str) -> object:
    def reject(name: str) -> object:
        raise AssertionError(f"non-standard JSON: {name}")

    return json.loads(text, parse_constant=reject)


def test_item_3_a_trim_never_writes_infinity_or_nan(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rows = session(3)
    rows[-1]["score"] = 1
    text = json.dumps(rows).replace('"score": 1', '"score": 1e400')
    path = tmp_path / "s.json"
    path.write_text(text, encoding="utf-8")
    code, out, err = run(capsys, "trim", path, "--max-turns", "1")
    if code == 0:
        _strict_loads(out)
    else:
        one_line_error(code, err, "score")
    assert "Infinity" not in out


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_item_3_non_standard_input_constants_are_rejected(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, constant: str
) -> None:
    path = tmp_path / "s.json"
    path.write_text(
        '[{"role": "user", "content": "hi"},\n {"role": "assistant", "content": "ok", '
        f'"x": {constant}}}]',
        encoding="utf-8",
    )
    code, out, err = run(capsys, "trim", path, "--max-turns", "3")
    one_line_error(code, err, "line 2")
    assert out == ""


# -------------------------------------------------------------- item 7: crashes


def test_item_7_deep_nesting_in_a_session(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for text in ("[" * 100_000, '{"role": "user", "content": "hi", "x": ' + "[" * 100_000):
        path = tmp_path / "deep.json"
        path.write_text(text, encoding="utf-8")
        code, _, err = run(capsys, "trim", path, "--max-turns", "3")
        one_line_error(code, err, "deep.json")
        code, _, err = run(capsys, "estimate", path)
        one_line_error(code, err, "deep.json")


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_item_7_deep_nesting_in_a_config(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, suffix: str
) -> None:
    config = tmp_path / f"deep{suffix}"
    config.write_text(
        ('{"agents": ' if suffix == ".json" else "agents = ") + "[" * 100_000, encoding="utf-8"
    )
    code, _, err = run(capsys, "explain", "--config", config, "--agent", "a")
    one_line_error(code, err, config.name)


def test_item_7_huge_integers(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(
        '[{"role": "user", "content": "hi"},\n{"role": "assistant", "content": "ok", "n": '
        + "9" * 5000
        + "}]",
        encoding="utf-8",
    )
    code, _, err = run(capsys, "trim", path, "--max-turns", "3")
    one_line_error(code, err, "digits")
    assert "line 2" in err


def test_item_7_the_adapter_names_bad_text_and_deep_fields() -> None:
    with pytest.raises(OpenAIFormatError, match=r"messages\[0\]\.content: .*surrogate"):
        from_openai([{"role": "user", "content": "hello \ud800"}])
    deep: Any = "x"
    for _ in range(_sys.getrecursionlimit() * 2):
        deep = {"a": deep}
    with pytest.raises(OpenAIFormatError, match=r"messages\[0\]"):
        from_openai([{"role": "user", "content": "hi", "meta": deep}])


# -------------------------------------------------------------- item 8: JSON Lines


def test_item_8_json_lines_split_on_newline_only(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rows = session(3)
    rows[1]["content"] = "line\u2028separator\u2029paragraph\x85next"
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    path = tmp_path / "s.jsonl"
    path.write_text(text, encoding="utf-8")
    code, out, err = run(capsys, "estimate", path)
    assert code == 0, err
    assert "3 turns, 7 messages" in out
    out_path = tmp_path / "out.jsonl"
    code, _, err = run(capsys, "trim", path, "--max-turns", "2", "-o", out_path)
    assert code == 0, err
    code, out, err = run(capsys, "estimate", out_path, "--crumb-present")
    assert code == 0, err
    assert "2 turns" in out


# -------------------------------------------------------------- item 9: stdin, BOM, function


def test_item_9_dash_is_stdin_and_stdout(tmp_path: Path) -> None:
    text = json.dumps(session(3))
    done = subprocess.run(
        [sys.executable, "-m", "histtrim.cli", "trim", "-", "--max-turns", "1", "-o", "-"],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert [r["content"] for r in json.loads(done.stdout)][-2:] == ["question 2 ", "answer 2 "]
    assert "trimmed <stdin>" in done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "histtrim.cli", "estimate", "-"],
        input=text, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0 and "3 turns" in done.stdout


def test_item_9_a_byte_order_mark_is_accepted(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for name, text in (
        ("s.json", json.dumps(session(2))),
        ("s.jsonl", "".join(json.dumps(r) + "\n" for r in session(2))),
    ):
        path = tmp_path / name
        path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
        code, out, err = run(capsys, "estimate", path)
        assert code == 0, err
        assert "2 turns" in out
        code, out, err = run(capsys, "trim", path, "--max-turns", "5", "-o", path)
        assert code == 0 and path.read_bytes() == b"\xef\xbb\xbf" + text.encode("utf-8")
    for suffix, body in ((".toml", CONFIG.read_text(encoding="utf-8")),
                         (".json", '{"providers": {"p": {}}, "agents": {"a": {"provider": "p"}}}')):
        config = tmp_path / f"c{suffix}"
        config.write_bytes(b"\xef\xbb\xbf" + body.encode("utf-8"))
        agent = "codey" if suffix == ".toml" else "a"
        code, out, err = run(capsys, "explain", "--config", config, "--agent", agent)
        assert code == 0, err


@pytest.mark.parametrize("kind", ["openai", "histtrim"])
def test_item_9_legacy_function_rows_get_a_clear_answer(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str
) -> None:
    extra = ', "kind": "chat"' if kind == "histtrim" else ""
    path = tmp_path / "s.json"
    path.write_text(
        f'[{{"role": "user", "content": "hi"{extra}}},\n'
        f' {{"role": "function", "name": "f", "content": "42"{extra}}}]',
        encoding="utf-8",
    )
    code, _, err = run(capsys, "trim", path, "--max-turns", "3")
    one_line_error(code, err, "line 2")
    problem = err.split("field 'role': ", 1)[1]  # the path holds the test's name
    assert problem.startswith("role 'function' is the legacy function-calling format")
    assert "'tool' message" in problem


# -------------------------------------------------------------- item 16, index once, budget


def test_item_16_a_single_turn_over_budget_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(session(1, pad=100)[1:]), encoding="utf-8")
    code, _out, err = run(capsys, "trim", path, "--budget", "10")
    assert code == 0
    assert "1 turns" not in err
    assert "1 turn," in err
    assert "newest turn alone" in err and "CAP-1" in err
    path.write_text(json.dumps(session(2)), encoding="utf-8")
    code, _out, err = run(capsys, "trim", path, "--max-turns", "1")
    assert "2 -> 1 turn," in err and "2 messages dropped" in err


def test_a_trim_indexes_the_input_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI builds one TurnIndex of the session's rows per request and passes it down:
    from the rows (`turns.index_turns`, structured and `--tokenizer` requests) or from a row
    file's columns (`adapters.rewrite.turn_index`, the fast reader)."""
    rows = session(40, pad=40)
    path = tmp_path / "s.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    sizes: list[int] = []
    patched = {
        "index_turns": histtrim.turns.index_turns,
        "turn_index": histtrim.adapters.rewrite.turn_index,
    }

    def counting(real: Any) -> Any:
        def count(history: Any, *args: Any, **kwargs: Any) -> Any:
            sizes.append(len(history))
            return real(history, *args, **kwargs)

        return count

    for name, module in list(sys.modules.items()):
        for attr, real in patched.items():
            if name.startswith("histtrim") and getattr(module, attr, None) is real:
                monkeypatch.setattr(module, attr, counting(real))
    code, _, err = run(
        capsys, "trim", path, "--config", CONFIG, "--agent", "codey", "--model", "gpt-4o"
    )
    assert code == 0, err
    code, _, err = run(capsys, "trim", path, "--max-turns", "10", "-o", tmp_path / "o.json")
    assert code == 0, err
    code, _, err = run(capsys, "trim", path, "--budget", "300", "-o", tmp_path / "o.json")
    assert code == 0, err
    assert sizes.count(len(rows)) == 3, sizes
    assert len(sizes) <= 3 * 2, sizes


def test_turn_limit_events_report_the_same_budget_from_the_cli_and_the_agent(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """HistoryTrimmed.budget has one meaning, whoever trims: the token budget in force when
    the trim ran (the configured one for a turn-limit trim; 0 when none is configured)."""
    profile = RuntimeProfile(max_history_messages=2, max_context_tokens=8000)
    config = tmp_path / "c.json"
    config.write_text(
        json.dumps({
            "providers": {"p": {"model": "m", "context_window": 100_000}},
            "runtimes": {"r": profile.model_dump(exclude_defaults=True)},
            "agents": {"a": {"provider": "p", "runtime": "r"}},
        }),
        encoding="utf-8",
    )
    path = tmp_path / "s.json"
    path.write_text(json.dumps(session(3)[1:]), encoding="utf-8")
    code, _, err = run(capsys, "trim", path, "--config", config, "--agent", "a")
    assert code == 0, err
    cli_event = json.loads(err.splitlines()[0])
    code, _, err = run(capsys, "trim", path, "--max-turns", "2")
    turns_only = json.loads(err.splitlines()[0])
    transport = InMemoryTransport()
    bot = Agent(
        ScriptedProvider([ProviderReply(text=f"answer {n}") for n in range(3)]),
        resolve_runtime(profile, ProviderProfile(model="m", context_window=100_000), "m"),
        bus=EventBus([transport]),
    )
    for n in range(3):
        bot.turn(f"question {n}")
    assert transport.events[0].reason == cli_event["reason"] == "turn_limit"
    assert cli_event["budget"] == transport.events[0].budget == 8000
    assert turns_only["reason"] == "turn_limit" and turns_only["budget"] == 0


def test_a_crlf_json_lines_file_keeps_its_line_ending(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 20: the breadcrumb inserted into a CRLF JSON Lines file ends with CRLF like every
    other line (it was written with LF)."""
    source = tmp_path / "s.jsonl"
    source.write_bytes(b"".join(json.dumps(r).encode() + b"\r\n" for r in session(3)))
    out = tmp_path / "out.jsonl"
    code, _, err = run(capsys, "trim", source, "--max-turns", "1", "-o", out)
    assert code == 0, err
    lines = out.read_bytes().split(b"\n")
    assert lines[-1] == b"" and all(line.endswith(b"\r") for line in lines[:-1])
    assert b"earlier turns omitted" in out.read_bytes()


# Issue 30, items 16-18 (round three).


@pytest.mark.parametrize("command", ["estimate", "trim"])
@pytest.mark.parametrize("role", [{"a": 1}, ["user"]])
def test_a_role_that_is_an_object_or_a_list_is_a_field_error(
    command: str, role: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 17: `--format histtrim` tested `role in _ROLES` before validating: an unhashable
    role was a `TypeError` traceback."""
    path = tmp_path / "rows.json"
    path.write_text(json.dumps([{"role": role, "content": "hi"}]))
    extra = ["--budget", "5"] if command == "trim" else []
    code, _, err = run(capsys, command, path, "--format", "histtrim", *extra)
    one_line_error(code, err, "field 'role'")


@pytest.mark.parametrize("command", ["estimate", "trim"])
def test_a_pretty_printed_object_without_messages_says_what_it_is(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 18: a config passed by mistake is valid JSON; it was "line 1: invalid JSON"."""
    path = tmp_path / "agents.json"
    path.write_text(json.dumps({"providers": {}, "agents": {}}, indent=2))
    extra = ["--budget", "5"] if command == "trim" else []
    code, _, err = run(capsys, command, path, *extra)
    one_line_error(code, err, "no `messages`")
    assert "'providers', 'agents'" in err and "invalid JSON" not in err


def test_a_one_line_object_is_still_one_json_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps({"role": "user", "content": "hi"}))
    code, out, _ = run(capsys, "estimate", path)
    assert code == 0 and "total: 1 turn, 1 message" in out


def test_trim_without_a_user_turn_does_not_speak_of_the_newest_turn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 18: with no user row, the summary said "the newest turn alone is over the
    budget" of a file with 0 turns."""
    path = tmp_path / "rows.json"
    path.write_text(json.dumps([{"role": "assistant", "content": "a reply " * 20}]))
    code, _, err = run(capsys, "trim", path, "--budget", "5")
    assert code == 0
    assert "0 turns" in err and "newest turn" not in err
    assert "no turn to drop" in err


def test_an_empty_output_path_is_not_a_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 18: `-o ""` named the current folder ("is a directory")."""
    path = tmp_path / "rows.json"
    path.write_text(json.dumps(session(3)))
    code, out, err = run(capsys, "trim", path, "--budget", "5", "-o", "")
    assert code == 2 and out == ""
    assert "-o/--output: expected a file name" in err and "directory" not in err


def test_trim_config_names_reach_the_terminal_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 16: the provider alias and model of `trim --config` came out raw in the summary
    (a colour change, a window title, a bidirectional override)."""
    alias, model = "op\x1b[31men", "gpt\x1b]0;x\x07-4o\u202e"
    config = tmp_path / "agents.json"
    config.write_text(json.dumps({
        "providers": {alias: {"model": model, "context_window": 128_000}},
        "runtimes": {"r": {"max_context_tokens": 50}},
        "agents": {"a": {"provider": alias, "runtime": "r"}},
    }))
    path = tmp_path / "rows.json"
    path.write_text(json.dumps(session(3, pad=100)))
    code, _, err = run(capsys, "trim", path, "--config", config, "--agent", "a",
                       "-o", tmp_path / "out.json")
    assert code == 0
    assert "op\\x1b[31men/gpt\\x1b]0;x\\x07-4o\\u202e" in err
    assert not any(c in err for c in "\x1b\x07\u202e")


def test_the_library_reader_says_what_an_object_without_messages_is() -> None:
    from histtrim.adapters.formats import read_history
    from histtrim.adapters.records import FormatError

    with pytest.raises(FormatError, match="keys 'model', 'budget' but no `messages`"):
        read_history(b'{\n  "model": "x",\n  "budget": 3\n}\n')
