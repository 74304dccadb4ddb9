"""Issue 46 item 6: one image price for every place an image can stand. The Anthropic reader
wrote a `tool_result`'s base64 screenshot into its row as a `data:` target holding the whole
encoding, so once its turn closed (EST-4: an older result is priced by its row's bytes) six
screenshots cost 150,461 tokens and a 20,000 budget dropped every turn. A tool's image is now
written by the one rule (`carriers.part_target`): its price never depends on its encoding's
size, in the library, the file reader, the CLI, the review's replay items and the LangChain
adapter alike (decision "Declared attachments of tool results")."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from histtrim import IMAGE_TOKENS, estimate_history_tokens
from histtrim.adapters.anthropic import from_anthropic, trim_anthropic
from histtrim.adapters.anthropic_items import anthropic_items
from histtrim.adapters.formats import read_history
from histtrim.cli import main
from histtrim.estimate import message_cost
from histtrim.messages import ToolResults
from histtrim.turn_sizes import price_items


def screenshot(size: int) -> str:
    return base64.b64encode(bytes(range(256)) * (size // 256)).decode()


def body(size: int, turns: int = 6, *, current: bool = False) -> dict[str, Any]:
    """`turns` turns, each a screenshot a tool returned; the last turn is a plain question
    (or, with `current`, the last screenshot's turn is still open)."""
    data = screenshot(size)
    messages: list[dict[str, Any]] = []
    for t in range(turns):
        messages += [
            {"role": "user", "content": f"step {t}: take a screenshot"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": f"t{t}", "name": "screenshot", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{t}",
                                          "content": [
                {"type": "text", "text": "ok"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                             "data": data}}]}]},
            {"role": "assistant", "content": f"done {t}"},
        ]
    if current:
        messages.pop()
    else:
        messages.append({"role": "user", "content": "what changed?"})
    return {"model": "claude", "messages": messages}


SMALL, LARGE = 3_072, 75_264  # 4 KB and 100 KB of base64


def test_est_4_an_older_screenshot_costs_the_same_whatever_its_size() -> None:
    small, large = body(SMALL), body(LARGE)
    rows = [from_anthropic(b).rows for b in (small, large)]
    assert estimate_history_tokens(rows[0]) == estimate_history_tokens(rows[1]) < 500
    files = [read_history(json.dumps(b).encode()) for b in (small, large)]
    assert files[0].costs == files[1].costs == [
        message_cost(r, current_turn=False) for r in rows[0]
    ]
    kept, result = trim_anthropic(large, budget_tokens=20_000)
    assert kept == large and result.event is None  # every turn kept (all 6 dropped before)


def test_est_2_a_current_screenshot_costs_one_image_whatever_its_size() -> None:
    for size in (SMALL, LARGE):
        hf = read_history(json.dumps(body(size, current=True)).encode())
        assert hf.images == {len(hf) - 1: 1}
        assert IMAGE_TOKENS < hf.costs[-1] < IMAGE_TOKENS + 30


def test_the_cli_estimates_and_trims_screenshots_as_the_library_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "shots.json"
    path.write_text(json.dumps(body(LARGE)))
    expected = estimate_history_tokens(from_anthropic(body(LARGE)).rows)
    assert main(["estimate", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"{expected} tokens" in out
    assert main(["trim", str(path), "--budget", "20000", "-o", str(tmp_path / "out.json")]) == 0
    assert "nothing to trim" in capsys.readouterr().err


def test_the_review_replays_screenshots_at_the_same_price() -> None:
    """The replay's items (each result with its own attachments) price as the rows do."""
    items = [anthropic_items(body(size)) for size in (SMALL, LARGE)]
    results = [i for i in items[1] if isinstance(i, ToolResults)]
    assert all(len(a.target) < 40 for r in results for m in r.results
               for a in m.attachments or ())
    assert price_items(items[0], False).costs == price_items(items[1], False).costs


def test_a_langchain_tool_screenshot_costs_what_the_anthropic_one_costs() -> None:
    """The same screenshot through the LangChain adapter: a declared attachment of the same
    short target, so its older row's price does not grow with the image either."""
    pytest.importorskip("langchain_core")
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from histtrim.adapters.langchain import from_langchain

    costs = []
    for size in (SMALL, LARGE):
        rows = from_langchain([
            HumanMessage("take a screenshot"),
            AIMessage("", tool_calls=[{"id": "t0", "name": "screenshot", "args": {}}]),
            ToolMessage([{"type": "text", "text": "ok"},
                         {"type": "image", "base64": screenshot(size),
                          "mime_type": "image/png"}], tool_call_id="t0"),
            AIMessage("done"),
            HumanMessage("what changed?"),
        ])
        costs.append(message_cost(rows[2], current_turn=False))
    assert costs[0] == costs[1] < 50


def test_a_row_made_from_a_screenshot_is_not_written_as_an_empty_image() -> None:
    """The row carries the image's priced target, not its data: writing the replay's item
    back as an Anthropic message is refused, never an image block without data."""
    from histtrim.adapters.anthropic import to_anthropic
    from histtrim.carriers import to_chat_messages

    items = anthropic_items(body(SMALL))
    results = next(i for i in items if isinstance(i, ToolResults))
    with pytest.raises(ValueError, match="an Anthropic image is a URL or base64 data"):
        to_anthropic(to_chat_messages([results]))
