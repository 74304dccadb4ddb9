"""Agent-loop scenarios as protocol functions: one `Agent.turn` (RUN-1..3, SEEN-1..3, CAP-2..4,
LIMIT-1..2) and one `legacy_run` (SEEN-4), from a state, a provider script and the texts
the tools return, to every request sent, every event and the state after."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import ValidationError

from histtrim.agent.legacy import legacy_run
from histtrim.agent.providers import (
    ContextOverflowError,
    Overflow,
    ProviderReply,
    ScriptedProvider,
    ScriptExhaustedError,
    ScriptStep,
)
from histtrim.agent.runtime import Agent, UnrecoverableContextOverflow
from histtrim.agent.tools import Tool
from histtrim.capacity import ContextCapacityExceeded
from histtrim.conformance.codec import (
    INVALID_INPUT,
    JsonObject,
    ProtocolError,
    history_list,
    invalid,
    rows_json,
)
from histtrim.conformance.functions import runtime_of
from histtrim.events import EventBus, InMemoryTransport, ObservedTrim
from histtrim.messages import ToolCall

ERROR_KINDS: dict[type[Exception], str] = {
    ContextCapacityExceeded: "capacity_exceeded",
    UnrecoverableContextOverflow: "context_overflow_unrecoverable",
    ContextOverflowError: "context_overflow",
    ScriptExhaustedError: "script_exhausted",
}
"""The errors a scenario may end with, and the kind an implementation reports for each."""


def step_json(step: ScriptStep) -> JsonObject:
    if isinstance(step, Overflow):
        return {"overflow": step.message}
    return {"text": step.text, "tool_calls": [call.model_dump() for call in step.tool_calls]}


def _step(value: Any) -> ScriptStep:
    if not isinstance(value, Mapping):
        raise ProtocolError(INVALID_INPUT, "arguments.script: expected objects")
    if "overflow" in value:
        return Overflow(message=value["overflow"])
    calls = tuple(ToolCall.model_validate(call) for call in value.get("tool_calls", []))
    return ProviderReply(text=value.get("text"), tool_calls=calls)


def _provider(arguments: Mapping[str, Any]) -> ScriptedProvider:
    script = arguments.get("script", [])
    if not isinstance(script, list):
        raise ProtocolError(INVALID_INPUT, "arguments.script: expected an array")
    return ScriptedProvider(map(_step, script), hidden_window=arguments.get("hidden_window"))


def _tools(arguments: Mapping[str, Any]) -> list[Tool]:
    """Tools that answer, in call order, the recorded `tool_outputs` texts."""
    outputs: Iterator[Any] = iter(arguments.get("tool_outputs", []))

    def answer(**_: Any) -> str:
        text = next(outputs, None)
        if not isinstance(text, str):
            raise ProtocolError(INVALID_INPUT, "arguments.tool_outputs: too few texts")
        return text

    return [
        Tool(answer, spec["name"], spec.get("description", ""), spec.get("parameters", {}))
        for spec in arguments.get("tools", [])
    ]


def _requests(provider: ScriptedProvider) -> list[JsonObject]:
    return [
        {
            "messages": rows_json(request.messages),
            "tool_schemas": [schema.model_dump() for schema in request.tool_schemas],
            "outcome": request.outcome,
        }
        for request in provider.requests
    ]


def _run(body: Any) -> JsonObject:
    try:
        result: JsonObject = body()
    except ProtocolError:
        raise
    except (ValueError, ValidationError) as error:
        raise invalid(error) from None
    except tuple(ERROR_KINDS) as error:
        kind = next(k for t, k in ERROR_KINDS.items() if isinstance(error, t))
        raise ProtocolError(kind, str(error)) from None
    return result


def agent_turn(history: Any, arguments: Mapping[str, Any]) -> JsonObject:
    """One user turn of a structured agent restored to `history` (and `crumb_present`)."""

    def body() -> JsonObject:
        provider = _provider(arguments)
        transport = InMemoryTransport()
        observed: list[ObservedTrim] = []
        agent = Agent(
            provider,
            runtime_of(arguments.get("runtime", {})),
            system_prompt=arguments.get("system_prompt"),
            tools=_tools(arguments),
            bus=EventBus([transport], [observed.append]),
            channel="conformance",
            alias="agent",
        )
        agent.restore(history_list(history), crumb_present=arguments.get("crumb_present", False))
        agent.turn_id = arguments.get("turn_id", 0)
        outcome = agent.turn(arguments["text"])
        return {
            "reply": outcome.reply,
            "hit_iteration_limit": outcome.hit_iteration_limit,
            "requests": _requests(provider),
            "calls": [
                {
                    "iteration": call.iteration,
                    "kind": call.kind,
                    "outcome": call.outcome,
                    "history_tokens": call.history_tokens,
                    "tokens": call.tokens,
                    "budget": call.budget,
                    "window": call.window,
                    "trims": [event.to_wire() for event in call.trims],
                }
                for call in outcome.calls
            ],
            "client_events": transport.wire(),
            "observed": [
                {"turn_id": o.turn_id, "channel": o.channel, "reason": o.event.reason.value}
                for o in observed
            ],
            "history": rows_json(agent.history),
            "crumb_present": agent.crumb_present,
        }

    if not isinstance(arguments.get("text"), str):
        raise ProtocolError(INVALID_INPUT, "arguments.text: expected a string")
    return _run(body)


class _Recorder(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def legacy_run_scenario(history: Any, arguments: Mapping[str, Any]) -> JsonObject:
    """One turn of the legacy path (SEEN-4): the history after it and whether a trim was
    logged; no breadcrumb and no event exist on this path."""

    def body() -> JsonObject:
        provider = _provider(arguments)
        logger = logging.getLogger("histtrim.conformance.legacy")
        logger.propagate = False
        logger.setLevel(logging.DEBUG)
        recorder = _Recorder()
        logger.addHandler(recorder)
        try:
            result = legacy_run(
                provider,
                history_list(history),
                arguments["text"],
                runtime=runtime_of(arguments.get("runtime", {})),
                tools=_tools(arguments),
                logger=logger,
            )
        finally:
            logger.removeHandler(recorder)
        return {
            "history": rows_json(result.history),
            "reply": result.reply,
            "provider_calls": result.provider_calls,
            "dropped_messages": result.dropped_messages,
            "trim_logged": bool(recorder.messages),
            "requests": _requests(provider),
        }

    if not isinstance(arguments.get("text"), str):
        raise ProtocolError(INVALID_INPUT, "arguments.text: expected a string")
    return _run(body)


SCENARIOS = {"agent_turn": agent_turn, "legacy_run": legacy_run_scenario}
