"""What the agent-session readers share: JSON Lines read line by line with bad lines counted,
usage counts checked, timestamps parsed, and a bound on the records the parts copy."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

COPY_ALLOWANCE = 4096
"""Records the parts may repeat beyond `COPY_FACTOR` x the file's records: a rewind or a
compaction starts a part with context an earlier part already holds (a compaction keeps a
tail of the context, so real files repeat far fewer records than they have)."""
COPY_FACTOR = 1


def tally(counts: dict[str, int], kind: str, n: int = 1) -> None:
    """Add `n` to `counts[kind]` (what the reader skipped, by kind; a kind the file names
    is cut to 64 characters)."""
    if n:
        counts[kind[:64]] = counts.get(kind[:64], 0) + n


class Skips:
    """Rows left out, by kind, and the tool calls or results the reader could not pair."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.unpaired = 0

    def skip(self, kind: str, n: int = 1) -> None:
        tally(self.counts, kind, n)

    def report(self) -> dict[str, int]:
        return dict(sorted(self.counts.items()))


class CopyBudget:
    """How many earlier records the parts may still copy: keeps a file of rewinds or
    compactions that each keep a long context linear in the file's size."""

    def __init__(self, records: int) -> None:
        self.left = COPY_FACTOR * records + COPY_ALLOWANCE

    def take(self, n: int) -> bool:
        if n > self.left:
            return False
        self.left -= n
        return True


MAX_LINE_BYTES = 1 << 26
"""The longest line a reader parses (64 MiB): a longer one is counted as `over-long line`
and never parsed, so one line cannot make a reader hold many times the file in memory.
Real rows are far shorter (Claude Code moves a result over a few kB to its own file)."""


CHUNK_BYTES = 1 << 20
"""Lines are split a chunk of about this many bytes at a time (at C speed, never the whole
file at once); a line longer than a chunk is measured before it is copied."""


def json_lines(data: bytes, skips: Skips) -> Iterator[dict[str, Any]]:
    """Each line of `data` that is a JSON object; a line that does not parse, or parses
    to something else, is counted as `garbled`, one over `MAX_LINE_BYTES` as `over-long
    line` (never copied or parsed); blank lines and a leading UTF-8 byte order mark are
    ignored."""
    start = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    end, chunk = len(data), min(CHUNK_BYTES, MAX_LINE_BYTES)
    while start < end:
        if start + chunk >= end:
            stop = end
        else:
            stop = data.rfind(b"\n", start, start + chunk)
            if stop < 0:  # one line longer than a chunk
                stop = data.find(b"\n", start)
                stop = end if stop < 0 else stop
                if stop - start > MAX_LINE_BYTES:
                    skips.skip("over-long line")
                    start = stop + 1
                    continue
        lines = data[start:stop].splitlines()
        start = stop + 1
        for line in lines:
            if not line.strip():
                continue
            value = loads(line)
            if isinstance(value, dict):
                yield value
            else:
                skips.skip("garbled")


_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")


def array_items(text: str, skips: Skips) -> Iterator[Any]:
    """The elements of a JSON array one by one, up to where the text stops being one: a
    truncated or garbled file keeps its whole elements, and the rest counts as `garbled`."""
    at = _SPACE.match(text).end()  # type: ignore[union-attr]
    if text[at:at + 1] != "[":
        skips.skip("garbled")
        return
    at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
    if text[at:at + 1] == "]":
        return
    while True:
        try:
            value, at = _DECODER.raw_decode(text, at)
        except (ValueError, RecursionError):
            skips.skip("garbled")
            return
        yield value
        at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
        if text[at:at + 1] == ",":
            at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
        elif text[at:at + 1] == "]":
            if text[at + 1:].strip():
                skips.skip("garbled")
            return
        else:
            skips.skip("garbled")
            return


def loads(text: bytes) -> Any:
    """The JSON value of `text`, or None when it is not JSON (too deep included)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def count(value: object) -> int | None:
    """A token count as recorded: a non-negative integer (not a bool), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def counts(usage: Mapping[str, object], *keys: str) -> list[int] | None:
    """The counts `keys` name (a missing or null one is 0), or None when one is not a
    count."""
    out: list[int] = []
    for key in keys:
        value = usage.get(key)
        n = 0 if value is None else count(value)
        if n is None:
            return None
        out.append(n)
    return out


def iso_seconds(value: object) -> float | None:
    """Seconds since the epoch of an ISO 8601 time (naive ones read as UTC), else None."""
    if not isinstance(value, str) or len(value) > 64:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return (moment - datetime(1970, 1, 1)).total_seconds()
    return moment.timestamp()


def text_of(value: object) -> str:
    """A string field as a string (anything else as its JSON)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False)
