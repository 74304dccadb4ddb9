"""A user row's text with its image markers as a format's content parts (OpenAI `image_url`
parts, Anthropic image blocks): one splitter, each format saying which markers it holds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from histtrim.carriers import image_markers, marker_image

Part = dict[str, Any]


def marker_parts(text: str, image_part: Callable[[str, str], Part | None]) -> str | list[Part]:
    """`text` as text parts around the part `image_part(image, marker)` gives for each
    loadable marker (the same loadability test as the estimate; None: the marker stays
    text); the text itself when no marker became a part."""
    parts: list[Part] = []
    position = 0
    for marker in image_markers(text):
        image = marker_image(marker.payload)
        part = None if image is None else image_part(image, text[marker.start : marker.end])
        if part is None:
            continue
        if marker.start > position:
            parts.append({"type": "text", "text": text[position : marker.start]})
        parts.append(part)
        position = marker.end
    if not parts:
        return text
    if position < len(text):
        parts.append({"type": "text", "text": text[position:]})
    return parts
