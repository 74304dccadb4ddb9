"""Provider-facing rows as Anthropic messages: text, `tool_use` blocks for native calls and
`tool_result` blocks for results, images as image blocks (URL or base64) wherever the format
holds them; what it cannot hold (a file path attached by a tool) is refused, never dropped."""

from __future__ import annotations

import json
from typing import Any

from histtrim.adapters.parts import marker_parts
from histtrim.carriers import image_marker, json_object, json_text_too_deep, parse_tool_result
from histtrim.messages import TOOL_RESULTS_PREFIX, Attachment, ChatMessage, ToolCall

AnthropicMessage = dict[str, Any]


def row_message(row: ChatMessage) -> AnthropicMessage:
    """The Anthropic message for one non-system row made by the library or the runtime."""
    if row.role == "system":
        raise ValueError("a system row is the body's `system`, not a message")
    envelope = json_object(row.content) if row.role in ("assistant", "tool") else None
    if row.role == "assistant":
        calls = envelope.get("tool_calls") if envelope is not None else None
        if envelope is None or not isinstance(calls, list):
            return {"role": "assistant", "content": row.content}
        blocks: list[dict[str, Any]] = []
        if isinstance(envelope.get("content"), str) and envelope["content"]:
            blocks.append({"type": "text", "text": envelope["content"]})
        for call in (ToolCall.model_validate(c) for c in calls):
            blocks.append(
                {"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call)}
            )
        return {"role": "assistant", "content": blocks}
    if row.role == "tool":
        if envelope is None or not isinstance(envelope.get("tool_call_id"), str):
            raise ValueError("a tool row must be a tool-result envelope with its tool_call_id")
        result: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": envelope["tool_call_id"],
            "content": str(envelope.get("content", "")),
        }
        parsed = parse_tool_result(row)
        if parsed is not None and parsed.attachments:
            text = [{"type": "text", "text": result["content"]}] if result["content"] else []
            result["content"] = text + [_image_block(a) for a in parsed.attachments]
        return {"role": "user", "content": [result]}
    if row.content.startswith(TOOL_RESULTS_PREFIX):
        return {"role": "user", "content": row.content}
    return {"role": "user", "content": _user_content(row.content)}


def _image_block(attachment: Attachment) -> dict[str, Any]:
    """A declared image as an Anthropic image block; anything the format cannot hold (a
    file path, a non-image file) is refused rather than dropped."""
    if attachment.kind != "image":
        raise ValueError(f"a {attachment.kind!r} attachment has no Anthropic equivalent")
    block = _url_image(attachment.target)
    if block is None:
        raise ValueError(
            f"attachment {attachment.target[:80]!r}: an Anthropic image is a URL or base64 "
            "data (load the file into a data: URL first)"
        )
    return block


def _url_image(target: str) -> dict[str, Any] | None:
    """The image block of a URL or base64 `data:` target; None for anything else, a priced
    target without its data included (`carriers.part_target`: the message that was read
    holds the image, never a row made of it)."""
    if target.startswith(("http://", "https://")):
        return {"type": "image", "source": {"type": "url", "url": target}}
    media, sep, data = target.removeprefix("data:").partition(";base64,")
    if target.startswith("data:") and sep and media and data:
        return {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}
    return None


def _user_content(text: str) -> str | list[dict[str, Any]]:
    """A user row's text as blocks when it holds markers of URL or base64 images (read back
    as the same markers); any other marker, a file path included, stays text."""
    return marker_parts(
        text, lambda image, marker: _url_image(image) if image_marker(image) == marker else None
    )


def _input(call: ToolCall) -> Any:
    """The call's arguments as the block's `input`; text that is not JSON, or nests deeper than
    the parser allows (found without recursion), is kept whole as `{"arguments": text}`."""
    if json_text_too_deep(call.arguments):
        return {"arguments": call.arguments}
    try:
        return json.loads(call.arguments)
    except ValueError:
        return {"arguments": call.arguments}
