"""Exact token counts from real BPE vocabularies (the optional extra `histtrim[tokenizers]`).

`exact_counter("o200k_base")` is a `token_counter` (see `histtrim.counting`) backed by the
`bpe-openai` package, which ships the `o200k_base` and `cl100k_base` vocabularies inside its
wheel: no download at run time. The package is imported on first use, never by `import
histtrim`; without it, `exact_counter` raises an ImportError saying what to install."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from functools import cache
from typing import Any

from histtrim.carriers import split_image_markers
from histtrim.messages import ChatMessage

ENCODINGS = ("o200k_base", "cl100k_base")
"""The vocabularies `exact_counter` offers: GPT-4o-era models, and GPT-4 / GPT-3.5."""

EXTRA = "tokenizers"
INSTALL_HINT = f"pip install 'histtrim[{EXTRA}]'"


def tokenizers_available() -> bool:
    """Whether the optional extra is installed (without importing it)."""
    return importlib.util.find_spec("bpe_openai") is not None


@cache
def _backend(encoding: str) -> Any:
    """The package's tokenizer for `encoding`, loaded once per process."""
    try:
        bindings = importlib.import_module("bpe_openai._bindings")
    except ModuleNotFoundError as error:
        raise ImportError(
            f"exact token counts need the optional package bpe-openai: {INSTALL_HINT}"
        ) from error
    return bindings.tokenizer_for_encoding(encoding)


def count_text(text: str, encoding: str = "o200k_base") -> int:
    """The number of BPE tokens of `text` in `encoding`, special-token text counted as text."""
    return int(_backend(_check_encoding(encoding)).count(text))


def row_text(row: ChatMessage) -> str:
    """The text of a row as a tokenizer sees it: a real user row without its loadable
    `[IMAGE:...]` markers (they are dispatched as images, EST-2); any other row, its content."""
    if row.facts.image_markers:
        return split_image_markers(row.content).text
    return row.content


class ExactCounter:
    """A `token_counter`: the BPE tokens of a row's text in one vocabulary.

    It counts `row_text(row)`; the framing tokens and the image price stay the spec's. In the
    current turn, a tool result that declares attachments is priced by the spec on its envelope's
    `content` only; the counter counts the whole envelope there (a few tokens over, never under).
    Two counters of one vocabulary are equal, so they share the counts cached on the rows."""

    __slots__ = ("_count", "_hash", "name")

    def __init__(self, name: str, count: Callable[[str], int]) -> None:
        self.name = name
        self._count = count
        self._hash = hash((ExactCounter, name))

    def __call__(self, row: ChatMessage) -> int:
        return int(self._count(row_text(row)))

    def count_text(self, text: str) -> int:
        """The tokens of a plain text (no framing)."""
        return int(self._count(text))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExactCounter) and other.name == self.name

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"ExactCounter({self.name!r})"


def _check_encoding(encoding: str) -> str:
    if encoding not in ENCODINGS:
        raise ValueError(f"encoding must be one of {', '.join(ENCODINGS)}; got {encoding!r}")
    return encoding


def exact_counter(encoding: str = "o200k_base") -> ExactCounter:
    """A `token_counter` counting with the real `encoding` vocabulary (needs the extra)."""
    return ExactCounter(_check_encoding(encoding), _backend(encoding).count)
