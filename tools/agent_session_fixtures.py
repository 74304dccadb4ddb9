"""Build tests/data/agent_sessions/: real session files of the five agent formats the
readers of `histtrim.adapters.agent_sessions` read, copied from public repositories under
the MIT licence, each pinned by the SHA-256 of its source and of what is written.

Every file is copied byte for byte, except where `keep_lines` says the source is cut after
its first N lines (a record boundary) to keep the test data small; the folder's
PROVENANCE.md says so. A source whose hash differs from the pin stops the build, so a
rebuild reproduces the committed files exactly or writes nothing.

    python tools/agent_session_fixtures.py [--mirror /work/.mirror] [--out DIR]
    python tools/agent_session_fixtures.py --git OWNER/NAME=GITDIR ...

`--mirror DIR` reads each repository from `DIR/OWNER+NAME/repo` (a bare clone);
`--git OWNER/NAME=GITDIR` names one elsewhere. Each file is read with
`git show COMMIT:PATH`.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "agent_sessions"


@dataclass(frozen=True)
class Repo:
    name: str
    """owner/name on GitHub."""
    license_path: str
    license_commit: str
    license_sha256: str
    licence: str


@dataclass(frozen=True)
class Fixture:
    agent: str
    repo: Repo
    commit: str
    path: str
    blob: str
    """The git blob id of the source file at `commit`."""
    sha256: str
    """SHA-256 of the source file."""
    out: str
    out_sha256: str
    """SHA-256 of the file written (the source itself unless `keep_lines` cuts it)."""
    keep_lines: int | None = None
    note: str = ""


VIBE = Repo(
    "Mai0313/VibeCodingTracker",
    "LICENSE",
    "7acc4bccbf50297043be2eae514676408f3bc9cd",
    "b85dcd3e453d05982552c52b5fc9e0bdd6d23c6f8e844b984a88af32570b0cc0",
    "MIT",
)
PI = Repo(
    "badlogic/pi-mono",
    "LICENSE",
    "83378aad7e74a0e2bb8f37c007a9685fb4609d8a",
    "0457f5bcec3b3b211605dfb5d1a49042fd638f3686a410fe099c24a25af13c48",
    "MIT",
)
OPENHANDS = Repo(
    "All-Hands-AI/OpenHands",
    "LICENSE",
    "156d0686c46aafb0fa9d291da6421fb6f64dddc0",
    "90bd960a6d24cce8f64f3f2b9be5923d5b33e2650afd6fb683ced4be83e5bb94",
    "MIT (the licence of everything outside `enterprise/`, where these files are)",
)

_VIBE_HEAD = "7acc4bccbf50297043be2eae514676408f3bc9cd"
_VIBE_JSON = "894772f767a40b3428cc756be22de54bf68594d1"
"""The last VibeCodingTracker commit with a Gemini CLI chat in the JSON format Gemini CLI
wrote before its JSON Lines files (2026-04)."""
_OH = "156d0686c46aafb0fa9d291da6421fb6f64dddc0"
_TRAJS = "tests/runtime/trajs/"


def _openhands(stem: str, blob: str, digest: str) -> Fixture:
    return Fixture(
        "openhands", OPENHANDS, _OH, f"{_TRAJS}{stem}.json", blob, digest,
        f"{stem}.json", digest,
        note="A trajectory OpenHands' runtime tests replay (a list of events).",
    )


FIXTURES: tuple[Fixture, ...] = (
    Fixture(
        "claude-code", VIBE, _VIBE_HEAD, "tests/fixtures/sessions/claude_code.jsonl",
        "54e082bb9c0da13a38effd12d3f1db66062a8861",
        "d40d3f0792b00cc1a222592966f8f007539c4ed3cbd824e3ccd6191b2e83df7a",
        "vibe-claude-code.jsonl",
        "d40d3f0792b00cc1a222592966f8f007539c4ed3cbd824e3ccd6191b2e83df7a",
        note="A Claude Code project session file (`~/.claude/projects/...`).",
    ),
    Fixture(
        "codex", VIBE, _VIBE_HEAD, "tests/fixtures/sessions/codex.jsonl",
        "e06beb70b3c24da1801a4c9fba8565ddecb4d360",
        "213e51d5c7cb976f4c83c74839151f71b41617798a1287212e3fc04ad6c488b2",
        "vibe-codex.jsonl",
        "213e51d5c7cb976f4c83c74839151f71b41617798a1287212e3fc04ad6c488b2",
        note="A Codex CLI rollout (`~/.codex/sessions/...`).",
    ),
    Fixture(
        "gemini-cli", VIBE, _VIBE_HEAD, "tests/fixtures/sessions/gemini.jsonl",
        "d936098cdffda3d306c6c9a2f0f14ff1a95b8c6b",
        "3c1aa66e473df33e96ff2527685497839ea7e76f1ac0f8adaa28f236bb8d46fc",
        "vibe-gemini.jsonl",
        "3c1aa66e473df33e96ff2527685497839ea7e76f1ac0f8adaa28f236bb8d46fc",
        note=(
            "A Gemini CLI chat in the append-only JSON Lines format (2026-04 on: a header "
            "line, message records rewritten by id, `$set` records)."
        ),
    ),
    Fixture(
        "gemini-cli", VIBE, _VIBE_JSON, "examples/test_conversation_gemini.json",
        "7a866e83a352ff438418971f2cdfafb35fb53d7e",
        "8398728609870ca9bd307039ae6603b93b9f5b5d254eb141c2883d5812b4d59c",
        "vibe-gemini-2026-03.json",
        "8398728609870ca9bd307039ae6603b93b9f5b5d254eb141c2883d5812b4d59c",
        note="A Gemini CLI chat in the older format: one JSON object with `messages`.",
    ),
    Fixture(
        "pi", PI, "83378aad7e74a0e2bb8f37c007a9685fb4609d8a",
        "packages/coding-agent/test/fixtures/before-compaction.jsonl",
        "5e744e3d4b69b43789776719dd900af043fd8a8d",
        "56f9cf221541c09091cf082ad2ed0c4b4931ef5e8857a42dc623afae35a2e59c",
        "before-compaction-first-407.jsonl",
        "3d2f585ebfa4f0fb0b5c3a6370c7630054ef6788277d8f8f260d16e0f5226228",
        keep_lines=407,
        note=(
            "A Pi coding-agent session (version 1: entries in order, no `id`/`parentId`) "
            "with a compaction entry at line 360 (2.4 MB; the first 407 lines are 1.1 MB and "
            "end with an assistant message the user aborted, before the next prompt)."
        ),
    ),
    _openhands(
        "basic", "54a330860d86fa6d9d540eb77e38ab1e44a7e0c1",
        "e80ea691272569f24291ee6cbf3d4daa62e6f0ddb7bedd2177c6896a502558fb",
    ),
    _openhands(
        "basic_gui_mode", "3ffa3caf56ba6d8f0b2b516f6a85362356c3f9b6",
        "2132fbda813f75ac6d731a439d510b0a99a4b72b5aa7e51dc7541ccf02a09b18",
    ),
    _openhands(
        "basic_interactions", "f97bcaa654e3979a9ea680053f3bec5de0bf8d4e",
        "32d1bb759064b37fafc43936591c2b8851370e01de1a6e6b6d1e55689f00958a",
    ),
    _openhands(
        "wrong_initial_state", "9eb85ede4a4b75f2f56023e543de428981e2be2d",
        "1cc111115cf292079b00aa6313929843eda2fd9b62a605c6ebe5bad458d7d3ef",
    ),
)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def git_show(gitdir: str, commit: str, path: str) -> bytes:
    return subprocess.run(
        ["git", "--git-dir", gitdir, "show", f"{commit}:{path}"],
        check=True, capture_output=True,
    ).stdout


def pinned(data: bytes, expected: str, what: str) -> bytes:
    if sha256(data) != expected:
        raise SystemExit(f"{what}: SHA-256 {sha256(data)}, expected {expected}")
    return data


def cut(data: bytes, lines: int | None) -> bytes:
    """The first `lines` lines of a JSON Lines file (all of it when None)."""
    if lines is None:
        return data
    return b"".join(data.splitlines(keepends=True)[:lines])


def licence_name(repo: Repo) -> str:
    return "LICENSE." + repo.name.replace("/", "+")


def provenance(agent: str, fixtures: list[Fixture]) -> str:
    rows = []
    for f in fixtures:
        shortened = (
            f" Cut after its first {f.keep_lines} lines." if f.keep_lines is not None else
            " Copied byte for byte."
        )
        rows.append(
            f"""## `{f.out}`

{f.note}{shortened}

- Repository: https://github.com/{f.repo.name} ({f.repo.licence}; `{licence_name(f.repo)}`)
- Commit: `{f.commit}`
- Path: `{f.path}`
- Git blob: `{f.blob}`
- Source SHA-256: `{f.sha256}`
- Written SHA-256: `{f.out_sha256}`
"""
        )
    body = "\n".join(rows)
    return f"""# {agent}: provenance

Real session files of this agent's own format, for the tests of
`histtrim.adapters.{agent.replace("-", "_")}`. Written by `tools/agent_session_fixtures.py`
(never edited by hand), which checks every source and every file it writes against the
SHA-256 pinned there.

{body}"""


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.replace(tmp, path)


def build(gitdirs: dict[str, str], out: Path) -> list[Path]:
    written: list[Path] = []
    agents = sorted({f.agent for f in FIXTURES})
    for agent in agents:
        fixtures = [f for f in FIXTURES if f.agent == agent]
        folder = out / agent
        files: dict[Path, bytes] = {}
        for f in fixtures:
            source = pinned(git_show(gitdirs[f.repo.name], f.commit, f.path), f.sha256,
                            f"{f.repo.name}:{f.path}")
            files[folder / f.out] = pinned(cut(source, f.keep_lines), f.out_sha256, f.out)
        for repo in {f.repo for f in fixtures}:
            text = git_show(gitdirs[repo.name], repo.license_commit, repo.license_path)
            files[folder / licence_name(repo)] = pinned(text, repo.license_sha256,
                                                        f"{repo.name}:LICENSE")
        files[folder / "PROVENANCE.md"] = provenance(agent, fixtures).encode()
        for path, data in sorted(files.items()):
            write_atomic(path, data)
            written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", default="/work/.mirror",
                        help="folder of bare clones named OWNER+NAME/repo")
    parser.add_argument("--git", action="append", default=[], metavar="OWNER/NAME=GITDIR")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    repos = {f.repo.name for f in FIXTURES}
    gitdirs = {name: f"{args.mirror}/{name.replace('/', '+')}/repo" for name in repos}
    for spec in args.git:
        name, _, gitdir = spec.partition("=")
        if name not in repos or not gitdir:
            raise SystemExit(f"--git {spec!r}: expected one of {sorted(repos)}=GITDIR")
        gitdirs[name] = gitdir
    for path in build(gitdirs, args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
