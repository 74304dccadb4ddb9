"""The README runs as written: the usage example shows a whole-turn trim (KEEP-1, SEEN-1) and
prints what its comment says; every command block prints what the README shows."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from histtrim import BREADCRUMB, TrimResult

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def test_readme_usage_example_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    assert blocks, "README has no python example"
    printed: list[str] = []
    namespace: dict[str, object] = {"print": lambda *args: printed.append(" ".join(map(str, args)))}
    exec(blocks[0], namespace)
    shown = re.search(r"# prints: (.*)", blocks[0])
    assert shown is not None and printed == [shown.group(1)]
    result = namespace["result"]
    assert isinstance(result, TrimResult)
    # KEEP-1: the oldest whole turn (user, tool call, tool result, answer) goes.
    assert (result.dropped_turns, result.dropped_messages, result.kept_turns) == (1, 4, 1)
    assert result.tokens_after <= result.budget_tokens < result.tokens_before
    # SEEN-1: the model sees the breadcrumb right after the system prompt.
    view = namespace["model_view"]
    assert isinstance(view, list)
    assert [row.content for row in view][1] == BREADCRUMB


def _console_blocks() -> list[list[tuple[str, list[str]]]]:
    """Each ```console block of the README as (command, expected output lines) pairs."""
    blocks = re.findall(r"```console\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    parsed: list[list[tuple[str, list[str]]]] = []
    for block in blocks:
        steps: list[tuple[str, list[str]]] = []
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                assert steps, f"output before any command in a README block: {line!r}"
                steps[-1][1].append(line)
        parsed.append(steps)
    return parsed


def test_readme_command_blocks_run_verbatim_and_print_what_they_show(tmp_path: Path) -> None:
    """Every `$ histtrim ...` command of the README runs, in order, in a copy of a fresh
    clone's examples/, exits 0 and prints exactly the lines shown under it (stdout, then
    stderr, as a terminal shows them). `$ make ...` commands cannot run inside `make test`
    (they are `make test`): each is dry-run (`make -n`), so a missing or broken target fails."""
    blocks = _console_blocks()
    assert len(blocks) >= 4
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    ran = 0
    for steps in blocks:
        for command, expected in steps:
            argv = shlex.split(command)
            if argv[0] == "make":
                done = subprocess.run(["make", "-n", *argv[1:]], cwd=ROOT, capture_output=True,
                                      text=True, check=False)
                assert done.returncode == 0, (command, done.stderr)
                continue
            assert argv[0] == "histtrim", command
            done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True,
                                  check=False)
            assert done.returncode == 0, (command, done.stderr)
            assert (done.stdout + done.stderr).splitlines() == expected, command
            ran += 1
    assert ran >= 6
    assert (tmp_path / "trimmed.json").exists() and (tmp_path / "kept.jsonl").exists()
