"""Recording the calls a notebook makes: histtrim's public functions, `Agent.turn` and
`legacy_run` patched for the time of a run, each outermost call kept as a `RecordedCall`
under the rule IDs of the nearest heading that cites any (the tools' outputs included)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import histtrim
from histtrim.agent.legacy import legacy_run
from histtrim.agent.providers import ScriptedProvider
from histtrim.agent.runtime import Agent
from histtrim.agent.tools import Tool
from histtrim.conformance.codec import is_json_value, rows_json
from histtrim.conformance.scenario import step_json
from livingspec.specindex import RULE_ID
from livingspec.vectors.converters import CONVERTERS, runtime_json


@dataclass(frozen=True)
class RecordedCall:
    """One call a notebook made: where, under which rule IDs, and its protocol form."""

    notebook: str
    cell: int
    heading_rules: tuple[str, ...]
    function: str
    history: list[Any] | None
    arguments: dict[str, Any]


class Session:
    """The recorder of one notebook run: the current cell and heading, and the calls made."""

    def __init__(self, notebook: str) -> None:
        self.notebook = notebook
        self.cell = 0
        self.headings: dict[int, str] = {}
        self.calls: list[RecordedCall] = []
        self.depth = 0

    def heading_rules(self) -> tuple[str, ...]:
        """The rule IDs of the deepest current heading that cites any."""
        for level in sorted(self.headings, reverse=True):
            found = tuple(dict.fromkeys(RULE_ID.findall(self.headings[level])))
            if found:
                return found
        return ()

    def add(self, function: str, history: Any, arguments: dict[str, Any]) -> None:
        if is_json_value(arguments):  # rows always are (their content is checked UTF-8 text)
            self.calls.append(
                RecordedCall(
                    self.notebook, self.cell, self.heading_rules(), function, history, arguments
                )
            )

    @contextlib.contextmanager
    def outermost(self) -> Iterator[bool]:
        """True only for a call made by the notebook itself, not by a wrapped function."""
        self.depth += 1
        try:
            yield self.depth == 1
        finally:
            self.depth -= 1


def _wrap(session: Session, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    convert = CONVERTERS[name]

    def recorded(*args: Any, **kwargs: Any) -> Any:
        with session.outermost() as outermost:
            if outermost:
                try:
                    history, arguments = convert(*args, **kwargs)
                except (TypeError, KeyError, ValueError, AttributeError):
                    pass  # a call the protocol cannot express (e.g. a generator argument)
                else:
                    session.add(name, history, arguments)
            return original(*args, **kwargs)

    return recorded


class _ToolOutputs:
    """Wraps an agent's tools so the texts they return are recorded in call order."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def wrap(self, tool: Tool) -> Tool:
        def run(**kwargs: Any) -> str:
            try:
                output = tool.fn(**kwargs)
            except Exception as error:
                self.texts.append(f"error: {type(error).__name__}: {error}")
                raise
            text = output if isinstance(output, str) else json.dumps(output, default=str)
            self.texts.append(text)
            return text

        return Tool(run, tool.name, tool.description, tool.parameters)


def _tool_specs(tools: Mapping[str, Tool]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "parameters": dict(t.parameters)}
        for t in tools.values()
    ]


def _script(provider: Any) -> dict[str, Any] | None:
    """The provider as a scenario's script, or None when the protocol cannot express it (not
    scripted, or counting each request itself for its usage reports, `reports=`)."""
    if not isinstance(provider, ScriptedProvider) or provider.reports is not None:
        return None
    return {
        "script": [step_json(step) for step in provider._script],
        "hidden_window": provider.hidden_window,
    }


def _record_turn(session: Session, original: Callable[..., Any]) -> Callable[..., Any]:
    def turn(agent: Agent, text: str) -> Any:
        script = _script(agent.provider)
        if script is None or session.depth:
            return original(agent, text)
        outputs = _ToolOutputs()
        tools = agent.toolbox.tools
        history = rows_json(agent.history)
        state = {
            "runtime": runtime_json(agent.runtime),
            "system_prompt": agent.system_prompt,
            "crumb_present": agent.crumb_present,
            "tools": _tool_specs(tools),
            "turn_id": agent.turn_id,
            "text": text,
            **script,
        }
        agent.toolbox.tools = {name: outputs.wrap(tool) for name, tool in tools.items()}
        try:
            with session.outermost():
                return original(agent, text)
        finally:
            agent.toolbox.tools = tools
            session.add("agent_turn", history, {**state, "tool_outputs": outputs.texts})

    return turn


def _record_legacy(session: Session, original: Callable[..., Any]) -> Callable[..., Any]:
    def run(provider: Any, history: Any, text: str, **kwargs: Any) -> Any:
        script = _script(provider)
        history = list(history)
        if script is None or session.depth:
            return original(provider, history, text, **kwargs)
        outputs = _ToolOutputs()
        tools = {t.name: t for t in map(Tool.of, kwargs.get("tools", ()))}
        arguments = {
            "runtime": runtime_json(kwargs["runtime"]),
            "tools": _tool_specs(tools),
            "text": text,
            **script,
        }
        kwargs["tools"] = [outputs.wrap(tool) for tool in tools.values()]
        try:
            with session.outermost():
                return original(provider, history, text, **kwargs)
        finally:
            recorded = {**arguments, "tool_outputs": outputs.texts}
            session.add("legacy_run", rows_json(history), recorded)

    return run


@contextlib.contextmanager
def recording(session: Session) -> Iterator[None]:
    """The public functions, `Agent.turn` and `legacy_run` record into `session` meanwhile."""
    saved: list[tuple[Any, str, Any]] = []

    def patch(owner: Any, name: str, value: Any) -> None:
        saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    for name in CONVERTERS:
        patch(histtrim, name, _wrap(session, name, getattr(histtrim, name)))
    patch(Agent, "turn", _record_turn(session, Agent.turn))
    legacy = _record_legacy(session, legacy_run)
    patch(histtrim, "legacy_run", legacy)
    try:
        yield
    finally:
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)
