"""The one output path of every `histtrim` command: the bytes are complete before anything
is written, and a file is replaced atomically (a temporary file in the same folder, flushed
and fsynced, then `os.replace`); on any failure the original is untouched and the temporary
removed. None or `-` is stdout; a target that is not a regular file (`/dev/null`, a FIFO,
`/dev/stdout` into a pipe) is written to, never replaced."""

from __future__ import annotations

import sys
import unicodedata
from pathlib import Path

from histtrim._files import write_atomically
from histtrim.cli.errors import InputError
from histtrim.cli.jsontext import STDIN


def emit(output: str | None, data: bytes) -> None:
    """Write `data` (already serialized and validated) to `output`, or to stdout."""
    if output is None or output == STDIN:
        buffer = getattr(sys.stdout, "buffer", None)
        if buffer is None:  # a text-only stream (a notebook kernel's)
            sys.stdout.write(data.decode("utf-8"))
            return
        sys.stdout.flush()
        buffer.write(data)
        buffer.flush()
        return
    try:
        write_atomically(Path(output), data)
    except OSError as error:
        raise InputError(output, f"cannot write: {error.strerror or error}") from None


_INVISIBLE = ("Cc", "Cf", "Zl", "Zp")
"""Controls, format characters (bidirectional overrides included) and line separators."""


def visible(text: str) -> str:
    """`text` for a terminal line: every control, format or line-separator character shown as
    its escape (`\\x1b`, `\\n`, `\\u202e`), so text from a config never moves the cursor,
    recolours the terminal or starts a line of its own."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(
        ascii(char)[1:-1] if unicodedata.category(char) in _INVISIBLE else char for char in text
    )
