"""OpenAI chat-completions messages <-> histtrim provider-facing rows, and whole-turn trims
that take and return OpenAI dicts.

One message is one row, so turns, estimates and trims are the library's own. Every message
maps to the row the runtime itself keeps: its text (image parts as `[IMAGE:url]` markers in a
user row, priced as images, EST-2), `tool_calls` the native tool-call envelope and a `tool`
message the tool-result envelope. Whatever that row cannot say (a `name`, an image `detail`,
`refusal`, parts, any other key) is a patch in the row's `extras`, never in its text:
`{"openai": {"set": {...}, "unset": [...]}}`, the keys that differ from what the row alone
converts back to. So `to_openai(from_openai(messages)) == messages` (compared as JSON), and
no text (model output, a pasted message) can change a row's role or become another message;
turn boundaries and prices never depend on the extras. `from_openai` checks each message
first (`openai_checks`) and that every row it makes converts back exactly, or raises.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from histtrim.adapters import RecordTrimResult, recorded_report, trim_records
from histtrim.adapters.openai_checks import OpenAIFormatError, check_message
from histtrim.adapters.parts import marker_parts
from histtrim.carriers import (
    data_url_media_type,
    file_marker,
    image_marker,
    parse_tool_calls,
    parse_tool_result,
)
from histtrim.messages import (
    BREADCRUMB,
    MAX_JSON_DEPTH,
    ChatMessage,
    ToolCall,
    chat_rows,
    json_too_deep,
)
from histtrim.policy import SPEC, Policy

OpenAIMessage = dict[str, Any]

ENVELOPE_KEY = "openai"


def from_openai(messages: Iterable[Mapping[str, Any]]) -> list[ChatMessage]:
    """The provider-facing rows of chat-completions messages, one row per message."""
    rows = []
    for i, message in enumerate(messages):
        if json_too_deep(message):  # before any json.dumps can hit the recursion limit
            raise OpenAIFormatError(i, "", f"nests {MAX_JSON_DEPTH} levels or more")
        rows.append(_to_row(i, message))
    return rows


def to_openai(history: Iterable[ChatMessage | Mapping[str, Any]]) -> list[OpenAIMessage]:
    """Chat-completions messages for provider-facing rows (new dicts, one per row).

    A `tool` row must be a tool-result envelope without attachments: the format has no place
    for tool images or for a result without its call id. A row's text is only ever its text:
    what the message says besides comes from the row's `extras`."""
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
    usage: bool = True,
) -> RecordTrimResult[OpenAIMessage]:
    """Trim chat-completions messages by token budget or turn count, whole turns only.

    Kept messages come back as copies of the input dicts, untouched; when turns are dropped
    the breadcrumb message is inserted after the leading system messages (unless
    `breadcrumb=False`) and the result carries the `HistoryTrimmed` event. With a `policy` that
    sets a low-water mark (`Policy(token_trim_target=Fraction(7, 10))`), passing the whole
    history on every request keeps the cut the `Agent` would hold (`trim_records`). With
    `usage`, the last assistant message's recorded `usage.prompt_tokens` (USAGE-5) decides when
    it is over the budget (USAGE-1..3: `trim_records`'s `reported`)."""
    rows = from_openai(messages)
    records = [copy.deepcopy(dict(m)) for m in messages]
    return trim_records(
        records,
        rows,
        budget_tokens=budget_tokens,
        max_turns=max_turns,
        crumb_present=crumb_present,
        breadcrumb_record=openai_breadcrumb() if breadcrumb else None,
        policy=policy,
        reported=recorded_report(records, rows, policy=policy, crumb_present=crumb_present)
        if usage else None,
        edit_record=edited_message,
    )


def edited_message(message: Mapping[str, Any], row: ChatMessage) -> OpenAIMessage:
    """The message of a row the tool context edit changed (CTX-1..9): a cleared result or a
    collapse summary, written as the row says; a call whose inputs were cleared keeps its
    message and each call's keys, only `arguments` as the row says (the row's `extras`
    would restore the old ones); the message's other keys are kept."""
    written = _plain_message(row)
    calls, old = written.get("tool_calls"), message.get("tool_calls")
    if isinstance(calls, list) and isinstance(old, list) and len(calls) == len(old):
        return {**message, "tool_calls": [
            {**before, "function": {**before["function"],
                                    "arguments": after["function"]["arguments"]}}
            for before, after in zip(old, calls, strict=True)
        ]}
    kept = {k: v for k, v in message.items() if k not in _WRITTEN_KEYS}
    return {**written, **kept}


_WRITTEN_KEYS = frozenset(("role", "content", "tool_calls", "tool_call_id"))
"""What the edited row says; a message's other keys (`name`, ...) stay as they were."""


# -- messages -> rows --------------------------------------------------------------------


def _to_row(index: int, message: Mapping[str, Any]) -> ChatMessage:
    check_message(index, message)
    original = dict(message)
    try:
        row = _plain_row(original)
        try:
            patch = _patch(_plain_message(row), original)
            extras = None if not patch else _dumps({ENVELOPE_KEY: patch})
        except (TypeError, ValueError, RecursionError) as error:
            raise OpenAIFormatError(index, "", f"not JSON-serializable: {error}") from None
        if extras is not None:
            row = row.model_copy(update={"extras": extras})
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise OpenAIFormatError(index, field, first["msg"]) from None
    if not _converts_back(row, original):
        raise OpenAIFormatError(
            index, "", "cannot be carried losslessly: keys must be strings and values JSON"
        )
    return row


def _calls(message: Mapping[str, Any]) -> list[ToolCall] | None:
    calls = message.get("tool_calls")
    if not calls:
        return None
    return [
        ToolCall(id=c["id"], name=c["function"]["name"], arguments=c["function"]["arguments"])
        for c in calls
    ]


def _text(content: object, *, images: bool) -> str:
    """A message's text as the row keeps it: text parts joined, image parts as markers in a
    user row (priced as images) and file parts one attachment each (`file_marker`); parts of
    any other type have no text."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    pieces: list[str] = []
    for part in content:
        if part["type"] == "text":
            pieces.append(part["text"])
        elif part["type"] == "image_url" and images:
            pieces.append(image_marker(part["image_url"]["url"]))
        elif part["type"] in FILE_PARTS and images:
            pieces.append(file_marker(*_file_facts(part)))
    return "".join(pieces)


FILE_PARTS = ("file", "input_audio")
"""Chat-completions parts that carry a file which is not an image: one attachment each."""


def _file_facts(part: Mapping[str, Any]) -> tuple[str, str]:
    """A `file` part's media type (from its `data:` URL) and name; an `input_audio`'s format."""
    inner = part.get(part["type"])
    inner = inner if isinstance(inner, Mapping) else {}
    if part["type"] == "input_audio":
        return f"audio/{str(inner.get('format') or 'unknown')[:40]}", ""
    name = inner.get("filename") or inner.get("file_id") or ""
    return data_url_media_type(inner.get("file_data")), str(name)


def _plain_row(message: Mapping[str, Any]) -> ChatMessage:
    """The row the runtime itself would keep for this message (its text, never its keys)."""
    role, content = message["role"], message.get("content")
    if role == "assistant":
        calls = _calls(message)
        text = None if content is None else _text(content, images=False)
        if calls is not None:
            return ChatMessage.assistant_tool_calls(text, calls)
        return ChatMessage.assistant(text or "")
    if role == "tool":
        return ChatMessage.tool_result(message["tool_call_id"], _text(content, images=False))
    if role == "user":
        return ChatMessage.user(_text(content, images=True))
    return ChatMessage.system(_text(content, images=False))


def _patch(base: Mapping[str, Any], message: Mapping[str, Any]) -> dict[str, Any]:
    patch: dict[str, Any] = {}
    changed = {k: v for k, v in message.items() if k not in base or not _same(base[k], v)}
    if changed:
        patch["set"] = changed
    removed = [k for k in base if k not in message]
    if removed:
        patch["unset"] = removed
    return patch


# -- rows -> messages --------------------------------------------------------------------

_ROLE_CHANGES = {("system", "developer")}
"""The only role a patch may give a row: a system row may be a `developer` message."""


def _to_message(row: ChatMessage) -> OpenAIMessage:
    message = _plain_message(row)
    patch = _extras_patch(row)
    if patch:
        for key in patch.get("unset", []):
            message.pop(key, None)
        changes = patch.get("set", {})
        role = changes.get("role", row.role)
        if role != row.role and (row.role, role) not in _ROLE_CHANGES:
            raise ValueError(f"extras cannot make a {row.role} row a {role!r} message")
        message.update(changes)
    return message


def _plain_message(row: ChatMessage) -> OpenAIMessage:
    """What a row converts back to from its text alone."""
    if row.role == "system":
        return {"role": "system", "content": row.content}
    if row.role == "user":
        return {"role": "user", "content": _user_content(row.content)}
    if row.role == "assistant":
        parsed = parse_tool_calls(row)
        if parsed is not None:
            return _assistant_message(parsed.text, parsed.calls)
        return {"role": "assistant", "content": row.content}
    result = parse_tool_result(row)
    if result is None:
        raise ValueError("a tool row must be a tool-result envelope with its tool_call_id")
    if result.attachments is not None:
        raise ValueError("tool-result attachments have no chat-completions equivalent")
    return _tool_message(result.tool_call_id, result.content)


def _extras_patch(row: ChatMessage) -> dict[str, Any] | None:
    """The row's OpenAI patch, from its `extras` (never from its text)."""
    if row.extras is None:
        return None
    patch = json.loads(row.extras).get(ENVELOPE_KEY)
    if patch is None:
        return None
    if not isinstance(patch, dict) or not set(patch) <= {"set", "unset"}:
        raise ValueError("extras: the 'openai' patch must be an object with 'set'/'unset'")
    unset = patch.get("unset", [])
    if not isinstance(patch.get("set", {}), dict) or not (
        isinstance(unset, list) and all(isinstance(k, str) for k in unset)
    ):
        raise ValueError("extras: 'set' must be an object and 'unset' a list of keys")
    return patch


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


def _user_content(text: str) -> str | list[dict[str, Any]]:
    """A user row's text as parts when it holds loadable image markers, else the string."""
    return marker_parts(
        text, lambda image, _marker: {"type": "image_url", "image_url": {"url": image}}
    )


# -- helpers -----------------------------------------------------------------------------


def _converts_back(row: ChatMessage, message: Mapping[str, Any]) -> bool:
    try:
        return _same(_to_message(row), message)
    except (ValueError, RecursionError):
        return False


def _same(a: object, b: object) -> bool:
    """Equal as JSON (so `1` and `True`, or `1` and `1.0`, differ)."""
    try:
        return _canonical_json(a) == _canonical_json(b)
    except (TypeError, ValueError, RecursionError):
        return False


def _canonical_json(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _dumps(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
