"""Issue 20, stalls: every scan of hostile text is one linear pass with bounded work.

Linearity is checked by counting work (characters a scan passes over), never by time; the
timings are `bench/marker_scan.py`'s ratios."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import pytest

from histtrim import ChatMessage, estimate_history_tokens
from histtrim.adapters.numbers import dumps_kept
from histtrim.adapters.parts import marker_parts
from histtrim.carriers import (
    image_markers,
    split_carrier_attachments,
    split_image_markers,
)
from histtrim.cli import jsontext
from histtrim.display.pieces import user_text_block
from histtrim.estimate import estimate_image_tokens

PACKAGE = Path(__file__).resolve().parent.parent / "histtrim"
OLD_MARKER = re.compile(r"\[IMAGE:([^\]]*)\]")
"""The marker as a regex: the definition the linear scanner must agree with."""


class _Counted(str):
    """A text that counts the characters its `find` calls pass over."""

    scanned = 0

    def find(self, sub: str, start: Any = 0, end: Any = None) -> int:  # type: ignore[override]
        stop = len(self) if end is None else end
        found = str.find(self, sub, start, stop)
        _Counted.scanned += (found + len(sub) if found >= 0 else stop) - start
        return found


ADVERSARIAL = "[IMAGE:" * 20_000 + "x"
"""Many openers and no `]`: a backtracking regex retries every opener to the end."""


@pytest.mark.parametrize(
    "scan",
    [
        lambda text: list(image_markers(text)),
        split_image_markers,
        user_text_block,
        lambda text: marker_parts(text, lambda image, _marker: {"image": image}),
    ],
    ids=["image_markers", "split_image_markers", "user_text_block", "marker_parts"],
)
@pytest.mark.parametrize(
    "text",
    [
        ADVERSARIAL,
        "[IMAGE:/a.png]" * 5_000,
        "[IMAGE:" * 10_000 + "]" + "[IMAGE:" * 10_000,
        "[IMAGE:[IMAGE:[IMAGE:/x.png]" * 3_000,
    ],
    ids=["no-close", "markers", "one-close", "nested-openers"],
)
def test_marker_scans_are_one_linear_pass(scan: Any, text: str) -> None:
    """Issue 20 item 1 (EST-2): every marker scan (the estimate, the display, the adapters'
    parts) reads the text through the one scanner, passing over each character about once."""
    _Counted.scanned = 0
    scan(_Counted(text))
    assert len(text) <= _Counted.scanned <= 2 * len(text)


def test_no_module_scans_markers_with_a_regex() -> None:
    """Issue 20 item 1: no module of the library compiles a regex for `[IMAGE:` markers
    (every scan goes through `carriers.image_markers`)."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            module = node.func.value
            if isinstance(module, ast.Name) and module.id == "re" and node.args:
                pattern = node.args[0]
                if isinstance(pattern, ast.Constant) and "IMAGE" in str(pattern.value):
                    offenders.append(f"{path.name}: {pattern.value!r}")
    assert offenders == []


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[IMAGE:/a.png]",
        "a [IMAGE:/a.png] b [IMAGE:x] c [IMAGE:/b.png",
        "[IMAGE:[IMAGE:/x.png]]",
        "[IMAGE:\n  /wrapped.png]",
        "[[IMAGE:]]]",
        ADVERSARIAL[:70] + "]" + ADVERSARIAL[:70],
    ],
)
def test_scanner_finds_what_the_marker_regex_finds(text: str) -> None:
    """The scanner's markers are exactly the regex's matches (same spans, same payloads)."""
    expected = [(m.start(), m.end(), m.group(1)) for m in OLD_MARKER.finditer(text)]
    assert [(m.start, m.end, m.payload) for m in image_markers(text)] == expected


def test_adversarial_marker_text_is_priced_as_text() -> None:
    """Issue 20 item 1: openers without a close are plain text, priced by their bytes."""
    row = ChatMessage.user(ADVERSARIAL)
    assert estimate_image_tokens([row]) == 0
    assert estimate_history_tokens([row]) == -(-len(ADVERSARIAL) // 4) + 4


@pytest.mark.parametrize("digits", ["9" * 4_301, "1" + "0" * 20, "0" * 5_000 + "1"])
def test_huge_attachment_count_is_plain_text(digits: str) -> None:
    """Issue 20 item 7 (EST-3): a count in a carrier's `[Tool attachments: N]` header larger
    than the lines that follow is just text (was ValueError past Python's int-string limit)."""
    carrier = f"[Tool results]\n[Tool attachments: {digits}]\n[IMAGE:/a.png]\nout"
    if digits.lstrip("0") == "1":
        assert split_carrier_attachments(carrier) is not None
        return
    assert split_carrier_attachments(carrier) is None
    rows = [ChatMessage.user("q"), ChatMessage.user(carrier)]
    assert estimate_history_tokens(rows) == sum(-(-len(r.content) // 4) + 4 for r in rows)


class _CountedText(str):
    """Output text that counts the characters its `replace` and `find` calls pass over."""

    scanned = 0

    def replace(self, old: Any, new: Any, count: Any = -1) -> str:  # type: ignore[override]
        _CountedText.scanned += len(self)
        return _CountedText(str.replace(self, old, new, count))

    def find(self, sub: Any, start: Any = 0, end: Any = None) -> int:  # type: ignore[override]
        _CountedText.scanned += len(self) - start
        return str.find(self, sub, start, end if end is not None else len(self))


def test_numbers_past_a_double_are_written_back_in_one_pass() -> None:
    """Issue 20 item 2: every number past a double's range (`1e400`) is written back as its
    own text, with a bounded number of passes over the output (one `str.replace` over the
    whole output per number: 13 s to trim 480 KB, 67 s for 960 KB)."""
    document = jsontext.loads("x.json", "[" + ",".join(f"1e{400 + i}" for i in range(2_000)) + "]")
    _CountedText.scanned = 0
    text = dumps_kept(document, lambda value: _CountedText(json.dumps(value)))
    assert text == "[" + ", ".join(f"1e{400 + i}" for i in range(2_000)) + "]"
    assert _CountedText.scanned <= 2 * len(text)
