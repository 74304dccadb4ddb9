"""`--tokenizer`: exact counts from the optional extra, for `trim` and `estimate`."""

from __future__ import annotations

import argparse

from histtrim.adapters.tokenizers import ENCODINGS, exact_counter
from histtrim.cli.errors import InputError
from histtrim.counting import TokenCounter


def add_tokenizer_arg(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--tokenizer",
        choices=ENCODINGS,
        help="count the messages' text with this real vocabulary instead of EST-1's bytes / 4 "
        "(needs the optional extra: pip install 'histtrim[tokenizers]')",
    )


def token_counter(args: argparse.Namespace) -> TokenCounter | None:
    """The counter `--tokenizer` names, or None for the spec's estimate."""
    name: str | None = getattr(args, "tokenizer", None)
    if name is None:
        return None
    try:
        return exact_counter(name)
    except ImportError as error:
        raise InputError("--tokenizer", str(error)) from None
