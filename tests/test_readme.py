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


def _stderr_line(line: str) -> bool:
    """The README's convention: a report line (`histtrim: ...`) or a HistoryTrimmed event is
    stderr; any other line is stdout."""
    return line.startswith("histtrim: ") or line.startswith('{"budget"')


def test_readme_command_blocks_run_verbatim_and_print_what_they_show(tmp_path: Path) -> None:
    """Every `$ histtrim ...` command of the README runs, in order, in a copy of a fresh
    clone's examples/ (and tests/data/agent_sessions/), exits 0 and prints exactly the
    lines shown under it, stdout and stderr each compared on its own (the README says which
    stream a HistoryTrimmed event goes to).
    `$ make ...` commands cannot run inside `make test`
    (they are `make test`): each is dry-run (`make -n`), so a missing or broken target fails."""
    blocks = _console_blocks()
    assert len(blocks) >= 4
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    agents = "tests/data/agent_sessions"  # agents' own files (the README reads one)
    shutil.copytree(ROOT / agents, tmp_path / agents)
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
            shown_err = [line for line in expected if _stderr_line(line)]
            shown_out = [line for line in expected if not _stderr_line(line)]
            assert done.stdout.splitlines() == shown_out, command
            assert done.stderr.splitlines() == shown_err, command
            ran += 1
    assert ran >= 6
    assert (tmp_path / "trimmed.json").exists() and (tmp_path / "kept.jsonl").exists()


def test_readme_names_every_chapter() -> None:
    """The README's section table lists every notebook, and its `make spec` transcript counts
    them all (a new chapter must not leave the README behind)."""
    text = README.read_text(encoding="utf-8")
    notebooks = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
    missing = [nb.name for nb in notebooks if f"`notebooks/{nb.name}`" not in text]
    assert not missing
    count = len(notebooks)
    assert f"building the living spec: {count} chapters" in text
    assert f"[{count}/{count}] {notebooks[-1].stem}:" in text
