"""Issue 46 item 5: a JSON Lines file of one record is a valid file of any format. Format
detection (`sniff_format`) read its one line as a whole document and refused it (no
`messages`), so a one-message Anthropic transcript failed `trim --policy`, `trim
--tokenizer` and `review` with an error that blamed detection."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from histtrim.adapters.formats import read_history, sniff_format
from histtrim.cli import main

POLICIES = Path(__file__).resolve().parent.parent / "examples" / "policies"
SCREENSHOT = {"type": "image",
              "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0K"}}
ONE: dict[str, list[dict[str, Any]]] = {
    "anthropic": [{"role": "user", "content": [{"type": "text", "text": "what is this?"},
                                               SCREENSHOT]}],
    "histtrim": [{"kind": "chat", "role": "user", "content": "hello"}],
    "openai": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}],
}


def lines(records: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("fmt", sorted(ONE))
@pytest.mark.parametrize("ending", [b"\n", b"", b"\n\n \n"])
def test_one_record_is_detected_as_the_reader_detects_it(fmt: str, ending: bytes) -> None:
    data = lines(ONE[fmt]).rstrip(b"\n") + ending
    assert read_history(data).format == fmt
    assert sniff_format(data) == fmt


def test_an_object_over_several_lines_without_messages_is_still_refused() -> None:
    data = b'{\n  "model": "x"\n}\n'
    for read in (read_history, sniff_format):
        with pytest.raises(ValueError, match="no `messages`"):
            read(data)


def test_trim_with_a_pricing_policy_reads_a_one_message_transcript(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A policy that prices images otherwise sends OpenAI files to the session reader; the
    Anthropic file stays on its own reader and is priced with the policy's image price."""
    path = tmp_path / "one.jsonl"
    path.write_bytes(lines(ONE["anthropic"]))
    code, out, err = run(capsys, "trim", path, "--budget", 100_000,
                         "--policy", POLICIES / "cheap-images.toml")
    assert code == 0, err
    assert out.encode() == path.read_bytes()
    assert "chat-completions" not in err and "image_tokens 1600 -> 400" in err


def test_trim_with_a_tokenizer_refuses_one_message_as_it_refuses_two(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("bpe_openai")
    errors = []
    for count in (1, 2):
        path = tmp_path / "t.jsonl"
        path.write_bytes(lines(ONE["anthropic"] * count))
        code, _, err = run(capsys, "trim", path, "--budget", 1000,
                           "--tokenizer", "o200k_base")
        assert code == 2
        errors.append(err)
    assert errors[0] == errors[1]
    assert "an Anthropic request body is estimated" in errors[0]


def test_review_replays_a_one_message_transcript(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "one.jsonl"
    path.write_bytes(lines(ONE["anthropic"]))
    code, out, err = run(capsys, "review", path, "--no-progress")
    assert code == 0, err
    assert "sessions" in out and "error" not in err
