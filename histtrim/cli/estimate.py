"""`histtrim estimate`: the per-turn table of messages, tokens and images of a session file."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator, Mapping, Sequence
from itertools import islice

from histtrim.adapters.rewrite import turn_table
from histtrim.cli.errors import EXIT_OK
from histtrim.cli.jsontext import display_name, read_bytes
from histtrim.cli.output import emit
from histtrim.cli.rowfiles import fast_rows, file_crumb_error, row_lines
from histtrim.cli.sessions import crumb_error, read_session
from histtrim.cli.tokenizer import token_counter
from histtrim.counting import counter_name
from histtrim.estimate import IMAGE_TOKENS
from histtrim.messages import FRAME_TOKENS
from histtrim.turn_sizes import TurnStats, turn_stats


def turn_table_lines(
    stats: Sequence[TurnStats],
    lines: Mapping[int, int] | Sequence[int] | None = None,
    counted: tuple[str, Sequence[TurnStats]] | None = None,
) -> Iterator[str]:
    """The lines of `format_turn_table`, made one at a time: the columns are sized from the
    largest numbers first, so no cell is kept (a million-row file has 300,000+ turns)."""
    by_counter = counted[1] if counted is not None else None
    header: tuple[str, ...] = ("turn", "line", "messages", "tokens", "images", "cumulative")
    if counted is not None:
        name = counted[0]
        header = ("turn", "line", "messages", "tokens", name, "images", "cumulative",
                  f"{name} cumulative")

    def rows() -> Iterator[tuple[object, ...]]:
        for k, stat in enumerate(stats):
            if stat.turn == 0 and stat.messages == 0:
                continue
            line = lines[stat.first_row] if lines is not None and stat.messages else stat.first_row
            label = "prefix" if stat.turn == 0 else stat.turn
            if by_counter is None:
                yield (label, line, stat.messages, stat.tokens, stat.images, stat.cumulative)
            else:
                other = by_counter[k]
                yield (label, line, stat.messages, stat.tokens, other.tokens, stat.images,
                       stat.cumulative, other.cumulative)

    # the columns hold numbers >= 0: the widest cell of each is its largest number, found
    # one column at a time without keeping its cells
    shown = [k for k, stat in enumerate(stats) if stat.turn or stat.messages]

    def line_of(k: int) -> int:
        stat = stats[k]
        return lines[stat.first_row] if lines is not None and stat.messages else stat.first_row

    cells: list[Callable[[int], int]] = [
        lambda k: stats[k].turn, line_of, lambda k: stats[k].messages,
        lambda k: stats[k].tokens, lambda k: stats[k].images, lambda k: stats[k].cumulative,
    ]
    if by_counter is not None:
        cells.insert(4, lambda k: by_counter[k].tokens)
        cells.append(lambda k: by_counter[k].cumulative)
    widths = [max(len(name), len(str(max(map(cell, shown)))) if shown else 0)
              for name, cell in zip(header, cells, strict=True)]
    if shown and stats[shown[0]].turn == 0:
        widths[0] = max(widths[0], len("prefix"))
    template = "  ".join(f"%{width}s" for width in widths)
    yield template % header
    for row in rows():
        yield template % row
    turns = stats[-1].turn if stats else 0
    total = stats[0].cumulative if stats else 0
    messages = sum(s.messages for s in stats)
    images = sum(s.images for s in stats)
    exact = ""
    if counted is not None and counted[1]:
        exact = f" ({counted[0]}: {counted[1][0].cumulative})"
    yield (
        f"total: {turns} turn{'s' * (turns != 1)}, {messages} message{'s' * (messages != 1)}, "
        f"{total} token{'s' * (total != 1)}{exact}, "
        f"{images} image{'s' * (images != 1)}"
    )
    if counted is not None:
        yield (
            f"tokens: the spec's estimate (EST-1, bytes / 4); {counted[0]}: the text counted by "
            f"that vocabulary; both add {FRAME_TOKENS} per message and {IMAGE_TOKENS} per image"
        )
    yield (
        "cumulative: the tokens kept if the trim keeps that turn and every newer one "
        "(the system prefix included)"
    )


def format_turn_table(
    stats: Sequence[TurnStats],
    lines: Mapping[int, int] | Sequence[int] | None = None,
    counted: tuple[str, Sequence[TurnStats]] | None = None,
) -> str:
    """The per-turn table `histtrim estimate` prints; `counted` (a counter's name and its
    stats of the same history) adds its tokens and cumulative beside the estimate's."""
    return "".join(line + "\n" for line in turn_table_lines(stats, lines, counted))


def _print(lines: Iterator[str]) -> None:
    """Write the table to stdout in blocks of lines, as they are made."""
    for block in iter(lambda: list(islice(lines, 4096)), []):
        emit(None, "".join(line + "\n" for line in block).encode("utf-8"))


def cmd_estimate(args: argparse.Namespace) -> int:
    source, data = display_name(args.session), read_bytes(args.session)
    hf = fast_rows(source, data, args.format, args.tokenizer)
    if hf is not None:
        try:
            stats = turn_table(hf, crumb_present=args.crumb_present)
        except ValueError:
            raise file_crumb_error(source, hf) from None
        lines = row_lines(hf, (s.first_row for s in stats if s.messages))
        _print(turn_table_lines(stats, lines))
        return EXIT_OK
    session = read_session(args.session, args.format, data)
    counter = token_counter(args)
    try:
        stats = turn_stats(session.items, crumb_present=args.crumb_present)
    except ValueError:
        raise crumb_error(session) from None
    counted = None
    if counter is not None:
        counted = (
            counter_name(counter),
            turn_stats(session.items, crumb_present=args.crumb_present, token_counter=counter),
        )
    _print(turn_table_lines(stats, session.lines, counted))
    return EXIT_OK
