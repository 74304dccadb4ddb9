"""Issue 38 item 11: every make target works from a clone whose path holds a space. The
Makefile is run for real in such a folder, with stand-ins for the venv's tools that record
how they were called (no install, no tests: a second or two)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ("python", "ruff", "mypy", "pytest", "jupyter", "nbstripout")
TARGETS = {
    # target -> the tool each recipe line runs, in order
    "install": ["python"] * 3,
    "lint": ["ruff"],
    "typecheck": ["mypy"],
    "vectors": ["python"],
    "lite": ["python"],
    "spec": ["python", "python"],
    "pytest": ["pytest", "python"],
    "site-test": ["python", "python", "pytest"],
    "nb/01_turns": ["jupyter", "jupyter", "nbstripout"],
    "lab": ["jupyter"],
    "bench": ["python", "python"],
}


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """The Makefile in `a clone/with spaces`, its inputs present and its venv made of
    stand-ins that append their own path to calls.log."""
    folder = tmp_path / "a clone" / "with spaces"
    (folder / ".venv" / "bin").mkdir(parents=True)
    shutil.copy(ROOT / "Makefile", folder / "Makefile")
    for name in ("pyproject.toml", "livingspec/pyproject.toml", "constraints.txt",
                 "histtrim/__init__.py"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).touch()
    for tool in TOOLS:
        stub = folder / ".venv" / "bin" / tool
        stub.write_text('#!/bin/sh\nprintf "%s\\n" "$0" >> "$(dirname "$0")/../../calls.log"\n')
        stub.chmod(0o755)
    return folder


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
@pytest.mark.parametrize("target", list(TARGETS))
def test_a_target_runs_from_a_path_with_a_space(clone: Path, target: str) -> None:
    installed = clone / ".venv" / ".installed"
    if target != "install":
        installed.touch()
        (clone / ".venv" / ".installed-bench").touch()
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    done = subprocess.run(["make", "-s", target], cwd=clone, capture_output=True, text=True,
                          timeout=60, check=False, env=environment)
    assert done.returncode == 0, done.stderr
    calls = (clone / "calls.log").read_text().splitlines()
    assert calls == [f"{clone}/.venv/bin/{tool}" for tool in TARGETS[target]]
    assert installed.exists()
