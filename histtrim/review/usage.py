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

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import accumulate, pairwise
from typing import Literal

from histtrim.counting import ESTIMATE
from histtrim.estimate import message_costs
from histtrim.low_water import request_points
from histtrim.messages import ChatMessage
from histtrim.reported_usage import scaled_budget
from histtrim.review.cache import CacheModel, Prompt, price_calls, totals
from histtrim.trim import breadcrumb_message
from histtrim.turns import index_turns

Method = Literal["estimate", "reported", "langchain", "tokenizer"]
METHODS: tuple[Method, ...] = ("estimate", "reported", "langchain", "tokenizer")

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
    by the estimate of what was sent over the estimate of the whole transcript."""
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

    def fixed(units: Sequence[int], crumb: int) -> int:
        return units[prefix] + (crumb if crumbed else 0)

    for n, end in enumerate(points):
        if not starts or starts[0] >= end:
            continue
        if method in ("estimate", "reported"):
            limit, sums, crumb = budget, est_sums, crumb_est
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
        blocks: list[tuple[object, int]] = [("hidden", provider.hidden)] if provider.hidden else []
        blocks += [(i, provider.costs[i]) for i in range(prefix)]
        if crumbed:
            blocks.append(("crumb", provider.crumb))
        blocks += [(i, provider.costs[i]) for i in range(cut, end)]
        prompts.append(tuple(blocks))
        if cut != previous_cut:
            moves += 1
            previous_cut = cut
        ratio = Fraction(count, max(sent_est, 1))
        if method == "reported":
            after = points[n + 1] if n + 1 < len(points) else len(rows)
            scaled = scaled_budget(budget, count, sent_est)
            if scaled is not None:
                grown = fixed(est_sums, crumb_est) + est_sums[after] - est_sums[cut]
                if grown > scaled:
                    crumbed = True
                    first = _fit(starts, est_sums, fixed(est_sums, crumb_est), first, after,
                                 scaled)
    return UsageReplay(method, budget, tuple(counts), tuple(prompts), moves, tuple(several))
