"""An Anthropic conversation as structured items (`ConversationMessage`): each `tool_use`
an `AssistantToolCalls`, each message of `tool_result` blocks one `ToolResults` whose results
keep their own text and images (declared attachments, EST-3). A replay needs each result on
its own, which the provider-facing `[Tool results]` carrier merges into one row."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from histtrim.adapters.anthropic import from_anthropic, tool_results
from histtrim.carriers import parse_tool_calls
from histtrim.messages import (
    AssistantToolCalls,
    ChatMessage,
    ConversationMessage,
    ToolResultMessage,
    ToolResults,
)


def anthropic_items(
    body: Mapping[str, Any] | Sequence[Mapping[str, Any]],
) -> list[ConversationMessage]:
    """A request body (or its messages) as structured items; bad input names the field, as
    `from_anthropic` does. Blocks after the results of a message (text the client added)
    stay in the same turn, appended to the last result's text; `is_error` is not kept."""
    conversation = from_anthropic(body)
    split = conversation.system_rows
    items: list[ConversationMessage] = list(conversation.rows[:split])
    for message, row in zip(conversation.messages, conversation.rows[split:], strict=True):
        items.append(_item(message, row))
    return items


def _item(message: Mapping[str, Any], row: ChatMessage) -> ConversationMessage:
    if row.role == "assistant":
        parsed = parse_tool_calls(row)
        if parsed is None:
            return row
        return AssistantToolCalls(text=parsed.text, tool_calls=parsed.calls)
    blocks = message["content"]
    if isinstance(blocks, str) or not any(b["type"] == "tool_result" for b in blocks):
        return row
    blocks_read, extra = tool_results(blocks)
    results = [
        ToolResultMessage(
            tool_call_id=r.tool_use_id,
            content=r.text,
            attachments=r.images or None,  # type: ignore[arg-type]  # targets become Attachments
        )
        for r in blocks_read
    ]
    if extra:
        last = results[-1]
        results[-1] = ToolResultMessage(
            tool_call_id=last.tool_call_id,
            content=last.content + "\n" + extra,
            attachments=last.attachments,
        )
    return ToolResults(results=tuple(results))
