"""Whole-turn trims of a `HistoryFile` on its columns, and the file written back in its own
format and layout (JSON Lines and arrays as the input's own bytes).

The cut is the library's visible trim (`histtrim.visible`), planned on the file's turn index
and row costs: no row is made."""

from __future__ import annotations

import json
from array import array
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import accumulate, chain, islice
from operator import sub
from typing import Any

from pydantic_core import PydanticSerializationError, from_json, to_json

from histtrim.adapters.formats import HistoryFile, breadcrumb_record
from histtrim.adapters.numbers import KEEPING, dumps_kept
from histtrim.estimate import message_cost
from histtrim.events import HistoryTrimmed
from histtrim.low_water import plan_held_trim
from histtrim.messages import BREADCRUMB, row_facts
from histtrim.policy import ColdCuts
from histtrim.turn_sizes import TurnColumns, TurnStats
from histtrim.turns import TurnIndex
from histtrim.visible import VisibleTrim, plan_visible_trim

_BOM = b"\xef\xbb\xbf"
_CRUMB_TOKENS = row_facts("user", BREADCRUMB).plain_tokens


@dataclass(frozen=True)
class FileTrim:
    """What `trim_history` keeps: the system prefix, the breadcrumb and rows `cut..`."""

    cut: int
    """First kept body row; `body_start` when nothing was dropped."""
    body_start: int
    crumb_inserted: bool
    crumb_present: bool
    """The breadcrumb flag for the output (pass it to the next trim)."""
    events: list[HistoryTrimmed] = field(default_factory=list)
    turns_before: int = 0
    turns_after: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    crumb_tokens: int = 0
    """The breadcrumb's share of `tokens_after` (inserted or the input's; 0: none is kept)."""

    @property
    def trimmed(self) -> bool:
        return bool(self.events)


def check_crumb(hf: HistoryFile, crumb_present: bool) -> None:
    """The breadcrumb flag must name a user row right after the leading system rows; the
    flag is authoritative, whatever that row's text (as `turns.crumb_slot`)."""
    slot = hf.prefix_len
    if crumb_present and not (slot < len(hf) and hf.row(slot).role == "user"):
        raise ValueError(
            f"crumb_present=True but row {slot} (after the system prefix) is not a user row, "
            "so it cannot be the breadcrumb"
        )


def turn_index(hf: HistoryFile, crumb_present: bool = False) -> TurnIndex:
    """The file's turn index (TURN-2..5), from its columns (no rows are made)."""
    check_crumb(hf, crumb_present)
    starts = hf.starts()
    crumb = hf.prefix_len if crumb_present else None
    if crumb is not None:
        starts = starts[1:]  # the crumb slot is the first user row; it opens no turn
    return TurnIndex(len(hf), hf.prefix_len, crumb, tuple(starts), [])


def trim_history(
    hf: HistoryFile,
    *,
    max_turns: int | None = None,
    budget_tokens: int | None = None,
    crumb_present: bool = False,
    breadcrumb: bool = True,
) -> FileTrim:
    """The visible trim (`plan_visible_trim`) on the file's columns: the turn limit, then the
    token budget, the breadcrumb inserted once (SEEN-1) and counted toward the budget, one
    `HistoryTrimmed` event per drop (SEEN-2)."""
    index = turn_index(hf, crumb_present)
    plan = plan_visible_trim(
        index, hf.costs, max_turns=max_turns, budget_tokens=budget_tokens,
        crumb_cost=_CRUMB_TOKENS, breadcrumb=breadcrumb,
    )
    return file_trim(plan)


def held_trim_history(
    hf: HistoryFile,
    *,
    max_turns: int | None = None,
    budget_tokens: int | None = None,
    crumb_present: bool = False,
    turn_target: Fraction = Fraction(1),
    token_target: Fraction = Fraction(1),
    cold: ColdCuts | None = None,
) -> FileTrim:
    """The cut the `Agent` holds (`low_water.plan_held_trim`, a low-water target below 1) on
    the file's columns: the requests end where the pricing pass saw a reply begin, and only
    the rows that may declare attachments are made again, for their price as an older row
    and as a row of the current turn (EST-3). `cold`: the requests made with the prompt
    cache cold (CACHE-2)."""
    index = turn_index(hf, crumb_present)
    plan = plan_held_trim(
        index, file_prices(hf), chain(hf.replies, (len(hf),)), max_turns=max_turns,
        budget_tokens=budget_tokens or 0, crumb_cost=_CRUMB_TOKENS,
        turn_target=turn_target, token_target=token_target, cold=cold,
    )
    return file_trim(plan)


def file_prices(hf: HistoryFile) -> tuple[Sequence[int], Sequence[int]]:
    """Each row's price as an older row and as a row of the current turn, as
    `low_water.two_prices` gives a list of rows: the file's costs (the current turn's priced
    as current), apart for the rows that may declare attachments. One list when none does."""
    if not hf.declaring:
        return hf.costs, hf.costs
    older, current = list(hf.costs), list(hf.costs)
    for i in hf.declaring:
        row = hf.row(i)
        older[i] = message_cost(row, current_turn=False)
        current[i] = message_cost(row, current_turn=True)
    return older, current


def file_trim(plan: VisibleTrim) -> FileTrim:
    """What `write_history` needs of a visible trim planned on a file's turn index (by
    `trim_history`, or by a caller that priced the file's rows its own way)."""
    index = plan.index
    return FileTrim(
        cut=plan.cut,
        body_start=index.body_start,
        crumb_inserted=plan.crumb_inserted,
        crumb_present=plan.crumb_present,
        events=list(plan.events),
        turns_before=index.turn_count,
        turns_after=plan.turns_after,
        tokens_before=plan.tokens_before,
        tokens_after=plan.tokens_after,
        crumb_tokens=plan.crumb_tokens,
    )


def write_history(hf: HistoryFile, trim: FileTrim | None = None) -> bytes:
    """The file in its own format and layout, with only the rows `trim` keeps (and its
    breadcrumb). Untrimmed, it is the input's bytes; JSON Lines and arrays keep each kept
    record's bytes. `write_history_chunks` makes the same bytes a piece at a time."""
    return b"".join(write_history_chunks(hf, trim))


def write_history_chunks(
    hf: HistoryFile, trim: FileTrim | None = None
) -> Iterator[bytes | memoryview]:
    """`write_history`'s bytes as pieces made one after another, to be written as they come
    (`_files.write_atomically` takes them): a re-written request body is never held whole
    beside its input. Pieces may be views of the input (`hf.data`)."""
    bom = _BOM if hf.bom else b""
    if trim is None or not trim.trimmed:
        yield from (bom, hf.data) if bom else (hf.data,)
        return
    rec = hf.system_rows
    crumb = breadcrumb_record(hf.format) if trim.crumb_inserted else None
    head = range(trim.body_start - rec)
    tail = range(trim.cut - rec, hf.records)
    if hf.layout == "jsonl":
        yield from (bom, *_jsonl(hf, head, crumb, tail)) if bom else _jsonl(hf, head, crumb, tail)
        return
    if hf.layout == "array":
        yield from (bom, *_array(hf, head, crumb, tail)) if bom else _array(hf, head, crumb, tail)
        return
    ends = _body_ends(hf) if hf.body is not None and hf.spans else None
    if ends is not None:
        if bom:
            yield bom
        yield from _pretty_body(hf, ends, head, crumb, tail)
        return
    body, parsed = hf.body, None
    if hf.number_marks[0]:  # a float may be written otherwise: read again, numbers as written
        kept = _keeping(hf.data)
        parsed = kept.get("messages") if isinstance(kept, dict) else kept
        if isinstance(kept, dict) and hf.body is not None:
            body = {**kept, "messages": None}
    if not isinstance(parsed, list) or len(parsed) != hf.records:
        parsed = None  # not read as the fast reader read it: its records are written
    records: list[Any] = [hf.record(i) if parsed is None else parsed[i] for i in head]
    if crumb is not None:
        records.append(crumb)
    records.extend(hf.record(i) if parsed is None else parsed[i] for i in tail)
    document: Any = records
    if body is not None:
        document = {**body, "messages": records}
    try:
        out = dumps_kept(document, _indented).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate in some field: written as its escape
        out = dumps_kept(document, _indented_ascii).encode("ascii")
    yield bom + out + b"\n"


def _indented(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _indented_ascii(value: Any) -> str:
    return json.dumps(value, indent=2)


def _keeping(text: bytes) -> Any:
    """`text` parsed with its numbers kept as written (`numbers.KEEPING`); None when Python's
    parser does not read it as the fast reader did (the parsed records are written then)."""
    try:
        return KEEPING.decode(text.decode("utf-8"))
    except (ValueError, RecursionError):
        return None


_ZEROS = bytes.maketrans(b"123456789", b"000000000")


def _plain_numbers(text: bytes) -> bool:
    """Whether the JSON text holds no float and no constant (NaN, Infinity): pydantic-core
    writes those otherwise than `json.dumps`. Conservative: a digit before `.`, `e` or `E`
    anywhere (a string's `v1.5` too) counts as a float."""
    if b"Infinity" in text or b"NaN" in text:
        return False
    digits = text.translate(_ZEROS)
    return b"0." not in digits and b"0e" not in digits and b"0E" not in digits


_CHUNK = 4096
_WRAPPED_OPEN, _WRAPPED_CLOSE = b'{\n  "m": [\n', b"\n  ]\n}"
_MESSAGES = "\x00messages\x00"


def _body_ends(hf: HistoryFile) -> tuple[bytes, bytes] | None:
    """The text of `json.dumps({**body, "messages": ...}, indent=2, ensure_ascii=False)`
    before and after the messages; None when the body cannot be written so (the caller's
    whole-document `json.dumps` then decides)."""
    assert hf.body is not None
    body = hf.body
    around = hf.data[: hf.spans[0]] + hf.data[hf.spans[-1] :]  # the body, no message in it
    if not _plain_numbers(around):  # a float may be written otherwise: numbers as written
        kept = _keeping(around)
        if not isinstance(kept, dict):
            return None
        body = {**kept, "messages": None}
    try:
        skeleton = dumps_kept({**body, "messages": _MESSAGES}, _indented)
        parts = skeleton.split(json.dumps(_MESSAGES))
        if len(parts) != 2:
            return None
        return parts[0].encode("utf-8"), parts[1].encode("utf-8")
    except (ValueError, UnicodeEncodeError):
        return None


def _pretty_body(
    hf: HistoryFile,
    ends: tuple[bytes, bytes],
    head: range,
    crumb: dict[str, Any] | None,
    tail: range,
) -> Iterator[bytes]:
    """`json.dumps({**body, "messages": records}, indent=2, ensure_ascii=False)` a piece at
    a time: the body's `ends` around the records, which are parsed again from their spans
    and written a chunk at a time (`_pretty_items`)."""
    opening, closing = ends
    yield opening
    if not head and crumb is None and not tail:
        yield b"[]"
    else:
        items: Iterator[bytes] = _pretty_items(hf, head)
        if crumb is not None:
            text = json.dumps(crumb, indent=2).replace("\n", "\n    ")
            items = chain(items, [b"    " + text.encode()])
        items = chain(items, _pretty_items(hf, tail))
        yield b"[\n"
        for k, item in enumerate(items):
            if k:
                yield b",\n"
            yield item
        yield b"\n  ]"
    yield closing + b"\n"


def _pretty_items(hf: HistoryFile, records: range) -> Iterator[bytes]:
    """Records `records` as `json.dumps(..., indent=2, ensure_ascii=False)` writes them as
    items of the body's `messages` (4 spaces in, each nested level 2 more), in chunks of
    `_CHUNK` records: pydantic-core's writer (the same text for strings, integers, booleans,
    null, lists and objects), `json.dumps` for a chunk whose input holds a float or a
    constant (read and written with each number's text, `numbers.dumps_kept`) or that
    pydantic-core cannot write."""
    data, spans = hf.data, hf.spans
    plain = not hf.number_marks[1]  # no record holds a float or a constant: skip the tests
    for first in range(records.start, records.stop, _CHUNK):
        last = min(first + _CHUNK, records.stop)
        # the records and the separators between them, as the input wrote them
        region = data[spans[2 * first] : spans[2 * last - 1]]
        # a float may be written otherwise: read with its numbers as written
        numbers = plain or _plain_numbers(region)
        chunk = None if numbers else _keeping(b"[" + region + b"]")
        if chunk is None:
            try:
                chunk = from_json(b"[" + region + b"]")
            except ValueError:  # read once already; the record's own parse names the problem
                chunk = [hf.record(i) for i in range(first, last)]
        if numbers:
            try:  # the items one level deeper: {"m": [...]} puts them 4 spaces in
                text = to_json({"m": chunk}, indent=2)
                yield text[len(_WRAPPED_OPEN) : -len(_WRAPPED_CLOSE)]
                continue
            except PydanticSerializationError:
                pass
        text = dumps_kept(chunk, _indented).encode("utf-8")
        # "[\n  A,\n  B\n]" -> "    A,\n    B"
        yield b"  " + text[2:-2].replace(b"\n", b"\n  ")


def _array(
    hf: HistoryFile, head: range, crumb: dict[str, Any] | None, tail: range
) -> list[bytes | memoryview]:
    """The kept records as their own bytes, in the input's layout: its opening, the
    separator between its first two records, its closing (one object per line stays one
    object per line, an indented array stays indented). Nothing is parsed again, so the
    memory stays near the file's size."""
    data, spans = hf.data, hf.spans
    separator = data[spans[1] : spans[2]] if len(spans) >= 4 else b",\n"
    pieces: list[bytes | memoryview] = [hf.record_bytes(i) for i in head]
    if crumb is not None:
        pieces.append(_like_records(hf, crumb))
    if tail and all(data[spans[2 * i - 1] : spans[2 * i]] == separator for i in tail[1:]):
        # the tail as the one slice of the input it is (no copy of each record)
        pieces.append(memoryview(data)[spans[2 * tail[0]] : spans[2 * tail[-1] + 1]])
    else:
        pieces.extend(hf.record_bytes(i) for i in tail)
    parts: list[bytes | memoryview] = [data[: spans[0]]]
    for k, piece in enumerate(pieces):
        parts += (separator, piece) if k else (piece,)
    parts.append(data[spans[-1] :])
    return parts


def _like_records(hf: HistoryFile, record: dict[str, Any]) -> bytes:
    """`record` written as the file's first record is: on one line, or indented by the same
    step from the same column, with the file's line ending."""
    data, first = hf.data, hf.record_bytes(0)
    newline = line_ending(data)
    if b"\n" not in first:
        return json.dumps(record, ensure_ascii=False).encode("utf-8")
    column = hf.spans[0] - (data.rfind(b"\n", 0, hf.spans[0]) + 1)
    second = first.split(b"\n", 2)[1]
    step = max(len(second) - len(second.lstrip(b" ")) - column, 1)
    text = json.dumps(record, indent=step, ensure_ascii=False)
    return text.replace("\n", newline.decode("ascii") + " " * column).encode("utf-8")


def _jsonl(
    hf: HistoryFile, head: range, crumb: dict[str, Any] | None, tail: range
) -> list[bytes | memoryview]:
    data, spans = hf.data, hf.spans
    view = memoryview(data)  # the kept lines are joined once, never copied on the way
    newline = line_ending(data)
    parts: list[bytes | memoryview] = []
    if head:
        parts += (view[: spans[2 * head[-1] + 1]], b"\n")
    if crumb is not None:
        parts.append(json.dumps(crumb, ensure_ascii=False).encode("utf-8") + newline)
    if tail:
        end = view[spans[2 * tail[-1] + 1] :]
        parts += (view[spans[2 * tail[0]] : spans[2 * tail[-1] + 1]], end if end else newline)
    return parts


def line_ending(data: bytes) -> bytes:
    """The file's line ending: `\\r\\n` when its first line ends so, else `\\n`."""
    end = data.find(b"\n")
    return b"\r\n" if end > 0 and data[end - 1 : end] == b"\r" else b"\n"


def turn_table(hf: HistoryFile, crumb_present: bool = False) -> list[TurnStats]:
    """Per turn: messages, tokens, images and the cumulative size from the newest turn (turn
    0 is the system prefix and the breadcrumb), as `turn_sizes.turn_stats` computes them."""
    return turn_columns(hf, crumb_present).stats()


def turn_columns(hf: HistoryFile, crumb_present: bool = False) -> TurnColumns:
    """`turn_table` as columns, computed from the turn bounds and the prefix sums of the row
    costs (no per-row work): turn t runs from its start to the next one's, and its
    cumulative size is the prefix's plus everything from its start on."""
    index = turn_index(hf, crumb_present)
    turns, body, size = index.turn_count, index.body_start, len(hf)
    sums = array("q", accumulate(hf.costs, initial=0))  # 8 bytes a row
    if turns == 0:
        images = sum(hf.images.values())
        return TurnColumns(range(1), [0], [size], [sums[-1]], [images], [sums[-1]])
    bounds = [body, *index.starts[1:], size]  # turn t (1-based) is bounds[t-1] .. bounds[t]
    at = list(map(sums.__getitem__, bounds))
    total, fixed = sums[-1], sums[body]
    column = [0] * (turns + 1)
    for row, count in hf.images.items():
        column[bisect_right(bounds, row) if row >= body else 0] += count
    return TurnColumns(
        turn=range(turns + 1),
        first_row=[0, *bounds[:-1]],
        messages=[body, *map(sub, bounds[1:], bounds)],
        tokens=[fixed, *map(sub, at[1:], at)],
        images=column,
        cumulative=[total, *(fixed + total - x for x in islice(at, turns))],
    )
