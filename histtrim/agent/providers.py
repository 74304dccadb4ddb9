"""The provider boundary: the `Provider` protocol, its overflow error, and `ScriptedProvider`,
a deterministic provider that replays a script and records every request (for notebooks/tests)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, StrictStr

from histtrim._checks import non_negative
from histtrim.estimate import (
    ToolSchema,
    estimate_history_tokens,
    estimate_tool_schemas,
    text_tokens,
)
from histtrim.messages import ChatMessage, ToolCall
from histtrim.policy import SPEC, Policy


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Usage(_Frozen):
    """Token usage as the provider reports it."""

    prompt_tokens: NonNegativeInt = 0
    completion_tokens: NonNegativeInt = 0


class ProviderReply(_Frozen):
    """One model reply: text and/or tool calls, plus the usage the provider reported."""

    text: StrictStr | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Field(default_factory=Usage)


class Overflow(_Frozen):
    """A script step: the provider rejects this call with a context-window overflow."""

    message: StrictStr = "context window exceeded"


ScriptStep = ProviderReply | Overflow


class ContextOverflowError(Exception):
    """The provider reported that the request did not fit its context window (PAIR-4)."""

    def __init__(self, message: str, *, request_tokens: int | None = None) -> None:
        super().__init__(message)
        self.request_tokens = request_tokens


class ProviderError(RuntimeError):
    """The provider answered with something that is not a `ProviderReply`."""


class ScriptExhaustedError(RuntimeError):
    """A `ScriptedProvider` was called after its script ran out."""


class Provider(Protocol):
    """One call: the prepared messages and tool schemas in, one reply out."""

    def complete(
        self, messages: Sequence[ChatMessage], tool_schemas: Sequence[ToolSchema]
    ) -> ProviderReply: ...


def checked_reply(provider: object, answer: object) -> ProviderReply:
    """`answer` when it is a `ProviderReply`; else a `ProviderError` naming the provider (what
    a provider returns is checked like any other input)."""
    if not isinstance(answer, ProviderReply):
        raise ProviderError(
            f"provider {type(provider).__name__} returned {type(answer).__name__}, "
            "not a ProviderReply"
        )
    return answer


Outcome = Literal["reply", "overflow", "exhausted"]


@dataclass(frozen=True)
class ProviderRequest:
    """A request as the provider received it, and what the provider did with it."""

    messages: tuple[ChatMessage, ...]
    tool_schemas: tuple[ToolSchema, ...]
    outcome: Outcome
    policy: Policy = SPEC
    counted: int | None = None
    """The provider's own count when it counts otherwise than the estimate (`counter`)."""

    @property
    def estimated_tokens(self) -> int:
        """The histtrim estimate of the messages plus the tool schemas."""
        policy = self.policy
        return estimate_history_tokens(self.messages, policy=policy) + estimate_tool_schemas(
            self.tool_schemas, policy=policy
        )

    @property
    def true_tokens(self) -> int:
        """The request as the provider counted it: its own count, else the estimate."""
        return self.estimated_tokens if self.counted is None else self.counted


RequestCounter = Callable[[Sequence[ChatMessage], Sequence[ToolSchema]], int]
"""How a provider counts a request's input tokens (its rows and tool schemas)."""


def estimated_input(policy: Policy = SPEC) -> RequestCounter:
    """A provider that counts input as the estimate with `policy`'s prices does."""

    def count(rows: Sequence[ChatMessage], schemas: Sequence[ToolSchema]) -> int:
        return estimate_history_tokens(rows, policy=policy) + estimate_tool_schemas(
            schemas, policy=policy
        )

    return count


class ScriptedProvider:
    """Replays `script` one step per call; with `hidden_window`, any request whose estimate
    exceeds it overflows without consuming a step (a window the runtime does not know).

    `policy` prices requests as this model really does (its hidden image price, say).
    `reports` counts each answered request's input for the reply's `Usage` (a tokenizer, or
    `estimated_input(policy)`); None: the provider reports no usage, as a script step that
    states none (a step's stated usage is always returned as it is). `counter`, when given,
    is how the provider really counts a request against `hidden_window` (say, fitted to a
    recording's usage); None: the estimate under `policy`."""

    def __init__(
        self,
        script: Iterable[ScriptStep] = (),
        *,
        hidden_window: int | None = None,
        policy: Policy = SPEC,
        reports: RequestCounter | None = None,
        counter: RequestCounter | None = None,
    ) -> None:
        if hidden_window is not None:
            non_negative("hidden_window", hidden_window)
        self._script: deque[ScriptStep] = deque(script)
        self.hidden_window = hidden_window
        self.policy = policy
        self.reports = reports
        self.counter = counter
        self.requests: list[ProviderRequest] = []

    @property
    def remaining(self) -> int:
        """Script steps not yet replayed."""
        return len(self._script)

    def extend(self, steps: Iterable[ScriptStep]) -> None:
        """Append steps to the script."""
        self._script.extend(steps)

    def complete(
        self, messages: Sequence[ChatMessage], tool_schemas: Sequence[ToolSchema]
    ) -> ProviderReply:
        rows, schemas, policy = tuple(messages), tuple(tool_schemas), self.policy
        counted = None if self.counter is None else self.counter(rows, schemas)
        tokens = counted if counted is not None else estimate_history_tokens(
            rows, policy=policy) + estimate_tool_schemas(schemas, policy=policy)
        if self.hidden_window is not None and tokens > self.hidden_window:
            self.requests.append(ProviderRequest(rows, schemas, "overflow", policy, counted))
            raise ContextOverflowError(
                f"context window exceeded: {tokens} tokens > {self.hidden_window}",
                request_tokens=tokens,
            )
        if not self._script:
            self.requests.append(ProviderRequest(rows, schemas, "exhausted", policy, counted))
            raise ScriptExhaustedError(f"script exhausted after {len(self.requests) - 1} calls")
        step = self._script.popleft()
        if isinstance(step, Overflow):
            self.requests.append(ProviderRequest(rows, schemas, "overflow", policy, counted))
            raise ContextOverflowError(step.message, request_tokens=tokens)
        self.requests.append(ProviderRequest(rows, schemas, "reply", policy, counted))
        if step.usage != Usage() or self.reports is None:
            return step  # the script states the usage the provider reports, or none
        completion = text_tokens(step.text or "", policy=policy) + sum(
            text_tokens(call.name + call.arguments, policy=policy) for call in step.tool_calls
        )
        usage = Usage(prompt_tokens=self.reports(rows, schemas), completion_tokens=completion)
        return step.model_copy(update={"usage": usage})
