"""The argparse `type=` converters the subcommands share: a bad value becomes argparse's
one-line usage error naming the option and what it expected."""

from __future__ import annotations

import argparse
from datetime import datetime


def count(text: str) -> int:
    """A whole number >= 0 (a budget or a turn limit, where 0 has a meaning)."""
    return _whole_number(text, 0)


def positive(text: str) -> int:
    """A whole number >= 1 (a window, an iteration or worker count)."""
    return _whole_number(text, 1)


def timeout_seconds(text: str) -> float:
    """Seconds in (0, 3600)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 3600:
        raise argparse.ArgumentTypeError(f"expected seconds in (0, 3600), got {text!r}")
    return value


def answer_bytes(text: str) -> int:
    """A line length in bytes, 1 to 2**40: a line buffer must fit the platform."""
    from histtrim.conformance.runner import ANSWER_BYTES_CEILING

    value = _whole_number(text, 1)
    if value > ANSWER_BYTES_CEILING:
        raise argparse.ArgumentTypeError(
            f"expected a whole number from 1 to {ANSWER_BYTES_CEILING}, got {text[:40]!r}")
    return value


MAX_WHOLE = 2**64 - 1
"""The largest count an option takes: the config's own bound (a u64, as in the reference)."""


def _whole_number(text: str, minimum: int) -> int:
    shown = text if len(text) <= 40 else text[:37] + "..."
    try:
        value = int(text) if len(text) <= 40 else minimum - 1
    except ValueError:
        value = minimum - 1
    if not minimum <= value <= MAX_WHOLE:
        raise argparse.ArgumentTypeError(
            f"expected a whole number from {minimum} to {MAX_WHOLE}, got {shown!r}"
        )
    return value


def file_path(text: str) -> str:
    """A path to write: not empty (an empty path would name the current folder)."""
    if not text:
        raise argparse.ArgumentTypeError("expected a file name (or '-' for stdout), got ''")
    return text


def instant(text: str) -> float:
    """An ISO 8601 time with its offset (`2026-12-07T18:30:00Z`), as seconds since the Unix
    epoch: when the next request would be made (`trim --now`)."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise argparse.ArgumentTypeError(
            f"expected an ISO 8601 time with its offset, e.g. 2026-12-07T18:30:00Z, got {text!r}")
    return moment.timestamp()
