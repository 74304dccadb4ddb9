"""Adapters pair each record of a foreign format with one provider-facing row; a trim cuts
the records exactly where the library's whole-turn trim cuts the rows, so kept records
come back untouched."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from histtrim.counting import TokenCounter, counted_costs, counter_name
from histtrim.estimate import estimate_history_tokens
from histtrim.events import HistoryTrimmed, TrimReason
from histtrim.messages import ChatMessage
from histtrim.policy import SPEC, Policy
from histtrim.trim import (
    TrimResult,
    TurnCountTrimResult,
    insert_breadcrumb,
    trim_to_recent_turn_count,
    trim_to_recent_turns,
)
from histtrim.turns import leading_system_count

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
) -> RecordTrimResult[R]:
    """Trim `records` (row k is the row of record k) by token budget or by turn count.

    When turns are dropped and no breadcrumb is present yet, a copy of `breadcrumb_record`
    (if given) goes after the leading system records (SEEN-1), and a token trim counts it
    toward the budget; the event (SEEN-2) names the limit. `budget_in_force` is the effective
    token budget configured beside the turn limit (0 when none), which a turn-limit event
    reports as its `budget`: the one meaning `HistoryTrimmed.budget` has everywhere. A
    `token_counter` prices the rows' text instead of EST-1's bytes, in the trim and in the
    event's figures (`histtrim.counting`)."""

    def estimate(rows: Sequence[ChatMessage]) -> int:
        if token_counter is None:
            return estimate_history_tokens(rows, policy=policy)
        return sum(counted_costs(rows, token_counter, policy=policy))

    if len(records) != len(rows):
        raise ValueError(f"records: {len(records)} records but {len(rows)} rows")
    if (budget_tokens is None) == (max_turns is None):
        raise ValueError("budget_tokens, max_turns: pass exactly one of them")
    result: TrimResult | TurnCountTrimResult[ChatMessage]
    inserted = False
    if budget_tokens is not None:
        result = trim_to_recent_turns(
            rows, budget_tokens, crumb_present=crumb_present, token_counter=token_counter,
            policy=policy,
        )
        reason, budget, before = TrimReason.TOKEN_BUDGET, result.budget_tokens, result.tokens_before
        if result.trimmed and breadcrumb_record is not None and not crumb_present:
            # The breadcrumb is sent too: trim again with it in place so it counts toward
            # the budget (KEEP-1, CAP-1), as the agent loop does.
            at = leading_system_count(rows)
            records = [*records[:at], copy.deepcopy(breadcrumb_record), *records[at:]]
            rows = insert_breadcrumb(rows, crumb_present=False)
            crumb_present = inserted = True
            with_crumb = trim_to_recent_turns(
                rows, budget_tokens, crumb_present=True, token_counter=token_counter,
                policy=policy,
            )
            result = dataclasses.replace(with_crumb, tokens_before=before)  # the caller's rows
    else:
        assert max_turns is not None
        result = trim_to_recent_turn_count(rows, max_turns, has_leading_breadcrumb=crumb_present)
        reason, budget = TrimReason.TURN_LIMIT, budget_in_force
        before = estimate(rows) if result.trimmed else 0
    if not result.trimmed:
        return RecordTrimResult(list(records), list(rows), result, None, crumb_present, False)

    body = leading_system_count(rows) + crumb_present
    kept = [*records[:body], *records[body + len(result.dropped) :]]
    out_rows: list[ChatMessage] = list(result.history)
    if breadcrumb_record is not None and not crumb_present:
        kept.insert(leading_system_count(out_rows), copy.deepcopy(breadcrumb_record))
        out_rows = insert_breadcrumb(out_rows, crumb_present=False)
        inserted = True
    event = HistoryTrimmed(
        reason=reason,
        dropped_messages=result.dropped_messages,
        kept_turns=result.kept_turns,
        tokens_before=before,
        tokens_after=estimate(out_rows),
        budget=budget,
        counter=None if token_counter is None else counter_name(token_counter),
    )
    return RecordTrimResult(kept, out_rows, result, event, crumb_present or inserted, inserted)
