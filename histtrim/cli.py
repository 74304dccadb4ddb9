"""The `histtrim` command: trim a session file by whole turns, show its estimate per turn,
and explain how a configuration resolves the budget and capacity of a route.

Bad input (a missing file, invalid JSON, a malformed message, an unknown agent) is
reported on one line naming the file, the line and the field, with exit code 2."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NoReturn

from pydantic import TypeAdapter, ValidationError

from .adapters import trim_records
from .adapters.openai import OpenAIFormatError, from_openai, openai_breadcrumb
from .carriers import to_chat_messages
from .config import FALLBACK_CONTEXT_TOKENS, AgentConfig, RuntimeProfile
from .display import TurnStats, turn_stats
from .estimate import estimate_history_tokens
from .events import HistoryTrimmed, TrimReason
from .messages import BREADCRUMB, ChatMessage, ConversationMessage
from .route import ResolvedRuntime, select_route
from .trim import insert_breadcrumb, trim_conversation_to_recent_turns
from .turns import index_turns, leading_system_count

EXIT_OK = 0
EXIT_BAD_INPUT = 2

Format = Literal["openai", "histtrim"]
_ITEM: TypeAdapter[ConversationMessage] = TypeAdapter(ConversationMessage)
_OPENAI_ONLY_KEYS = ("tool_calls", "tool_call_id", "name", "refusal")


class InputError(Exception):
    """Bad input, reported as `SOURCE: line N: field 'F': problem` and exit code 2."""

    def __init__(
        self, source: str, problem: str, *, line: int | None = None, field: str | None = None
    ) -> None:
        where = [source]
        if line is not None:
            where.append(f"line {line}")
        if field:
            where.append(f"field '{field}'")
        super().__init__(": ".join([*where, problem]))


# -- reading and writing sessions --------------------------------------------------------


@dataclass
class Session:
    """A session file: its records, the line each starts on, and how to write it back."""

    path: str
    records: list[dict[str, Any]]
    lines: list[int]
    layout: Literal["array", "jsonl", "object"]
    wrapper: dict[str, Any] | None = None
    """For `{"messages": [...], ...}` files: the object around the messages."""
    format: Format = "histtrim"
    rows: list[ChatMessage] | None = None
    """Provider-facing rows (OpenAI messages, or histtrim chat rows)."""
    items: list[ConversationMessage] = field(default_factory=list)
    """The history as validated (structured items included)."""

    def line_of(self, index: int) -> int | None:
        return self.lines[index] if 0 <= index < len(self.lines) else None


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _array_offsets(text: str, pos: int) -> list[int]:
    """Start offsets of the elements of the (valid) JSON array whose `[` is at `pos`."""
    decoder, offsets = json.JSONDecoder(), list[int]()
    pos = _skip_space(text, pos + 1)
    if text[pos] == "]":
        return offsets
    while True:
        offsets.append(pos)
        _, pos = decoder.raw_decode(text, pos)
        pos = _skip_space(text, pos)
        if text[pos] == "]":
            return offsets
        pos = _skip_space(text, pos + 1)  # the comma


def _messages_offset(text: str, pos: int) -> int:
    """Offset of the `messages` array of the (valid) JSON object whose `{` is at `pos`."""
    decoder = json.JSONDecoder()
    pos = _skip_space(text, pos + 1)
    found = -1
    while text[pos] != "}":
        key, pos = decoder.raw_decode(text, pos)
        pos = _skip_space(text, _skip_space(text, pos) + 1)  # past the colon
        if key == "messages":
            found = pos
        _, pos = decoder.raw_decode(text, pos)
        pos = _skip_space(text, pos)
        if text[pos] == ",":
            pos = _skip_space(text, pos + 1)
    return found


def _line_numbers(text: str, offsets: Sequence[int]) -> list[int]:
    lines, line, last = [], 1, 0
    for offset in offsets:
        line += text.count("\n", last, offset)
        last = offset
        lines.append(line)
    return lines


def read_session(path: str, format: Format | None = None) -> Session:
    """Read a JSON array, a JSON object with `messages`, or JSON Lines, and validate it."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise InputError(path, f"cannot read: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise InputError(path, "not UTF-8 text") from None
    start = _skip_space(text, 0)
    document: Any = None
    if start < len(text) and text[start] in "[{":
        try:
            document = json.loads(text)
        except json.JSONDecodeError as error:
            if text[start] == "[":
                raise InputError(
                    path, f"invalid JSON: {error.msg} (column {error.colno})", line=error.lineno
                ) from None
            # JSON Lines whose first record is an object: parsed line by line below.
    if isinstance(document, list):
        session = Session(path, document, _line_numbers(text, _array_offsets(text, start)), "array")
    elif isinstance(document, dict) and "messages" in document:
        messages = document["messages"]
        if not isinstance(messages, list):
            line = _line_numbers(text, [_messages_offset(text, start)])[0]
            raise InputError(path, "expected a list of messages", line=line, field="messages")
        offsets = _array_offsets(text, _messages_offset(text, start))
        session = Session(path, messages, _line_numbers(text, offsets), "object", document)
    else:
        session = _read_jsonl(path, text)
    for record, line in zip(session.records, session.lines, strict=True):
        if not isinstance(record, dict):
            raise InputError(path, f"expected a JSON object, got {_json_type(record)}", line=line)
    session.format = format or _detect_format(session)
    _validate(session)
    return session


def _read_jsonl(path: str, text: str) -> Session:
    records: list[Any] = []
    lines: list[int] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as error:
            raise InputError(
                path, f"invalid JSON: {error.msg} (column {error.colno})", line=number
            ) from None
        lines.append(number)
    return Session(path, records, lines, "jsonl")


def _json_type(value: object) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", int: "a number",
             float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _detect_format(session: Session) -> Format:
    """histtrim if any record has `kind` (or is a tool row without `tool_call_id`), OpenAI if
    any has an OpenAI-only field or non-string content; plain role/content rows read as OpenAI,
    which keeps them exactly as written."""
    histtrim_line = openai_line = None
    for record, line in zip(session.records, session.lines, strict=True):
        ours = "kind" in record or (record.get("role") == "tool" and "tool_call_id" not in record)
        theirs = (
            any(key in record for key in _OPENAI_ONLY_KEYS)
            or not isinstance(record.get("content"), str)
            or record.get("role") == "developer"
        )
        if ours and histtrim_line is None:
            histtrim_line = line
        elif theirs and not ours and openai_line is None:
            openai_line = line
    if histtrim_line is not None and openai_line is not None:
        raise InputError(
            session.path,
            f"mixes histtrim items (line {histtrim_line}) with OpenAI messages; "
            "use one format per file, or --format",
            line=openai_line,
        )
    return "histtrim" if histtrim_line is not None else "openai"


def _validate(session: Session) -> None:
    if session.format == "openai":
        try:
            session.rows = from_openai(session.records)
        except OpenAIFormatError as error:
            raise InputError(
                session.path, error.problem, line=session.line_of(error.index), field=error.field
            ) from None
        session.items = list(session.rows)
        return
    items: list[ConversationMessage] = []
    for record, line in zip(session.records, session.lines, strict=True):
        try:
            items.append(_ITEM.validate_python(record))
        except ValidationError as error:
            first = error.errors()[0]
            loc = [str(part) for part in first["loc"]]
            if loc and loc[0] == str(record.get("kind", "chat")):
                loc = loc[1:]  # the union's tag
            raise InputError(
                session.path, first["msg"], line=line, field=".".join(loc) or "kind"
            ) from None
    session.items = items
    if all(isinstance(item, ChatMessage) for item in items):
        session.rows = [item for item in items if isinstance(item, ChatMessage)]


def _render(session: Session, records: Sequence[Any]) -> str:
    if session.layout == "jsonl":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    document: Any = list(records)
    if session.layout == "object":
        document = {**(session.wrapper or {}), "messages": document}
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _write(output: str | None, text: str) -> None:
    if output is None or output == "-":
        sys.stdout.write(text)
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as error:
        raise InputError(output, f"cannot write: {error.strerror or error}") from None


# -- trim --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Limits:
    """What `trim` applies, in the runtime's order: the turn limit, then the token budget."""

    max_turns: int | None
    budget: int | None
    route: ResolvedRuntime | None = None

    def describe(self) -> str:
        parts = []
        if self.budget is not None:
            parts.append(f"budget {self.budget}" if self.budget else "budget 0 (trimming off)")
        if self.max_turns is not None:
            parts.append(f"max turns {self.max_turns}")
        if self.route is not None:
            parts.append(f"route {self.route.provider_alias}/{self.route.model or '-'}")
        return ", ".join(parts)


def _limits(args: argparse.Namespace) -> _Limits:
    if args.config is None:
        return _Limits(args.max_turns, args.budget)
    runtime = _route(args)
    return _Limits(runtime.profile.max_history_turns, runtime.effective_context_budget(), runtime)


def _check_crumb(session: Session, crumb_present: bool) -> None:
    if not crumb_present:
        return
    try:
        index_turns(session.items, crumb_present=True)
    except ValueError:
        slot = leading_system_count(session.items)
        raise InputError(
            session.path,
            f"--crumb-present: expected the breadcrumb {BREADCRUMB!r} right after the leading "
            "system messages",
            line=session.line_of(slot),
            field="content" if slot < len(session.items) else None,
        ) from None


def _crumb_record(session: Session) -> dict[str, Any]:
    if session.format == "openai":
        return openai_breadcrumb()
    record: dict[str, Any] = {"role": "user", "content": BREADCRUMB}
    if any("kind" in r for r in session.records):
        record = {"kind": "chat", **record}
    return record


def _trim_rows(
    session: Session, rows: list[ChatMessage], limits: _Limits, crumb: bool
) -> tuple[list[Any], list[HistoryTrimmed], int, int]:
    records: list[Any] = list(session.records)
    events: list[HistoryTrimmed] = []
    steps: list[tuple[int | None, int | None]] = []  # (max_turns, budget_tokens)
    if limits.max_turns is not None:
        steps.append((limits.max_turns, None))
    if limits.budget is not None:
        steps.append((None, limits.budget))
    turns = index_turns(rows, crumb_present=crumb).turn_count
    for max_turns, budget_tokens in steps:
        result = trim_records(
            records,
            rows,
            max_turns=max_turns,
            budget_tokens=budget_tokens,
            crumb_present=crumb,
            breadcrumb_record=_crumb_record(session),
            budget_in_force=limits.budget or 0,
        )
        records, rows, crumb = result.records, result.rows, result.crumb_present
        turns = result.result.kept_turns
        if result.event is not None:
            events.append(result.event)
    return records, events, turns, estimate_history_tokens(rows)


def _trim_structured(
    session: Session, limits: _Limits, crumb: bool
) -> tuple[list[Any], list[HistoryTrimmed], int, int]:
    if limits.budget:
        first = next(i for i, item in enumerate(session.items) if item.kind != "chat")
        raise InputError(
            session.path,
            f"structured items ({session.items[first].kind}) can only be trimmed by turn count "
            "(--max-turns); the token budget applies to provider-facing rows",
            line=session.line_of(first),
            field="kind",
        )
    items: list[Any] = list(session.items)
    before = estimate_history_tokens(to_chat_messages(items))
    if limits.max_turns is None:
        return session.records, [], index_turns(items, crumb_present=crumb).turn_count, before
    result = trim_conversation_to_recent_turns(
        items, limits.max_turns, has_leading_breadcrumb=crumb
    )
    if not result.trimmed:
        return session.records, [], result.kept_turns, before
    # The structured trim drops the breadcrumb; as its owner, put it back (SEEN-1).
    kept = insert_breadcrumb(result.history, crumb_present=False)
    after = estimate_history_tokens(to_chat_messages(kept))
    event = HistoryTrimmed(
        reason=TrimReason.TURN_LIMIT,
        dropped_messages=result.dropped_messages,
        kept_turns=result.kept_turns,
        tokens_before=before,
        tokens_after=after,
        budget=limits.budget or 0,
    )
    records = [item.model_dump(mode="json") for item in kept]
    return records, [event], result.kept_turns, after


def cmd_trim(args: argparse.Namespace) -> int:
    session = read_session(args.session, args.format)
    limits = _limits(args)
    _check_crumb(session, args.crumb_present)
    turns_before = index_turns(session.items, crumb_present=args.crumb_present).turn_count
    if session.rows is not None:
        tokens_before = estimate_history_tokens(session.rows)
        records, events, turns, tokens = _trim_rows(
            session, session.rows, limits, args.crumb_present
        )
    else:
        tokens_before = estimate_history_tokens(to_chat_messages(session.items))
        records, events, turns, tokens = _trim_structured(session, limits, args.crumb_present)
    _write(args.output, _render(session, records))
    for event in events:
        print(event.to_json(), file=sys.stderr)
    dropped = sum(event.dropped_messages for event in events)
    if events:
        summary = (
            f"histtrim: trimmed {session.path}: {turns_before} -> {turns} turns, "
            f"{tokens_before} -> {tokens} tokens, {dropped} messages dropped"
        )
    else:
        summary = (
            f"histtrim: nothing to trim in {session.path}: {turns_before} turns, "
            f"{tokens_before} tokens"
        )
    print(f"{summary} ({limits.describe()})", file=sys.stderr)
    return EXIT_OK


# -- estimate ----------------------------------------------------------------------------


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
    _check_crumb(session, args.crumb_present)
    stats = turn_stats(session.items, crumb_present=args.crumb_present)
    sys.stdout.write(format_turn_table(stats, session.lines))
    return EXIT_OK


# -- explain -----------------------------------------------------------------------------


def _route(args: argparse.Namespace) -> ResolvedRuntime:
    try:
        config = AgentConfig.load(args.config)
    except OSError as error:
        raise InputError(args.config, f"cannot read: {error.strerror or error}") from None
    except ValidationError as error:
        first = error.errors()[0]
        loc = ".".join(str(part) for part in first["loc"])
        raise InputError(args.config, first["msg"], field=loc or None) from None
    except ValueError as error:  # TOML/JSON syntax, file suffix
        raise InputError(args.config, str(error)) from None
    try:
        return select_route(config, args.agent, hint=args.hint, session_model=args.model)
    except ValueError as error:
        raise InputError(args.config, str(error)) from None


def explain_route(runtime: ResolvedRuntime, *, agent: str, model: str | None,
                  hint: str | None) -> list[str]:
    """The resolution of capacity, window and budget, one step a line, each with its rule ID.

    The figures are recomputed step by step for the explanation, and the result is checked
    against `ResolvedRuntime` (the library's answer), which always wins."""
    profile, provider = runtime.profile, runtime.provider
    alias, selected = runtime.provider_alias, runtime.model
    if model is not None:
        why = f"explicit session switch to model {model!r}"
    elif hint is not None:
        why = f"classifier hint {hint!r}"
    else:
        why = "the agent's default route"
    out = [
        f"ROUTE-2   route: agent {agent!r} -> provider {alias!r}, model {selected!r} ({why})"
    ]
    declared = provider.context_window if provider is not None else None
    configured = (provider.model or "").strip() if provider is not None else ""
    capacity = runtime.capacity
    if not declared:
        reason = f"provider {alias!r} declares no context_window"
    elif capacity is None:
        reason = (
            f"selected model {selected!r} is not the profile's model {configured!r}; "
            "its context_window is not borrowed"
        )
    else:
        reason = f"provider {alias!r} declares context_window {declared} for this model"
    verdict = f"capacity {capacity}" if capacity is not None else "capacity unknown"
    out.append(f"ROUTE-3   {reason} -> {verdict}")
    window = runtime.context_window
    if capacity is not None:
        source = "the known capacity"
    elif profile.max_context_tokens:
        source = "capacity unknown: max_context_tokens stands in for it"
    else:
        source = "capacity unknown: the 32000 fallback"
    out.append(f"BUDGET-8  window operand {window} ({source})")
    meter = runtime.model_context_window
    out.append(
        f"ROUTE-4   clients receive model_context_window={meter}"
        if meter is not None
        else "ROUTE-4   clients receive no model_context_window (capacity unknown)"
    )
    budget = _explain_budget(profile, window, out)
    final = runtime.effective_context_budget()
    if budget != final:
        raise RuntimeError(f"explain computed {budget}, the library {final}")
    out.append(
        f"ROUTE-1   effective budget {final} and capacity "
        f"{capacity if capacity is not None else 'unknown'}, resolved together for "
        f"{alias}/{selected or '-'}"
    )
    limit = profile.max_history_turns
    unit = "turns (whole user turns, not rows)"
    if profile.max_history_messages is None:
        out.append(f"LIMIT-2   max_history_messages unset -> default {limit} {unit}")
    elif limit == 0:
        out.append("LIMIT-2   max_history_messages = 0 -> authoritative; the newest turn is kept")
    else:
        out.append(f"LIMIT-2   max_history_messages = {limit} {unit}")
    out.append(f"CAP-2     before dispatch, the request must fit {window} tokens")
    return out


def _explain_budget(profile: RuntimeProfile, window: int, out: list[str]) -> int:
    configured = profile.max_context_tokens
    if configured == 0:
        out.append("BUDGET-2  max_context_tokens = 0 -> budget 0: proactive trimming is off")
        out.append("BUDGET-9  the zero sentinel stays zero whatever else is set")
        return 0
    ratio, raw = profile.valid_context_compact_ratio, profile.context_compact_ratio
    if raw is not None and ratio is None:
        out.append(f"BUDGET-4  context_compact_ratio {raw} is outside (0.0, 1.0] -> unset")
    if ratio is not None:
        base = max(1, int(window * ratio))
        out.append(f"BUDGET-3  context_compact_ratio {ratio} x window {window} -> {base}")
        if configured is not None and configured < base:
            out.append(f"BUDGET-5  max_context_tokens {configured} caps it -> {configured}")
            base = configured
    elif configured is not None:
        base = configured
        out.append(f"BUDGET-2  max_context_tokens {configured} is the budget")
    else:
        base = FALLBACK_CONTEXT_TOKENS
        out.append(f"BUDGET-1  neither max_context_tokens nor a ratio -> the historical {base}")
    pruning = profile.history_pruning
    if pruning.enabled and pruning.max_tokens > 0:
        if pruning.max_tokens < base:
            out.append(f"BUDGET-6  history_pruning.max_tokens {pruning.max_tokens} lowers it")
            base = pruning.max_tokens
        else:
            out.append(
                f"BUDGET-6  history_pruning.max_tokens {pruning.max_tokens} is not lower: "
                "no change"
            )
    if window < base:
        out.append(f"BUDGET-7  capped by the window operand {window} -> {window}")
        base = window
    else:
        out.append(f"BUDGET-7  within the window operand {window}: no cap")
    return base


def cmd_explain(args: argparse.Namespace) -> int:
    runtime = _route(args)
    lines = explain_route(runtime, agent=args.agent, model=args.model, hint=args.hint)
    sys.stdout.write("\n".join(lines) + "\n")
    return EXIT_OK


# -- arguments ---------------------------------------------------------------------------


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return value


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="histtrim",
        description="Trim chat histories by whole turns and explain context budgets.",
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def session_args(command: argparse.ArgumentParser) -> None:
        command.add_argument(
            "session", help="a JSON array, a JSON object with 'messages', or JSON Lines"
        )
        command.add_argument(
            "--format", choices=("openai", "histtrim"), help="skip auto-detection"
        )
        command.add_argument(
            "--crumb-present",
            action="store_true",
            help="the message after the leading system messages is the breadcrumb",
        )

    def route_args(command: argparse.ArgumentParser, required: bool) -> None:
        command.add_argument("--config", required=required, help="agent config (.toml or .json)")
        command.add_argument("--agent", required=required, help="agent name in the config")
        command.add_argument("--model", help="an explicit session switch to this model")
        command.add_argument("--hint", help="a classifier hint naming a configured route")

    trim = commands.add_parser(
        "trim",
        help="drop the oldest whole turns; writes the history, reports on stderr",
        description="Writes the trimmed history in the input's format (stdout or -o); prints "
        "each HistoryTrimmed event as JSON and a summary line on stderr.",
    )
    session_args(trim)
    limit = trim.add_mutually_exclusive_group()
    limit.add_argument("--budget", type=_count, help="token budget (0 disables the trim)")
    limit.add_argument("--max-turns", type=_count, help="keep at most this many turns")
    route_args(trim, required=False)
    trim.add_argument("-o", "--output", help="write here instead of stdout")
    trim.set_defaults(run=cmd_trim)

    estimate = commands.add_parser("estimate", help="per-turn messages, tokens and images")
    session_args(estimate)
    estimate.set_defaults(run=cmd_estimate)

    explain = commands.add_parser(
        "explain", help="how the budget and capacity of a route are resolved, rule by rule"
    )
    route_args(explain, required=True)
    explain.set_defaults(run=cmd_explain)
    return parser


def _check_trim_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.command != "trim":
        return
    chosen = [name for name in ("budget", "max_turns") if getattr(args, name) is not None]
    if args.config is not None and chosen:
        parser.error(f"--config cannot be combined with --{chosen[0].replace('_', '-')}")
    if args.config is None and not chosen:
        parser.error("one of --budget, --max-turns or --config is required")
    if (args.config is None) != (args.agent is None):
        parser.error("--config and --agent go together")
    if args.config is None and (args.model is not None or args.hint is not None):
        parser.error("--model and --hint need --config")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit code (0, or 2 for bad input or arguments)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        _check_trim_args(parser, args)
    except SystemExit as exit:
        return exit.code if isinstance(exit.code, int) else EXIT_BAD_INPUT
    try:
        code: int = args.run(args)
    except InputError as error:
        print(f"histtrim: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # The reader went away (`histtrim ... | head`): not an error of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    return code


if __name__ == "__main__":
    sys.exit(main())
