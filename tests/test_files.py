"""`histtrim.files`: the one atomic write and the one config-document reader every part uses."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from histtrim import Policy
from histtrim._files import read_document, write_atomically
from histtrim.cli import main


def test_a_new_file_gets_the_usual_permissions_and_an_old_one_keeps_its_own(
    tmp_path: Path,
) -> None:
    umask = os.umask(0o022)
    try:
        fresh = tmp_path / "fresh.json"
        write_atomically(fresh, b"[]\n")
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o644  # not mkstemp's 0o600
        fresh.chmod(0o600)
        write_atomically(fresh, b"[1]\n")
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o600
        assert fresh.read_bytes() == b"[1]\n"
    finally:
        os.umask(umask)
    assert [p.name for p in tmp_path.iterdir()] == ["fresh.json"]  # no temporary left


def test_a_failed_write_leaves_the_original_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "session.json"
    target.write_bytes(b"original")

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        write_atomically(target, b"new contents")
    assert target.read_bytes() == b"original"
    assert [p.name for p in tmp_path.iterdir()] == ["session.json"]


def test_config_documents_accept_a_byte_order_mark_and_name_a_bad_suffix(tmp_path: Path) -> None:
    policy = tmp_path / "half.toml"
    policy.write_bytes(b"\xef\xbb\xbfreactive_target = \"1/2\"\n")
    assert Policy.load(policy) == Policy(reactive_target="1/2")
    assert read_document(policy) == ('reactive_target = "1/2"\n', "toml")
    with pytest.raises(ValueError, match=r"path: expected a \.toml or \.json file"):
        read_document(tmp_path / "policy.yaml")


def _reader(fifo: Path, got: list[bytes]) -> threading.Thread:
    def read() -> None:
        with open(fifo, "rb") as file:
            got.append(file.read())

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def test_a_fifo_is_written_to_never_replaced(tmp_path: Path) -> None:
    """Issue 20 item 4: a non-regular target (here a FIFO) is written to directly; temp file +
    rename replaced it with a regular file (as root, `-o /dev/null` deleted the null device)."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    thread = _reader(fifo, got)
    write_atomically(fifo, b"[1]\n")
    thread.join(10)
    assert got == [b"[1]\n"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["pipe"]


def test_a_character_device_is_written_to_never_replaced(tmp_path: Path) -> None:
    """Issue 20 item 4: a character device (a null device made in tmp_path) stays a device."""
    null = tmp_path / "null"
    try:
        os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("cannot make a device node here")
    write_atomically(null, b"[1]\n")
    assert stat.S_ISCHR(null.stat().st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["null"]


def test_a_directory_or_a_symlink_loop_is_an_os_error(tmp_path: Path) -> None:
    """Issue 20 item 5: a symlink loop is an OSError (the CLI's "cannot write"), never a
    RuntimeError from path resolution; a directory is refused as one."""
    loop = tmp_path / "a"
    loop.symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(loop)
    with pytest.raises(OSError, match="symbolic links"):
        write_atomically(loop, b"[]\n")
    with pytest.raises(IsADirectoryError, match="is a directory"):
        write_atomically(tmp_path, b"[]\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another owner")
def test_an_overwrite_keeps_the_owner_and_group(tmp_path: Path) -> None:
    """Issue 20 item 5: root rewriting a nobody-owned 0640 file left it root:root, unreadable
    by its owner; the new file keeps the old owner, group and mode."""
    target = tmp_path / "session.json"
    target.write_bytes(b"[]\n")
    os.chown(target, 65534, 65534)
    target.chmod(0o640)
    write_atomically(target, b"[1]\n")
    after = target.stat()
    assert (after.st_uid, after.st_gid, stat.S_IMODE(after.st_mode)) == (65534, 65534, 0o640)
    assert target.read_bytes() == b"[1]\n"


def test_output_to_dev_stdout_into_a_pipe(tmp_path: Path) -> None:
    """Issue 20 item 4: `-o /dev/stdout` (and `-o -`) into a pipe write the output there."""
    session = tmp_path / "s.json"
    session.write_text('[{"role": "user", "content": "hi"}]')
    command = [sys.executable, "-m", "histtrim.cli", "trim", str(session), "--max-turns", "5"]
    for output in ("/dev/stdout", "-"):
        done = subprocess.run(
            [*command, "-o", output],
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == session.read_bytes()


def test_cli_says_cannot_write_for_a_symlink_loop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 20 item 5: a symlink loop as `-o` is one line, "cannot write", no traceback."""
    session = tmp_path / "s.json"
    session.write_text('[{"role": "user", "content": "hi"}]')
    loop = tmp_path / "a"
    loop.symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(loop)
    code = main(["trim", str(session), "--max-turns", "5", "-o", str(loop)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "cannot write" in err, err


def test_chunks_are_written_as_they_come_and_a_failure_between_them_keeps_the_original(
    tmp_path: Path,
) -> None:
    """Issue 32: output given as chunks goes into the temporary file one at a time (a
    re-written body is never held whole); the target changes only after the last, and an
    error while they are made leaves it as it was, with no temporary behind."""
    target = tmp_path / "session.json"
    target.write_bytes(b"original")
    seen: list[bytes] = []

    def pieces() -> Iterator[bytes | memoryview]:
        for piece in (b"[1,", memoryview(b" 2]\n")):
            yield piece
            seen.append(target.read_bytes())

    write_atomically(target, pieces())
    assert target.read_bytes() == b"[1, 2]\n"
    assert seen == [b"original", b"original"]

    def failing() -> Iterator[bytes]:
        yield b"[1"
        raise ValueError("the second chunk cannot be made")

    with pytest.raises(ValueError, match="second chunk"):
        write_atomically(target, failing())
    assert target.read_bytes() == b"[1, 2]\n"
    assert [p.name for p in tmp_path.iterdir()] == ["session.json"]


def test_chunks_for_a_fifo_are_all_made_before_it_is_written(tmp_path: Path) -> None:
    """Issue 32: a target that is not a regular file cannot be put back, so its chunks are
    joined first: one that fails to be made writes nothing there."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    thread = _reader(fifo, got)
    write_atomically(fifo, iter([b"[1", memoryview(b"]\n")]))
    thread.join(10)
    assert got == [b"[1]\n"]

    def failing() -> Iterator[bytes]:
        yield b"[1"
        raise ValueError("cannot be made")

    with pytest.raises(ValueError, match="cannot be made"):
        write_atomically(fifo, failing())  # no reader: opening the FIFO would block
    assert stat.S_ISFIFO(fifo.stat().st_mode)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc/self/fd")
@pytest.mark.parametrize("name", ["/dev/fd/{}", "/proc/self/fd/{}", "/proc/{pid}/fd/{}"])
def test_a_name_for_an_open_descriptor_is_written_through_it(tmp_path: Path, name: str) -> None:
    """Issue 38 item 8: a descriptor's name leads the kernel to the file behind it; replacing
    that file lost what the shell's `>> log` held. The write goes through the descriptor: an
    append-mode one appends, the file stays the same file."""
    log = tmp_path / "log"
    log.write_bytes(b"earlier\n")
    inode = log.stat().st_ino
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    try:
        write_atomically(Path(name.format(fd, pid=os.getpid())), iter([b"[1", b"]\n"]))
    finally:
        os.close(fd)
    assert log.read_bytes() == b"earlier\n[1]\n"
    assert log.stat().st_ino == inode
    assert [p.name for p in tmp_path.iterdir()] == ["log"]  # no temporary left


def test_output_to_dev_stdout_appended_to_a_log_keeps_it(tmp_path: Path) -> None:
    """Issue 38 item 8: `-o /dev/stdout >> log 2>&1` keeps the log's earlier lines, and the
    output and the summary line both reach it."""
    session = tmp_path / "s.json"
    session.write_text('[{"role": "user", "content": "hi"}]')
    log = tmp_path / "log"
    log.write_bytes(b"earlier\n")
    with log.open("ab") as sink:
        done = subprocess.run(
            [sys.executable, "-m", "histtrim.cli", "trim", str(session), "--max-turns", "5",
             "-o", "/dev/stdout"],
            stdout=sink, stderr=subprocess.STDOUT, timeout=60, check=False,
        )
    assert done.returncode == 0
    text = log.read_bytes()
    assert text.startswith(b"earlier\n" + session.read_bytes())
    assert b"nothing to trim" in text
