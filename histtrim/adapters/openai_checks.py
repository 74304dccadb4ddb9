"""The checks a chat-completions message must pass before `adapters.openai` converts it
(messages are hostile input): its role, content, parts, tool-call id and tool calls. A
failure is an `OpenAIFormatError` naming the message's index and field."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from histtrim.adapters.kinds import json_kind

ROLES = ("system", "developer", "user", "assistant", "tool")
"""The chat-completions roles histtrim reads (`developer` is kept as a system row)."""


class OpenAIFormatError(ValueError):
    """A message that is not a chat-completions message; names its index and field."""

    def __init__(self, index: int, field: str, problem: str) -> None:
        self.index, self.field, self.problem = index, field, problem
        where = f"messages[{index}]" + (f".{field}" if field else "")
        super().__init__(f"{where}: {problem}")


def check_message(index: int, message: object) -> None:
    """The checks a chat-completions message must pass; everything else is carried as is."""

    def fail(field: str, problem: str) -> OpenAIFormatError:
        return OpenAIFormatError(index, field, problem)

    if not isinstance(message, Mapping):
        raise fail("", f"expected an object, got {type(message).__name__}")
    role = message.get("role")
    if role == "function":
        raise fail(
            "role",
            "role 'function' is the legacy function-calling format, which histtrim does not "
            "read: convert it to a 'tool' message answering a tool call (tool_call_id)",
        )
    if role not in ROLES:
        raise fail("role", f"expected one of {', '.join(ROLES)}; got {role!r}")
    if role != "assistant" and "content" not in message:
        raise fail("content", "required")
    content = message.get("content")
    if role == "assistant" and content is None:
        pass
    elif isinstance(content, list):
        for k, part in enumerate(content):
            _check_part(fail, f"content[{k}]", part)
    elif not isinstance(content, str):
        raise fail("content", f"expected a string or a list of parts, got {json_kind(content)}")
    if role == "tool":
        call_id = message.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise fail("tool_call_id", f"expected a non-empty string, got {json_kind(call_id)}")
    if role == "assistant" and message.get("tool_calls") is not None:
        calls = message["tool_calls"]
        if not isinstance(calls, list):
            raise fail("tool_calls", f"expected a list, got {json_kind(calls)}")
        for k, call in enumerate(calls):
            _check_call(fail, f"tool_calls[{k}]", call)


_Fail = Callable[[str, str], OpenAIFormatError]


ANTHROPIC_BLOCKS = frozenset(
    {"tool_use", "tool_result", "image", "document", "thinking", "redacted_thinking"}
)
"""Block types of Anthropic messages that chat-completions has no part for: text read as
OpenAI parts would silently lose them, so they are refused."""


def _check_part(fail: _Fail, field: str, part: object) -> None:
    if not isinstance(part, Mapping):
        raise fail(field, f"expected an object, got {json_kind(part)}")
    kind = part.get("type")
    if not isinstance(kind, str):
        raise fail(f"{field}.type", f"expected a string, got {json_kind(kind)}")
    if kind in ANTHROPIC_BLOCKS:
        raise fail(
            f"{field}.type",
            f"{kind!r} is an Anthropic content block, not a chat-completions part "
            "(an Anthropic request body is read as such when its format is detected)",
        )
    if kind == "text" and not isinstance(part.get("text"), str):
        raise fail(f"{field}.text", f"expected a string, got {json_kind(part.get('text'))}")
    if kind == "image_url":
        image = part.get("image_url")
        if not isinstance(image, Mapping):
            raise fail(f"{field}.image_url", f"expected an object, got {json_kind(image)}")
        if not isinstance(image.get("url"), str):
            url = image.get("url")
            raise fail(f"{field}.image_url.url", f"expected a string, got {json_kind(url)}")


def _check_call(fail: _Fail, field: str, call: object) -> None:
    if not isinstance(call, Mapping):
        raise fail(field, f"expected an object, got {json_kind(call)}")
    if not isinstance(call.get("id"), str) or not call["id"]:
        raise fail(f"{field}.id", f"expected a non-empty string, got {json_kind(call.get('id'))}")
    if call.get("type", "function") != "function":
        raise fail(f"{field}.type", f"only 'function' calls are supported, got {call['type']!r}")
    function = call.get("function")
    if not isinstance(function, Mapping):
        raise fail(f"{field}.function", f"expected an object, got {json_kind(function)}")
    if not isinstance(function.get("name"), str) or not function["name"]:
        name = function.get("name")
        raise fail(f"{field}.function.name", f"expected a non-empty string, got {json_kind(name)}")
    if not isinstance(function.get("arguments"), str):
        raise fail(
            f"{field}.function.arguments",
            f"expected a JSON string, got {json_kind(function.get('arguments'))}",
        )
