"""`histtrim.adapters.tokenizers`: exact counts from the optional extra `histtrim[tokenizers]`
(bpe-openai), never imported by the library at import time. Tests marked `needs_extra` run
only where the extra is installed; the others run everywhere."""

from __future__ import annotations

import subprocess
import sys

import pytest

from histtrim import ChatMessage, trim_to_recent_turns
from histtrim.adapters.tokenizers import (
    ENCODINGS,
    INSTALL_HINT,
    _backend,
    count_text,
    exact_counter,
    row_text,
    tokenizers_available,
)
from histtrim.carriers import image_marker
from livingspec.calibration.corpus import CLASSES, samples

needs_extra = pytest.mark.skipif(
    not tokenizers_available(), reason="needs the optional extra histtrim[tokenizers]"
)


def test_importing_histtrim_never_imports_the_extra() -> None:
    code = "import sys, histtrim, histtrim.adapters.tokenizers, livingspec.calibration.measure; " \
        "print('bpe_openai' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_without_the_extra_exact_counter_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "bpe_openai", None)
    monkeypatch.setitem(sys.modules, "bpe_openai._bindings", None)
    _backend.cache_clear()
    try:
        with pytest.raises(ImportError, match=r"pip install 'histtrim\[tokenizers\]'"):
            exact_counter("o200k_base")
    finally:
        _backend.cache_clear()
    assert "histtrim[tokenizers]" in INSTALL_HINT


@pytest.mark.parametrize("name", ["gpt2", "O200K_BASE", ""])
def test_an_unknown_encoding_is_a_value_error_naming_it(name: str) -> None:
    with pytest.raises(ValueError, match="encoding must be one of o200k_base, cl100k_base"):
        exact_counter(name)


def test_row_text_leaves_out_loadable_markers_of_user_rows_only() -> None:
    """EST-2: a real user row's loadable markers are dispatched as images, not text."""
    marked = f"look {image_marker('/tmp/a.png')} here"
    assert row_text(ChatMessage.user(marked)) == "look  here"
    assert row_text(ChatMessage.assistant(marked)) == marked
    assert row_text(ChatMessage.user("[IMAGE:not-a-path] x")) == "[IMAGE:not-a-path] x"


@needs_extra
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_counts_equal_the_packages_public_encoder(encoding: str) -> None:
    """The counter uses the package's counting backend; its numbers are the public tiktoken-like
    API's `len(encode_ordinary(text))` on every calibration sample and on hostile text."""
    import bpe_openai

    public = bpe_openai.get_encoding(encoding)
    texts = [
        "", "<|endoftext|> is plain text here", "ñandú 🐛 你好", "\r\n\t  x",
        *(text for content_class in CLASSES for text in samples(content_class)[:25]),
    ]
    for text in texts:
        assert count_text(text, encoding) == len(public.encode_ordinary(text)), text[:40]


@needs_extra
def test_known_counts() -> None:
    counter = exact_counter("o200k_base")
    assert counter.name == "o200k_base"
    assert counter(ChatMessage.user("hello world")) == 2
    assert counter.count_text("hello world") == 2
    assert count_text("你好世界", "o200k_base") == 2
    assert exact_counter("cl100k_base")(ChatMessage.user("hello world")) == 2


@needs_extra
def test_a_row_over_the_public_encoders_size_limit_is_still_counted() -> None:
    """The public encoder refuses 1,000,000 characters; a restored session can hold such a
    tool result, and its count must not fail the trim."""
    big = ChatMessage.user("word " * 299_999 + "word")
    counter = exact_counter("o200k_base")
    assert counter(big) == 300_000
    result = trim_to_recent_turns([big, ChatMessage.user("hi")], 10, token_counter=counter)
    assert result.counter == "o200k_base" and result.dropped == [big]
