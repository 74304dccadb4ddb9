"""What the three integrations share: the limits resolved once (budget, turn limit, counter,
policy), the whole-turn trim of a framework's units (one provider-facing row each), the
reactive 2/3 trim after an overflow, the pairing guard and the event delivery.

A unit is whatever one row stands for in a framework (a message, some parts of a message, a
run of input items); the framework module maps units to rows and kept units back to its own
objects. The cut is `histtrim.adapters.trim_records`, so it is the library's cut exactly."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from histtrim.adapters import trim_records, trim_records_held
from histtrim.config import RuntimeProfile
from histtrim.counting import Pricing, TokenCounter
from histtrim.events import HistoryTrimmed
from histtrim.low_water import holds_cut
from histtrim.messages import ChatMessage
from histtrim.pairing import validate_tool_pairing
from histtrim.policy import SPEC, Policy
from histtrim.route import ResolvedRuntime, resolve_runtime
from histtrim.turns import index_turns

U = TypeVar("U")

OnTrim = Callable[[HistoryTrimmed], object]
"""Receives each `HistoryTrimmed` (SEEN-2), e.g. `EventBus` transport's `send` or `list.append`."""

LOGGER = "histtrim.integrations"


class ToolPairingError(ValueError):
    """The request would break the tool-pairing rule providers enforce: it is not sent."""


@dataclass(frozen=True)
class Trimmed(Generic[U]):
    """The units to send, their rows, whether the breadcrumb leads them, and the events."""

    units: list[U]
    rows: list[ChatMessage]
    crumb_present: bool
    events: tuple[HistoryTrimmed, ...]

    @property
    def trimmed(self) -> bool:
        return bool(self.events)


class Trimmer:
    """The spec's limits for one integration, resolved once.

    Pass a `ResolvedRuntime` (from `histtrim.resolve_runtime` or `histtrim.select_route`) for
    the spec's budget (BUDGET-1..9) and turn limit (LIMIT-2), or a plain `budget_tokens`
    (0: no token trim) with an optional `max_turns`; with neither, the spec's defaults for an
    empty `RuntimeProfile` apply (32,000 tokens, 50 turns). `token_counter` prices each row's
    text instead of EST-1's bytes (`histtrim.counting`); `on_trim` receives every event.

    `policy` (default: the runtime's, else the spec's) gives the constants and the low-water
    marks: with `Policy(token_trim_target=Fraction(7, 10))` the framework's whole history,
    passed on every request, is cut where the `Agent` would hold its cut
    (`histtrim.low_water`), so the provider's prompt cache stays warm between cut moves."""

    def __init__(
        self,
        runtime: ResolvedRuntime | None = None,
        *,
        budget_tokens: int | None = None,
        max_turns: int | None = None,
        token_counter: TokenCounter | None = None,
        on_trim: OnTrim | None = None,
        policy: Policy | None = None,
    ) -> None:
        if policy is not None and not isinstance(policy, Policy):
            raise ValueError(
                f"policy: expected a histtrim Policy, got {type(policy).__name__}"
            )
        if runtime is not None and budget_tokens is not None:
            raise ValueError("budget_tokens: pass a runtime or a budget, not both")
        if runtime is not None and not isinstance(runtime, ResolvedRuntime):
            raise ValueError(
                f"runtime: expected a ResolvedRuntime (histtrim.resolve_runtime), got "
                f"{type(runtime).__name__}"
            )
        limit: int | None = max_turns
        chosen = SPEC if policy is None else policy
        if budget_tokens is None:
            if runtime is not None and policy is not None and runtime.policy != policy:
                runtime = runtime.model_copy(update={"policy": policy})
            resolved = runtime or resolve_runtime(RuntimeProfile(), None, None, policy=chosen)
            self.budget_tokens = resolved.effective_context_budget()
            limit = resolved.max_turns if max_turns is None else max_turns
            self.policy = resolved.policy
        else:
            self.budget_tokens = _count("budget_tokens", budget_tokens)
            self.policy = resolve_runtime(RuntimeProfile(), None, None, policy=chosen).policy
        self.max_turns = None if limit is None else _count("max_turns", limit)
        if token_counter is not None and not callable(token_counter):
            raise ValueError("token_counter: expected a callable from a ChatMessage to an int")
        if on_trim is not None and not callable(on_trim):
            raise ValueError("on_trim: expected a callable receiving a HistoryTrimmed")
        self.token_counter = token_counter
        self.pricing = Pricing(self.policy, token_counter)
        """How every figure is priced: the policy's constants and the counter, if any."""
        self.on_trim = on_trim

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(budget_tokens={self.budget_tokens}, "
            f"max_turns={self.max_turns}, token_counter={self.token_counter!r}"
            f"{'' if self.policy == SPEC else f', policy={self.policy.changes()}'})"
        )

    def estimate(self, rows: Sequence[ChatMessage]) -> int:
        """The rows' size as the trims price it (the counter's, else EST-1..4)."""
        return self.pricing.total(rows)

    def trim(
        self, units: Sequence[U], rows: Sequence[ChatMessage], *, crumb: U, crumb_present: bool
    ) -> Trimmed[U]:
        """The turn limit (KEEP-2, LIMIT-1), then the token budget (KEEP-1, RUN-1), by whole
        turns; a drop inserts `crumb` after the leading system units (SEEN-1) and emits one
        event (SEEN-2). Nothing to drop: the same units, in order (TURN-6). A policy with a
        low-water mark plans both limits in one replay (`trim_records_held`)."""
        if holds_cut(self.policy):
            done = trim_records_held(
                list(units), list(rows), max_turns=self.max_turns,
                budget_tokens=self.budget_tokens, budget_in_force=self.budget_tokens,
                crumb_present=crumb_present, breadcrumb_record=crumb,
                token_counter=self.token_counter, policy=self.policy,
            )
            self._emit(done.events)
            return Trimmed(done.records, done.rows, done.crumb_present, done.events)
        out_units, out_rows, events = list(units), list(rows), []
        if self.max_turns is not None:
            done = trim_records(
                out_units, out_rows, max_turns=self.max_turns, crumb_present=crumb_present,
                breadcrumb_record=crumb, budget_in_force=self.budget_tokens,
                token_counter=self.token_counter, policy=self.policy,
            )
            out_units, out_rows, crumb_present = done.records, done.rows, done.crumb_present
            if done.event is not None:
                events.append(done.event)
        if self.budget_tokens > 0:
            done = trim_records(
                out_units, out_rows, budget_tokens=self.budget_tokens,
                crumb_present=crumb_present, breadcrumb_record=crumb,
                token_counter=self.token_counter, policy=self.policy,
            )
            out_units, out_rows, crumb_present = done.records, done.rows, done.crumb_present
            if done.event is not None:
                events.append(done.event)
        self._emit(events)
        return Trimmed(out_units, out_rows, crumb_present, tuple(events))

    def reactive(
        self, units: Sequence[U], rows: Sequence[ChatMessage], *, crumb: U, crumb_present: bool
    ) -> Trimmed[U] | None:
        """After the provider reported an overflow for these rows: trim them to two thirds of
        their estimate (RUN-2). None when one turn is left: nothing older can be dropped."""
        if index_turns(rows, crumb_present=crumb_present).turn_count <= 1:
            return None
        target = self.policy.reactive_tokens(self.estimate(rows))
        done = trim_records(
            list(units), list(rows), budget_tokens=target, crumb_present=crumb_present,
            breadcrumb_record=crumb, token_counter=self.token_counter, policy=self.policy,
        )
        events = () if done.event is None else (done.event.after_overflow(),)
        self._emit(events)
        return Trimmed(done.records, done.rows, done.crumb_present, events)

    @staticmethod
    def check_pairing(rows: Sequence[ChatMessage]) -> None:
        """Refuse a request every OpenAI-style API would reject (PAIR-1): a call without its
        results, or a result without its call. Whole-turn trims never cause one; a history
        broken before it reached the integration is reported here, not sent."""
        errors = [problem for problem in validate_tool_pairing(rows) if problem.is_error]
        if errors:
            raise ToolPairingError(
                f"the request breaks tool pairing and was not sent: {errors[0]}"
                + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else "")
            )

    def _emit(self, events: Sequence[HistoryTrimmed]) -> None:
        """Each event to `on_trim`; a callback that raises is logged, the run goes on (SEEN-3)."""
        if self.on_trim is None:
            return
        for event in events:
            try:
                self.on_trim(event)
            except Exception:
                logging.getLogger(LOGGER).exception("histtrim: on_trim failed for %r", event)


def _count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name}: expected an integer >= 0, got {value!r}")
    return value
