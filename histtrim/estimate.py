"""EST-1..4: the token estimate, a byte heuristic with a fixed price per dispatched image."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from itertools import compress
from operator import itemgetter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictStr, field_validator

from histtrim.carriers import (
    image_markers,
    image_target,
    marker_image,
    parse_tool_result,
    split_carrier_attachments,
)
from histtrim.messages import (
    BYTES_PER_TOKEN,  # EST-1's constants live with the
    FRAME_TOKENS,  # row facts that cache each row's price
    MAX_JSON_DEPTH,
    ChatMessage,
    RowFacts,
    chat_rows,
    json_too_deep,
)
from histtrim.policy import SPEC, Policy
from histtrim.turns import TurnIndex, index_turns

IMAGE_TOKENS = SPEC.image_tokens


def _cached_prices(prices: Policy) -> bool:
    """Whether the row facts' cached plain price (EST-1 with the spec's constants) holds."""
    return prices.bytes_per_token == BYTES_PER_TOKEN and prices.frame_tokens == FRAME_TOKENS


def utf8_len(text: str) -> int:
    """UTF-8 byte length; "ñ" is 2 bytes, an emoji 4."""
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def text_tokens(text: str, *, policy: Policy = SPEC) -> int:
    """`ceil(utf8_bytes / 4)`: the text part of any price."""
    return -(-utf8_len(text) // policy.bytes_per_token)


def plain_cost(message: ChatMessage, *, policy: Policy = SPEC) -> int:
    """A row priced as plain text: its content bytes plus the framing tokens."""
    if _cached_prices(policy):
        return message.facts.plain_tokens
    return -(-message.facts.utf8_bytes // policy.bytes_per_token) + policy.frame_tokens


def _image_sizes(message: ChatMessage, *, current_turn: bool) -> tuple[int, int] | None:
    """The UTF-8 bytes priced as text and the images dispatched, for a row that carries
    images here (EST-2..3); None for a row priced by its bytes. The row facts say which can."""
    facts = message.facts
    if facts.image_markers:
        return _marker_sizes(message.content)
    if not (current_turn and facts.declares_attachments):
        return None
    if message.role == "user":
        split = split_carrier_attachments(message.content)
        return None if split is None else (utf8_len(split.text), len(split.images))
    result = parse_tool_result(message)
    if result is None or result.attachments is None:
        return None
    targets = (image_target(a.target) for a in result.attachments if a.kind == "image")
    return utf8_len(result.content), sum(t is not None for t in targets)


def _marker_sizes(content: str) -> tuple[int, int]:
    """`split_image_markers`'s text size and image count, counted as the markers are found:
    a text of nothing but markers costs no memory beyond itself."""
    size, images = utf8_len(content), 0
    for marker in image_markers(content):
        if marker_image(marker.payload) is not None:
            size -= utf8_len(content[marker.start : marker.end])
            images += 1
    return size, images


def message_cost(message: ChatMessage, *, current_turn: bool, policy: Policy = SPEC) -> int:
    """One row's estimate; `current_turn` is whether it follows the last real user row."""
    sizes = _image_sizes(message, current_turn=current_turn)
    if sizes is None:
        return plain_cost(message, policy=policy)
    text_bytes, images = sizes
    return (
        -(-text_bytes // policy.bytes_per_token)
        + policy.image_tokens * images
        + policy.frame_tokens
    )


def dispatched_images(message: ChatMessage, *, current_turn: bool) -> int:
    """How many images `message_cost` prices in this row (its image part: this * IMAGE_TOKENS)."""
    sizes = _image_sizes(message, current_turn=current_turn)
    return 0 if sizes is None else sizes[1]


def estimate_image_tokens(
    history: Iterable[ChatMessage | Mapping[str, Any]], *, policy: Policy = SPEC
) -> int:
    """The image part of `estimate_history_tokens` (EST-2..3): IMAGE_TOKENS per dispatched image."""
    rows = chat_rows(history)
    current = index_turns(rows).current_turn_after
    return policy.image_tokens * sum(
        dispatched_images(m, current_turn=i > current) for i, m in enumerate(rows)
    )


_PLAIN_TOKENS = itemgetter(RowFacts._fields.index("plain_tokens"))
_IMAGE_MARKERS = itemgetter(RowFacts._fields.index("image_markers"))
_DECLARES = itemgetter(RowFacts._fields.index("declares_attachments"))


def message_costs(
    history: Sequence[ChatMessage], index: TurnIndex | None = None, *, policy: Policy = SPEC
) -> list[int]:
    """Every row's cost in one pass over the cached row facts.

    Only user rows with image markers and the current turn's tool rows and carriers that
    declare attachments (after the last real user row) need more than their byte count."""
    if index is None:
        index = index_turns(history)
    facts = index.facts
    if _cached_prices(policy):
        costs = list(map(_PLAIN_TOKENS, facts))  # C speed: no per-row Python
    else:
        per_token, frame = policy.bytes_per_token, policy.frame_tokens
        costs = [-(-f.utf8_bytes // per_token) + frame for f in facts]
    # Image markers count only in real user rows, which open a turn (or are the crumb slot):
    # only those rows need a look.
    openers = index.starts if index.crumb is None else (index.crumb, *index.starts)
    marked = map(_IMAGE_MARKERS, map(facts.__getitem__, openers))
    for i in compress(openers, marked):
        costs[i] = message_cost(history[i], current_turn=False, policy=policy)
    current = index.current_turn_after
    declared = map(_DECLARES, facts[current + 1 :])
    for i in compress(range(current + 1, len(history)), declared):
        costs[i] = message_cost(history[i], current_turn=True, policy=policy)
    return costs


def estimate_history_tokens(
    history: Iterable[ChatMessage | Mapping[str, Any]], *, policy: Policy = SPEC
) -> int:
    """The estimated prompt size of provider-facing rows, images included (EST-1..4)."""
    return sum(message_costs(chat_rows(history), policy=policy))


class ToolSchema(BaseModel):
    """A tool definition as sent to the provider (OpenAI `function` shape accepted)."""

    model_config = ConfigDict(frozen=True)

    name: StrictStr = Field(min_length=1)
    description: StrictStr = ""
    parameters: dict[str, Any] = Field(default_factory=dict)

    @field_validator("parameters")
    @classmethod
    def _not_too_deep(cls, parameters: dict[str, Any]) -> dict[str, Any]:
        if json_too_deep(parameters):
            raise ValueError(f"parameters nest {MAX_JSON_DEPTH} levels or more")
        return parameters

    @classmethod
    def coerce(cls, value: ToolSchema | Mapping[str, Any]) -> ToolSchema:
        if isinstance(value, ToolSchema):
            return value
        if not isinstance(value, Mapping):
            raise ValueError(f"expected a tool schema or a mapping, got {type(value).__name__}")
        if value.get("type") == "function" and isinstance(value.get("function"), Mapping):
            value = value["function"]
        return cls.model_validate(value)


def _texts_or_items(name: str, values: object) -> Iterable[Any]:
    """An iterable of items; a bare `str` (or bytes, or a single mapping) is a mistake."""
    if isinstance(values, str | bytes | Mapping):
        raise ValueError(
            f"{name}: expected an iterable of items, got a single {type(values).__name__}"
        )
    if not isinstance(values, Iterable):
        raise ValueError(f"{name}: expected an iterable, got {type(values).__name__}")
    return values


def estimate_tool_schemas(
    schemas: Iterable[ToolSchema | Mapping[str, Any]], *, policy: Policy = SPEC
) -> int:
    """Per tool: `ceil(bytes(name + description + compact JSON parameters) / 4) + 4`."""
    total = 0
    for i, value in enumerate(_texts_or_items("schemas", schemas)):
        if not isinstance(value, ToolSchema | Mapping):
            raise ValueError(
                f"schemas[{i}]: expected a tool schema or a mapping, got {type(value).__name__}"
            )
        schema = ToolSchema.coerce(value)
        try:
            params = json.dumps(
                schema.parameters, separators=(",", ":"), ensure_ascii=False, allow_nan=False
            )
        except (ValueError, TypeError, RecursionError) as error:
            raise ValueError(f"schemas[{i}].parameters: not JSON: {error}") from None
        total += text_tokens(schema.name + schema.description + params, policy=policy)
        total += policy.frame_tokens
    return total


def estimate_hooks(hooks: Iterable[str], *, policy: Policy = SPEC) -> int:
    """Hook text injected into a request, priced as text."""
    total = 0
    for i, hook in enumerate(_texts_or_items("hooks", hooks)):
        if not isinstance(hook, str):
            raise ValueError(f"hooks[{i}]: expected a str, got {type(hook).__name__}")
        total += text_tokens(hook, policy=policy)
    return total
