"""Whole-file writes and config documents: the two ways histtrim touches files.

A write replaces the file in one step (a temporary file beside it, flushed and fsynced, then
`os.replace`): readers see the old file or the new one, never half of either, and a failure
leaves the original untouched and no temporary behind."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
import tomllib
from pathlib import Path
from typing import Any, Literal

DocumentFormat = Literal["toml", "json"]


def write_atomically(path: Path, data: bytes) -> None:
    """Replace `path` with `data` in one step; an existing file keeps its permissions, a new
    one gets the usual ones (0o666 less the umask)."""
    target = path.resolve() if path.is_symlink() else path
    mode: int | None = None
    with contextlib.suppress(FileNotFoundError):
        mode = stat.S_IMODE(target.stat().st_mode)
    if mode is None:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def read_document(path: str | Path) -> tuple[str, DocumentFormat]:
    """A `.toml` or `.json` config file's text (a byte order mark is not content) and its
    format, chosen by the suffix."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".toml", ".json"):
        raise ValueError(f"path: expected a .toml or .json file, got {path.name!r}")
    return path.read_text(encoding="utf-8-sig"), "toml" if suffix == ".toml" else "json"


def parse_document(text: str, format: DocumentFormat) -> Any:
    """A TOML or JSON config document as plain data (JSON may carry NaN/Infinity ratios)."""
    return tomllib.loads(text) if format == "toml" else json.loads(text)
