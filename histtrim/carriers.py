"""Parsers for what rows carry: native tool-call / tool-result envelopes, the
`[Tool results]` prompt carrier, and `[IMAGE:...]` markers."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from .messages import (
    TOOL_RESULTS_PREFIX,
    AssistantToolCalls,
    Attachment,
    ChatMessage,
    ConversationMessage,
    ToolCall,
    ToolResults,
)

IMAGE_MARKER = re.compile(r"\[IMAGE:([^\]]*)\]")
ATTACHMENTS_HEADER = re.compile(r"\[Tool attachments: (\d+)\]")
_DRIVE_PATH = re.compile(r"[A-Za-z]:[\\/]")
_LOADABLE_PREFIXES = ("/", "http://", "https://", "data:", "\\\\")


def is_loadable_target(target: str) -> bool:
    """A marker target the runtime can load and dispatch as an image (EST-2)."""
    target = target.strip()
    return target.startswith(_LOADABLE_PREFIXES) or _DRIVE_PATH.match(target) is not None


def image_marker(target: str) -> str:
    return f"[IMAGE:{target}]"


@dataclass(frozen=True, slots=True)
class MarkedText:
    """Text split into the part priced as text and its loadable image targets."""

    text: str
    images: tuple[str, ...]


def split_image_markers(content: str) -> MarkedText:
    """Remove loadable `[IMAGE:...]` markers; any other marker stays as plain text."""
    images: list[str] = []

    def take(match: re.Match[str]) -> str:
        if is_loadable_target(match.group(1)):
            images.append(match.group(1).strip())
            return ""
        return match.group(0)

    text = IMAGE_MARKER.sub(take, content) if "[IMAGE:" in content else content
    return MarkedText(text, tuple(images))


@dataclass(frozen=True, slots=True)
class ParsedToolCalls:
    text: str | None
    calls: tuple[ToolCall, ...]


@dataclass(frozen=True, slots=True)
class ParsedToolResult:
    tool_call_id: str
    content: str
    attachments: tuple[Attachment, ...] | None
    """None when the envelope declares no `attachments` array."""


def json_object(content: str) -> dict[str, Any] | None:
    """The JSON object `content` holds, or None (not JSON, or JSON but not an object)."""
    if not content.startswith("{"):
        return None
    try:
        value = json.loads(content)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def parse_tool_calls(message: ChatMessage) -> ParsedToolCalls | None:
    """The native tool calls of an assistant row, or None for plain text or a bad envelope."""
    if message.role != "assistant":
        return None
    envelope = json_object(message.content)
    if envelope is None or "tool_calls" not in envelope:
        return None
    try:
        parsed = AssistantToolCalls(
            text=envelope.get("content"), tool_calls=envelope["tool_calls"]
        )
    except ValidationError:
        return None
    return ParsedToolCalls(parsed.text, parsed.tool_calls)


def parse_tool_result(message: ChatMessage) -> ParsedToolResult | None:
    """The envelope of a native tool row, or None when it is malformed (priced as text)."""
    if message.role != "tool":
        return None
    envelope = json_object(message.content)
    if envelope is None:
        return None
    call_id, content = envelope.get("tool_call_id"), envelope.get("content")
    if not isinstance(call_id, str) or not isinstance(content, str):
        return None
    raw = envelope.get("attachments")
    if raw is None:
        return ParsedToolResult(call_id, content, None)
    if not isinstance(raw, list):
        return None
    try:
        attachments = tuple(Attachment.model_validate(item) for item in raw)
    except ValidationError:
        return None
    return ParsedToolResult(call_id, content, attachments)


def tool_results_carrier(
    results: Iterable[tuple[str, str]], *, attachments: Sequence[str] = ()
) -> ChatMessage:
    """A prompt-mode `[Tool results]` user row from (tool name, output) pairs.

    Declared image attachments go in a header (`[Tool attachments: N]` and N marker lines)."""
    lines = [TOOL_RESULTS_PREFIX]
    if attachments:
        lines.append(f"[Tool attachments: {len(attachments)}]")
        lines.extend(image_marker(target) for target in attachments)
    for name, output in results:
        lines.append(f'<tool_result name="{name}">\n{output}\n</tool_result>')
    return ChatMessage.user("\n".join(lines))


def split_carrier_attachments(content: str) -> MarkedText | None:
    """A carrier's text without its attachments block, and the declared loadable images.

    None when the carrier declares no attachments or the block is malformed."""
    lines = content.split("\n")
    if len(lines) < 2 or lines[0] != TOOL_RESULTS_PREFIX:
        return None
    header = ATTACHMENTS_HEADER.fullmatch(lines[1])
    if header is None:
        return None
    count = int(header.group(1))
    markers = lines[2 : 2 + count]
    if len(markers) < count:
        return None
    images: list[str] = []
    for line in markers:
        match = IMAGE_MARKER.fullmatch(line)
        if match is None:
            return None
        if is_loadable_target(match.group(1)):
            images.append(match.group(1).strip())
    # Non-loadable declared markers are not dispatched, so they stay priced as text.
    kept = [lines[0], *(m for m in markers if not is_loadable_target(m[7:-1])), *lines[2 + count :]]
    return MarkedText("\n".join(kept), tuple(images))


def to_chat_messages(history: Iterable[ConversationMessage]) -> list[ChatMessage]:
    """The provider-facing rows of a structured history (one tool row per result)."""
    rows: list[ChatMessage] = []
    for item in history:
        if isinstance(item, ChatMessage):
            rows.append(item)
        elif isinstance(item, AssistantToolCalls):
            rows.append(ChatMessage.assistant_tool_calls(item.text, item.tool_calls))
        elif isinstance(item, ToolResults):
            rows.extend(ChatMessage.tool_result(r.tool_call_id, r.content) for r in item.results)
    return rows
