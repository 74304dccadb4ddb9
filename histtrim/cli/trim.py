"""`histtrim trim`: drop the oldest whole turns of a session file, write it back in its own
format, and report each HistoryTrimmed event and a summary on stderr.

A request indexes the session's turns once: the turn limit and the token budget are both
planned on that one `TurnIndex` (and its row costs), in the runtime's order."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from fractions import Fraction
from functools import partial
from typing import Any

from pydantic import ValidationError

from histtrim.adapters import (
    last_reply_report,
    recorded_pairs,
    recorded_report,
    rows_were_cut,
)
from histtrim.adapters.anthropic import anthropic_breadcrumb, result_ids
from histtrim.adapters.anthropic import edited_message as anthropic_message
from histtrim.adapters.formats import HistoryFile
from histtrim.adapters.openai import edited_message, openai_breadcrumb
from histtrim.adapters.rewrite import (
    FileTrim,
    file_trim,
    held_trim_history,
    line_ending,
    trim_history,
    write_history_chunks,
)
from histtrim.carriers import to_chat_messages, tool_call_ids, tool_result_call_id
from histtrim.cli.agentfiles import call_pairs, call_report, cold_requests, read_agent_file
from histtrim.cli.configs import load_config
from histtrim.cli.errors import EXIT_OK, InputError
from histtrim.cli.explain import load_route
from histtrim.cli.jsontext import display_name, read_bytes
from histtrim.cli.output import emit, say
from histtrim.cli.rowfiles import fast_rows, file_crumb_error, read_rows, sniff
from histtrim.cli.sessions import Session, index_session, read_session, render
from histtrim.cli.tokenizer import token_counter
from histtrim.counting import ESTIMATE, Pricing
from histtrim.estimate import message_costs
from histtrim.events import HistoryTrimmed
from histtrim.low_water import holds_cut, plan_held_trim, request_points, two_prices
from histtrim.messages import BREADCRUMB, ChatMessage, ConversationMessage
from histtrim.pairing import PairingProblem, validate_tool_pairing
from histtrim.policy import SPEC, ColdCuts, Policy, low_water_tokens
from histtrim.reported_usage import (
    PROVIDER_UNITS,
    HiddenPrefix,
    calibrated,
    fit_hidden_prefix,
    scaled_budget,
    usable_report,
)
from histtrim.route import ResolvedRuntime
from histtrim.tool_context import ToolContextEdit, edit_tool_context
from histtrim.trim import breadcrumb_message
from histtrim.turns import TurnIndex, index_turns
from histtrim.visible import VisibleTrim, plan_visible_trim, trim_structured


@dataclass(frozen=True)
class _Limits:
    """What `trim` applies, in the runtime's order: the turn limit, then the token budget."""

    max_turns: int | None
    budget: int | None
    route: ResolvedRuntime | None = None
    pricing: Pricing = ESTIMATE
    """The spec's estimate, or the `--tokenizer` counter's, with the `--policy` constants."""
    cold_ends: frozenset[int] = frozenset()
    """CACHE-1..2: the requests of an agent's file made with the cache cold (row ends)."""
    cold_now: bool = False
    """CACHE-1: the request `trim` writes finds the cache cold (`--now`)."""

    def cold(self, size: int) -> ColdCuts | None:
        """The cold requests of `size` rows, the one written included when it is cold, and
        the cut each makes (`ColdCache.trim`), or None."""
        ends = self.cold_ends | ({size} if self.cold_now else set())
        policy = self.policy
        trim = policy.cold_cache.trim(self.budget or 0, policy.token_trim_target)
        return None if not ends or trim is None else ColdCuts(frozenset(ends), trim)

    @property
    def policy(self) -> Policy:
        return self.pricing.policy

    def describe(self) -> str:
        parts = []
        if self.budget is not None:
            parts.append(f"budget {self.budget}" if self.budget else "budget 0 (trimming off)")
        if self.max_turns is not None:
            parts.append(f"max turns {self.max_turns}")
        if self.route is not None:
            parts.append(f"route {self.route.provider_alias}/{self.route.model or '-'}")
        if self.pricing.counter_name is not None:
            parts.append(f"counted by {self.pricing.counter_name}")
        parts.extend(f"{key} {change}" for key, change in self.policy.changes().items())
        return ", ".join(parts)


@dataclass
class _Outcome:
    """What a trim did: the records to write (None: the input, unchanged) and its figures."""

    turns_before: int
    tokens_before: int
    turns: int
    tokens: int
    records: list[Any] | None = None
    events: list[HistoryTrimmed] = field(default_factory=list)
    written: Iterable[Any] = ()
    """The rows written (histtrim rows or structured items), for the pairing warnings."""
    crumb_tokens: int = 0
    """The breadcrumb row's share of `tokens` (0: the output has none)."""
    warnings: list[str] | None = None
    """The pairing warnings, when the reader found them in its pass (else from `written`)."""
    tool_note: str = ""
    """What the policy's tool context edit did (CTX-1..9), for the summary line."""


def _policy(args: argparse.Namespace) -> Policy:
    """`--policy` (else the spec) with `--token-target` / `--turn-target` on top; a bad value
    names its flag or its file and field."""
    policy = SPEC if args.policy is None else load_config(args.policy, Policy)
    changes = {
        field: text for field, text in (
            ("token_trim_target", args.token_target), ("turn_trim_target", args.turn_target)
        ) if text is not None
    }
    if not changes:
        return policy
    try:
        return Policy.model_validate({**policy.model_dump(), **changes})
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        flag = "--token-target" if field == "token_trim_target" else "--turn-target"
        raise InputError(flag, first["msg"], field=field) from None


def _limits(args: argparse.Namespace) -> _Limits:
    """`--max-turns` / `--budget`, or the configured route's limits resolved under the policy
    (`ResolvedRuntime.max_turns` and `effective_context_budget`, what the `Agent` and
    `review` apply: a profile that sets neither takes the policy's defaults)."""
    policy = _policy(args)
    prices = Pricing(policy, token_counter(args))
    if args.config is None:
        return _Limits(args.max_turns, args.budget, pricing=prices)
    runtime = load_route(args, policy)
    return _Limits(runtime.max_turns, runtime.effective_context_budget(), runtime, prices)


def _crumb_record(session: Session) -> dict[str, Any]:
    if session.format == "openai":
        return openai_breadcrumb()
    record: dict[str, Any] = {"role": "user", "content": BREADCRUMB}
    if any("kind" in r for r in session.records):
        record = {"kind": "chat", **record}
    return record


def _trim_rows(
    session: Session, rows: list[ChatMessage], limits: _Limits, crumb: bool
) -> _Outcome:
    """Both limits planned on one index (`plan_visible_trim`): dropping the oldest turns
    never reprices the kept rows (the current turn stays), so every figure is a sum of the
    input's row costs."""
    plan = _plan(rows, index_session(session, rows, crumb), limits)
    outcome = _Outcome(
        plan.index.turn_count, plan.tokens_before, plan.turns_after, plan.tokens_after,
        events=list(plan.events), crumb_tokens=plan.crumb_tokens,
    )
    if plan.trimmed:
        outcome.records = plan.kept(session.records, _crumb_record(session))
    outcome.written = plan.kept(rows, breadcrumb_message()) if plan.trimmed else rows
    if limits.policy.tool_context.mode != "off":
        _edit_tool_context(session, outcome, limits, plan.crumb_present or crumb)
    return outcome


def _edit_tool_context(
    session: Session, outcome: _Outcome, limits: _Limits, crumb: bool
) -> None:
    """The policy's tool context edit (CTX-1..9) of the rows written: the output is then the
    request to send (the stored history is the input file, left as it is)."""
    rows = list(outcome.written)
    records = session.records if outcome.records is None else outcome.records
    edit = edit_tool_context(
        rows, limits.policy, crumb_present=crumb, token_counter=limits.pricing.counter,
        budget_tokens=limits.budget, cold=_cold_now(limits, len(rows)),
    )
    if not edit.changed:
        return
    write = edited_message if session.format == "openai" else _edited_row
    outcome.records = [
        records[src] if row is rows[src] else write(records[src], row)
        for row, src in zip(edit.messages, edit.source_rows, strict=True)
    ]
    _sent(outcome, edit, limits)


def _edited_row(record: dict[str, Any], row: ChatMessage) -> dict[str, Any]:
    """A histtrim row record the tool context edit changed: its role and content as the row
    says, its other keys (`kind`) kept."""
    return {**{k: v for k, v in record.items() if k not in ("role", "content")},
            "role": row.role, "content": row.content}


def _trim_structured(session: Session, limits: _Limits, crumb: bool) -> _Outcome:
    if limits.policy.tool_context.mode != "off":
        raise InputError(
            session.path, "a tool_context policy (--policy) edits the request of "
            "provider-facing rows; structured items have none", field="kind",
        )
    if holds_cut(limits.policy):
        raise InputError(
            session.path, "a low-water target (--policy, --token-target, --turn-target) holds "
            "the cut over the requests of provider-facing rows; structured items have none",
            field="kind",
        )
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
    index: TurnIndex = index_session(session, items, crumb)
    rows = to_chat_messages(items)
    before = limits.pricing.total(rows)
    outcome = _Outcome(index.turn_count, before, index.turn_count, before, written=items)
    if limits.max_turns is None:
        return outcome
    trim = trim_structured(
        items, rows, max_turns=limits.max_turns, budget_in_force=limits.budget or 0,
        crumb_present=crumb, pricing=limits.pricing,
    )
    if not trim.plan.trimmed:
        return outcome
    after = limits.pricing.total(to_chat_messages(trim.history))
    event = trim.event(tokens_after=after)
    outcome.events.append(event)
    outcome.records = [item.model_dump(mode="json") for item in trim.history]
    outcome.written = list(trim.history)
    outcome.turns, outcome.tokens = event.kept_turns, after
    return outcome


def _plan(rows: list[ChatMessage], index: TurnIndex, limits: _Limits) -> VisibleTrim:
    """The cut of `limits` on indexed rows, priced by its policy (and counter); with a
    low-water target, the cut the Agent holds after the requests the rows record."""
    prices = limits.pricing
    crumb_cost = lambda: prices.plain(breadcrumb_message())  # noqa: E731 - asked at most once
    cold = limits.cold(len(rows))
    if holds_cut(limits.policy) or cold is not None:
        policy = limits.policy
        return plan_held_trim(
            index, two_prices(rows, index, prices), request_points(rows),
            max_turns=limits.max_turns, budget_tokens=limits.budget or 0,
            crumb_cost=crumb_cost, counter=prices.counter_name,
            turn_target=policy.turn_trim_target, token_target=policy.token_trim_target,
            cold=cold,
        )
    return plan_visible_trim(
        index, prices.costs(rows, index), max_turns=limits.max_turns,
        budget_tokens=limits.budget or 0, crumb_cost=crumb_cost, counter=prices.counter_name,
    )


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'s' * (number != 1)}"


def summary(path: str, outcome: _Outcome, limits: _Limits) -> str:
    """The summary line on stderr; when one turn is left over the budget it says why: the
    newest turn alone is over (CAP-1), or the breadcrumb sent with it tips it over (KEEP-3,
    SEEN-1), which can leave more tokens than the input had."""
    if outcome.events:
        dropped = sum(event.dropped_messages for event in outcome.events)
        text = (
            f"histtrim: trimmed {path}: {outcome.turns_before} -> {_count(outcome.turns, 'turn')}"
            f", {outcome.tokens_before} -> {_count(outcome.tokens, 'token')}, "
            f"{_count(dropped, 'message')} dropped"
        )
    else:
        text = (
            f"histtrim: nothing to trim in {path}: {_count(outcome.turns, 'turn')}, "
            f"{_count(outcome.tokens, 'token')}"
        )
    text += f"{outcome.tool_note} ({limits.describe()})"
    budget = limits.budget or 0
    if budget and outcome.tokens > budget and outcome.turns == 0:
        text += (
            f"; over the budget of {_count(budget, 'token')} with no turn to drop: every row"
            " comes before the first user message, and trims drop whole user turns (TURN-2)"
        )
    elif budget and outcome.tokens > budget and outcome.turns == 1:
        without = outcome.tokens - outcome.crumb_tokens
        if without > budget:
            text += (
                f"; the newest turn alone is over the budget of {_count(budget, 'token')} and"
                + (" is kept whole (CAP-1)" if not outcome.tool_note else
                   " keeps what the tool context edit cannot clear (CAP-1, CTX-10)")
            )
        else:
            more = (
                f", more than the {_count(outcome.tokens_before, 'token')} given"
                if outcome.tokens > outcome.tokens_before else ""
            )
            text += (
                f"; the kept rows without the breadcrumb ({_count(without, 'token')}) fit the"
                f" budget of {_count(budget, 'token')}, the breadcrumb sent with them"
                f" ({_count(outcome.crumb_tokens, 'token')}) tips them over{more}"
                " (KEEP-3, SEEN-1)"
            )
    return text


def _trim_file(source: str, hf: HistoryFile, limits: _Limits, crumb: bool) -> tuple[
    _Outcome, Iterator[bytes | memoryview]
]:
    """A row file on its columns (`adapters.rewrite`): the same cut as `_trim_rows`, written
    back in the file's own format (kept JSON Lines as their own bytes) as pieces made while
    they are written (a re-written body is never held whole beside its input)."""
    policy = limits.policy
    cold = limits.cold(len(hf))
    try:
        if policy.prices_like(SPEC) and (holds_cut(policy) or cold is not None):  # held
            result = held_trim_history(
                hf, max_turns=limits.max_turns, budget_tokens=limits.budget, crumb_present=crumb,
                turn_target=policy.turn_trim_target, token_target=policy.token_trim_target,
                cold=cold,
            )
        elif policy.prices_like(SPEC):  # the spec's prices are the file's own columns
            result = trim_history(
                hf, max_turns=limits.max_turns, budget_tokens=limits.budget, crumb_present=crumb
            )
        else:  # an Anthropic body (only this reader reads one) under other prices
            rows = list(hf.rows())
            result = file_trim(_plan(rows, index_turns(rows, crumb_present=crumb), limits))
    except ValueError:
        raise file_crumb_error(source, hf) from None
    outcome = _Outcome(
        result.turns_before, result.tokens_before, result.turns_after, result.tokens_after,
        events=result.events, crumb_tokens=result.crumb_tokens,
    )
    if policy.tool_context.mode != "off":
        edited = _edit_file(hf, result, outcome, limits)
        if edited is not None:  # its pairing read as the file's was: Anthropic results too
            written = read_rows(source, edited, hf.format)
            assert written is not None  # the reader that read the file reads what it wrote
            outcome.warnings = _file_warnings(written, 0, 0)
            return outcome, iter((edited,))
    outcome.warnings = file_pairing_warnings(hf, result)
    return outcome, write_history_chunks(hf, result)


def _edit_file(
    hf: HistoryFile, trim: FileTrim, outcome: _Outcome, limits: _Limits
) -> bytes | None:
    """The policy's tool context edit (CTX-1..9) of an Anthropic file's kept rows, the one
    the library's `trim_anthropic` makes: the messages it changed are written again
    (`anthropic.edited_message`), the others as read; None when it changes nothing."""
    system = hf.system_rows
    kept = [*range(trim.body_start), *range(trim.cut, len(hf))]
    rows = [hf.row(i) for i in kept]
    records: list[Any] = [hf.record(i - system) if i >= system else None for i in kept]
    if trim.crumb_inserted:
        rows.insert(trim.body_start, breadcrumb_message())
        records.insert(trim.body_start, anthropic_breadcrumb())
    edit = edit_tool_context(rows, limits.policy, crumb_present=trim.crumb_present,
                             token_counter=limits.pricing.counter, budget_tokens=limits.budget,
                             cold=_cold_now(limits, len(rows)))
    if not edit.changed:
        return None
    messages = [
        records[src] if row is rows[src] else anthropic_message(records[src], row)
        for row, src in zip(edit.messages, edit.source_rows, strict=True)
    ][system:]
    _sent(outcome, edit, limits)
    document: Any = messages if hf.body is None else {**hf.body, "messages": messages}
    newline = line_ending(hf.data)
    if hf.layout == "jsonl":
        return b"".join(json.dumps(m, ensure_ascii=False).encode() + newline
                        for m in messages)
    return json.dumps(document, indent=2, ensure_ascii=False).encode() + b"\n"


def _cold_now(limits: _Limits, size: int) -> ColdCuts | None:
    """The clear's cold request (CACHE-2): the one written, when `--now` finds it cold (the
    file's earlier cold requests are not replayed by the clear: the cut moved since)."""
    cold = limits.cold(size) if limits.cold_now else None
    return None if cold is None else cold._replace(ends=frozenset({size}))


def _sent(outcome: _Outcome, edit: ToolContextEdit, limits: _Limits) -> None:
    """The outcome as the edited request (CTX-1..10): its rows, its tokens (the last event's
    too: what is sent) and the summary's note."""
    outcome.written = edit.messages
    outcome.tokens = limits.pricing.total(edit.messages)
    if outcome.events:
        last = outcome.events[-1].model_copy(update={"tokens_after": outcome.tokens})
        outcome.events = [*outcome.events[:-1], last]
    outcome.tool_note = _tool_note(edit.collapsed_turns, edit.cleared_results,
                                   edit.dropped_exchanges)


def _tool_note(collapsed: int, cleared: int, dropped: int = 0) -> str:
    """What the tool context edit did, for the summary line (CTX-12: the exchanges left out)."""
    if collapsed:
        return f"; tool context: {_count(collapsed, 'turn')} collapsed"
    gone = f", {_count(dropped, 'exchange')} dropped" if dropped else ""
    return f"; tool context: {_count(cleared, 'result')} cleared{gone}"


_WARNINGS_SHOWN = 5


def pairing_warnings(rows: Iterable[ConversationMessage]) -> list[str]:
    """One stderr line per tool-pairing error in the rows written (`validate_tool_pairing`),
    the first few and a count of the rest: an API would reject such a history."""
    errors = [p for p in validate_tool_pairing(list(rows)) if p.is_error]
    return _warning_lines(errors[:_WARNINGS_SHOWN], len(errors))


def file_pairing_warnings(hf: HistoryFile, trim: FileTrim) -> list[str]:
    """`pairing_warnings` of the rows `trim` writes, from the errors the reader found in its
    one pass (`HistoryFile.pairing`): the rows kept are the prefix (system rows and the
    breadcrumb slot, never an error) and rows `cut..`, which start at a user row, so the
    errors written are the input's from `cut` on, shifted to their place in the output. Only
    the rows of the errors shown are read again, for their call ids."""
    cut = trim.cut if trim.trimmed else trim.body_start
    shift = trim.body_start + (trim.trimmed and trim.crumb_inserted) - cut
    return _file_warnings(hf, cut, shift)


def _file_warnings(hf: HistoryFile, cut: int, shift: int) -> list[str]:
    """The pairing warnings of a file's rows from `cut` on, each at its row plus `shift`."""
    errors = hf.pairing
    shown = []
    for k in errors.first(_WARNINGS_SHOWN, cut):
        position, call = errors.positions[k], errors.calls[k]
        row, at = hf.row(position), position + shift
        if row.role == "tool":
            shown.append(PairingProblem("orphan_result", at, tool_result_call_id(row)))
        elif row.role == "user":  # an Anthropic results message: its result `call`
            results = result_ids(hf.record(position - hf.system_rows))
            shown.append(PairingProblem("orphan_result", at, results[call]))
        else:
            ids = list(dict.fromkeys(tool_call_ids(row) or ()))
            shown.append(PairingProblem("unanswered_call", at, ids[call]))
    return _warning_lines(shown, errors.count_from(cut))


def _warning_lines(shown: list[PairingProblem], errors: int) -> list[str]:
    lines = [f"histtrim: warning: {p}" for p in shown]
    if errors > len(shown):
        rest = errors - len(shown)
        lines.append(f"histtrim: warning: {_count(rest, 'more pairing problem')} not shown")
    return lines


def _file_report(
    hf: HistoryFile, crumb: bool, warnings: list[str], policy: Policy = SPEC
) -> tuple[int, int] | None:
    """The last reply's recorded usage in a row file, and its request's estimate (USAGE-5),
    when it describes these rows (USAGE-7, `rows_were_cut`)."""
    system = hf.system_rows
    slot = hf.prefix_len
    return last_reply_report(
        len(hf), lambda i: hf.row(i).role,
        lambda i: hf.record(i - system) if i >= system else None,
        lambda end: sum(hf.costs[:end]), policy=policy,
        cut=rows_were_cut(crumb, hf.row(slot) if slot < len(hf) else None),
        warn=warnings.append,
    )


def _fitted(limits: _Limits, report: tuple[int, int] | None, pairs: Callable[[], list[
        tuple[int, int]]]) -> HiddenPrefix | None:
    """USAGE-8: the hidden prefix fitted on the file's recorded reports, when the policy
    calibrates it and the last reply's report is usable (`pairs` reads them, once)."""
    if report is None or not limits.budget or limits.policy.hidden_prefix != "calibrated":
        return None
    return fit_hidden_prefix(
        [(e, r) for e, r in pairs() if usable_report(r, e, policy=limits.policy,
                                                     warn=lambda _: None) is not None])


def _scaled(limits: _Limits, report: tuple[int, int] | None,
            fitted: HiddenPrefix | None = None) -> _Limits:
    """The limits with the budget scaled by estimated / reported when the recorded report is
    over it (USAGE-1..2; by the fitted hidden prefix, USAGE-8); unchanged otherwise."""
    if report is None or not limits.budget:
        return limits
    if fitted is not None:
        scaled = fitted.rows_budget(low_water_tokens(
            limits.budget, limits.policy.token_trim_target)) if report[0] > limits.budget else None
    else:
        scaled = scaled_budget(limits.budget, *report)
    if scaled is None:
        return limits
    return replace(limits, budget=min(limits.budget, scaled))


def _provider_units(outcome: _Outcome, report: tuple[int, int], budget: int,
                    target: Fraction, fitted: HiddenPrefix | None = None) -> _Outcome:
    """The outcome's figures and events in the provider's units (USAGE-3, USAGE-6; by the
    fitted hidden prefix, USAGE-8)."""
    tokens, estimated = report

    def units(value: int) -> int:
        if fitted is not None:
            return fitted.count(value)
        return calibrated(value, tokens, estimated)

    outcome.tokens_before, outcome.tokens = units(outcome.tokens_before), units(outcome.tokens)
    outcome.crumb_tokens = units(outcome.crumb_tokens)
    outcome.events = [event.model_copy(update={
        "tokens_before": units(event.tokens_before), "tokens_after": units(event.tokens_after),
        "budget": low_water_tokens(budget, target) if event.reason == "token_budget"
        else event.budget,
        "counter": PROVIDER_UNITS,
        "hidden_prefix": None if fitted is None else fitted.prefix,
        "ratio": None if fitted is None else fitted.ratio_text,
    }) for event in outcome.events]
    return outcome


def cmd_trim(args: argparse.Namespace) -> int:
    source, data = display_name(args.session), read_bytes(args.session)
    agent = read_agent_file(source, data, args.format)
    if agent is not None:  # an agent's own file: trimmed as the request it would send
        data = agent.body
        args = argparse.Namespace(**{**vars(args), "format": agent.format})
    output: bytes | Iterator[bytes | memoryview] = data
    # The file's columns are priced with the spec's constants: a policy that prices rows
    # otherwise, or edits tool context, takes the session reader, but for an Anthropic body,
    # which only the file reader reads (targets, turn and budget defaults leave the prices as
    # they are; its tool context edit, `_edit_file`, rewrites the messages it changes).
    policy = _policy(args)
    cold_ends, cold_now = (frozenset[int](), False) if agent is None else cold_requests(
        agent, policy.cold_cache, getattr(args, "now", None))
    edits = policy.tool_context.mode != "off"
    custom = (edits or not policy.prices_like(SPEC)) and (
        args.format or sniff(data)) != "anthropic"
    hf = None if custom else fast_rows(source, data, args.format, args.tokenizer)
    report: tuple[int, int] | None = None
    refused: list[str] = []
    fitted: HiddenPrefix | None = None
    if hf is not None:
        limits = replace(_limits(args), cold_ends=cold_ends, cold_now=cold_now)
        system = hf.system_rows

        def file_pairs() -> list[tuple[int, int]]:
            return recorded_pairs(
                len(hf), lambda i: hf.row(i).role,
                lambda i: hf.record(i - system) if i >= system else None, hf.costs.__getitem__)

        if args.ignore_usage:
            report = None
        elif agent is None:
            report = _file_report(hf, args.crumb_present, refused, limits.policy)
        else:
            report = call_report(agent, hf.costs, limits.policy, refused.append)
        fitted = _fitted(limits, report, file_pairs if agent is None else partial(
            call_pairs, agent, hf.costs))
        outcome, output = _trim_file(source, hf, _scaled(limits, report, fitted),
                                     args.crumb_present)
    else:
        session = read_session(args.session, args.format, data)
        limits = replace(_limits(args), cold_ends=cold_ends, cold_now=cold_now)
        if session.rows is not None:
            rows, prices = session.rows, limits.pricing

            def session_pairs() -> list[tuple[int, int]]:
                return recorded_pairs(len(rows), lambda i: rows[i].role,
                                      session.records.__getitem__,
                                      lambda i: prices.plain(rows[i]))

            if args.ignore_usage:
                pass
            elif agent is not None:
                costs = message_costs(rows)
                report = call_report(agent, costs, limits.policy, refused.append)
            elif len(session.records) == len(rows):
                report = recorded_report(
                    session.records, rows, token_counter=prices.counter,
                    policy=limits.policy, warn=refused.append,
                    crumb_present=args.crumb_present,
                )
            fitted = _fitted(limits, report, session_pairs if agent is None else partial(
                call_pairs, agent, message_costs(rows)))
            outcome = _trim_rows(session, session.rows, _scaled(limits, report, fitted),
                                 args.crumb_present)
        else:
            outcome = _trim_structured(session, limits, args.crumb_present)
        if outcome.records is not None:
            output = render(session, outcome.records)
    if _scaled(limits, report, fitted) is not limits:
        assert report is not None and limits.budget
        outcome = _provider_units(outcome, report, limits.budget,
                                  limits.policy.token_trim_target, fitted)
    # Everything is validated before the first byte is written; a file's pieces are made as
    # they go into its temporary copy (the target changes only once they all are).
    emit(args.output, output)
    for reason in refused:
        say(f"histtrim: warning: {reason}", err=True)
    for event in outcome.events:
        say(event.to_json(), err=True)
    say(summary(source, outcome, limits), err=True)
    if agent is not None:
        say(agent.note(source, "wrote"), err=True)
    warnings = outcome.warnings
    if warnings is None:
        warnings = pairing_warnings(outcome.written)
    for line in warnings:
        say(line, err=True)
    return EXIT_OK
