"""A design review: every session replayed once per policy, summed per policy, and the
side-by-side table the CLI prints and the notebook shows."""

from __future__ import annotations

import os
import statistics
import textwrap
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from histtrim.policy import Policy
from histtrim.review.cache import CacheModel, CacheTotals, price_calls, totals
from histtrim.review.loss import NO_LOSS, ContextLoss
from histtrim.review.replay import ReplaySettings, SessionReplay, median_max, replay_session
from histtrim.review.sessions import ReviewSession

Loader = Callable[[str], ReviewSession]
"""Reads a session file (a module-level function, so it pickles by name)."""

Task = tuple[ReviewSession | str, Loader | None, tuple[tuple[str, Policy], ...], ReplaySettings]
"""One session (or the path a worker loads it from) and every (label, policy) to replay."""


class SessionLoadError(ValueError):
    """A session file a worker could not load: its path and what is wrong (picklable)."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(path, problem)
        self.path = path
        self.problem = problem

    def __str__(self) -> str:
        return self.problem


def replay_task(task: Task) -> list[SessionReplay]:
    """Load (if given a path) and replay one session under every policy: the unit of work
    sent to a worker."""
    source, loader, policies, settings = task
    if isinstance(source, str):
        if loader is None:
            raise ValueError(f"sessions: {source!r} is a path but no loader was given")
        try:
            session = loader(source)
        except Exception as error:  # reported in the parent, with the file it came from
            raise SessionLoadError(source, str(error)) from None
    else:
        session = source
    return [replay_session(session, policy, settings, label=label) for label, policy in policies]


def replay_batch(tasks: Sequence[Task]) -> list[list[SessionReplay]]:
    """Several tasks in one worker call (fewer round trips on a pool or a cluster)."""
    return [replay_task(task) for task in tasks]


@dataclass(frozen=True)
class PolicySummary:
    """One policy's figures over every session."""

    label: str
    policy: Policy
    sessions: int
    turns: int
    calls: int
    token_trims: int
    turn_limit_trims: int
    dropped_turns: int
    dropped_messages: int
    tokens_median: float
    tokens_max: int
    true_tokens_median: float
    true_tokens_max: int
    reactive_retries: int
    model_refusals: int
    capacity_refusals: int
    failed_turns: int
    differing_sessions: tuple[str, ...]
    """Sessions where this policy did something else than the first (baseline) policy."""
    cut_short_turns: int = 0
    """Failed turns the tool-iteration limit ended before the recording's last call."""
    unreplayed_calls: int = 0
    """The recorded provider calls those turns never made."""
    history_tokens_mean: float = 0.0
    """The estimated history sent per call, on average: the context the policy keeps."""
    cache: CacheTotals | None = None
    """What the cache model given to `summaries` made of the billed requests."""
    loss: ContextLoss = NO_LOSS
    """The needed context lost (`ReplaySettings.measure_loss`): the share of each recorded
    next reply's distinctive tokens that the full request held and the sent one did not."""


def cache_totals(replays: Iterable[SessionReplay], model: CacheModel) -> CacheTotals:
    """The billed requests of some replays under a cache model, each session on its own,
    aged with the replay clock's times where the replays have them (the model's lifetime)."""
    calls = []
    for r in replays:
        if r.calls and not r.prompts:
            raise ValueError(
                f"cache: {r.session} was replayed without its requests; replay with "
                "ReplaySettings(record_prompts=True)"
            )
        calls.extend(price_calls(r.prompts, model, r.prompt_times or None))
    return totals(calls)


@dataclass(frozen=True)
class Review:
    """Every replay, by session then policy (in the order the policies were given)."""

    labels: tuple[str, ...]
    policies: tuple[Policy, ...]
    replays: tuple[tuple[SessionReplay, ...], ...]

    def by_policy(self, label: str) -> list[SessionReplay]:
        column = self.labels.index(label)
        return [row[column] for row in self.replays]

    def summaries(self, cache: CacheModel | None = None) -> list[PolicySummary]:
        """One summary per policy; with a cache model, what it makes of the requests."""
        out = []
        for column, (label, policy) in enumerate(zip(self.labels, self.policies, strict=True)):
            replays = [row[column] for row in self.replays]
            tokens = [t for r in replays for t in r.tokens]
            true_tokens = [t for r in replays for t in r.true_tokens]
            median, peak = median_max(tokens)
            true_median, true_peak = median_max(true_tokens)
            differing = tuple(
                row[column].session for row in self.replays if row[column].differs(row[0])
            )
            history = [t for r in replays for t in r.history_tokens]
            out.append(PolicySummary(
                label=label,
                policy=policy,
                sessions=len(replays),
                turns=sum(r.turns for r in replays),
                calls=sum(r.calls for r in replays),
                token_trims=sum(r.token_trims for r in replays),
                turn_limit_trims=sum(r.turn_limit_trims for r in replays),
                dropped_turns=sum(r.dropped_turns for r in replays),
                dropped_messages=sum(r.dropped_messages for r in replays),
                tokens_median=median,
                tokens_max=peak,
                true_tokens_median=true_median,
                true_tokens_max=true_peak,
                reactive_retries=sum(r.reactive_retries for r in replays),
                model_refusals=sum(r.model_refusals for r in replays),
                capacity_refusals=sum(r.capacity_refusals for r in replays),
                failed_turns=sum(r.failed_turns for r in replays),
                differing_sessions=differing,
                cut_short_turns=sum(r.cut_short_turns for r in replays),
                unreplayed_calls=sum(r.unreplayed_calls for r in replays),
                history_tokens_mean=sum(history) / len(history) if history else 0.0,
                cache=None if cache is None else cache_totals(replays, cache),
                loss=sum((r.loss for r in replays), NO_LOSS),
            ))
        return out


_ROWS: tuple[tuple[str, Callable[[PolicySummary], object]], ...] = (
    ("sessions", lambda s: s.sessions),
    ("turns replayed", lambda s: s.turns),
    ("provider calls", lambda s: s.calls),
    ("trims: token budget (RUN-1)", lambda s: s.token_trims),
    ("trims: turn limit", lambda s: s.turn_limit_trims),
    ("turns dropped", lambda s: s.dropped_turns),
    ("messages dropped", lambda s: s.dropped_messages),
    ("tokens per call, median (estimate)", lambda s: _number(s.tokens_median)),
    ("tokens per call, max (estimate)", lambda s: s.tokens_max),
    ("tokens per call, median (true)", lambda s: _number(s.true_tokens_median)),
    ("tokens per call, max (true)", lambda s: s.true_tokens_max),
    ("reactive retries", lambda s: s.reactive_retries),
    ("refused by the model (overflow)", lambda s: s.model_refusals),
    ("refused by the capacity check", lambda s: s.capacity_refusals),
    ("failed turns", lambda s: s.failed_turns),
    ("sessions that differ", lambda s: len(s.differing_sessions)),
)


_CUT_SHORT_ROWS: tuple[tuple[str, Callable[[PolicySummary], object]], ...] = (
    ("  of which cut short (tool rounds)", lambda s: s.cut_short_turns),
    ("recorded calls not replayed", lambda s: s.unreplayed_calls),
)
"""Rows for turns the tool-iteration limit ended before the recording's last call."""


def _cache_rows(model: CacheModel) -> list[tuple[str, Callable[[PolicySummary], object]]]:
    """The rows a cache model adds: context kept, cached share and input cost."""
    def cached(s: PolicySummary) -> CacheTotals:
        assert s.cache is not None
        return s.cache

    rows: list[tuple[str, Callable[[PolicySummary], object]]] = [
        ("history tokens per call, mean", lambda s: f"{s.history_tokens_mean:.0f}"),
        ("billed calls", lambda s: cached(s).calls),
        ("input tokens billed (true)", lambda s: cached(s).tokens),
        (f"cached share of input ({model.name})", lambda s: f"{cached(s).cached_share:.1%}"),
        (f"input cost vs no cache ({model.name})", lambda s: f"{cached(s).relative_cost:.3f}x"),
    ]
    if model.input_price_per_mtok is not None:
        rows.append((
            f"input cost, {model.currency} ({model.name})",
            lambda s: f"{cached(s).money(model):.2f}",
        ))
    return rows


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:.1f}"


def format_review(
    review: Review, *, list_sessions: int = 10, cache: CacheModel | None = None
) -> str:
    """`review_lines` as one text."""
    return "\n".join(review_lines(review, list_sessions=list_sessions, cache=cache))


def review_lines(
    review: Review, *, list_sessions: int = 10, cache: CacheModel | None = None
) -> list[str]:
    """The side-by-side table (one column per policy), what each policy changes from the
    spec, and which sessions differ from the first policy; with a cache model, what the
    provider's prompt cache makes of each policy's requests (and where its numbers come from)."""
    summaries = review.summaries(cache)
    headers = ["", *review.labels]
    named = [*_ROWS, *(() if cache is None else _cache_rows(cache))]
    if any(s.loss.requests for s in summaries):
        named.append(("needed context lost (next reply)", lambda s: f"{s.loss.share:.1%}"))
    if any(s.cut_short_turns for s in summaries):  # shown whenever a replay was cut short
        at = next(k for k, (name, _) in enumerate(named) if name == "failed turns") + 1
        named[at:at] = _CUT_SHORT_ROWS
    rows = [[name, *(str(get(s)) for s in summaries)] for name, get in named]
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        return "  ".join([first, *(c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True))])

    out = [line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows), ""]
    for summary in summaries:
        changes = summary.policy.changes()
        text = (", ".join(f"{k} {v}" for k, v in changes.items())
                or "every constant as the spec fixes it")
        out.append(f"{summary.label}: {text}")
    baseline = review.labels[0]
    for summary in summaries[1:]:
        names = summary.differing_sessions
        shown = ", ".join(names[:list_sessions]) + (" ..." if len(names) > list_sessions else "")
        out.extend(_wrapped(
            f"{summary.label} vs {baseline}: {len(names)} of {summary.sessions} sessions differ"
            + (f": {shown}" if names else "")
        ))
    if cache is not None:
        out.extend(_wrapped(f"cache model {cache.name}: {cache.source}"))
    out.extend(recorded_lines(review))
    return out


def recorded_lines(review: Review) -> list[str]:
    """For sessions whose files record usage: the recorded input of their calls beside
    histtrim's estimate of the same requests, and the provider's count the replay used."""
    recorded = [row[0].recorded for row in review.replays if row and row[0].recorded]
    if not recorded:
        return []
    calls = sum(len(r.calls) for r in recorded)
    total, estimated = sum(r.recorded for r in recorded), sum(r.estimated for r in recorded)
    ratios = sorted(float(r.scale) for r in recorded)
    hidden = sorted(r.hidden for r in recorded)
    ratio = f"{total / estimated:.2f}x" if estimated else "-"
    return _wrapped(
        f"recorded usage ({len(recorded)} of {len(review.replays)} sessions, {calls} calls): "
        f"the provider counted {total} input tokens where histtrim estimates {estimated} "
        f"({ratio}); the replay's provider counts a request as a hidden part (median "
        f"{statistics.median(hidden):.0f} tokens) plus the estimate times a scale (median "
        f"{statistics.median(ratios):.2f}), each fitted to the session's own calls"
    )


def _wrapped(text: str, width: int = 96) -> list[str]:
    """A long note as lines of at most `width` characters, continued with an indent."""
    return textwrap.wrap(text, width, subsequent_indent="  ", break_on_hyphens=False) or [""]


def settings_lines(
    settings: ReplaySettings, policy: Policy, cache: CacheModel | None = None
) -> list[str]:
    """What a review assumed, printed with its table: the window the runtime knows and the one
    the provider really has, the budget and turn limit `policy` resolves on that route, the
    provider's true prices, the token counts and the cache model."""
    runtime = settings.runtime(policy)
    declared = (
        f"{runtime.capacity} tokens" if runtime.capacity is not None
        else f"unknown (the window operand is {runtime.context_window})"
    )
    budget = runtime.effective_context_budget()
    true_prices = settings.true_policy.changes()
    return [
        "settings:",
        f"  declared window  {declared}: what the capacity check knows",
        f"  true window      {settings.hidden_window or runtime.context_window} tokens: hidden"
        " from the runtime, where the provider refuses",
        f"  token budget     {f'{budget} tokens' if budget else 'off (max_context_tokens 0)'}",
        f"  turn limit       {runtime.max_turns} turns",
        f"  tool rounds      {settings.profile.max_tool_iterations} per turn"
        + (", or as many as a turn recorded" if settings.recorded_tool_rounds else ""),
        "  true prices      "
        + (", ".join(f"{k} {v}" for k, v in true_prices.items()) or "the spec's"),
        f"  token counts     {settings.tokenizer or 'the estimate (EST-1)'}",
        f"  prompt cache     {'none' if cache is None else cache.name}"
        + ("" if cache is None or cache.lifetime is None
           else f", {cache.lifetime} s lifetime" if settings.think_seconds is not None
           else ", always warm (no clock)"),
        *_clock_lines(settings),
        "",
    ]


def _clock_lines(settings: ReplaySettings) -> list[str]:
    """The replay clock's line, when it runs (CACHE-1..3)."""
    if settings.think_seconds is None:
        return []
    recorded = "the recorded times, else " if settings.recorded_times else ""
    return [f"  clock            {recorded}{settings.think_seconds:g} s between calls, "
            f"{settings.idle_seconds:g} s before a turn"]


def _batches(tasks: Sequence[Task], size: int) -> list[Sequence[Task]]:
    return [tasks[i : i + size] for i in range(0, len(tasks), size)]


def _progress(results: Iterable[list[list[SessionReplay]]], total: int, show: bool
              ) -> Iterator[list[list[SessionReplay]]]:
    """Batches as they finish, with a tqdm bar over sessions when asked (tqdm is optional)."""
    if not show:
        yield from results
        return
    try:
        from tqdm import tqdm  # type: ignore[import-untyped]
    except ImportError:  # the review extra is not installed: no bar
        yield from results
        return
    with tqdm(total=total, unit="session", desc="review") as bar:
        for batch in results:
            bar.update(len(batch))
            yield batch


def run_review(
    sessions: Sequence[ReviewSession | str],
    policies: Sequence[tuple[str, Policy]],
    settings: ReplaySettings,
    *,
    loader: Loader | None = None,
    workers: int | None = None,
    dask: str | None = None,
    progress: bool = False,
    batch_size: int = 25,
) -> Review:
    """Replay every session under every policy: in this process (`workers=1`), on a process
    pool over every core (the default), or on the Dask cluster at `dask` (an address). The
    cluster must be one you trust: Dask sends the results back pickled, and unpickling runs
    whatever the scheduler sends.

    A session given as a path is loaded by `loader` on the worker (the parent does no
    per-session work), so the workers must see the same files."""
    if not policies:
        raise ValueError("policies: at least one policy is needed")
    labels = [label for label, _ in policies]
    if len(set(labels)) != len(labels):
        raise ValueError(f"policies: labels must be unique, got {labels}")
    pairs = tuple(policies)
    tasks: list[Task] = [(session, loader, pairs, settings) for session in sessions]
    batches = _batches(tasks, batch_size)
    results: Iterable[list[list[SessionReplay]]]
    if dask is not None:
        results = _on_dask(dask, batches)
        rows = [row for batch in _progress(results, len(tasks), progress) for row in batch]
    else:
        count = workers if workers is not None else (os.cpu_count() or 1)
        if count < 1:
            raise ValueError(f"workers: must be >= 1, got {count}")
        if count == 1 or len(batches) <= 1:
            results = map(replay_batch, batches)
            rows = [row for batch in _progress(results, len(tasks), progress) for row in batch]
        else:
            with ProcessPoolExecutor(max_workers=count) as pool:
                results = pool.map(replay_batch, batches)
                rows = [row for batch in _progress(results, len(tasks), progress) for row in batch]
    return Review(
        tuple(labels), tuple(policy for _, policy in pairs), tuple(tuple(row) for row in rows)
    )


def _on_dask(address: str, batches: list[Sequence[Task]]) -> Iterator[list[list[SessionReplay]]]:
    """Run the batches on a Dask cluster, in order (distributed is an optional extra)."""
    try:
        from distributed import Client
    except ImportError:
        raise ValueError(
            "dask: the 'distributed' package is not installed (pip install 'histtrim[review]')"
        ) from None
    try:
        client = Client(address)  # type: ignore[no-untyped-call]
    except OSError as error:
        raise ValueError(f"dask: cannot connect to {address!r}: {error}") from None
    with client:
        futures = client.map(replay_batch, batches, pure=False)
        for future in futures:
            yield future.result()
