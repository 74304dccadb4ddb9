"""Build examples/real/ from the original files of two public MIT-licensed repositories: the
200 tau-bench airline sessions (gpt-4o) and SWE-agent's function-calling demonstrations.

Each session becomes one JSON Lines file of OpenAI chat messages. tau-bench's messages are
written exactly as recorded; SWE-agent's keep their OpenAI fields (role, content, tool_calls)
and name the call a tool row answers as `tool_call_id` (SWE-agent writes a one-item list,
`tool_call_ids`). The script checks every source file against the SHA-256 pinned below, so a
rebuild either reproduces the committed corpus byte for byte or stops.

    python tools/real_sessions.py --git tau-bench=PATH/TO/tau-bench.git \\
        --git swe-agent=PATH/TO/SWE-agent.git [--out examples/real]

`--git NAME=DIR` reads the pinned commit from a clone (`git show COMMIT:PATH`);
`--dir NAME=DIR` reads a checkout (or download) of the repository at that commit.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Message = dict[str, Any]
Reader = Callable[[str], bytes]


@dataclass(frozen=True)
class Source:
    """One original file: where it lives and the hash it must have."""

    path: str
    sha256: str
    name: str = ""
    """The session's file name (SWE-agent); tau-bench names each session by task and trial."""


@dataclass(frozen=True)
class Corpus:
    name: str
    repository: str
    commit: str
    license_sha256: str
    sources: tuple[Source, ...]
    what: str


TAU = Corpus(
    name="tau-bench-airline",
    repository="https://github.com/sierra-research/tau-bench",
    commit="59a200c6d575d595120f1cb70fea53cef0632f6b",
    license_sha256="243d23d45b80122b5ac575586ccef352fdc9c45e6d7d2605449aca8a17478b42",
    sources=(
        Source(
            "historical_trajectories/gpt-4o-airline.json",
            "e9e6c0297660c537f83d4fd9c476ce7a9a86ecd2784874b7bfc13be598e37bfa",
        ),
    ),
    what=(
        "The 200 airline customer-service sessions of gpt-4o in tau-bench's historical "
        "trajectories (50 tasks x 4 trials): a simulated customer talks to an agent that "
        "calls the airline's tools. One file per session, `task-TT-trial-N.jsonl`, each line "
        "one OpenAI chat message exactly as recorded (`traj`)."
    ),
)

_DEMOS = "trajectories/demonstrations/"
_MARSH = "marshmallow-code__marshmallow-1867"
SWE = Corpus(
    name="swe-agent",
    repository="https://github.com/SWE-agent/SWE-agent",
    commit="3ea751c087f32b16e039a2233dd6eefecef325d5",
    license_sha256="7610ed3916f6674e34b78417894abd57ff538b3cfdda3085e3643d82acbaf31f",
    sources=(
        Source(
            _DEMOS + "function_calling_simple.traj",
            "b75b7744217bd5e91e6be8f39f17e8a215429be9d57b2d7ef1ff4c6787375d9f",
            "function-calling-simple",
        ),
        Source(
            f"{_DEMOS}replay__{_MARSH}__function_calling__install-1/{_MARSH}.traj",
            "c2ca395c37f23e8f1b603b3f27dc7557eb9216d35b695fd458e601a526b70366",
            "marshmallow-1867-function-calling",
        ),
        Source(
            f"{_DEMOS}replay__{_MARSH}__function_calling_replace__install-1/{_MARSH}.traj",
            "446e76ce113eb8e3a12f264a5015d9f475f6e502201421d51a883b8b05ca8470",
            "marshmallow-1867-function-calling-replace",
        ),
        Source(
            f"{_DEMOS}replay__{_MARSH}__function_calling_replace_from_source/{_MARSH}.traj",
            "cb042a1bd789bfd699f90afd8641f2a64336c7829369c7342b7a66ad4efa695f",
            "marshmallow-1867-function-calling-replace-from-source",
        ),
        Source(
            _DEMOS + "str_replace_anthropic_demo.yaml",
            "b462534bf5203e7274eee9f681c6281d5e8280d681a3300648263cfdd742b3d7",
            "str-replace-anthropic-demo",
        ),
    ),
    what=(
        "SWE-agent's demonstrations that call tools natively (OpenAI `tool_calls`): long "
        "single-task coding runs. One file per demonstration, each line one OpenAI chat "
        "message of its `history`, keeping `role`, `content` and `tool_calls`; a tool row's "
        "one-item `tool_call_ids` list is written as `tool_call_id` (SWE-agent's own fields "
        "`agent`, `message_type`, `thought` and `action` repeat the content or the call and "
        "are left out)."
    ),
)

CORPORA = {"tau-bench": TAU, "swe-agent": SWE}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def git_reader(gitdir: str, commit: str) -> Reader:
    def read(path: str) -> bytes:
        return subprocess.run(
            ["git", "--git-dir", gitdir, "show", f"{commit}:{path}"],
            check=True, capture_output=True,
        ).stdout
    return read


def dir_reader(root: str) -> Reader:
    return lambda path: (Path(root) / path).read_bytes()


def checked(read: Reader, path: str, expected: str) -> bytes:
    data = read(path)
    if sha256(data) != expected:
        raise SystemExit(f"{path}: SHA-256 {sha256(data)}, expected {expected} (another version?)")
    return data


def tau_sessions(data: bytes) -> Iterator[tuple[str, list[Message]]]:
    """Every (task, trial) of the trajectory file, messages as recorded."""
    for record in json.loads(data):
        yield f"task-{record['task_id']:02d}-trial-{record['trial']}", record["traj"]


_SWE_FIELDS = ("role", "content", "tool_calls")


def swe_messages(data: bytes, path: str) -> list[Message]:
    """A demonstration's history as OpenAI messages (see the module's docstring)."""
    if path.endswith(".yaml"):
        import yaml  # only this one demonstration is YAML

        history = yaml.safe_load(data)["history"]
    else:
        history = json.loads(data)["history"]
    messages: list[Message] = []
    for row in history:
        message = {key: row[key] for key in _SWE_FIELDS if key in row}
        if "tool_call_ids" in row:
            ids = row["tool_call_ids"]
            if not (isinstance(ids, list) and len(ids) == 1):
                raise SystemExit(f"{path}: a tool row answers {ids!r}, expected one call")
            message["tool_call_id"] = ids[0]
        messages.append(message)
    return messages


def jsonl(messages: list[Message]) -> bytes:
    lines = (json.dumps(m, ensure_ascii=False, separators=(", ", ": ")) for m in messages)
    return ("\n".join(lines) + "\n").encode()


def provenance(corpus: Corpus, sources: list[tuple[Source, str]], files: int) -> str:
    rows = "\n".join(f"| `{s.path}` | `{digest}` |" for s, digest in sources)
    return f"""# {corpus.name}: provenance

{corpus.what}

- Repository: {corpus.repository}
- Commit: `{corpus.commit}`
- License: MIT (the repository's `LICENSE` at that commit, copied beside this note as `LICENSE`)
- Sessions: {files} files

| Original file (at the commit) | SHA-256 |
|---|---|
{rows}

Built by `tools/real_sessions.py` (never edited by hand); `MANIFEST.sha256` lists every
session file's SHA-256 (`sha256sum -c MANIFEST.sha256` checks them). To rebuild, clone the
repository, then from histtrim's root:

    python tools/real_sessions.py --git {_key(corpus)}=PATH/TO/CLONE/.git

The script checks each original file against the hash above and writes the same bytes.
"""


def _key(corpus: Corpus) -> str:
    return next(key for key, value in CORPORA.items() if value is corpus)


def build(corpus: Corpus, read: Reader, out: Path) -> int:
    """Write one corpus folder into `out` (replaced whole); returns the session count."""
    license_text = checked(read, "LICENSE", corpus.license_sha256)
    if not license_text.startswith(b"MIT License"):
        raise SystemExit(f"{corpus.repository}: LICENSE is not the MIT license")
    sessions: dict[str, bytes] = {}
    digests: list[tuple[Source, str]] = []
    for source in corpus.sources:
        data = checked(read, source.path, source.sha256)
        digests.append((source, sha256(data)))
        if corpus is TAU:
            for name, messages in tau_sessions(data):
                sessions[name] = jsonl(messages)
        else:
            sessions[source.name] = jsonl(swe_messages(data, source.path))
    staging = Path(tempfile.mkdtemp(prefix=f".{corpus.name}-", dir=out.parent))
    try:
        for name, data in sessions.items():
            (staging / f"{name}.jsonl").write_bytes(data)
        (staging / "LICENSE").write_bytes(license_text)
        (staging / "PROVENANCE.md").write_text(provenance(corpus, digests, len(sessions)))
        manifest = "".join(
            f"{sha256(sessions[name])}  {name}.jsonl\n" for name in sorted(sessions)
        )
        (staging / "MANIFEST.sha256").write_text(manifest)
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return len(sessions)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--git", action="append", default=[], metavar="NAME=GITDIR")
    parser.add_argument("--dir", action="append", default=[], metavar="NAME=DIR")
    parser.add_argument("--out", default="examples/real")
    args = parser.parse_args(argv)
    given = [(spec, True) for spec in args.git] + [(spec, False) for spec in args.dir]
    if not given:
        parser.error("name at least one source: --git NAME=GITDIR or --dir NAME=DIR")
    root = Path(args.out)
    root.mkdir(parents=True, exist_ok=True)
    for spec, is_git in given:
        key, _, location = spec.partition("=")
        if key not in CORPORA or not location:
            parser.error(f"{spec!r}: expected NAME=PATH with NAME one of {', '.join(CORPORA)}")
        corpus = CORPORA[key]
        read = git_reader(location, corpus.commit) if is_git else dir_reader(location)
        count = build(corpus, read, root / corpus.name)
        print(f"{root / corpus.name}: {count} sessions", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
