"""The token estimate (EST-1..4): a byte heuristic with a fixed price per dispatched image."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from itertools import compress
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictStr

from .carriers import (
    is_loadable_target,
    parse_tool_result,
    split_carrier_attachments,
    split_image_markers,
)
from .messages import TOOL_RESULTS_PREFIX, ChatMessage, chat_rows
from .turns import TurnIndex, index_turns

BYTES_PER_TOKEN = 4
FRAME_TOKENS = 4
IMAGE_TOKENS = 1600


def utf8_len(text: str) -> int:
    """UTF-8 byte length; "ñ" is 2 bytes, an emoji 4."""
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def text_tokens(text: str) -> int:
    """`ceil(utf8_bytes / 4)`: the text part of any price."""
    return -(-utf8_len(text) // BYTES_PER_TOKEN)


def plain_cost(message: ChatMessage) -> int:
    """A row priced as plain text: its content bytes plus the framing tokens."""
    return -(-message.facts.utf8_bytes // BYTES_PER_TOKEN) + FRAME_TOKENS


def message_cost(message: ChatMessage, *, current_turn: bool) -> int:
    """One row's estimate; `current_turn` is whether it follows the last real user row."""
    role, content = message.role, message.content
    if role == "user":
        if content.startswith(TOOL_RESULTS_PREFIX):
            if current_turn:
                declared = split_carrier_attachments(content)
                if declared is not None:
                    return _with_images(declared.text, len(declared.images))
            return plain_cost(message)
        if "[IMAGE:" in content:
            marked = split_image_markers(content)
            return _with_images(marked.text, len(marked.images))
        return plain_cost(message)
    if role == "tool" and current_turn and '"attachments"' in content:
        result = parse_tool_result(message)
        if result is not None and result.attachments is not None:
            images = sum(
                1 for a in result.attachments if a.kind == "image" and is_loadable_target(a.target)
            )
            return _with_images(result.content, images)
    return plain_cost(message)


def _with_images(text: str, images: int) -> int:
    return text_tokens(text) + IMAGE_TOKENS * images + FRAME_TOKENS


def dispatched_images(message: ChatMessage, *, current_turn: bool) -> int:
    """How many images `message_cost` prices in this row (its image part: this * IMAGE_TOKENS)."""
    role, content = message.role, message.content
    if role == "user":
        if content.startswith(TOOL_RESULTS_PREFIX):
            declared = split_carrier_attachments(content) if current_turn else None
            return 0 if declared is None else len(declared.images)
        return len(split_image_markers(content).images) if "[IMAGE:" in content else 0
    if role == "tool" and current_turn and '"attachments"' in content:
        result = parse_tool_result(message)
        if result is not None and result.attachments is not None:
            return sum(
                1 for a in result.attachments if a.kind == "image" and is_loadable_target(a.target)
            )
    return 0


def estimate_image_tokens(history: Iterable[ChatMessage | Mapping[str, Any]]) -> int:
    """The image part of `estimate_history_tokens` (EST-2..3): IMAGE_TOKENS per dispatched image."""
    rows = chat_rows(history)
    current = index_turns(rows).current_turn_after
    return IMAGE_TOKENS * sum(
        dispatched_images(m, current_turn=i > current) for i, m in enumerate(rows)
    )


def message_costs(history: Sequence[ChatMessage], index: TurnIndex | None = None) -> list[int]:
    """Every row's cost in one pass over the cached row facts.

    Only user rows with image markers and the current turn's tool rows and carriers that
    declare attachments (after the last real user row) need more than their byte count."""
    if index is None:
        index = index_turns(history)
    facts = index.facts
    costs = [-(-f.utf8_bytes // BYTES_PER_TOKEN) + FRAME_TOKENS for f in facts]
    for i in compress(range(len(facts)), [f.image_markers for f in facts]):
        costs[i] = message_cost(history[i], current_turn=False)
    current = index.current_turn_after
    declared = [f.declares_attachments for f in facts[current + 1 :]]
    for i in compress(range(current + 1, len(history)), declared):
        costs[i] = message_cost(history[i], current_turn=True)
    return costs


def estimate_history_tokens(history: Iterable[ChatMessage | Mapping[str, Any]]) -> int:
    """The estimated prompt size of provider-facing rows, images included (EST-1..4)."""
    return sum(message_costs(chat_rows(history)))


class ToolSchema(BaseModel):
    """A tool definition as sent to the provider (OpenAI `function` shape accepted)."""

    model_config = ConfigDict(frozen=True)

    name: StrictStr = Field(min_length=1)
    description: StrictStr = ""
    parameters: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def coerce(cls, value: ToolSchema | Mapping[str, Any]) -> ToolSchema:
        if isinstance(value, ToolSchema):
            return value
        if value.get("type") == "function" and isinstance(value.get("function"), Mapping):
            value = value["function"]
        return cls.model_validate(value)


def estimate_tool_schemas(schemas: Iterable[ToolSchema | Mapping[str, Any]]) -> int:
    """Per tool: `ceil(bytes(name + description + compact JSON parameters) / 4) + 4`."""
    total = 0
    for schema in map(ToolSchema.coerce, schemas):
        params = json.dumps(schema.parameters, separators=(",", ":"), ensure_ascii=False)
        total += text_tokens(schema.name + schema.description + params) + FRAME_TOKENS
    return total


def estimate_hooks(hooks: Iterable[str]) -> int:
    """Hook text injected into a request, priced as text."""
    return sum(text_tokens(hook) for hook in hooks)
