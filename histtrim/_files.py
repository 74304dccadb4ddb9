"""Whole-file writes and config documents: the two ways histtrim touches files.

A write replaces a regular file in one step (a temporary file beside it, flushed and fsynced,
then `os.replace`): readers see the old file or the new one, never half of either, and a
failure leaves the original untouched and no temporary behind. What is not a regular file (a
character device such as `/dev/null`, a FIFO) is never replaced: it is written to directly.
A name for a descriptor this process holds open (`/dev/stdout`, `/dev/fd/N`,
`/proc/self/fd/N`) is written through that descriptor, at its offset, whatever it leads to:
`-o /dev/stdout >> log` appends to `log` as the shell asked, never replaces or truncates it.
A directory, or a symlink loop, is an `OSError` naming why."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import stat
import sys
import tempfile
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

DocumentFormat = Literal["toml", "json"]


def write_atomically(path: Path, data: bytes | Iterable[bytes | memoryview]) -> None:
    """Replace `path` with `data` in one step; an existing file keeps its permissions and,
    when the writer may set them, its owner and group; a new one gets the usual permissions
    (0o666 less the umask). A target that is not a regular file is written in place.

    `data` may be chunks, written to the temporary file as they come (never joined): an
    error while they are made leaves the target as it was. A target that is not a regular
    file gets them joined first, so it is written only once they are all made."""
    if not isinstance(data, bytes):
        chunks: Iterable[bytes | memoryview] = data
    else:
        chunks = (data,)
    descriptor = open_descriptor(path)
    if descriptor is not None:
        _write_through(descriptor, data if isinstance(data, bytes) else b"".join(chunks))
        return
    try:
        existing: os.stat_result | None = os.stat(path)  # follows symlinks (a loop: ELOOP)
    except FileNotFoundError:
        existing = None
    if existing is not None and stat.S_ISDIR(existing.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        whole = data if isinstance(data, bytes) else b"".join(chunks)  # all made first
        with open(path, "wb") as file:  # a device or a pipe: replacing it would destroy it
            file.write(whole)
        return
    target = Path(os.path.realpath(path))
    if existing is None:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    else:
        mode = stat.S_IMODE(existing.st_mode)
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            for chunk in chunks:
                file.write(chunk)
            file.flush()
            os.fsync(file.fileno())
        if existing is not None:
            _keep_owner(temp, existing)
        os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


_DESCRIPTOR_LINK = re.compile(r"/(?:dev/fd|proc/self/fd|proc/(\d+)/fd)/(\d+)")
_MAX_LINKS = 40


def open_descriptor(path: str | Path) -> int | None:
    """The descriptor `path` names when it is one this process holds open (`/dev/stdout`,
    `/dev/fd/N`, `/proc/self/fd/N`, or a link to one), else None. Links are followed one at a
    time (at most 40), so the answer comes before the kernel's link to the file behind."""
    current = os.path.abspath(path)
    for _ in range(_MAX_LINKS):
        try:
            folder = os.path.realpath(os.path.dirname(current), strict=True)
        except OSError:
            return None
        current = os.path.join(folder, os.path.basename(current))
        found = _DESCRIPTOR_LINK.fullmatch(current)
        if found is not None and found.group(1) in (None, str(os.getpid())):
            return int(found.group(2))
        try:
            link = os.readlink(current)
        except OSError:
            return None  # not a link: an ordinary path
        current = os.path.normpath(os.path.join(folder, link))
    return None


def _write_through(descriptor: int, whole: bytes) -> None:
    """All of `whole` through an open descriptor, at its own offset (an append-mode one
    appends); Python's own buffered streams go first so the order is kept."""
    os.fstat(descriptor)  # a descriptor that is not open: EBADF, naming why
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    view = memoryview(whole)
    while view:
        view = view[os.write(descriptor, view):]


def _keep_owner(temp: str, existing: os.stat_result) -> None:
    """Give the new file the old one's owner and group, as far as the writer may (root can
    set both, an owner a group it belongs to; otherwise the writer's own stay)."""
    made = os.stat(temp)
    if (made.st_uid, made.st_gid) == (existing.st_uid, existing.st_gid):
        return
    try:
        os.chown(temp, existing.st_uid, existing.st_gid)
    except OSError:
        with contextlib.suppress(OSError):
            os.chown(temp, -1, existing.st_gid)


def read_document(path: str | Path) -> tuple[str, DocumentFormat]:
    """A `.toml` or `.json` config file's text (a byte order mark is not content) and its
    format, chosen by the suffix."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".toml", ".json"):
        raise ValueError(f"path: expected a .toml or .json file, got {path.name!r}")
    return path.read_text(encoding="utf-8-sig"), "toml" if suffix == ".toml" else "json"


def parse_document(text: str, format: DocumentFormat) -> Any:
    """A TOML or JSON config document as plain data (JSON may carry NaN/Infinity ratios);
    a document nested past the parser's recursion limit is a ValueError."""
    try:
        return tomllib.loads(text) if format == "toml" else json.loads(text)
    except RecursionError:
        raise ValueError("the document is nested too deeply") from None
