"""CAP-2..4: the pre-dispatch capacity check: the prepared request must fit the window operand,
whatever the proactive budget is; otherwise no provider is called."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ConfigDict

from histtrim._unset import HidesUnset, unset_by_default
from histtrim.counting import Pricing, TokenCounter
from histtrim.estimate import (
    ToolSchema,
    estimate_hooks,
    estimate_image_tokens,
    estimate_tool_schemas,
)
from histtrim.messages import ChatMessage, chat_rows
from histtrim.route import ResolvedRuntime
from histtrim.turns import index_turns


class CapacityReport(HidesUnset):
    """The token figures of one prepared request against the window operand."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    messages: int
    """The messages' estimate without their images (system rows included)."""
    images: int
    """IMAGE_TOKENS per dispatched image."""
    hooks: int
    tool_schemas: int
    total: int
    window: int
    """The window operand: the known capacity, or the fallback when it is unknown (ROUTE-4)."""
    system: int
    """The system rows' share of `messages`."""
    budget: int
    """The proactive target, for the diagnostic only: it never decides the check (CAP-3)."""
    capacity_known: bool
    counter: str | None = unset_by_default()
    """The `token_counter` that priced the messages' text; None (then left out of every dump):
    the spec's estimate (EST-1)."""

    @property
    def fits(self) -> bool:
        return self.total <= self.window

    @property
    def fixed(self) -> int:
        """System rows plus tool schemas: what no history trim can remove."""
        return self.system + self.tool_schemas


class ContextCapacityExceeded(Exception):
    """A prepared request does not fit the model context window; it was not dispatched (CAP-2)."""

    def __init__(self, report: CapacityReport) -> None:
        self.report = report
        super().__init__(capacity_message(report))


def capacity_message(report: CapacityReport) -> str:
    """What does not fit, by how much, and what to change."""
    if report.capacity_known:
        limit = f"the model context window ({report.window} tokens)"
        remedy = "route to a model with a larger context_window"
    else:
        limit = (
            f"the fallback context window ({report.window} tokens; the model's capacity is unknown)"
        )
        remedy = "declare the model's context_window on its provider profile"
    if report.fixed >= report.window:
        # The window (the hard limit), never "budget" (the proactive target): CAP-3.
        return (
            f"system prompt and tool definitions ({report.fixed} tokens) alone meet or exceed "
            f"{limit}; {remedy} or disable unused tools"
        )
    counted = "" if report.counter is None else f" (messages counted by {report.counter})"
    return (
        f"request of {report.total} tokens{counted} exceeds {limit} by "
        f"{report.total - report.window}: "
        f"messages {report.messages}, images {report.images}, hooks {report.hooks}, "
        f"tool schemas {report.tool_schemas}; shorten the newest turn, remove images or "
        f"unused tools, or {remedy}"
    )


def capacity_report(
    messages: Iterable[ChatMessage | Mapping[str, Any]],
    *,
    runtime: ResolvedRuntime,
    tool_schemas: Iterable[ToolSchema | Mapping[str, Any]] = (),
    hooks: Iterable[str] = (),
    token_counter: TokenCounter | None = None,
) -> CapacityReport:
    """The figures of a prepared request, without raising; a `token_counter` prices the
    messages' text (not the images, hooks or tool schemas: see `histtrim.counting`)."""
    if isinstance(hooks, str):
        raise ValueError("hooks: expected an iterable of hook texts, got a single str")
    rows, policy = chat_rows(messages), runtime.policy
    prices = Pricing(policy, token_counter)
    costs = prices.costs(rows, index_turns(rows))
    images = estimate_image_tokens(rows, policy=policy)
    hook_tokens = estimate_hooks(hooks, policy=policy)
    schema_tokens = estimate_tool_schemas(tool_schemas, policy=policy)
    estimate = sum(costs)
    return CapacityReport(
        messages=estimate - images,
        images=images,
        hooks=hook_tokens,
        tool_schemas=schema_tokens,
        total=estimate + hook_tokens + schema_tokens,
        window=runtime.context_window,
        system=sum(cost for row, cost in zip(rows, costs, strict=True) if row.role == "system"),
        budget=runtime.effective_context_budget(),
        capacity_known=runtime.capacity is not None,
        counter=prices.counter_name,
    )


def check_request(
    messages: Iterable[ChatMessage | Mapping[str, Any]],
    *,
    runtime: ResolvedRuntime,
    tool_schemas: Iterable[ToolSchema | Mapping[str, Any]] = (),
    hooks: Iterable[str] = (),
    token_counter: TokenCounter | None = None,
) -> CapacityReport:
    """Check a prepared request before dispatch: messages + images + hooks + tool schemas must be
    `<= runtime.context_window`, even with proactive trimming off (CAP-2..4).

    Returns the report, or raises `ContextCapacityExceeded` carrying it. A `token_counter`
    prices the messages' text instead of EST-1's bytes."""
    report = capacity_report(
        messages,
        runtime=runtime,
        tool_schemas=tool_schemas,
        hooks=hooks,
        token_counter=token_counter,
    )
    if not report.fits:
        raise ContextCapacityExceeded(report)
    return report
