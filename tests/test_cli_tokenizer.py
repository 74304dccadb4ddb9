"""`histtrim trim|estimate --tokenizer ENCODING`: exact counts from the optional extra beside
(estimate) or instead of (trim) the spec's estimate, and a clear error without the extra."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import histtrim.adapters.tokenizers
from histtrim.adapters.openai import from_openai
from histtrim.adapters.tokenizers import _backend, exact_counter, tokenizers_available
from histtrim.cli import main
from histtrim.counting import counted_costs

ROOT = Path(__file__).resolve().parent.parent
SESSION = str(ROOT / "examples" / "coding_session.json")

needs_extra = pytest.mark.skipif(
    not tokenizers_available(), reason="needs the optional extra histtrim[tokenizers]"
)


@pytest.fixture
def fake_vocabulary(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in backend (one token per word), so the CLI plumbing is tested without the extra."""
    fake = SimpleNamespace(count=lambda text: len(text.split()))
    monkeypatch.setattr(histtrim.adapters.tokenizers, "_backend", lambda name: fake)


def rows() -> list:  # type: ignore[type-arg]
    return from_openai(json.loads(Path(SESSION).read_text(encoding="utf-8")))


def test_estimate_prints_both_counts_side_by_side(
    fake_vocabulary: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["estimate", SESSION, "--tokenizer", "o200k_base"]) == 0
    out = capsys.readouterr().out.splitlines()
    header = out[0].split()
    assert header == ["turn", "line", "messages", "tokens", "o200k_base", "images", "cumulative",
                      "o200k_base", "cumulative"]
    prefix = out[1].split()
    expected = sum(counted_costs(rows(), exact_counter("o200k_base")))
    assert int(prefix[7]) == expected  # the counted cumulative of the whole session
    assert int(prefix[6]) == 3399  # the spec's estimate, unchanged
    assert f"3399 tokens (o200k_base: {expected})" in out[-3]
    assert "tokens: the spec's estimate (EST-1" in out[-2]


def test_estimate_without_the_option_is_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", SESSION]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["turn", "line", "messages", "tokens", "images",
                                           "cumulative"]
    assert "o200k_base" not in out


def test_trim_with_a_tokenizer_meets_the_budget_in_its_tokens_and_says_so(
    fake_vocabulary: None, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_file = tmp_path / "out.json"
    assert main(["trim", SESSION, "--budget", "900", "--tokenizer", "cl100k_base",
                 "-o", str(out_file)]) == 0
    err = capsys.readouterr().err.splitlines()
    event = json.loads(err[0])
    counter = exact_counter("cl100k_base")
    assert event["counter"] == "cl100k_base"
    assert event["tokens_before"] == sum(counted_costs(rows(), counter))
    kept = from_openai(json.loads(out_file.read_text(encoding="utf-8")))
    assert event["tokens_after"] == sum(counted_costs(kept, counter)) <= 900
    assert err[-1].endswith("(budget 900, counted by cl100k_base)")


def test_without_the_extra_the_option_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "bpe_openai", None)
    monkeypatch.setitem(sys.modules, "bpe_openai._bindings", None)
    _backend.cache_clear()
    try:
        assert main(["estimate", SESSION, "--tokenizer", "o200k_base"]) == 2
    finally:
        _backend.cache_clear()
    err = capsys.readouterr().err
    assert "histtrim: error: --tokenizer: exact token counts need the optional package " \
        "bpe-openai: pip install 'histtrim[tokenizers]'" in err


def test_an_unknown_tokenizer_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", SESSION, "--tokenizer", "gpt2"]) == 2
    assert "invalid choice: 'gpt2'" in capsys.readouterr().err


@needs_extra
def test_the_real_o200k_counts(capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's command: both counts side by side, the exact one from o200k_base."""
    assert main(["estimate", SESSION, "--tokenizer", "o200k_base"]) == 0
    out = capsys.readouterr().out
    expected = sum(counted_costs(rows(), exact_counter("o200k_base")))
    assert f"total: 6 turns, 33 messages, 3399 tokens (o200k_base: {expected}), 1 image" in out
    assert expected == 3475
