"""OpenAI chat-completions messages <-> histtrim provider-facing rows, and whole-turn trims
that take and return OpenAI dicts.

One message is one row, so turns, estimates and trims are the library's own. The usual
shapes map to the rows the runtime itself keeps: image parts become `[IMAGE:url]` markers
in a user row (priced as images, EST-2), `tool_calls` the native tool-call envelope and a
`tool` message the tool-result envelope. Whatever such a row cannot say (a `name`, an image
`detail`, `refusal`, adjacent text parts, any other key) rides along under an `"openai"`
key, so `to_openai(from_openai(messages)) == messages` for every message (compared as JSON):
- user/system rows become `{"openai": <the message>}` with image URLs written as markers;
- assistant/tool rows keep their envelope and add `"openai": {"set": {...}, "unset": [...]}`,
  the keys that differ from what the envelope alone converts back to.
`from_openai` checks every row it makes converts back exactly, or raises.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..carriers import (
    IMAGE_MARKER,
    is_loadable_target,
    json_object,
    parse_tool_calls,
    parse_tool_result,
)
from ..messages import BREADCRUMB, ChatMessage, ToolCall, chat_rows
from ..policy import SPEC, Policy
from . import RecordTrimResult, trim_records

OpenAIMessage = dict[str, Any]

ROLES = ("system", "developer", "user", "assistant", "tool")
"""The chat-completions roles histtrim reads (`developer` is kept as a system row)."""

ENVELOPE_KEY = "openai"
_MARK_OPEN, _MARK_CLOSE = "[IMAGE:", "]"


class OpenAIFormatError(ValueError):
    """A message that is not a chat-completions message; names its index and field."""

    def __init__(self, index: int, field: str, problem: str) -> None:
        self.index, self.field, self.problem = index, field, problem
        where = f"messages[{index}]" + (f".{field}" if field else "")
        super().__init__(f"{where}: {problem}")


def from_openai(messages: Iterable[Mapping[str, Any]]) -> list[ChatMessage]:
    """The provider-facing rows of chat-completions messages, one row per message."""
    return [_to_row(i, message) for i, message in enumerate(messages)]


def to_openai(history: Iterable[ChatMessage | Mapping[str, Any]]) -> list[OpenAIMessage]:
    """Chat-completions messages for provider-facing rows (new dicts, one per row).

    A `tool` row must be a tool-result envelope without attachments: the format has no place
    for tool images or for a result without its call id. A row whose text is itself an
    adapter envelope (a JSON object with an `"openai"` key) converts to what it carries."""
    out: list[OpenAIMessage] = []
    for i, row in enumerate(chat_rows(history)):
        try:
            out.append(_to_message(row))
        except ValueError as error:
            raise ValueError(f"rows[{i}].content: {error}") from None
    return out


def openai_breadcrumb() -> OpenAIMessage:
    """The breadcrumb as a chat-completions message (a user message, like the row)."""
    return {"role": "user", "content": BREADCRUMB}


def trim_openai(
    messages: Sequence[Mapping[str, Any]],
    *,
    budget_tokens: int | None = None,
    max_turns: int | None = None,
    crumb_present: bool = False,
    breadcrumb: bool = True,
    policy: Policy = SPEC,
) -> RecordTrimResult[OpenAIMessage]:
    """Trim chat-completions messages by token budget or turn count, whole turns only.

    Kept messages come back as copies of the input dicts, untouched; when turns are dropped
    the breadcrumb message is inserted after the leading system messages (unless
    `breadcrumb=False`) and the result carries the `HistoryTrimmed` event."""
    rows = from_openai(messages)
    return trim_records(
        [copy.deepcopy(dict(m)) for m in messages],
        rows,
        budget_tokens=budget_tokens,
        max_turns=max_turns,
        crumb_present=crumb_present,
        breadcrumb_record=openai_breadcrumb() if breadcrumb else None,
        policy=policy,
    )


# -- messages -> rows --------------------------------------------------------------------


def _to_row(index: int, message: Mapping[str, Any]) -> ChatMessage:
    _check(index, message)
    original = dict(message)
    plain = _plain_row(original)
    if plain is not None and _converts_back(plain, original):
        return plain
    row = _envelope_row(index, original)
    if not _converts_back(row, original):
        raise OpenAIFormatError(
            index, "", "cannot be carried losslessly: keys must be strings and values JSON"
        )
    return row


def _check(index: int, message: object) -> None:
    """The checks a chat-completions message must pass; everything else is carried as is."""

    def fail(field: str, problem: str) -> OpenAIFormatError:
        return OpenAIFormatError(index, field, problem)

    if not isinstance(message, Mapping):
        raise fail("", f"expected an object, got {type(message).__name__}")
    role = message.get("role")
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
        raise fail("content", f"expected a string or a list of parts, got {_kind(content)}")
    if role == "tool":
        call_id = message.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise fail("tool_call_id", f"expected a non-empty string, got {_kind(call_id)}")
    if role == "assistant" and message.get("tool_calls") is not None:
        calls = message["tool_calls"]
        if not isinstance(calls, list):
            raise fail("tool_calls", f"expected a list, got {_kind(calls)}")
        for k, call in enumerate(calls):
            _check_call(fail, f"tool_calls[{k}]", call)


_Fail = Callable[[str, str], OpenAIFormatError]


def _check_part(fail: _Fail, field: str, part: object) -> None:
    if not isinstance(part, Mapping):
        raise fail(field, f"expected an object, got {_kind(part)}")
    kind = part.get("type")
    if not isinstance(kind, str):
        raise fail(f"{field}.type", f"expected a string, got {_kind(kind)}")
    if kind == "text" and not isinstance(part.get("text"), str):
        raise fail(f"{field}.text", f"expected a string, got {_kind(part.get('text'))}")
    if kind == "image_url":
        image = part.get("image_url")
        if not isinstance(image, Mapping):
            raise fail(f"{field}.image_url", f"expected an object, got {_kind(image)}")
        if not isinstance(image.get("url"), str):
            url = image.get("url")
            raise fail(f"{field}.image_url.url", f"expected a string, got {_kind(url)}")


def _check_call(fail: _Fail, field: str, call: object) -> None:
    if not isinstance(call, Mapping):
        raise fail(field, f"expected an object, got {_kind(call)}")
    if not isinstance(call.get("id"), str) or not call["id"]:
        raise fail(f"{field}.id", f"expected a non-empty string, got {_kind(call.get('id'))}")
    if call.get("type", "function") != "function":
        raise fail(f"{field}.type", f"only 'function' calls are supported, got {call['type']!r}")
    function = call.get("function")
    if not isinstance(function, Mapping):
        raise fail(f"{field}.function", f"expected an object, got {_kind(function)}")
    if not isinstance(function.get("name"), str) or not function["name"]:
        name = function.get("name")
        raise fail(f"{field}.function.name", f"expected a non-empty string, got {_kind(name)}")
    if not isinstance(function.get("arguments"), str):
        raise fail(
            f"{field}.function.arguments",
            f"expected a JSON string, got {_kind(function.get('arguments'))}",
        )


def _kind(value: object) -> str:
    if value is None:
        return "null"
    names = {str: "a string", bool: "a boolean", int: "a number", float: "a number",
             list: "a list", dict: "an object"}
    return names.get(type(value), type(value).__name__)


def _calls(message: Mapping[str, Any]) -> list[ToolCall] | None:
    calls = message.get("tool_calls")
    if not calls:
        return None
    return [
        ToolCall(id=c["id"], name=c["function"]["name"], arguments=c["function"]["arguments"])
        for c in calls
    ]


def _plain_row(message: Mapping[str, Any]) -> ChatMessage | None:
    """The row the runtime itself would keep, or None when the message has no such row."""
    role, content = message["role"], message.get("content")
    if role == "user" and isinstance(content, list):
        pieces: list[str] = []
        for part in content:
            if part["type"] == "text":
                pieces.append(part["text"])
            elif part["type"] == "image_url":
                pieces.append(_MARK_OPEN + part["image_url"]["url"] + _MARK_CLOSE)
            else:
                return None
        return ChatMessage.user("".join(pieces))
    text = content if isinstance(content, str) else None
    if role == "assistant":
        calls = _calls(message)
        if calls is not None:
            return ChatMessage.assistant_tool_calls(text, calls)
        return None if text is None else ChatMessage.assistant(text)
    if text is None:
        return None
    if role == "tool":
        return ChatMessage.tool_result(message["tool_call_id"], text)
    return ChatMessage(role="user" if role == "user" else "system", content=text)


def _envelope_row(index: int, message: OpenAIMessage) -> ChatMessage:
    role = message["role"]
    try:
        if role in ("system", "developer", "user"):
            body: dict[str, Any] = {ENVELOPE_KEY: _mark_images(message)}
            return ChatMessage(role="user" if role == "user" else "system", content=_dumps(body))
        content = message.get("content")
        text = content if isinstance(content, str) else None
        if role == "assistant":
            calls = _calls(message)
            body = {"content": text}
            if calls is not None:
                body["tool_calls"] = [call.model_dump() for call in calls]
            base = _assistant_message(text, calls)
        else:
            body = {"tool_call_id": message["tool_call_id"], "content": text or ""}
            base = _tool_message(message["tool_call_id"], text or "")
        body[ENVELOPE_KEY] = _patch(base, message)
        return ChatMessage(role=role, content=_dumps(body))
    except (TypeError, ValueError) as error:
        raise OpenAIFormatError(index, "", f"not JSON-serializable: {error}") from None


def _patch(base: Mapping[str, Any], message: Mapping[str, Any]) -> dict[str, Any]:
    patch: dict[str, Any] = {}
    changed = {k: v for k, v in message.items() if k not in base or not _same(base[k], v)}
    if changed:
        patch["set"] = changed
    removed = [k for k in base if k not in message]
    if removed:
        patch["unset"] = removed
    return patch


def _mark_images(message: Mapping[str, Any]) -> OpenAIMessage:
    """The message with every image URL written as an `[IMAGE:url]` marker (priced as images)."""
    return _map_image_urls(message, lambda url: _MARK_OPEN + url + _MARK_CLOSE)


def _unmark_images(message: Mapping[str, Any]) -> OpenAIMessage:
    def unmark(url: str) -> str:
        if url.startswith(_MARK_OPEN) and url.endswith(_MARK_CLOSE):
            return url[len(_MARK_OPEN) : -len(_MARK_CLOSE)]
        return url

    return _map_image_urls(message, unmark)


def _map_image_urls(message: Mapping[str, Any], change: Callable[[str], str]) -> OpenAIMessage:
    out = dict(message)
    content = out.get("content")
    if isinstance(content, list):
        out["content"] = [_map_part_url(part, change) for part in content]
    return out


def _map_part_url(part: object, change: Callable[[str], str]) -> object:
    if not isinstance(part, Mapping) or part.get("type") != "image_url":
        return part
    image = part.get("image_url")
    if not isinstance(image, Mapping) or not isinstance(image.get("url"), str):
        return part
    return {**part, "image_url": {**image, "url": change(image["url"])}}


# -- rows -> messages --------------------------------------------------------------------


def _to_message(row: ChatMessage) -> OpenAIMessage:
    body = json_object(row.content)
    if row.role in ("system", "user"):
        wrapped = _wrapped_message(row.role, body)
        if wrapped is not None:
            return wrapped
        if row.role == "system":
            return {"role": "system", "content": row.content}
        return {"role": "user", "content": _user_content(row.content)}
    patched = body is not None and _is_patched(row, body)
    if row.role == "assistant":
        parsed = parse_tool_calls(row)
        if parsed is not None:
            message = _assistant_message(parsed.text, parsed.calls)
        elif patched and body is not None:
            message = _assistant_message(body.get("content"), None)
        else:
            return {"role": "assistant", "content": row.content}
    else:
        result = parse_tool_result(row)
        if result is None:
            raise ValueError("a tool row must be a tool-result envelope with its tool_call_id")
        if result.attachments is not None:
            raise ValueError("tool-result attachments have no chat-completions equivalent")
        message = _tool_message(result.tool_call_id, result.content)
    if patched and body is not None:
        patch = body[ENVELOPE_KEY]
        for key in patch.get("unset", []):
            message.pop(key, None)
        message.update(patch.get("set", {}))
    return message


def _assistant_message(text: str | None, calls: Sequence[ToolCall] | None) -> OpenAIMessage:
    """What an assistant row converts back to without a patch."""
    message: OpenAIMessage = {"role": "assistant", "content": text}
    if calls is not None:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls
        ]
    return message


def _tool_message(tool_call_id: str, content: str) -> OpenAIMessage:
    return {"role": "tool", "tool_call_id": tool_call_id, "content": content}


def _wrapped_message(role: str, body: dict[str, Any] | None) -> OpenAIMessage | None:
    """The message a user/system envelope carries, or None when the row is plain text."""
    if body is None or set(body) != {ENVELOPE_KEY} or not isinstance(body[ENVELOPE_KEY], dict):
        return None
    message = body[ENVELOPE_KEY]
    allowed = ("user",) if role == "user" else ("system", "developer")
    return _unmark_images(message) if message.get("role") in allowed else None


def _is_patched(row: ChatMessage, body: Mapping[str, Any]) -> bool:
    """An assistant/tool row that carries an `"openai"` patch in a well-formed envelope."""
    patch = body.get(ENVELOPE_KEY)
    if not isinstance(patch, dict) or not set(patch) <= {"set", "unset"}:
        return False
    if not isinstance(patch.get("set", {}), dict):
        return False
    unset = patch.get("unset", [])
    if not isinstance(unset, list) or not all(isinstance(k, str) for k in unset):
        return False
    if row.role == "tool":
        return set(body) == {"tool_call_id", "content", ENVELOPE_KEY} and (
            parse_tool_result(row) is not None
        )
    if not set(body) <= {"content", "tool_calls", ENVELOPE_KEY}:
        return False
    if not isinstance(body.get("content"), str | None):
        return False
    return "tool_calls" not in body or parse_tool_calls(row) is not None


def _user_content(text: str) -> str | list[dict[str, Any]]:
    """A user row's text as parts when it holds loadable image markers, else the string."""
    parts: list[dict[str, Any]] = []
    position = 0
    for match in IMAGE_MARKER.finditer(text):
        if not is_loadable_target(match.group(1)):
            continue
        if match.start() > position:
            parts.append({"type": "text", "text": text[position : match.start()]})
        parts.append({"type": "image_url", "image_url": {"url": match.group(1)}})
        position = match.end()
    if not parts:
        return text
    if position < len(text):
        parts.append({"type": "text", "text": text[position:]})
    return parts


# -- helpers -----------------------------------------------------------------------------


def _converts_back(row: ChatMessage, message: Mapping[str, Any]) -> bool:
    try:
        return _same(_to_message(row), message)
    except ValueError:
        return False


def _same(a: object, b: object) -> bool:
    """Equal as JSON (so `1` and `True`, or `1` and `1.0`, differ)."""
    try:
        return _canonical_json(a) == _canonical_json(b)
    except (TypeError, ValueError):
        return False


def _canonical_json(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _dumps(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
