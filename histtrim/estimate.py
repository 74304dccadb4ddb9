"""The token estimate (EST-1..4): a byte heuristic with a fixed price per dispatched image."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from itertools import compress
from operator import itemgetter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictStr

from .carriers import (
    MarkedText,
    is_loadable_target,
    parse_tool_result,
    split_carrier_attachments,
    split_image_markers,
)
from .messages import BYTES_PER_TOKEN as BYTES_PER_TOKEN  # EST-1's constants live with the
from .messages import FRAME_TOKENS as FRAME_TOKENS  # row facts that cache each row's price
from .messages import ChatMessage, RowFacts, chat_rows
from .turns import TurnIndex, index_turns

IMAGE_TOKENS = 1600


def utf8_len(text: str) -> int:
    """UTF-8 byte length; "ñ" is 2 bytes, an emoji 4."""
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def text_tokens(text: str) -> int:
    """`ceil(utf8_bytes / 4)`: the text part of any price."""
    return -(-utf8_len(text) // BYTES_PER_TOKEN)


def plain_cost(message: ChatMessage) -> int:
    """A row priced as plain text: its content bytes plus the framing tokens."""
    return message.facts.plain_tokens


def _images_split(message: ChatMessage, *, current_turn: bool) -> MarkedText | None:
    """The text priced as text and the dispatched images of a row that carries images
    here (EST-2..3); None for a row priced by its bytes. The row facts say which can."""
    facts = message.facts
    if facts.image_markers:
        return split_image_markers(message.content)
    if not (current_turn and facts.declares_attachments):
        return None
    if message.role == "user":
        return split_carrier_attachments(message.content)
    result = parse_tool_result(message)
    if result is None or result.attachments is None:
        return None
    images = tuple(
        a.target for a in result.attachments if a.kind == "image" and is_loadable_target(a.target)
    )
    return MarkedText(result.content, images)


def message_cost(message: ChatMessage, *, current_turn: bool) -> int:
    """One row's estimate; `current_turn` is whether it follows the last real user row."""
    split = _images_split(message, current_turn=current_turn)
    if split is None:
        return plain_cost(message)
    return text_tokens(split.text) + IMAGE_TOKENS * len(split.images) + FRAME_TOKENS


def dispatched_images(message: ChatMessage, *, current_turn: bool) -> int:
    """How many images `message_cost` prices in this row (its image part: this * IMAGE_TOKENS)."""
    split = _images_split(message, current_turn=current_turn)
    return 0 if split is None else len(split.images)


def estimate_image_tokens(history: Iterable[ChatMessage | Mapping[str, Any]]) -> int:
    """The image part of `estimate_history_tokens` (EST-2..3): IMAGE_TOKENS per dispatched image."""
    rows = chat_rows(history)
    current = index_turns(rows).current_turn_after
    return IMAGE_TOKENS * sum(
        dispatched_images(m, current_turn=i > current) for i, m in enumerate(rows)
    )


_PLAIN_TOKENS = itemgetter(RowFacts._fields.index("plain_tokens"))
_IMAGE_MARKERS = itemgetter(RowFacts._fields.index("image_markers"))
_DECLARES = itemgetter(RowFacts._fields.index("declares_attachments"))


def message_costs(history: Sequence[ChatMessage], index: TurnIndex | None = None) -> list[int]:
    """Every row's cost in one pass over the cached row facts.

    Only user rows with image markers and the current turn's tool rows and carriers that
    declare attachments (after the last real user row) need more than their byte count."""
    if index is None:
        index = index_turns(history)
    facts = index.facts
    costs = list(map(_PLAIN_TOKENS, facts))  # C speed: no per-row Python
    # Image markers count only in real user rows, which open a turn (or are the crumb slot):
    # only those rows need a look.
    openers = index.starts if index.crumb is None else (index.crumb, *index.starts)
    marked = map(_IMAGE_MARKERS, map(facts.__getitem__, openers))
    for i in compress(openers, marked):
        costs[i] = message_cost(history[i], current_turn=False)
    current = index.current_turn_after
    declared = map(_DECLARES, facts[current + 1 :])
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
