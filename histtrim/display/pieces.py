"""The HTML pieces of the display: escaped text, long text cut at `PREVIEW_CHARS`, images
(user text's image markers shown as images, EST-2), markers and the frame around a view.
Every piece of message text goes through `escape`."""

from __future__ import annotations

import html

from histtrim.carriers import image_markers, marker_image

PREVIEW_CHARS = 400
"""Longer message text is cut in the HTML (the figures always use the whole message)."""

_FONT = "font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:13px;line-height:1.45"


def escape(text: str) -> str:
    """Text safe in HTML content and in a quoted attribute."""
    return html.escape(text, quote=True)


def preview(text: str) -> str:
    """The escaped text, cut after `PREVIEW_CHARS` with the count of characters left out."""
    if len(text) <= PREVIEW_CHARS:
        return escape(text)
    more = len(text) - PREVIEW_CHARS
    cut = escape(text[:PREVIEW_CHARS])
    return f'{cut}<span style="color:#888"> … (+{more:,} characters)</span>'


def text_block(text: str) -> str:
    """Message text as a block, its preview only."""
    # Wrap at spaces, and inside a word longer than the line (a URL, a JSON blob) rather
    # than hide its end behind a scrollbar.
    return f'<div style="white-space:pre-wrap;overflow-wrap:anywhere">{preview(text)}</div>'


def image_block(target: str) -> str:
    """An image reference; an inline `data:image/...` image is shown as the image itself."""
    label = (f'<div style="color:#666;overflow-wrap:anywhere">🖼 image: '
             f"{escape(shorten(target))}</div>")
    if not target.startswith("data:image/"):
        return label
    return (
        f'<div><img src="{escape(target)}" alt="image pasted by the user" '
        'style="width:4em;height:4em;object-fit:contain;image-rendering:pixelated;'
        f'border:1px solid #999;vertical-align:middle"></div>{label}'
    )


def user_text_block(text: str) -> str:
    """User text with each loadable image marker shown as an image reference (EST-2)."""
    pieces: list[str] = []
    position = 0
    for marker in image_markers(text):
        image = marker_image(marker.payload)
        if image is None:
            continue
        if marker.start > position:
            pieces.append(text_block(text[position : marker.start]))
        pieces.append(image_block(image))
        position = marker.end
    if not pieces:
        return text_block(text)
    if position < len(text):
        pieces.append(text_block(text[position:]))
    return "".join(pieces)


def shorten(target: str, limit: int = 80) -> str:
    """An image or attachment target cut to `limit` characters (a data: URL can be huge)."""
    return target if len(target) <= limit else target[:limit] + "…"


def marker_block(text: str) -> str:
    """A highlighted note between blocks (where the breadcrumb goes)."""
    return (
        '<div style="margin:6px 0;padding:2px 8px;border:1px dashed #d4a72c;'
        f'background:#fff5cc;color:#9a6700">{escape(text)}</div>'
    )


def frame(title: str, summary: str, blocks: str) -> str:
    """A whole view: its title, its one-line summary, then its blocks."""
    return (
        f'<div class="histtrim" style="{_FONT};overflow-wrap:anywhere">'
        f'<div style="font-weight:700">{escape(title)}</div>'
        f'<div style="color:#444;margin-bottom:4px">{escape(summary)}</div>'
        f"{blocks}</div>"
    )
