"""A user row's text with its image markers as a format's content parts (OpenAI `image_url`
parts, Anthropic image blocks): one splitter, each format saying which markers it holds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from histtrim.carriers import IMAGE_MARKER, marker_image

Part = dict[str, Any]


def marker_parts(text: str, image_part: Callable[[str, str], Part | None]) -> str | list[Part]:
    """`text` as text parts around the part `image_part(image, marker)` gives for each
    loadable marker (the same loadability test as the estimate; None: the marker stays
    text); the text itself when no marker became a part."""
    parts: list[Part] = []
    position = 0
    for match in IMAGE_MARKER.finditer(text):
        image = marker_image(match.group(1))
        part = None if image is None else image_part(image, match.group(0))
        if part is None:
            continue
        if match.start() > position:
            parts.append({"type": "text", "text": text[position : match.start()]})
        parts.append(part)
        position = match.end()
    if not parts:
        return text
    if position < len(text):
        parts.append({"type": "text", "text": text[position:]})
    return parts
