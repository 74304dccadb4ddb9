"""`histtrim trim`: drop the oldest whole turns of a session file, write it back in its own
format, and report each HistoryTrimmed event and a summary on stderr."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any

from ..adapters import trim_records
from ..adapters.openai import openai_breadcrumb
from ..carriers import to_chat_messages
from ..counting import TokenCounter, counted_costs, counter_name
from ..estimate import estimate_history_tokens
from ..events import HistoryTrimmed, TrimReason
from ..messages import BREADCRUMB, ChatMessage
from ..route import ResolvedRuntime
from ..trim import insert_breadcrumb, trim_conversation_to_recent_turns
from ..turns import index_turns
from .errors import EXIT_OK, InputError
from .explain import load_route
from .sessions import Session, check_crumb, read_session, render, write
from .tokenizer import token_counter


def _tokens(rows: list[ChatMessage], counter: TokenCounter | None) -> int:
    """The rows' size: the spec's estimate, or with the `--tokenizer` counter."""
    if counter is None:
        return estimate_history_tokens(rows)
    return sum(counted_costs(rows, counter))


@dataclass(frozen=True)
class _Limits:
    """What `trim` applies, in the runtime's order: the turn limit, then the token budget."""

    max_turns: int | None
    budget: int | None
    route: ResolvedRuntime | None = None
    counter: TokenCounter | None = None

    def describe(self) -> str:
        parts = []
        if self.budget is not None:
            parts.append(f"budget {self.budget}" if self.budget else "budget 0 (trimming off)")
        if self.max_turns is not None:
            parts.append(f"max turns {self.max_turns}")
        if self.route is not None:
            parts.append(f"route {self.route.provider_alias}/{self.route.model or '-'}")
        if self.counter is not None:
            parts.append(f"counted by {counter_name(self.counter)}")
        return ", ".join(parts)


def _limits(args: argparse.Namespace) -> _Limits:
    counter = token_counter(args)
    if args.config is None:
        return _Limits(args.max_turns, args.budget, counter=counter)
    runtime = load_route(args)
    return _Limits(
        runtime.profile.max_history_turns, runtime.effective_context_budget(), runtime, counter
    )


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
            token_counter=limits.counter,
        )
        records, rows, crumb = result.records, result.rows, result.crumb_present
        turns = result.result.kept_turns
        if result.event is not None:
            events.append(result.event)
    return records, events, turns, _tokens(rows, limits.counter)


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
    before = _tokens(to_chat_messages(items), limits.counter)
    if limits.max_turns is None:
        return session.records, [], index_turns(items, crumb_present=crumb).turn_count, before
    result = trim_conversation_to_recent_turns(
        items, limits.max_turns, has_leading_breadcrumb=crumb
    )
    if not result.trimmed:
        return session.records, [], result.kept_turns, before
    # The structured trim drops the breadcrumb; as its owner, put it back (SEEN-1).
    kept = insert_breadcrumb(result.history, crumb_present=False)
    after = _tokens(to_chat_messages(kept), limits.counter)
    event = HistoryTrimmed(
        reason=TrimReason.TURN_LIMIT,
        dropped_messages=result.dropped_messages,
        kept_turns=result.kept_turns,
        tokens_before=before,
        tokens_after=after,
        budget=limits.budget or 0,
        counter=None if limits.counter is None else counter_name(limits.counter),
    )
    records = [item.model_dump(mode="json") for item in kept]
    return records, [event], result.kept_turns, after


def cmd_trim(args: argparse.Namespace) -> int:
    session = read_session(args.session, args.format)
    limits = _limits(args)
    check_crumb(session, args.crumb_present)
    turns_before = index_turns(session.items, crumb_present=args.crumb_present).turn_count
    if session.rows is not None:
        tokens_before = _tokens(session.rows, limits.counter)
        records, events, turns, tokens = _trim_rows(
            session, session.rows, limits, args.crumb_present
        )
    else:
        tokens_before = _tokens(to_chat_messages(session.items), limits.counter)
        records, events, turns, tokens = _trim_structured(session, limits, args.crumb_present)
    write(args.output, render(session, records))
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
