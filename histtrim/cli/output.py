"""The one output path of every `histtrim` command: the bytes are complete before anything
is written, and a file is replaced atomically (a temporary file in the same folder, flushed
and fsynced, then `os.replace`); on any failure the original is untouched and the temporary
removed. None or `-` is stdout; a target that is not a regular file (`/dev/null`, a FIFO) is
written to, never replaced, and a name for an open descriptor (`/dev/stdout`, `/dev/fd/N`) is
written through it, so `-o /dev/stdout >> log` appends. Output given as chunks goes into
the temporary file as they are made (never joined, so never held whole): the target still
changes only once the last is written; stdout and other targets get them joined first."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from histtrim._files import write_atomically
from histtrim.cli.errors import InputError
from histtrim.cli.jsontext import STDIN
from histtrim.display.tables import escape_controls


def emit(output: str | None, data: bytes | Iterable[bytes | memoryview]) -> None:
    """Write `data` (already validated; bytes, or chunks made as they are written) to
    `output`, or to stdout."""
    if output is None or output == STDIN:
        if not isinstance(data, bytes):
            data = b"".join(data)  # all made before the first byte goes out
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


def say(*lines: str, err: bool = False) -> None:
    """Print report lines (a table, a summary, an event, an error) on stdout, or stderr with
    `err`: the one place the CLI prints text. Each line has its controls escaped (a newline
    in it included): a name from a file, a config or a policy never reaches the terminal as
    a control sequence or a line of its own."""
    text = "\n".join(escape_controls(line) for line in lines)
    print(text, file=sys.stderr if err else sys.stdout)
