"""Tools the model may call: plain Python callables with a schema, and the toolbox that runs
each call into a capped tool result (PAIR-3)."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .estimate import ToolSchema, estimate_tool_schemas
from .messages import ToolCall, ToolResultMessage
from .safety import cap_tool_result


@dataclass(frozen=True)
class Tool:
    """A plain Python callable the model may call; JSON arguments become keyword arguments."""

    fn: Callable[..., object]
    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, fn: Callable[..., object] | Tool) -> Tool:
        """A callable as a tool named after it, described by its docstring's first line."""
        if isinstance(fn, Tool):
            return fn
        doc = inspect.getdoc(fn) or ""
        return cls(fn, getattr(fn, "__name__", type(fn).__name__), doc.split("\n", 1)[0])

    @property
    def schema(self) -> ToolSchema:
        return ToolSchema(
            name=self.name, description=self.description, parameters=dict(self.parameters)
        )


class _Toolbox:
    """Registered tools: their schemas, and each call run into a capped result (PAIR-3)."""

    def __init__(self, tools: Iterable[Tool | Callable[..., object]]) -> None:
        self.tools: dict[str, Tool] = {}
        for tool in map(Tool.of, tools):
            if tool.name in self.tools:
                raise ValueError(f"tools: duplicate tool name {tool.name!r}")
            self.tools[tool.name] = tool
        self.schemas = tuple(tool.schema for tool in self.tools.values())
        self.schema_tokens = estimate_tool_schemas(self.schemas)

    def run(self, call: ToolCall, max_chars: int) -> ToolResultMessage:
        tool = self.tools.get(call.name)
        output: object
        if tool is None:
            output = f"error: unknown tool {call.name!r}"
        else:
            try:
                arguments = json.loads(call.arguments)
                if not isinstance(arguments, dict):
                    raise ValueError("arguments must be a JSON object")
                output = tool.fn(**arguments)
            except Exception as exc:  # a failing tool is reported to the model, not raised
                output = f"error: {type(exc).__name__}: {exc}"
        text = output if isinstance(output, str) else json.dumps(output, default=str)
        return ToolResultMessage(
            tool_call_id=call.id, content=cap_tool_result(text, max_chars), tool_name=call.name
        )


