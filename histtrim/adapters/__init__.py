"""Adapters pair each record of a foreign format with one provider-facing row; a trim cuts
the records exactly where the library's whole-turn trim cuts the rows, so kept records
come back untouched."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Generic, TypeVar

from histtrim._checks import non_negative
from histtrim.counting import Pricing, TokenCounter
from histtrim.events import HistoryTrimmed
from histtrim.low_water import (
    Replay,
    holds_cut,
    plan_held_trim,
    request_points,
    split_sums,
    two_prices,
)
from histtrim.messages import BREADCRUMB, ChatMessage, chat_rows
from histtrim.policy import SPEC, ColdCuts, Policy, low_water_tokens
from histtrim.reported_usage import (
    PROVIDER_UNITS,
    calibrated,
    reported_input_tokens,
    scaled_budget,
    usable_report,
    warn_refused,
)
from histtrim.tool_context import ToolContextEdit, edit_tool_context
from histtrim.trim import TrimResult, TurnCountTrimResult, breadcrumb_message
from histtrim.turns import TurnIndex, index_turns
from histtrim.visible import VisibleTrim, plan_visible_trim

R = TypeVar("R")


@dataclass(frozen=True, repr=False)
class RecordTrimResult(Generic[R]):
    """A whole-turn trim of records: the kept records (breadcrumb inserted when turns were
    dropped), their rows, the library's result and the `HistoryTrimmed` event, if any."""

    records: list[R]
    rows: list[ChatMessage]
    result: TrimResult | TurnCountTrimResult[ChatMessage]
    event: HistoryTrimmed | None
    crumb_present: bool
    """The breadcrumb flag for the output: pass it to the next trim of these records."""
    crumb_inserted: bool
    events: tuple[HistoryTrimmed, ...] = ()
    """Every drop's event: two when both limits dropped turns (`event` is the last)."""
    replay: Replay | None = None
    """A held cut's replay state before the last request (`plan_held_trim`'s `resume`)."""
    tool_context: ToolContextEdit | None = None
    """The policy's tool context edit of the kept rows (CTX-1..9), when it sets one: `records`
    and `rows` are then the request to send, the rows it left out or cleared rewritten."""

    @property
    def trimmed(self) -> bool:
        return self.result.trimmed

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(records={len(self.records)}, "
            f"dropped_messages={self.result.dropped_messages}, "
            f"kept_turns={self.result.kept_turns}, crumb_present={self.crumb_present}, "
            f"event={self.event!r})"
        )

    def _repr_html_(self) -> str:
        from histtrim.display.views import trim_result_html

        return trim_result_html(self.result, crumb_inserted=self.crumb_inserted)


def last_reply_report(
    rows: int, role: Callable[[int], str], record: Callable[[int], object],
    request_tokens: Callable[[int], int], *, policy: Policy = SPEC, cut: bool = False,
    warn: Callable[[str], object] = warn_refused,
) -> tuple[int, int] | None:
    """USAGE-5 on a recorded transcript of `rows` rows: the input tokens the last reply reports
    (the newest record of its assistant rows that has a `usage` key), and `request_tokens(p)`,
    the estimate of the request that produced it (the rows before the reply, `p` of them).
    None when that reply records no usage or an unusable one, or when no reply follows the
    turn before the current one (the back scan stops there: bounded by two turns).

    USAGE-7 (`usable_report`): with `cut` (the rows start with the breadcrumb after their
    system rows: turns were dropped, maybe after the report was made, so the rows before the
    reply need not be the request it counts) no report is read; a report `refused_report`
    refuses goes to `warn` and is no report."""
    if cut:
        return None
    i, openers = rows - 1, 0
    while i >= 0 and role(i) != "assistant":
        openers += role(i) == "user"
        if openers > 2:
            return None
        i -= 1
    usage: object = None
    found = False
    while i >= 0 and role(i) == "assistant":
        value = record(i)
        if not found and isinstance(value, Mapping) and "usage" in value:
            usage, found = value["usage"], True
        i -= 1
    reported = reported_input_tokens(usage) if found else None
    if reported is None:
        return None
    estimated = request_tokens(i + 1)
    if estimated <= 0:
        return None
    reported = usable_report(reported, estimated, policy=policy, warn=warn)
    return None if reported is None else (reported, estimated)


def recorded_pairs(
    rows: int, role: Callable[[int], str], record: Callable[[int], object],
    cost: Callable[[int], int],
) -> list[tuple[int, int]]:
    """USAGE-8 on a recorded transcript: (the estimate of the rows before a reply, its
    reported input tokens) for every reply with a usable report, oldest first (a reply: a run
    of assistant rows; its report, the first of its records with a `usage` key). One pass."""
    pairs: list[tuple[int, int]] = []
    total, i = 0, 0
    while i < rows:
        if role(i) != "assistant":
            total += cost(i)
            i += 1
            continue
        before, found = total, None
        while i < rows and role(i) == "assistant":
            value = record(i)
            if found is None and isinstance(value, Mapping) and "usage" in value:
                found = reported_input_tokens(value["usage"])
            total += cost(i)
            i += 1
        if found is not None and before > 0:
            pairs.append((before, found))
    return pairs


def rows_were_cut(crumb_present: bool, slot: ChatMessage | None) -> bool:
    """USAGE-7 on recorded rows: whether turns were dropped from them, so that a reply's
    recorded usage may count rows they no longer hold (a report kept by a trim describes the
    request before it): the owner's flag, or the breadcrumb a trim writes in the slot after
    the system rows (`slot`, None when there is no row there). Only a report is set aside on
    this: what counts as a turn is still the flag's alone (SEEN-1)."""
    return crumb_present or (
        slot is not None and slot.role == "user" and slot.content == BREADCRUMB)


def recorded_report(
    records: Sequence[object], rows: Sequence[ChatMessage], *,
    token_counter: TokenCounter | None = None, policy: Policy = SPEC,
    crumb_present: bool = False, warn: Callable[[str], object] = warn_refused,
) -> tuple[int, int] | None:
    """`last_reply_report` on records (row k is the row of record k): a record's `usage` key
    holds Anthropic's usage or OpenAI's (`prompt_tokens`); the request is priced as sent.
    Rows that were cut (`rows_were_cut`) give no report (USAGE-7)."""
    prices = Pricing(policy, token_counter)
    slot = index_turns(rows).body_start
    cut = rows_were_cut(crumb_present, rows[slot] if slot < len(rows) else None)
    return last_reply_report(
        len(rows), lambda i: rows[i].role, records.__getitem__,
        lambda end: prices.total(rows[:end]), policy=policy, cut=cut, warn=warn,
    )


def trim_records(
    records: Sequence[R],
    rows: Sequence[ChatMessage],
    *,
    budget_tokens: int | None = None,
    max_turns: int | None = None,
    crumb_present: bool = False,
    breadcrumb_record: R | None = None,
    budget_in_force: int = 0,
    token_counter: TokenCounter | None = None,
    policy: Policy = SPEC,
    reported: tuple[int, int] | None = None,
    edit_record: Callable[[R, ChatMessage], R] | None = None,
) -> RecordTrimResult[R]:
    """Trim `records` (row k is the row of record k) by token budget or by turn count.

    When turns are dropped and no breadcrumb is present yet, a copy of `breadcrumb_record`
    (if given) goes after the leading system records (SEEN-1), and a token trim counts it
    toward the budget; the event (SEEN-2) names the limit. `budget_in_force` is the effective
    token budget configured beside the turn limit (0 when none), which a turn-limit event
    reports as its `budget`: the one meaning `HistoryTrimmed.budget` has everywhere. A
    `token_counter` prices the rows' text instead of EST-1's bytes, in the trim and in the
    event's figures (`histtrim.counting`). A `policy` with a low-water mark holds the cut the
    `Agent` would hold over the requests these rows record (`trim_records_held`).
    `reported` (`recorded_report`) is the provider's count of the last recorded request. One
    with a `tool_context` edits the kept rows as the request (`edit_record` writes their
    records)."""

    if (budget_tokens is None) == (max_turns is None):
        raise ValueError("budget_tokens, max_turns: pass exactly one of them")
    return trim_records_held(
        records, rows, budget_tokens=budget_tokens, max_turns=max_turns,
        crumb_present=crumb_present, breadcrumb_record=breadcrumb_record,
        budget_in_force=budget_in_force, token_counter=token_counter, policy=policy,
        reported=reported,
        edit_record=edit_record,
    )


def trim_records_held(
    records: Sequence[R],
    rows: Sequence[ChatMessage],
    *,
    budget_tokens: int | None = None,
    max_turns: int | None = None,
    crumb_present: bool = False,
    breadcrumb_record: R | None = None,
    budget_in_force: int = 0,
    token_counter: TokenCounter | None = None,
    policy: Policy = SPEC,
    prices: tuple[Sequence[int], Sequence[int]] | None = None,
    index: TurnIndex | None = None,
    requests: Sequence[int] | None = None,
    resume: Replay | None = None,
    crumb_price: int | None = None,
    reported: tuple[int, int] | None = None,
    edit_record: Callable[[R, ChatMessage], R] | None = None,
    cold: ColdCuts | None = None,
    sums: tuple[Sequence[int], Sequence[int]] | None = None,
) -> RecordTrimResult[R]:
    """`trim_records` with either limit or both (the turn limit, then the budget: the
    runtime's order). With a policy that sets a low-water mark (`histtrim.low_water`), the
    cut is the one the `Agent` would hold after the requests these rows record, so a caller
    passing the whole history on every request resends a stable prefix; with the spec's
    targets it trims just to fit, as `histtrim.visible.plan_visible_trim` plans. `prices`:
    each row's price as an older row and as a row of the current turn (`Pricing.both`),
    when the caller has them (an integration prices each row once per session, and a
    framework's own non-text parts beside the row's text); else the rows are priced here.
    `index`: the caller's `index_turns(rows, crumb_present=...)` of exactly these rows (an
    integration keeps a growing history's), so the rows are not read again; `requests`
    (`request_points(rows)`) and `resume` (a held plan's `replay` for a history these rows
    extend) likewise, `sums` (`price_sums(prices)`, with `prices`) and `crumb_price` (the
    breadcrumb row's price: a counter need not price it at every trim).

    `reported`, (the provider's input tokens for a recorded request, that request's estimate):
    when it is over the budget, the budget is scaled by estimated / reported (USAGE-1..2,
    `scaled_budget`) and the result and events are in provider units (USAGE-3, USAGE-6).

    A policy with a `tool_context` (CTX-1..9) then edits the kept rows as the request to send;
    `edit_record(record, row)` writes the record of a row the edit changed (the record of the
    row it stands for, and the new row).

    `cold`: the requests of these rows made with the prompt cache cold (CACHE-1..3, the
    caller's clock): a cold one over its threshold cuts to the cold low-water mark, held."""
    if policy.tool_context.mode != "off" and edit_record is None:
        raise ValueError(
            "policy.tool_context: these records need edit_record to write the rows the "
            "tool context edit changes"
        )
    if len(records) != len(rows):
        raise ValueError(f"records: {len(records)} records but {len(rows)} rows")
    if budget_tokens is None and max_turns is None:
        raise ValueError("budget_tokens, max_turns: pass at least one of them")
    if budget_tokens is not None:
        non_negative("budget_tokens", budget_tokens)
    if max_turns is not None:
        non_negative("max_turns", max_turns)
    if index is None:
        rows = chat_rows(rows)
        index = index_turns(rows, crumb_present=crumb_present)
    elif index.length != len(rows) or (index.crumb is not None) != crumb_present:
        raise ValueError("index: not the index of these rows with this crumb flag")
    given = prices
    crumb_row, pricing = breadcrumb_message(), Pricing(policy, token_counter)
    counter = pricing.counter_name
    crumb_cost: int | Callable[[], int] = (
        (lambda: pricing.plain(crumb_row)) if crumb_price is None else crumb_price
    )
    provider_budget = budget_tokens
    scaled = None
    if reported is not None and budget_tokens:
        scaled = scaled_budget(budget_tokens, reported[0], reported[1])
        if scaled is not None:
            budget_tokens, resume = min(budget_tokens, scaled), None  # another budget: replay
    plan: VisibleTrim
    if given is not None and (len(given[0]) != len(rows) or len(given[1]) != len(rows)):
        raise ValueError(f"prices: expected two lists of {len(rows)} prices")
    if sums is not None and (given is None or any(
            len(s) != len(rows) + 1 for s in sums)):
        sums = None  # not the sums of these prices: made here
    if cold is not None and not cold.ends:
        cold = None
    if holds_cut(policy) or cold is not None:
        plan = plan_held_trim(
            index, two_prices(rows, index, pricing) if given is None else given,
            request_points(rows) if requests is None else requests, max_turns=max_turns,
            budget_tokens=budget_tokens, budget_in_force=budget_in_force,
            crumb_cost=crumb_cost, breadcrumb=breadcrumb_record is not None,
            counter=counter, turn_target=policy.turn_trim_target,
            token_target=policy.token_trim_target, resume=resume, cold=cold, sums=sums,
        )
    else:
        if given is None:
            costs = pricing.costs(rows, index)
        else:  # the current turn's rows at their current price (EST-2, EST-3)
            current = index.current_turn_after + 1
            costs = [*given[0][:current], *given[1][current:]]
        plan = plan_visible_trim(
            index, costs, max_turns=max_turns, budget_tokens=budget_tokens,
            budget_in_force=budget_in_force, crumb_cost=crumb_cost,
            breadcrumb=breadcrumb_record is not None, counter=counter,
            sums=None if sums is None else split_sums(sums, index.current_turn_after + 1),
        )
    fit_budget = budget_tokens  # the budget the cut applied, in the estimate's units
    if scaled is not None:
        plan = _in_provider_units(plan, reported, provider_budget, policy.token_trim_target)
        budget_tokens, counter = provider_budget, PROVIDER_UNITS
    kept_rows = plan.kept(rows, crumb_row)
    dropped = plan.dropped(rows)
    result: TrimResult | TurnCountTrimResult[ChatMessage]
    if budget_tokens is not None:  # with both limits too: the figures are tokens
        result = TrimResult(
            kept_rows, dropped, len(dropped), plan.first, plan.turns_after, plan.tokens_before,
            plan.tokens_after, budget_tokens, counter,
        )
    else:
        assert max_turns is not None
        result = TurnCountTrimResult(
            plan.kept(rows, None), dropped, len(dropped), plan.first, plan.turns_after, max_turns
        )
    if not plan.trimmed:
        done = RecordTrimResult(list(records), list(rows), result, None, crumb_present, False,
                                replay=plan.replay)
    else:
        crumb_record = copy.deepcopy(breadcrumb_record) if plan.crumb_inserted else None
        done = RecordTrimResult(
            plan.kept(records, crumb_record), kept_rows, result, plan.events[-1],
            plan.crumb_present, plan.crumb_inserted, plan.events, plan.replay,
        )
    if edit_record is None or policy.tool_context.mode == "off":
        return done
    units = None if scaled is None or reported is None else (
        lambda value: calibrated(value, reported[0], reported[1]))
    return _edited(done, edit_record, policy=policy, token_counter=token_counter,
                   budget_tokens=fit_budget, units=units)


def _edited(
    done: RecordTrimResult[R],
    edit_record: Callable[[R, ChatMessage], R],
    *,
    policy: Policy = SPEC,
    token_counter: TokenCounter | None = None,
    budget_tokens: int | None = None,
    units: Callable[[int], int] | None = None,
) -> RecordTrimResult[R]:
    """The trimmed records as the request the policy's tool context sends (CTX-1..10): a
    record whose row is unchanged is kept as it is; the others are written again. A token
    trim's result and last event then report the tokens sent (`units`: in the provider's)."""
    edit = edit_tool_context(
        done.rows, policy, crumb_present=done.crumb_present, token_counter=token_counter,
        budget_tokens=budget_tokens,
    )
    if not edit.changed:
        return replace(done, tool_context=edit)
    records = [
        done.records[src] if row is done.rows[src] else edit_record(done.records[src], row)
        for row, src in zip(edit.messages, edit.source_rows, strict=True)
    ]
    edited = replace(done, records=records, rows=edit.messages, tool_context=edit)
    if not isinstance(done.result, TrimResult):
        return edited
    sent = Pricing(policy, token_counter).total(edit.messages)
    sent = sent if units is None else units(sent)
    result = replace(done.result, tokens_after=sent)
    if done.event is None:
        return replace(edited, result=result)
    event = done.event.model_copy(update={"tokens_after": sent})
    return replace(edited, result=result, event=event, events=(*done.events[:-1], event))


def _in_provider_units(
    plan: VisibleTrim, reported: tuple[int, int] | None, budget: int | None, target: Fraction
) -> VisibleTrim:
    """A plan's figures and events in the provider's units (USAGE-3, USAGE-6)."""
    assert reported is not None and budget is not None
    tokens, estimated = reported

    def units(value: int) -> int:
        return calibrated(value, tokens, estimated)

    events = tuple(
        event.model_copy(update={
            "tokens_before": units(event.tokens_before),
            "tokens_after": units(event.tokens_after),
            "budget": low_water_tokens(budget, target) if event.reason == "token_budget"
            else event.budget,
            "counter": PROVIDER_UNITS,
        })
        for event in plan.events
    )
    return replace(plan, tokens_before=units(plan.tokens_before),
                   tokens_after=units(plan.tokens_after), events=events,
                   crumb_tokens=units(plan.crumb_tokens))
