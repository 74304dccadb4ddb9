"""EST-2, EST-3: image targets are trimmed and re-joined with the reference's whitespace.

The reference (Rust) trims a target with `str::trim` and re-joins a wrapped one, both using
`char::is_whitespace`: Unicode White_Space, which is not Python's `str.isspace` (U+001C..U+001F
are spaces to Python only). A small oracle written from that rule is compared with histtrim on
generated targets, through the single-target helper and through a row's estimate."""

from __future__ import annotations

import json
import math

from hypothesis import given
from hypothesis import strategies as st

from histtrim import ChatMessage, estimate_history_tokens
from histtrim.carriers import image_target

# Unicode's White_Space property, as ranges (what Rust's char::is_whitespace tests).
RUST_WHITESPACE_RANGES = (
    (0x09, 0x0D), (0x20, 0x20), (0x85, 0x85), (0xA0, 0xA0), (0x1680, 0x1680),
    (0x2000, 0x200A), (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000),
)


def rust_is_whitespace(char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in RUST_WHITESPACE_RANGES)


def rust_trim(text: str) -> str:
    start, end = 0, len(text)
    while start < end and rust_is_whitespace(text[start]):
        start += 1
    while end > start and rust_is_whitespace(text[end - 1]):
        end -= 1
    return text[start:end]


def oracle_rejoin(target: str) -> str:
    """Each CR or LF, and the whitespace run after it, removed."""
    out: list[str] = []
    skipping = False
    for char in target:
        if char in "\r\n":
            skipping = True
        elif skipping and rust_is_whitespace(char):
            continue
        else:
            skipping = False
            out.append(char)
    return "".join(out)


def oracle_loadable(target: str) -> bool:
    if target.startswith(("/", "http://", "https://", "data:")):
        return True
    if len(target) >= 3 and target[0].isascii() and target[0].isalpha() and target[1] == ":" \
            and target[2] in "\\/":
        return True
    if not target.startswith("\\\\"):
        return False
    rest = target[2:]
    if rest[:1] in ("?", "."):
        return False
    cut = min((i for i in (rest.find("\\"), rest.find("/")) if i >= 0), default=-1)
    return cut > 0 and cut < len(rest) - 1


def oracle_image(target: str) -> str | None:
    joined = rust_trim(oracle_rejoin(target))
    return joined if oracle_loadable(joined) else None


SPACES = "\t\n\x0b\x0c\r \x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2005\u200a\u200b\u2028\u2029" \
         "\u202f\u205f\u3000\ufeff"
targets = st.lists(
    st.one_of(
        st.sampled_from(["/", "/tmp/a.png", "http://x/a", "https://x", "data:", "C:\\", "C:/",
                         "\\\\", "\\\\srv\\s", "\\\\srv/", "ht", "tp://x", "?", ".", "\\", "x"]),
        st.text(alphabet=SPACES, max_size=3),
    ),
    max_size=6,
).map("".join)


@given(targets)
def test_est_2_image_target_matches_the_reference_whitespace_rule(target: str) -> None:
    """EST-2: histtrim's image target equals the oracle's on every generated target."""
    assert image_target(target) == oracle_image(target)


@given(targets)
def test_est_2_marker_price_matches_the_reference_whitespace_rule(target: str) -> None:
    """EST-2: a user row holding one marker costs 1,600 + 4 when the oracle loads its target,
    else its bytes as text."""
    if "]" in target:
        return
    text = f"[IMAGE:{target}]"
    expected = 1604 if oracle_image(target) is not None else \
        math.ceil(len(text.encode()) / 4) + 4
    assert estimate_history_tokens([ChatMessage.user(text)]) == expected


def test_est_2_unicode_whitespace_is_trimmed_and_information_separators_are_not() -> None:
    """EST-2: U+3000 around a target is trimmed (an image: 1,604 tokens); U+001C, a space to
    Python's `str.isspace` but not to Rust, leaves the target text."""
    assert estimate_history_tokens([ChatMessage.user("[IMAGE:\u3000/]")]) == 1604
    assert estimate_history_tokens([ChatMessage.user("[IMAGE:\u00a0/a.png\u2028]")]) == 1604
    assert image_target("\x1c/tmp/a.png") is None
    assert image_target("ht\n\u3000tp://x/a.png") == "http://x/a.png"


def test_est_3_declared_target_rejoined_with_unicode_whitespace() -> None:
    """EST-3: a declared attachment's target wrapped with U+2003 after its break loads."""
    envelope = json.dumps({"tool_call_id": "c1", "content": "shot", "attachments": [
        {"kind": "image", "target": "ht\n\u2003tp://x/a.png"}]})
    # With no real user row every tool result is current: "shot" is 1 token, one image, 4.
    assert estimate_history_tokens([ChatMessage(role="tool", content=envelope)]) == 1 + 1600 + 4
