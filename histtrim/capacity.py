"""The pre-dispatch capacity check (CAP-2..4): the prepared request must fit the window operand,
whatever the proactive budget is; otherwise no provider is called."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from .estimate import (
    ToolSchema,
    estimate_hooks,
    estimate_image_tokens,
    estimate_tool_schemas,
    message_costs,
)
from .messages import ChatMessage, chat_rows
from .route import ResolvedRuntime
from .turns import index_turns


class CapacityReport(BaseModel):
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
    if report.fixed >= report.window:
        return (
            f"system prompt and tool definitions ({report.fixed} tokens) alone meet or exceed "
            f"the context budget ({report.window} tokens); raise max_context_tokens or disable "
            "unused tools"
        )
    if report.capacity_known:
        limit = f"the model context window ({report.window} tokens)"
        remedy = "route to a model with a larger context_window"
    else:
        limit = (
            f"the fallback context window ({report.window} tokens; the model's capacity is unknown)"
        )
        remedy = "declare the model's context_window on its provider profile"
    return (
        f"request of {report.total} tokens exceeds {limit} by {report.total - report.window}: "
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
) -> CapacityReport:
    """The figures of a prepared request, without raising."""
    if isinstance(hooks, str):
        raise ValueError("hooks: expected an iterable of hook texts, got a single str")
    rows, policy = chat_rows(messages), runtime.policy
    costs = message_costs(rows, index_turns(rows), policy=policy)
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
    )


def check_request(
    messages: Iterable[ChatMessage | Mapping[str, Any]],
    *,
    runtime: ResolvedRuntime,
    tool_schemas: Iterable[ToolSchema | Mapping[str, Any]] = (),
    hooks: Iterable[str] = (),
) -> CapacityReport:
    """Check a prepared request before dispatch: messages + images + hooks + tool schemas must be
    `<= runtime.context_window`, even with proactive trimming off (CAP-2..4).

    Returns the report, or raises `ContextCapacityExceeded` carrying it."""
    report = capacity_report(messages, runtime=runtime, tool_schemas=tool_schemas, hooks=hooks)
    if not report.fits:
        raise ContextCapacityExceeded(report)
    return report
