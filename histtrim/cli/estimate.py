"""`histtrim estimate`: the per-turn table of messages, tokens and images of a session file."""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Mapping, Sequence
from itertools import accumulate, islice

from histtrim.adapters.rewrite import turn_columns
from histtrim.cli.agentfiles import AgentFile, read_agent_file
from histtrim.cli.errors import EXIT_OK
from histtrim.cli.jsontext import display_name, read_bytes
from histtrim.cli.output import emit, say
from histtrim.cli.rowfiles import fast_rows, file_crumb_error, row_lines
from histtrim.cli.sessions import crumb_error, read_session
from histtrim.cli.tokenizer import token_counter
from histtrim.counting import counter_name
from histtrim.estimate import IMAGE_TOKENS, message_costs
from histtrim.messages import FRAME_TOKENS
from histtrim.turn_sizes import TurnColumns, TurnStats, turn_stats


def turn_table_lines(
    stats: Sequence[TurnStats],
    lines: Mapping[int, int] | Sequence[int] | None = None,
    counted: tuple[str, Sequence[TurnStats]] | None = None,
) -> Iterator[str]:
    """The lines of `format_turn_table`, made one at a time: the columns are sized from the
    largest numbers first, so no cell is kept (a million-row file has 300,000+ turns)."""
    columns = TurnColumns.of(stats)
    if lines is not None:  # the line of each turn's first row (a turn with no rows: 0)
        shown = [lines[f] if m else f for f, m in zip(columns.first_row, columns.messages,
                                                         strict=True)]
    else:
        shown = list(columns.first_row)
    other = None if counted is None else (counted[0], TurnColumns.of(counted[1]))
    return table_lines(columns, shown, other)


def table_lines(
    columns: TurnColumns,
    lines: Sequence[int],
    counted: tuple[str, TurnColumns] | None = None,
) -> Iterator[str]:
    """`turn_table_lines` of per-turn columns, `lines` the line shown for each turn: the
    widths are the columns' largest numbers, and each line is one `%` of a zipped row."""
    header: tuple[str, ...] = ("turn", "line", "messages", "tokens", "images", "cumulative")
    if counted is not None:
        name = counted[0]
        header = ("turn", "line", "messages", "tokens", name, "images", "cumulative",
                  f"{name} cumulative")
    turn = columns.turn
    cells: list[Sequence[int]] = [
        turn, lines, columns.messages, columns.tokens, columns.images, columns.cumulative,
    ]
    if counted is not None:
        cells.insert(4, counted[1].tokens)
        cells.append(counted[1].cumulative)
    # a turn 0 (the prefix) with no rows is not shown; every other turn has its opener
    zeros = ([0] if turn and turn[0] == 0 else []) if isinstance(turn, range) else [
        k for k, t in enumerate(turn) if t == 0]
    hidden = {k for k in zeros if columns.messages[k] == 0}
    if hidden == {0}:
        cells = [cell[1:] for cell in cells]
    elif hidden:
        cells = [[c for k, c in enumerate(cell) if k not in hidden] for cell in cells]
    shown = len(turn) - len(hidden)
    widths = [max(len(name), len(str(max(cell)))) if shown else 0
              for name, cell in zip(header, cells, strict=True)]
    if shown and cells[0][0] == 0:
        widths[0] = max(widths[0], len("prefix"))
    labels = [t or "prefix" for t in cells[0]]
    template = "  ".join(f"%{width}s" for width in widths)
    yield template % header
    yield from map(template.__mod__, zip(labels, *cells[1:], strict=True))
    turns = turn[-1] if turn else 0
    total = columns.cumulative[0] if turn else 0
    messages = sum(columns.messages)
    images = sum(columns.images)
    exact = ""
    if counted is not None and len(counted[1]):
        exact = f" ({counted[0]}: {counted[1].cumulative[0]})"
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


def recorded_lines(agent: AgentFile, costs: Sequence[int]) -> Iterator[str]:
    """Each recorded call's input beside histtrim's estimate of the same request (the rows
    before its reply, the system prompt the file holds included)."""
    shift = 1 if agent.part.system else 0
    sums = list(accumulate(costs, initial=0))
    calls = agent.part.calls
    if not calls:
        return
    yield "recorded calls: input as the provider counted it, beside the estimate (EST-1)"
    yield f"{'call':>5}  {'message':>8}  {'recorded':>9}  {'estimate':>9}  {'ratio':>6}"
    for k, call in enumerate(calls, start=1):
        estimate = sums[min(call.record + shift, len(costs))]
        ratio = f"{call.input_tokens / estimate:.2f}" if estimate else "-"
        yield (f"{k:>5}  {call.record + 1:>8}  {call.input_tokens:>9}  {estimate:>9}  "
               f"{ratio:>6}")


def cmd_estimate(args: argparse.Namespace) -> int:
    source, data = display_name(args.session), read_bytes(args.session)
    agent = read_agent_file(source, data, args.format)
    if agent is not None:  # an agent's own file: the request it would send next
        data = agent.body
        args = argparse.Namespace(**{**vars(args), "format": agent.format})
        say(agent.note(source, "estimated"), err=True)
    hf = fast_rows(source, data, args.format, args.tokenizer)
    if hf is not None:
        try:
            columns = turn_columns(hf, crumb_present=args.crumb_present)
        except ValueError:
            raise file_crumb_error(source, hf) from None
        # every turn but the prefix has rows; a prefix without rows shows no line
        empty = columns.messages[0] == 0
        found = row_lines(hf, columns.first_row[empty:]).lines
        _print(table_lines(columns, [0, *found] if empty else found))
        if agent is not None:
            _print(recorded_lines(agent, hf.costs))
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
    if agent is not None and session.rows is not None:
        _print(recorded_lines(agent, message_costs(session.rows)))
    return EXIT_OK
