"""Tools the model may call: plain Python callables with a schema, and the toolbox that runs
each call into a capped tool result (PAIR-3)."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictStr, field_validator

from histtrim.estimate import ToolSchema, estimate_tool_schemas
from histtrim.messages import Attachment, ToolCall, ToolResultMessage, as_attachments
from histtrim.policy import SPEC, Policy
from histtrim.safety import cap_tool_result


class ToolOutput(BaseModel):
    """What a tool returns to declare files with its text: the model reads `content`, and
    the images among `attachments` are dispatched with the result (EST-3), priced only while
    the result is in the current turn (EST-2). Targets may be given as strings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    content: StrictStr
    attachments: tuple[Attachment, ...] = Field(default=(), max_length=1_000)

    @field_validator("attachments", mode="before")
    @classmethod
    def _as_tuple(cls, value: Any) -> Any:
        return as_attachments(value)


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
    """Registered tools: their schemas, and each call run into a capped result (PAIR-3).

    Whatever a tool does (raise, return a circular, too deep or non-JSON value, or text that is
    not Unicode), its call gets a result: a failure becomes an `error: ...` result for the
    model, so an issued call is always answered (PAIR-1)."""

    def __init__(
        self, tools: Iterable[Tool | Callable[..., object]], policy: Policy = SPEC
    ) -> None:
        self.policy = policy
        if isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Iterable):
            raise TypeError(
                f"tools: expected an iterable of callables or Tools, got {type(tools).__name__}"
            )
        self.tools: dict[str, Tool] = {}
        for i, value in enumerate(tools):
            if not (isinstance(value, Tool) or callable(value)):
                raise TypeError(
                    f"tools[{i}]: expected a callable or a Tool, got {type(value).__name__}"
                )
            tool = Tool.of(value)
            if tool.name in self.tools:
                raise ValueError(f"tools: duplicate tool name {tool.name!r}")
            self.tools[tool.name] = tool
        self.schemas = tuple(tool.schema for tool in self.tools.values())
        self.schema_tokens = estimate_tool_schemas(self.schemas, policy=policy)

    def run(self, call: ToolCall, max_chars: int) -> ToolResultMessage:
        text, attachments = self._output(call)
        return ToolResultMessage(
            tool_call_id=call.id,
            content=cap_tool_result(text, max_chars, policy=self.policy),
            tool_name=call.name,
            attachments=attachments or None,
        )

    def _output(self, call: ToolCall) -> tuple[str, tuple[Attachment, ...]]:
        tool = self.tools.get(call.name)
        if tool is None:
            return f"error: unknown tool {call.name!r}", ()
        try:
            arguments = json.loads(call.arguments)
            if not isinstance(arguments, dict):
                raise ValueError("arguments must be a JSON object")
            output = tool.fn(**arguments)
            if isinstance(output, ToolOutput):
                return output_text(output.content), output.attachments
            return output_text(output), ()
        except Exception as exc:  # a failing tool is reported to the model, not raised
            return _error_text(exc), ()


def output_text(output: object) -> str:
    """A tool's output as the text of its result: a string as is, anything else as standard
    JSON (objects JSON cannot hold as their `str`). Raises when it is not UTF-8 text."""
    if isinstance(output, str):
        text = str.__str__(output)
    else:
        try:
            text = json.dumps(output, default=str, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as error:
            reason = "too deeply nested" if isinstance(error, RecursionError) else str(error)
            raise ValueError(f"the output cannot be serialized as JSON: {reason}") from None
        if "\\ud" in text:  # an escaped surrogate: a pair is fine, a lone one is no text
            _check_text(json.dumps(output, default=str, allow_nan=False, ensure_ascii=False))
    _check_text(text)
    return text


def _check_text(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError(f"the output is not UTF-8 text ({error.reason})") from None


def _error_text(exc: Exception) -> str:
    """`error: Type: message`, whatever the exception's text is (even none, or no Unicode)."""
    try:
        message = str(exc)
    except Exception:
        message = "<the error's message could not be read>"
    text = f"error: {type(exc).__name__}: {message}"
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
