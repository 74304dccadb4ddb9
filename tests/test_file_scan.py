"""`histtrim trim`/`estimate` on the fast reader: the pairing warnings come from the one
pricing pass (issue 32), and memory stays a small multiple of the input however the file is
shaped (issue 30, items 14 and 15). Memory is the peak traced by `tracemalloc` over the
input's size, never a time."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from histtrim.adapters.formats import read_history
from histtrim.adapters.openai import from_openai, to_openai
from histtrim.adapters.rewrite import trim_history, turn_table, write_history
from histtrim.cli import main
from histtrim.cli.trim import file_pairing_warnings, pairing_warnings
from histtrim.messages import ChatMessage
from histtrim.trim import breadcrumb_message
from livingspec.strategies import GeneratedHistory, chat_histories


def peak_over(size: int, work: Callable[[], object]) -> float:
    """The peak memory `work` allocates, as a multiple of `size` bytes."""
    tracemalloc.start()
    try:
        work()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / size


def jsonl(records: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def test_a_file_dense_with_image_markers_costs_a_small_multiple_of_itself(
    tmp_path: Path,
) -> None:
    """Issue 30, item 15: 4 MB of `[IMAGE:/a]` took 258 MB (the adapter's parts and the
    estimate's split kept an object per marker); the markers are now counted as found."""
    dense = jsonl([{"role": "user", "content": "[IMAGE:/a]" * 50_000},
                   {"role": "assistant", "content": "ok"},
                   *[{"role": "user", "content": "see [IMAGE:/b.png] " * 40}] * 200])
    hf = read_history(dense)
    assert hf.images[0] == 50_000 and hf.costs[0] == 50_000 * 1600 + 4
    assert peak_over(len(dense), lambda: turn_table(read_history(dense))) < 3
    path = tmp_path / "dense.jsonl"
    path.write_bytes(dense)
    assert peak_over(len(dense), lambda: main(["estimate", str(path)])) < 3


def test_one_turn_of_many_tool_rounds_costs_a_small_multiple_of_itself(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 30, item 14: one request of many tool rounds is one turn, and the warnings
    held a turn's rows (a 40 MB file peaked at 357 MB); they now come from the reader's
    pass, which keeps two integers an error."""
    records: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for k in range(20_000):
        call = {"id": f"c{k}", "type": "function", "function": {"name": "f", "arguments": ""}}
        records.append({"role": "assistant", "content": None, "tool_calls": [call]})
        records.append({"role": "tool", "tool_call_id": f"c{k}" if k % 2 else "x",
                        "content": "out"})
    data = jsonl(records)
    path, out = tmp_path / "one-turn.jsonl", tmp_path / "out.jsonl"
    path.write_bytes(data)
    peak = peak_over(len(data), lambda: main(["trim", str(path), "--budget", "10",
                                              "-o", str(out)]))
    err = capsys.readouterr().err
    assert "19995 more pairing problems not shown" in err  # 10,000 orphans, 10,000 calls
    assert peak < 3


def test_a_warning_quotes_a_bounded_part_of_a_long_call_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 30, item 14: five 2 MB ids printed 10 MB; a warning now quotes 60 characters
    and the id's length."""
    records: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for k in range(5):
        call = {"id": str(k) * 200_000, "type": "function",
                "function": {"name": "f", "arguments": ""}}
        records.append({"role": "assistant", "content": None, "tool_calls": [call]})
    path = tmp_path / "long.jsonl"
    path.write_bytes(jsonl(records))
    assert main(["trim", str(path), "--max-turns", "5", "-o", str(tmp_path / "o.jsonl")]) == 0
    warnings = capsys.readouterr().err.splitlines()[1:]
    assert len(warnings) == 5 and all(len(w) < 250 for w in warnings)
    assert warnings[0].endswith(f"(tool_call_id={'0' * 60!r}... (200,000 characters))")


@settings(max_examples=80, deadline=None)
@given(chat_histories(free_text=True, malformed=True), st.integers(0, 3000),
       st.sampled_from(["jsonl", "array"]))
def test_file_warnings_equal_the_warnings_of_the_rows_written(
    g: GeneratedHistory[ChatMessage], budget: int, layout: str
) -> None:
    """The errors found in the pricing pass, cut and shifted, are `validate_tool_pairing`'s
    on the rows the trim writes (the breadcrumb included)."""
    records = [{"kind": "chat", **row.model_dump(exclude={"kind"})} for row in g.rows]
    if not records:
        return
    data = (jsonl(records) if layout == "jsonl"
            else ("[\n" + ",\n".join(json.dumps(r) for r in records) + "\n]\n").encode())
    hf = read_history(data, "histtrim")
    trim = trim_history(hf, budget_tokens=budget, crumb_present=g.crumb)
    kept = list(g.rows[: trim.body_start])
    if trim.trimmed and trim.crumb_inserted:
        kept.append(breadcrumb_message())
    kept += g.rows[trim.cut if trim.trimmed else trim.body_start :]
    assert file_pairing_warnings(hf, trim) == pairing_warnings(kept)
    assert len(write_history(hf, trim)) > 0


def test_user_text_with_markers_takes_the_fast_path_with_the_adapters_text() -> None:
    """The reader's plain-message path now takes user text holding markers: its row text is
    the one `from_openai` makes."""
    texts = ["a [IMAGE:/x] b [IMAGE:y]", "[IMAGE:/a]" * 3, "[IMAGE:\n/a] x",
             "[Tool results]\n[IMAGE:/a]", "{\"x\": \"[IMAGE:/a]\"}"]
    records = [{"role": "user", "content": text} for text in texts]
    hf = read_history(jsonl(records), "openai")
    assert [hf.row(i).content for i in range(len(hf))] == [
        row.content for row in from_openai(records)]
    assert to_openai([hf.row(0)]) is not None
