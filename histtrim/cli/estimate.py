"""`histtrim estimate`: the per-turn table of messages, tokens and images of a session file."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from ..display import TurnStats, turn_stats
from .errors import EXIT_OK
from .output import emit
from .sessions import crumb_error, read_session


def format_turn_table(stats: Sequence[TurnStats], lines: Sequence[int] | None = None) -> str:
    """The per-turn table `histtrim estimate` prints."""
    header = ("turn", "line", "messages", "tokens", "images", "cumulative")
    table: list[tuple[str, ...]] = [header]
    for stat in stats:
        if stat.turn == 0 and stat.messages == 0:
            continue
        line = lines[stat.first_row] if lines is not None and stat.messages else stat.first_row
        label = "prefix" if stat.turn == 0 else str(stat.turn)
        row = (label, line, stat.messages, stat.tokens, stat.images, stat.cumulative)
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
    text.append(
        f"total: {turns} turns, {messages} messages, {total} tokens, "
        f"{images} image{'s' * (images != 1)}"
    )
    text.append(
        "cumulative: the tokens kept if the trim keeps that turn and every newer one "
        "(the system prefix included)"
    )
    return "\n".join(text) + "\n"


def cmd_estimate(args: argparse.Namespace) -> int:
    session = read_session(args.session, args.format)
    try:
        stats = turn_stats(session.items, crumb_present=args.crumb_present)
    except ValueError:
        raise crumb_error(session) from None
    emit(None, format_turn_table(stats, session.lines).encode("utf-8"))
    return EXIT_OK
