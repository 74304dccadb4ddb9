"""USAGE-1..8: the budget in the provider's own tokens, from the reference runtime (beyond the
Spanish spec): after a response that reports its input tokens, a history whose request was
over the budget is trimmed to the budget scaled by estimated / reported; a report far above
its request's estimate is refused (USAGE-7); a policy may calibrate the hidden prefix (USAGE-8).

The estimate (EST-1) undercounts what providers bill by a factor no constant fixes; the
provider's count of the request it just received does not. `trim_to_reported_budget` is the
reference's function; `trim_to_reported_budget_with_crumb` adds what its caller does (the
breadcrumb, once, and the event); `reported_input_tokens` reads a provider's usage report."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
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


LOGGER = "histtrim.reported_usage"
"""Where a refused report is logged (USAGE-7)."""

PAIRS_KEPT = 16
"""How many of a session's newest (rows estimate, report) pairs the prefix fit reads (USAGE-8):
bounded work and memory per conversation, and a window that follows the session."""


def refused_report(
    reported_input_tokens: int, reported_population_estimated: int,
    tool_schema_tokens: int = 0, *, policy: Policy = SPEC,
) -> str | None:
    """USAGE-7: why a report is no report, or None when it may be applied. A report above
    `policy.report_ceiling(estimated + tool_schema_tokens)` (8 times the estimate plus
    131,072 tokens by default) cannot describe the request it is said to count: it is refused
    and the estimate alone decides, so a hostile or garbled 10^30 never cuts the history."""
    reported = non_negative("reported_input_tokens", reported_input_tokens)
    estimated = non_negative("reported_population_estimated", reported_population_estimated)
    schemas = non_negative("tool_schema_tokens", tool_schema_tokens)
    ceiling = policy.report_ceiling(estimated + schemas)
    if reported <= ceiling:
        return None
    shown = f"{reported:,}" if reported < 10**15 else f"about 10^{len(str(reported)) - 1}"
    return (f"a usage report of {shown} input tokens is refused: a request estimated at "
            f"{estimated + schemas:,} tokens counts at most {ceiling:,} (USAGE-7)")


def warn_refused(reason: str) -> None:
    """Log a refused report (USAGE-7) on the `histtrim.reported_usage` logger."""
    logging.getLogger(LOGGER).warning("histtrim: %s", reason)


def usable_report(
    reported_input_tokens: int | None, reported_population_estimated: int,
    tool_schema_tokens: int = 0, *, policy: Policy = SPEC, describes: bool = True,
    warn: Callable[[str], object] = warn_refused,
) -> int | None:
    """USAGE-7, the one rule every path that reads a report applies before using it: the
    report, or None when there is none, when it does not describe the rows it would be
    applied to (`describes`: the caller's key of the request it counts, e.g. a cut made since
    it was recorded), or when `refused_report` refuses it (then `warn` gets the reason)."""
    if reported_input_tokens is None or not describes:
        return None
    refused = refused_report(reported_input_tokens, reported_population_estimated,
                             tool_schema_tokens, policy=policy)
    if refused is not None:
        warn(refused)
        return None
    return reported_input_tokens


@dataclass(frozen=True)
class HiddenPrefix:
    """USAGE-8: a request's count as `prefix + ratio * rows estimate`: `prefix` the provider
    tokens the rows do not show (a client's system prompt, tool schemas), `ratio` the
    provider tokens per estimated token of the rows; `margin` the most the fit undercounts
    one of its own reports by (its upper envelope), kept free by `rows_budget`."""

    prefix: int
    ratio: Fraction
    margin: int = 0

    def count(self, rows_estimate: int) -> int:
        """The provider's count of a request whose rows are estimated at `rows_estimate`,
        rounded to the nearest integer, halves up."""
        scaled = self.ratio * rows_estimate
        return self.prefix + int(scaled.numerator * 2 + scaled.denominator) // (
            2 * scaled.denominator)

    def rows_budget(self, fit: int) -> int:
        """The largest rows estimate whose count plus the margin fits `fit` (at least 1)."""
        room = fit - self.prefix - self.margin
        if room <= 0:
            return 1
        return max(1, room * self.ratio.denominator // self.ratio.numerator)

    @property
    def ratio_text(self) -> str:
        """The ratio as `HistoryTrimmed` records it: "n/d" with a denominator <= 1000."""
        return str(self.ratio.limit_denominator(1000))


def fit_hidden_prefix(
    pairs: Sequence[tuple[int, int]], tool_schema_tokens: int = 0
) -> HiddenPrefix | None:
    """USAGE-8: the hidden prefix and the rows' ratio fitted on a session's (rows estimate,
    reported) pairs, oldest first (the newest `PAIRS_KEPT` read; None: no pair).

    One pair: the prefix is the report minus its estimate (at least the tool schemas the
    caller knows, `tool_schema_tokens`), the rows counted 1:1 (or the report over the
    estimate when it is smaller). Pairs at two or more sizes: the median of the pairwise
    slopes (Theil-Sen), then the median of `report - ratio * estimate`, so a cut that moves
    the prefix (a breadcrumb, a client that resends its schemas) moves a minority of the
    points and not the fit. The ratio is kept in [1/8, 8] and the prefix in [0, smallest
    report].

    The margin: the fit is a median, so a request held to exactly its rows' budget would be
    counted over about half the time. The margin is how far the fit undercounts its own
    reports (the upper envelope: the largest `report - count(estimate)`), at most 1/8 of the
    smallest report: an older stray report widens it, never past that bound, and never moves
    the fit. The newest report's own undercount is never bounded: the next request carries
    every row it counted, and most likely what it counted that the rows do not show (a
    client's attachment of a changed file), as the reference's single ratio assumes."""
    schemas = non_negative("tool_schema_tokens", tool_schema_tokens)
    window = [(non_negative("rows estimate", e), non_negative("reported", r))
              for e, r in list(pairs)[-PAIRS_KEPT:]]
    window = [(e, r) for e, r in window if e > 0 and r > 0]
    if not window:
        return None
    slopes = sorted(Fraction(r2 - r1, e2 - e1) for i, (e1, r1) in enumerate(window)
                    for e2, r2 in window[i + 1:] if e2 != e1)
    slopes = [q for q in slopes if q > 0]
    if not slopes:
        e, r = window[0]
        prefix = min(r, max(schemas, r - e))
        ratio = Fraction(r - prefix, e) if r - prefix > 0 else Fraction(1)
    else:
        ratio = _median(slopes)
        prefix = int(_median(sorted(r - ratio * e for e, r in window)))
    ratio = min(max(ratio, Fraction(1, 8)), Fraction(8))
    smallest = min(r for _, r in window)
    prefix = max(0, min(prefix, smallest))
    central = HiddenPrefix(prefix, ratio)
    under = [r - central.count(e) for e, r in window]
    return HiddenPrefix(prefix, ratio, max(0, min(max(under), smallest // 8), under[-1]))


def _median(values: Sequence[Fraction]) -> Fraction:
    middle = len(values) // 2
    if len(values) % 2:
        return values[middle]
    return (values[middle - 1] + values[middle]) / 2


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
    reports: Sequence[tuple[int, int]] = (),
) -> TrimResult:
    """USAGE-1..3: the reference runtime's `trim_to_reported_budget(_with_crumb)`.

    `reported_population_estimated` is the estimate of the request that produced the report
    (schemas included), not of `history` after the reply was appended. No trim when the budget
    is 0, the report is within it or that estimate is 0: `tokens_before = tokens_after =
    reported`. Otherwise the whole-turn trim (KEEP-1) runs with `scaled_budget`, and
    `tokens_after` is `calibrated(kept estimate + tool_schema_tokens)`: provider units, schemas
    included (`counter` names them, `PROVIDER_UNITS`). `target` as in `scaled_budget`.

    The report is taken as given, as the reference does (a path that reads one from a
    provider refuses it first, `refused_report`, USAGE-7). With `policy.hidden_prefix ==
    "calibrated"` the
    budget and figures come from `fit_hidden_prefix` over `reports` (the session's earlier
    (rows estimate, reported) pairs) and this one (USAGE-8)."""
    return _reported_trim(
        history, budget_tokens, reported_input_tokens, reported_population_estimated,
        tool_schema_tokens, crumb_present=crumb_present, token_counter=token_counter,
        policy=policy, target=target, reports=reports,
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
    reports: Sequence[tuple[int, int]] = (),
) -> tuple[TrimResult, int, HiddenPrefix | None]:
    """The trim, the kept rows' size in estimate units (0 when the trim did not run) and the
    hidden prefix it used (USAGE-8; None: the single ratio)."""
    rows = chat_rows(history)
    flag("crumb_present", crumb_present)
    budget = non_negative("budget_tokens", budget_tokens)
    reported = non_negative("reported_input_tokens", reported_input_tokens)
    estimated = non_negative("reported_population_estimated", reported_population_estimated)
    schemas = non_negative("tool_schema_tokens", tool_schema_tokens)
    prefix = None
    if policy.hidden_prefix == "calibrated":
        prefix = fit_hidden_prefix([*reports, (max(0, estimated - schemas), reported)],
                                   schemas)
        due = prefix is not None and budget > 0 and reported > budget
        scaled = prefix.rows_budget(low_water_tokens(budget, target)) if (
            due and prefix is not None) else None
    else:
        scaled = scaled_budget(budget, reported, estimated, schemas, target=target)
    if scaled is None:
        turns = index_turns(rows, crumb_present=crumb_present).turn_count
        result = TrimResult(
            list(rows), [], 0, 0, turns, reported, reported, budget, PROVIDER_UNITS
        )
        return result, 0, None
    inner = trim_to_recent_turns(
        rows, scaled, crumb_present=crumb_present, token_counter=token_counter, policy=policy
    )
    if prefix is not None:
        after = prefix.count(inner.tokens_after)
    else:
        after = calibrated(inner.tokens_after + schemas, reported, estimated)
    result = TrimResult(
        inner.history, inner.dropped, inner.dropped_messages, inner.dropped_turns,
        inner.kept_turns, reported, after, budget, PROVIDER_UNITS,
    )
    return result, inner.tokens_after, prefix


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
    reports: Sequence[tuple[int, int]] = (),
) -> ReportedTrim:
    """USAGE-6: `trim_to_reported_budget` and what the reference's caller does with a trim:
    the breadcrumb after the system rows unless the owner's flag says one is there (SEEN-1,
    never inferred from text), and one `HistoryTrimmed` with the token-budget reason (SEEN-2)
    in provider units: the report before; after, the kept rows with the breadcrumb and the
    schemas, calibrated; `budget` the budget (its low-water mark with a target below 1).
    USAGE-7..8 as in `trim_to_reported_budget`; the event records the hidden prefix and the
    ratio a calibrated trim used."""
    result, kept, prefix = _reported_trim(
        history, budget_tokens, reported_input_tokens, reported_population_estimated,
        tool_schema_tokens, crumb_present=crumb_present, token_counter=token_counter,
        policy=policy, target=target, reports=reports,
    )
    if not result.trimmed:
        return ReportedTrim(result.history, crumb_present, result, None)
    rows = [*result.history]
    after = result.tokens_after
    if not crumb_present:
        rows.insert(index_turns(rows).body_start, breadcrumb_message())
        crumb = Pricing(policy, token_counter).plain(breadcrumb_message())
        after = prefix.count(kept + crumb) if prefix is not None else calibrated(
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
        hidden_prefix=None if prefix is None else prefix.prefix,
        ratio=None if prefix is None else prefix.ratio_text,
    )
    return ReportedTrim(rows, True, result, event)
