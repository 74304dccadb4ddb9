"""The checks an Anthropic Messages message must pass before `adapters.anthropic` converts it
(messages are hostile input): its role, its content, and each block's type and fields, tool
results' inner blocks and image sources included. A failure is an `AnthropicFormatError`
naming the field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from histtrim.adapters.kinds import json_kind

ROLES = ("user", "assistant")


class AnthropicFormatError(ValueError):
    """A body or message that is not in the Messages format; names the field."""

    def __init__(self, field: str, problem: str) -> None:
        field = field.lstrip(".")
        self.field, self.problem = field, problem
        super().__init__(f"{field}: {problem}" if field else problem)


def checked_blocks(message: object, where: str) -> tuple[str, list[Mapping[str, Any]]]:
    """A message's role and its checked content blocks (string content is one text block);
    errors name the field under `where` (e.g. `messages[3]`)."""
    if not isinstance(message, Mapping):
        raise AnthropicFormatError(where, f"expected an object, got {json_kind(message)}")
    role = message.get("role")
    if role not in ROLES:
        raise AnthropicFormatError(f"{where}.role", f"expected 'user' or 'assistant', got {role!r}")
    if "content" not in message:
        raise AnthropicFormatError(f"{where}.content", "required")
    content = message["content"]
    if isinstance(content, str):
        return role, [{"type": "text", "text": content}]
    if isinstance(content, list):
        return role, [check_block(f"{where}.content[{k}]", b) for k, b in enumerate(content)]
    raise AnthropicFormatError(
        f"{where}.content", f"expected a string or a list of blocks, got {json_kind(content)}"
    )


def check_block(where: str, block: object) -> Mapping[str, Any]:
    """The block, once its type and the fields that type needs are checked."""
    if not isinstance(block, Mapping):
        raise AnthropicFormatError(where, f"expected an object, got {json_kind(block)}")
    kind = block.get("type")
    if not isinstance(kind, str):
        raise AnthropicFormatError(f"{where}.type", f"expected a string, got {json_kind(kind)}")
    if kind == "text":
        need_str(where, block, "text")
    elif kind == "image":
        image_target(where, block)
    elif kind == "tool_use":
        need_str(where, block, "id", nonempty=True)
        need_str(where, block, "name", nonempty=True)
        if not isinstance(block.get("input"), Mapping):
            raise AnthropicFormatError(
                f"{where}.input", f"expected an object, got {json_kind(block.get('input'))}"
            )
    elif kind == "tool_result":
        need_str(where, block, "tool_use_id", nonempty=True)
        if "is_error" in block and not isinstance(block["is_error"], bool):
            raise AnthropicFormatError(
                f"{where}.is_error", f"expected a boolean, got {json_kind(block['is_error'])}"
            )
        content = block.get("content", "")
        if isinstance(content, list):
            for k, inner in enumerate(content):
                checked = check_block(f"{where}.content[{k}]", inner)
                if checked["type"] not in ("text", "image"):
                    raise AnthropicFormatError(
                        f"{where}.content[{k}].type",
                        f"expected 'text' or 'image' in a tool result, got {checked['type']!r}",
                    )
        elif not isinstance(content, str):
            raise AnthropicFormatError(
                f"{where}.content",
                f"expected a string or a list of blocks, got {json_kind(content)}",
            )
    return block


def need_str(where: str, block: Mapping[str, Any], key: str, *, nonempty: bool = False) -> None:
    """`block[key]` must be a string (a non-empty one when `nonempty`)."""
    value = block.get(key)
    if not isinstance(value, str) or (nonempty and not value):
        expected = "a non-empty string" if nonempty else "a string"
        raise AnthropicFormatError(f"{where}.{key}", f"expected {expected}, got {json_kind(value)}")


def image_target(where: str, block: Mapping[str, Any]) -> str:
    """The image as a marker target: its URL, or a `data:` URL of its base64 data."""
    source = block.get("source")
    if not isinstance(source, Mapping):
        raise AnthropicFormatError(
            f"{where}.source", f"expected an object, got {json_kind(source)}"
        )
    kind = source.get("type")
    if kind == "url":
        need_str(f"{where}.source", source, "url", nonempty=True)
        return str(source["url"])
    if kind == "base64":
        need_str(f"{where}.source", source, "media_type", nonempty=True)
        need_str(f"{where}.source", source, "data")
        return f"data:{source['media_type']};base64,{source['data']}"
    raise AnthropicFormatError(
        f"{where}.source.type", f"expected 'base64' or 'url', got {kind!r}"
    )
