"""`histtrim.files`: the one atomic write and the one config-document reader every part uses."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from histtrim import Policy
from histtrim._files import read_document, write_atomically


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
