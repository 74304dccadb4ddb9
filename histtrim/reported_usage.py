"""USAGE-1..6: the budget in the provider's own tokens, from the reference runtime (beyond the
Spanish spec): after a response that reports its input tokens, a history whose request was
over the budget is trimmed to the budget scaled by estimated / reported.

The estimate (EST-1) undercounts what providers bill by a factor no constant fixes; the
provider's count of the request it just received does not. `trim_to_reported_budget` is the
reference's function; `trim_to_reported_budget_with_crumb` adds what its caller does (the
breadcrumb, once, and the event); `reported_input_tokens` reads a provider's usage report."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from histtrim._checks import _integer, flag, non_negative
from histtrim.counting import Pricing, TokenCounter
from histtrim.events import HistoryTrimmed, TrimReason
from histtrim.messages import ChatMessage, chat_rows
from histtrim.policy import SPEC, Policy, low_water_tokens
from histtrim.trim import TrimResult, breadcrumb_message, trim_to_recent_turns
from histtrim.turns import index_turns

PROVIDER_UNITS = "reported_usage"
"""The `counter` a reported-usage result or event names: its token figures are the provider's
(`tokens_before` is the reported count, `tokens_after` the kept rows scaled by the same ratio)."""

_ANTHROPIC_CACHE = ("cache_read_input_tokens", "cache_creation_input_tokens")


def _field(usage: object, name: str) -> object:
    """`usage[name]` of a mapping, or `usage.name` of an object (an SDK's usage model)."""
    try:
        if isinstance(usage, Mapping):
            return usage.get(name)
        return getattr(usage, name, None)
    except Exception:  # a host's odd usage object never fails its run (USAGE-5)
        return None


def _count(value: object) -> int | None:
    """A reported count: an integer >= 0 (a bool, float or text is no count)."""
    number = _integer(value)
    return number if number is not None and number >= 0 else None


def reported_input_tokens(
    usage: object, *, model: str | None = None, expected_model: str | None = None
) -> int | None:
    """USAGE-5: the input tokens a provider's usage report says the request held, or None when
    the report is missing or unusable (the caller then keeps the estimate).

    OpenAI: `prompt_tokens` (cached tokens are inside it). Gemini: `prompt_token_count`.
    Anthropic: `input_tokens + cache_read_input_tokens + cache_creation_input_tokens` (it
    reports cached input beside, not inside, `input_tokens`). A count that is absent, not an
    integer, negative, or a total of 0 is None; so is a report for another model than
    `expected_model` (when both `model` and `expected_model` are given)."""
    if usage is None:
        return None
    if model is not None and expected_model is not None and model != expected_model:
        return None
    for name in ("prompt_tokens", "prompt_token_count"):
        if _field(usage, name) is not None:
            total = _count(_field(usage, name))
            return total if total else None
    base = _count(_field(usage, "input_tokens"))
    if base is None:
        return None
    total = base
    for name in _ANTHROPIC_CACHE:
        value = _field(usage, name)
        if value is None:
            continue
        cached = _count(value)
        if cached is None:
            return None
        total += cached
    return total or None


def scaled_budget(
    budget_tokens: int,
    reported_input_tokens: int,
    reported_population_estimated: int,
    tool_schema_tokens: int = 0,
    *,
    target: Fraction = Fraction(1),
) -> int | None:
    """USAGE-1..2: the estimate-units budget the history is trimmed to, or None when no trim is
    due (budget 0, reported within the budget, or an estimated population of 0).

    `max(1, floor(fit * estimated / reported) - tool_schema_tokens)` in exact integers, where
    `fit` is the budget (its low-water mark `budget * target` with a `Policy` target below 1,
    USAGE-4); the schemas are reserved inside the target."""
    budget = non_negative("budget_tokens", budget_tokens)
    reported = non_negative("reported_input_tokens", reported_input_tokens)
    estimated = non_negative("reported_population_estimated", reported_population_estimated)
    schemas = non_negative("tool_schema_tokens", tool_schema_tokens)
    if budget == 0 or reported <= budget or estimated == 0:
        return None
    fit = low_water_tokens(budget, target)
    total = max(1, fit * estimated // reported)
    return max(1, total - schemas)


def calibrated(tokens: int, reported_input_tokens: int, reported_population_estimated: int) -> int:
    """USAGE-3: `tokens` (estimate units) in the provider's units: `tokens * reported /
    estimated`, rounded to the nearest integer, halves away from zero (exact arithmetic)."""
    size = non_negative("tokens", tokens)
    reported = non_negative("reported_input_tokens", reported_input_tokens)
    estimated = non_negative("reported_population_estimated", reported_population_estimated)
    if estimated == 0:
        raise ValueError("reported_population_estimated must be > 0 to calibrate, got 0")
    quotient, remainder = divmod(size * reported, estimated)
    return quotient + (2 * remainder >= estimated)


def trim_to_reported_budget(
    history: Iterable[ChatMessage | Mapping[str, Any]],
    budget_tokens: int,
    reported_input_tokens: int,
    reported_population_estimated: int,
    tool_schema_tokens: int = 0,
    *,
    crumb_present: bool = False,
    token_counter: TokenCounter | None = None,
    policy: Policy = SPEC,
    target: Fraction = Fraction(1),
) -> TrimResult:
    """USAGE-1..3: the reference runtime's `trim_to_reported_budget(_with_crumb)`.

    `reported_population_estimated` is the estimate of the request that produced the report
    (schemas included), not of `history` after the reply was appended. No trim when the budget
    is 0, the report is within it or that estimate is 0: `tokens_before = tokens_after =
    reported`. Otherwise the whole-turn trim (KEEP-1) runs with `scaled_budget`, and
    `tokens_after` is `calibrated(kept estimate + tool_schema_tokens)`: provider units, schemas
    included (`counter` names them, `PROVIDER_UNITS`). `target` as in `scaled_budget`."""
    return _reported_trim(
        history, budget_tokens, reported_input_tokens, reported_population_estimated,
        tool_schema_tokens, crumb_present=crumb_present, token_counter=token_counter,
        policy=policy, target=target,
    )[0]


def _reported_trim(
    history: Iterable[ChatMessage | Mapping[str, Any]],
    budget_tokens: int,
    reported_input_tokens: int,
    reported_population_estimated: int,
    tool_schema_tokens: int,
    *,
    crumb_present: bool,
    token_counter: TokenCounter | None,
    policy: Policy = SPEC,
    target: Fraction,
) -> tuple[TrimResult, int]:
    """The trim and the kept rows' size in estimate units (0 when the trim did not run)."""
    rows = chat_rows(history)
    flag("crumb_present", crumb_present)
    budget = non_negative("budget_tokens", budget_tokens)
    scaled = scaled_budget(
        budget, reported_input_tokens, reported_population_estimated, tool_schema_tokens,
        target=target,
    )
    reported = int(reported_input_tokens)
    if scaled is None:
        turns = index_turns(rows, crumb_present=crumb_present).turn_count
        result = TrimResult(
            list(rows), [], 0, 0, turns, reported, reported, budget, PROVIDER_UNITS
        )
        return result, 0
    inner = trim_to_recent_turns(
        rows, scaled, crumb_present=crumb_present, token_counter=token_counter, policy=policy
    )
    estimated, schemas = int(reported_population_estimated), int(tool_schema_tokens)
    after = calibrated(inner.tokens_after + schemas, reported, estimated)
    result = TrimResult(
        inner.history, inner.dropped, inner.dropped_messages, inner.dropped_turns,
        inner.kept_turns, reported, after, budget, PROVIDER_UNITS,
    )
    return result, inner.tokens_after


@dataclass(frozen=True)
class ReportedTrim:
    """A reported-usage trim made visible: the rows to send next (the breadcrumb in place), the
    owner's breadcrumb flag for the next call, the trim, and the event when turns were
    dropped."""

    history: list[ChatMessage]
    crumb_present: bool
    result: TrimResult
    event: HistoryTrimmed | None


def trim_to_reported_budget_with_crumb(
    history: Iterable[ChatMessage | Mapping[str, Any]],
    budget_tokens: int,
    reported_input_tokens: int,
    reported_population_estimated: int,
    tool_schema_tokens: int = 0,
    *,
    crumb_present: bool = False,
    token_counter: TokenCounter | None = None,
    policy: Policy = SPEC,
    target: Fraction = Fraction(1),
) -> ReportedTrim:
    """USAGE-6: `trim_to_reported_budget` and what the reference's caller does with a trim:
    the breadcrumb after the system rows unless the owner's flag says one is there (SEEN-1,
    never inferred from text), and one `HistoryTrimmed` with the token-budget reason (SEEN-2)
    in provider units: the report before; after, the kept rows with the breadcrumb and the
    schemas, calibrated; `budget` the budget (its low-water mark with a target below 1)."""
    result, kept = _reported_trim(
        history, budget_tokens, reported_input_tokens, reported_population_estimated,
        tool_schema_tokens, crumb_present=crumb_present, token_counter=token_counter,
        policy=policy, target=target,
    )
    if not result.trimmed:
        return ReportedTrim(result.history, crumb_present, result, None)
    rows = [*result.history]
    after = result.tokens_after
    if not crumb_present:
        prefix = index_turns(rows).body_start
        rows.insert(prefix, breadcrumb_message())
        crumb = Pricing(policy, token_counter).plain(breadcrumb_message())
        after = calibrated(
            kept + crumb + int(tool_schema_tokens),
            int(reported_input_tokens), int(reported_population_estimated),
        )
    event = HistoryTrimmed(
        reason=TrimReason.TOKEN_BUDGET,
        dropped_messages=result.dropped_messages,
        kept_turns=result.kept_turns,
        tokens_before=result.tokens_before,
        tokens_after=after,
        budget=low_water_tokens(result.budget_tokens, target),
        counter=PROVIDER_UNITS,
        target=None if target == 1 else str(target),
    )
    return ReportedTrim(rows, True, result, event)
