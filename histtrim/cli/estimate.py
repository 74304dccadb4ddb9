"""`histtrim estimate`: the per-turn table of messages, tokens and images of a session file."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ..counting import counter_name
from ..display import TurnStats, turn_stats
from ..estimate import FRAME_TOKENS, IMAGE_TOKENS
from .errors import EXIT_OK
from .output import emit
from .sessions import crumb_error, read_session
from .tokenizer import token_counter


def format_turn_table(
    stats: Sequence[TurnStats],
    lines: Sequence[int] | None = None,
    counted: tuple[str, Sequence[TurnStats]] | None = None,
) -> str:
    """The per-turn table `histtrim estimate` prints; `counted` (a counter's name and its
    stats of the same history) adds its tokens and cumulative beside the estimate's."""
    header: tuple[str, ...] = ("turn", "line", "messages", "tokens", "images", "cumulative")
    by_counter = counted[1] if counted is not None else None
    if counted is not None:
        name = counted[0]
        header = ("turn", "line", "messages", "tokens", name, "images", "cumulative",
                  f"{name} cumulative")
    table: list[tuple[str, ...]] = [header]
    for k, stat in enumerate(stats):
        if stat.turn == 0 and stat.messages == 0:
            continue
        line = lines[stat.first_row] if lines is not None and stat.messages else stat.first_row
        label = "prefix" if stat.turn == 0 else str(stat.turn)
        row: tuple[object, ...] = (label, line, stat.messages, stat.tokens, stat.images,
                                   stat.cumulative)
        if by_counter is not None:
            other = by_counter[k]
            row = (label, line, stat.messages, stat.tokens, other.tokens, stat.images,
                   stat.cumulative, other.cumulative)
        table.append(tuple(str(cell) for cell in row))
    widths = [max(len(row[c]) for row in table) for c in range(len(header))]
    text = [
        "  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True))
        for row in table
    ]
    turns = stats[-1].turn if stats else 0
    total = stats[0].cumulative if stats else 0
    messages = sum(s.messages for s in stats)
    images = sum(s.images for s in stats)
    exact = ""
    if counted is not None and counted[1]:
        exact = f" ({counted[0]}: {counted[1][0].cumulative})"
    text.append(
        f"total: {turns} turns, {messages} messages, {total} tokens{exact}, "
        f"{images} image{'s' * (images != 1)}"
    )
    if counted is not None:
        text.append(
            f"tokens: the spec's estimate (EST-1, bytes / 4); {counted[0]}: the text counted by "
            f"that vocabulary; both add {FRAME_TOKENS} per message and {IMAGE_TOKENS} per image"
        )
    text.append(
        "cumulative: the tokens kept if the trim keeps that turn and every newer one "
        "(the system prefix included)"
    )
    return "\n".join(text) + "\n"


def cmd_estimate(args: argparse.Namespace) -> int:
    session = read_session(args.session, args.format)
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
    emit(None, format_turn_table(stats, session.lines, counted).encode("utf-8"))
    return EXIT_OK
