"""Replay a session's requests against a provider that counts input its own way, under four
ways of keeping the history within a budget (issue 43): the estimate alone (EST-1, RUN-1), the
reference runtime's reported-usage trim (USAGE-1..4, on top of the estimate's), LangChain's
clipped usage scaling, and a real tokenizer as the counter. What it measures: how many requests
the provider counted over the budget, by how much, and the input they cost with a prompt cache
(`histtrim.review.cache`).

Review machinery, not the spec. The replay keeps one cut, as the `Agent` does: it only moves
forward, by whole turns, and the breadcrumb is sent once something was dropped. Requests are
the session's request points (`histtrim.low_water.request_points`): the rows before each
assistant reply. A provider is a cost per row in its units plus a hidden prefix (a client's
system prompt and tool schemas the file does not hold), so a request's count is the sum of
what it sends."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import accumulate, pairwise
from typing import Literal

from histtrim.counting import ESTIMATE
from histtrim.estimate import message_costs
from histtrim.low_water import request_points
from histtrim.messages import ChatMessage
from histtrim.reported_usage import HiddenPrefix, fit_hidden_prefix, scaled_budget
from histtrim.review.cache import CacheModel, Prompt, price_calls, totals
from histtrim.review.loss import NO_LOSS, ContextLoss, RowTokens, distinctive_tokens, request_loss
from histtrim.trim import breadcrumb_message
from histtrim.turns import index_turns

Method = Literal["estimate", "reported", "langchain", "tokenizer", "calibrated", "fitted"]
METHODS: tuple[Method, ...] = ("estimate", "reported", "langchain", "tokenizer")
"""Issue 43's table."""
PREFIX_METHODS: tuple[Method, ...] = ("estimate", "reported", "calibrated")
"""Issue 48's table: the estimate, the reference's single ratio and the calibrated hidden
prefix (USAGE-8); "fitted" (the calibrated prefix and the running turn fitted by a tool
context edit, issue 48 item 2) is measured when the caller gives the edit (`fit_turn`)."""

FitTurn = Callable[[list[ChatMessage], bool, int], tuple[list[ChatMessage], list[int]]]
"""A tool context edit fitting a request to a budget: (the request's rows, whether they hold
the breadcrumb, the budget in estimate units) -> (the rows sent, each one's source row in the
request)."""

LANGCHAIN_CLIP = (Fraction(1), Fraction(5, 4))
"""`count_tokens_approximately(use_usage_metadata_scaling=True)` scales the approximate count
by the last reply's reported total over its approximate count, clipped to [1.0, 1.25]."""


@dataclass(frozen=True)
class Provider:
    """How the provider counts: each row's tokens (`rows[i]` costs `costs[i]`), the
    breadcrumb's, and a prefix of `hidden` tokens every request carries. `call_ratio`, when
    given, says how to count request k of a recorded session: the transcript part of the
    recorded call is scaled by its own recorded ratio (see `recorded_provider`)."""

    costs: tuple[int, ...]
    crumb: int
    hidden: int = 0
    calls: tuple[tuple[int, int], ...] | None = None
    """Recorded sessions: (request point, recorded input) for each call with usage; None:
    count the rows (`costs`)."""


@dataclass(frozen=True)
class UsageReplay:
    """What one method sent: every request's count by the provider, and its cost."""

    method: Method
    budget: int
    counts: tuple[int, ...]
    prompts: tuple[Prompt, ...]
    cut_moves: int
    several: tuple[bool, ...] = ()
    """Whether each request kept more than one turn (only those can be brought under the
    budget by whole-turn trimming: the newest turn is always kept, CAP-1)."""
    alone: tuple[bool, ...] = ()
    """Whether each request's newest tool exchange alone (the system rows, the breadcrumb, the
    turn's opening row and the rows from the newest reply on) fits the budget: an over-budget
    request where it does could have been brought under by fitting the running turn."""
    loss: ContextLoss = NO_LOSS
    """The needed context the sent requests lost (`histtrim.review.loss`), summed."""

    @property
    def over_fitting(self) -> int:
        """Requests over the budget whose newest tool exchange alone would fit."""
        return sum(1 for c, a in zip(self.counts, self.alone, strict=True)
                   if c > self.budget and a)

    @property
    def requests(self) -> int:
        return len(self.counts)

    @property
    def over(self) -> int:
        return sum(1 for c in self.counts if c > self.budget)

    @property
    def over_share(self) -> float:
        return self.over / len(self.counts) if self.counts else 0.0

    @property
    def avoidable(self) -> int:
        """Requests over the budget that kept more than one turn."""
        return sum(1 for c, m in zip(self.counts, self.several, strict=True)
                   if c > self.budget and m)

    @property
    def repeats(self) -> int:
        """Over-budget requests (more than one turn kept) right after an over-budget request:
        a crossing that cost more than the one call that reported it."""
        over = [c > self.budget and m for c, m in zip(self.counts, self.several, strict=True)]
        return sum(1 for before, now in pairwise(over) if before and now)

    @property
    def worst(self) -> int:
        """The largest excess over the budget, in provider tokens (0: never over)."""
        return max((c - self.budget for c in self.counts), default=0) if self.counts else 0

    def cost(self, model: CacheModel) -> Fraction:
        """Input cost in provider-token equivalents with `model`'s prompt cache."""
        return totals(price_calls(self.prompts, model)).cost


def _fit(
    starts: Sequence[int], sums: Sequence[int], fixed: int, first: int, end: int,
    limit: int,
) -> int:
    """The first kept turn (index into `starts`, >= `first`) whose rows to `end` cost at most
    `limit` with `fixed` on top; the newest turn opened before `end` is always kept."""
    last = first
    while last + 1 < len(starts) and starts[last + 1] < end:
        last += 1
    while first < last and fixed + sums[end] - sums[starts[first]] > limit:
        first += 1
    return first


def replay_usage(
    rows: Sequence[ChatMessage], budget: int, method: Method, provider: Provider,
    *, estimate_costs: Sequence[int] | None = None, crumb_estimate: int | None = None,
    counter_costs: Sequence[int] | None = None, counter_crumb: int | None = None,
    measure_loss: bool = False, fit_turn: FitTurn | None = None,
) -> UsageReplay:
    """Send every request of `rows` under `method` and count it as `provider` does.

    estimate: trim when EST-1 says the request is over (RUN-1). reported: the same, and after
    each reply the reported count of the request just sent decides (USAGE-1..2, the reference's
    `enforce_reported_budget`; the history it trims is the rows up to the next request).
    langchain: the estimate times the last reply's reported/estimated ratio clipped to
    [1, 1.25]. tokenizer: `counter_costs` (default: the provider's own row counts) as the
    counter; it cannot see the hidden prefix.

    A recorded session's provider (`Provider.calls`) knows only the untrimmed requests' counts;
    a trimmed request is modelled as the hidden prefix plus the recorded transcript part scaled
    by the estimate of what was sent over the estimate of the whole transcript.

    calibrated (USAGE-8): the reported trim with the hidden prefix fitted on the session's
    (estimate sent, count) pairs (`fit_hidden_prefix`), and each request's estimate held to
    the rows' budget the fit gives (`HiddenPrefix.rows_budget`). `measure_loss`: the needed
    context each request lost against the full request (`histtrim.review.loss`).

    fitted: calibrated, and a request still over the rows' budget after the whole-turn cut is
    edited by `fit_turn` (required) to fit it; the edit is what is sent, counted and cached."""
    if method == "fitted" and fit_turn is None:
        raise ValueError("fit_turn: the fitted method needs the tool context edit")
    est = list(estimate_costs) if estimate_costs is not None else message_costs(rows)
    crumb_est = (
        crumb_estimate if crumb_estimate is not None else ESTIMATE.plain(breadcrumb_message())
    )
    index = index_turns(rows)
    prefix = index.body_start
    starts = list(index.starts)
    points = [p for p in request_points(rows)[:-1] if index.starts and p > index.starts[0]]
    est_sums = list(accumulate(est, initial=0))
    real_sums = list(accumulate(provider.costs, initial=0))
    recorded = dict(provider.calls) if provider.calls is not None else None
    counter = list(counter_costs) if counter_costs is not None else list(provider.costs)
    counter_sums = list(accumulate(counter, initial=0))
    counter_crumb = provider.crumb if counter_crumb is None else counter_crumb
    if recorded is not None:
        points = [p for p in points if p in recorded]
    first, crumbed = 0, False
    ratio: Fraction | None = None
    counts: list[int] = []
    several: list[bool] = []
    prompts: list[Prompt] = []
    moves = 0
    previous_cut = 0
    crumb_row = breadcrumb_message()
    pairs: list[tuple[int, int]] = []
    fitted: HiddenPrefix | None = None
    alone: list[bool] = []
    loss = NO_LOSS
    tokens = RowTokens()
    system_tokens = frozenset().union(*(distinctive_tokens(r.content) for r in rows[:prefix]))

    def count_of(est: int, real: int, end: int) -> int:
        """The provider's count of a request estimated at `est` (rows `real` in its units)."""
        if recorded is None:
            return provider.hidden + real
        return provider.hidden + round(
            Fraction(recorded[end] - provider.hidden) * est / max(est_sums[end], 1))

    def fixed(units: Sequence[int], crumb: int) -> int:
        return units[prefix] + (crumb if crumbed else 0)

    for n, end in enumerate(points):
        if not starts or starts[0] >= end:
            continue
        if method in ("estimate", "reported"):
            limit, sums, crumb = budget, est_sums, crumb_est
        elif method in ("calibrated", "fitted"):
            limit = budget if fitted is None else min(budget, fitted.rows_budget(budget))
            sums, crumb = est_sums, crumb_est
        elif method == "langchain":
            factor = min(max(ratio or Fraction(1), LANGCHAIN_CLIP[0]), LANGCHAIN_CLIP[1])
            limit, sums, crumb = int(budget / factor), est_sums, crumb_est
        else:
            limit, sums, crumb = budget, counter_sums, counter_crumb
        size = fixed(sums, crumb) + sums[end] - sums[starts[first]]
        if size > limit:
            crumbed = True
            first = _fit(starts, sums, fixed(sums, crumb), first, end, limit)
        cut = starts[first]
        sent_est = fixed(est_sums, crumb_est) + est_sums[end] - est_sums[cut]
        sent_rows = fixed(real_sums, provider.crumb) + real_sums[end] - real_sums[cut]
        order: list[int] = [*range(prefix), *([-1] if crumbed else []), *range(cut, end)]
        sent_list = [crumb_row if i < 0 else rows[i] for i in order]
        edited: list[tuple[int, ChatMessage]] | None = None
        if method == "fitted" and fit_turn is not None and sent_est > limit:
            messages, sources = fit_turn(sent_list, crumbed, limit)
            edited = [(order[k], m) for k, m in zip(sources, messages, strict=True)]
            new_est = sum(message_costs(messages))
            sent_rows = sent_rows * new_est // max(sent_est, 1)
            sent_est = new_est
        if recorded is None:
            count = provider.hidden + sent_rows
        else:
            reported = recorded[end]
            transcript = est_sums[end]
            count = provider.hidden + round(
                Fraction(reported - provider.hidden) * sent_est / max(transcript, 1)
            )
        counts.append(count)
        several.append(first + 1 < len(starts) and starts[first + 1] < end)
        opener = max((s for s in starts if s < end), default=cut)
        reply = end - 1
        while reply > opener and rows[reply].role != "assistant":
            reply -= 1
        tail = reply if reply > opener else end
        small_est = (fixed(est_sums, crumb_est) + est[opener] + est_sums[end] - est_sums[tail])
        small_real = (fixed(real_sums, provider.crumb) + provider.costs[opener]
                      + real_sums[end] - real_sums[tail])
        alone.append(count_of(small_est, small_real, end) <= budget)
        if measure_loss and end < len(rows):
            loss += request_loss(
                _reply_text(rows[end]), rows[:end],
                sent_list if edited is None else [m for _, m in edited],
                system=system_tokens, tokens=tokens)
        blocks: list[tuple[object, int]] = [("hidden", provider.hidden)] if provider.hidden else []
        if edited is None:
            blocks += [(i, provider.costs[i]) if i >= 0 else ("crumb", provider.crumb)
                       for i in order]
        else:
            for i, message in edited:
                if i < 0:
                    blocks.append(("crumb", provider.crumb))
                elif message is rows[i]:
                    blocks.append((i, provider.costs[i]))
                else:  # a row the edit changed: its own block, priced at its row's ratio
                    price = message_costs([message])[0]
                    blocks.append((("edit", i, message.content),
                                   provider.costs[i] * price // max(est[i], 1)))
        prompts.append(tuple(blocks))
        if cut != previous_cut:
            moves += 1
            previous_cut = cut
        ratio = Fraction(count, max(sent_est, 1))
        if method in ("calibrated", "fitted"):
            pairs.append((sent_est, count))
            fitted = fit_hidden_prefix(pairs)
        if method in ("reported", "calibrated", "fitted"):
            after = points[n + 1] if n + 1 < len(points) else len(rows)
            if method == "reported":
                scaled = scaled_budget(budget, count, sent_est)
            else:
                assert fitted is not None
                scaled = fitted.rows_budget(budget) if count > budget else None
            if scaled is not None:
                grown = fixed(est_sums, crumb_est) + est_sums[after] - est_sums[cut]
                if grown > scaled:
                    crumbed = True
                    first = _fit(starts, est_sums, fixed(est_sums, crumb_est), first, after,
                                 scaled)
    return UsageReplay(method, budget, tuple(counts), tuple(prompts), moves, tuple(several),
                       tuple(alone), loss)


def _reply_text(row: ChatMessage) -> str:
    """What the model wrote at a request: the reply row's text (calls included)."""
    return row.content
