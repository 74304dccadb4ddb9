"""Build examples/real/ from public repositories under permissive licences: the 200 tau-bench
airline sessions (gpt-4o) and SWE-agent's function-calling demonstrations (MIT, pinned file by
file), Claude Code transcripts found in the history of the repositories `CLAUDE_REPOS` names
(CC0, MIT, Apache-2.0), and mini-swe-agent's SWE-bench runs of Gemini 3 Pro (MIT).

tau-bench and SWE-agent: each session becomes one JSON Lines file of OpenAI chat messages.
tau-bench's messages are written exactly as recorded; SWE-agent's keep their OpenAI fields
(role, content, tool_calls) and name the call a tool row answers as `tool_call_id` (SWE-agent
writes a one-item list, `tool_call_ids`). The script checks every source file against the
SHA-256 pinned below, so a rebuild either reproduces the committed corpus byte for byte or
stops.

Claude Code (`build_claude`) and mini-swe-agent (`build_mini`): each transcript is converted
(what each row is, which rows open turns, each call's recorded usage kept; Claude Code's by the
package's reader, `histtrim.adapters.claude_code`, the one `histtrim` reads users' files
with), scrubbed (`Scrub`:
secrets, e-mail addresses, home paths) and written with a PROVENANCE.md naming, per session,
the repository, commit, path, git blob and licence it came from; see each folder's note.

    python tools/real_sessions.py --git tau-bench=PATH/TO/tau-bench.git \\
        --git swe-agent=PATH/TO/SWE-agent.git [--out examples/real]
    python tools/real_sessions.py --claude-mirror DIR --mini-swe-agent PATH/TO/mini-swe-agent.git

`--git NAME=DIR` reads the pinned commit from a clone (`git show COMMIT:PATH`);
`--dir NAME=DIR` reads a checkout (or download) of the repository at that commit;
`--claude-mirror DIR` reads each repository of `CLAUDE_REPOS` from `DIR/OWNER+NAME/repo`
(a bare clone with its history; `--claude OWNER/NAME=GITDIR` names one elsewhere).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from histtrim.adapters.claude_code import LIFETIMES, Part, rows_of, transcript_parts

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
"""The corpora pinned file by file; the Claude Code transcripts (`--claude`) are found in the
history of the repositories `CLAUDE_REPOS` names."""


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


def publish(
    out: Path, sessions: Sequence[tuple[str, bytes]], files: Mapping[str, bytes]
) -> None:
    """Write a corpus folder whole or not at all: each session as `NAME.jsonl`, the other
    `files` (licences, provenance) and `MANIFEST.sha256` over the sessions in their order,
    in a staging folder beside `out` that then replaces it."""
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        for name, data in sessions:
            (staging / f"{name}.jsonl").write_bytes(data)
        for relative, data in files.items():
            (staging / relative).parent.mkdir(parents=True, exist_ok=True)
            (staging / relative).write_bytes(data)
        manifest = "".join(f"{sha256(data)}  {name}.jsonl\n" for name, data in sessions)
        (staging / "MANIFEST.sha256").write_text(manifest)
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    finally:
        if staging.exists():
            shutil.rmtree(staging)


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
    publish(out, sorted(sessions.items()), {
        "LICENSE": license_text,
        "PROVENANCE.md": provenance(corpus, digests, len(sessions)).encode(),
    })
    return len(sessions)



# --- Claude Code transcripts ------------------------------------------------------------------


@dataclass(frozen=True)
class ClaudeRepo:
    """A public repository whose history holds Claude Code transcripts, under a permissive
    licence: where the transcripts are (fnmatch patterns) and the licence it must carry."""

    slug: str
    license: str
    patterns: tuple[str, ...] = ("logs/chat.json",)


LICENSES = {
    "MIT": (b"MIT License",),
    "Apache-2.0": (b"Apache License", b"Version 2.0"),
    "CC0-1.0": (b"CC0 1.0 Universal",),
}
"""The licences a transcript may carry, each told by the phrases its text must hold."""

CLAUDE_REPOS = (
    ClaudeRepo("M-Thisness/M-Claude", "CC0-1.0",
               ("Archives/*.jsonl", "CHAT_LOGS/*.jsonl", "transcripts/*.jsonl")),
    ClaudeRepo("conneroisu/templar", "MIT"),
    ClaudeRepo("kesslerio/attio-mcp-server", "Apache-2.0"),
    ClaudeRepo("Johannes0501/openshrooly", "MIT"),
    ClaudeRepo("connix-labs/connix", "MIT"),
    ClaudeRepo("mushfoo/puka", "MIT"),
    ClaudeRepo("pattern-stack/task-patterns", "MIT"),
    ClaudeRepo("pookNast/loopkit", "MIT"),
)
"""Every repository holding `logs/chat.json` (the transcript a popular Claude Code logging
hook commits) whose LICENSE is permissive, plus one person's CC0 archive of their sessions.
The other repositories holding that file carry no licence, or a non-permissive one."""

UNFETCHED = ("Sportinger/Fassandra", "atarazevich/overmind", "lev-os/agentping")
"""Repositories with `logs/chat.json` and an MIT licence whose history was not available."""

CLAUDE_NAME = "claude-code"
MIN_TOKENS = 20_000
"""Sessions (or parts) below this estimate are left out: the corpus is for long sessions."""

SIZE_BUDGET = 24_000_000
"""The most bytes of session files the folder may hold; the longest sessions are kept first."""


# The scrub: what is replaced in every string of a session (image data excepted), in order.
_SECRET_SHAPES = (
    ("private key", r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----"),
    ("api key", r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{20,}"),
    ("api key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("api key", r"\bgh[pousr]_[A-Za-z0-9]{30,}\b|\bgithub_pat_[A-Za-z0-9_]{30,}"),
    ("api key", r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"),
    ("api key", r"\bAIza[0-9A-Za-z_\-]{35}\b"),
    ("api key", r"\b(?:glpat|npm|hf|pypi|rk_live|sk_live|pk_live)[-_][A-Za-z0-9_\-]{20,}"),
    ("token", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    ("token", r"(?i)(?P<keep>\bbearer\s+)[A-Za-z0-9._~+/=\-]{16,}"),
    ("secret", r"(?i)(?P<keep>\b(?:api[_-]?key|secret|token|password|passwd)[\"']?\s?[:=]\s?[\"']?)"
               r"(?=[A-Za-z0-9_\-+/=.]*\d)(?=[A-Za-z0-9_\-+/=.]*[A-Za-z])[A-Za-z0-9_\-+/=.]{16,}"),
)
"""Each shape is replaced by `[REDACTED <kind>]`; a `keep` group (what names the secret) stays."""
_EMAIL = re.compile(r"\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}\b")
_KEPT_EMAILS = ("noreply@anthropic.com", "git@github.com")
_HOMES = (
    re.compile(r"(?P<p>/home/|/Users/|(?i:[a-z]:(?:\\\\|\\|/)users(?:\\\\|\\|/)))"
               r"(?P<u>[^/\\\s\"'`:;,)(\]\[<>|]+)"),
    re.compile(r"(?P<p>(?<![\w-])-home-|\b[A-Za-z]--Users-)(?P<u>[A-Za-z0-9_.]+)"),
)
"""A home folder's owner: `/home/x`, `/Users/x`, `C:\\Users\\x` (any case, any slash), and the
same paths as Claude Code names its project folders (`-home-x`, `C--Users-x`)."""
_HOME_KEPT = ("user", "runner", "linuxbrew", "Shared", "Public", "Default", "ubuntu", "node")


class Scrub:
    """Replaces secrets of common shapes, e-mail addresses and the user's name in home paths
    in every string it is given, and counts what it replaced, by kind."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self._shapes = [(kind, re.compile(pattern)) for kind, pattern in _SECRET_SHAPES]

    def _count(self, kind: str, n: int) -> None:
        if n:
            self.counts[kind] = self.counts.get(kind, 0) + n

    def text(self, text: str) -> str:
        for kind, shape in self._shapes:
            text, n = shape.subn(
                lambda m, kind=kind: (m.groupdict().get("keep") or "") + f"[REDACTED {kind}]", text
            )
            self._count(kind, n)
        text, n = _EMAIL.subn(
            lambda m: m[0] if m[0].lower() in _KEPT_EMAILS else "user@example.com", text
        )
        self._count("e-mail", n - text.count("noreply@anthropic.com") - text.count("git@github.com")
                    if n else 0)
        for home in _HOMES:
            text, n = home.subn(
                lambda m: m[0] if m["u"] in _HOME_KEPT else m["p"] + "user", text
            )
            self._count("home path", n)
        return text

    def value(self, value: Any) -> Any:
        """A copy of a JSON value with every string scrubbed; an image's data is kept."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            if value.get("type") == "base64" and "data" in value:
                return {k: (v if k == "data" else self.value(v)) for k, v in value.items()}
            return {k: self.value(v) for k, v in value.items()}
        return value


Msg = dict[str, Any]


def git(gitdir: str, *args: str) -> bytes:
    return subprocess.run(["git", "--git-dir", gitdir, *args], check=True,
                          capture_output=True).stdout


@dataclass(frozen=True)
class Version:
    """One version of one session in a repository's history."""

    repo: ClaudeRepo
    commit: str
    time: int
    path: str
    blob: str
    session: str
    rows: tuple[dict[str, Any], ...]
    skipped_lines: int


def versions(repo: ClaudeRepo, gitdir: str) -> Iterator[Version]:
    """Every distinct transcript file in the repository's history (each blob once, at the
    newest commit holding it: the licence is looked for there), split by session id
    (side-agent rows set aside)."""
    from fnmatch import fnmatch

    seen: set[str] = set()
    log = git(gitdir, "log", "--all", "--format=%H %ct").decode().split("\n")
    for line in filter(None, log):
        commit, time = line.split()
        listing = git(gitdir, "ls-tree", "-r", commit).decode().splitlines()
        for entry in listing:
            meta, path = entry.split("\t", 1)
            blob = meta.split()[2]
            if blob in seen or not any(fnmatch(path, p) for p in repo.patterns):
                continue
            if "/agent-" in path:  # a side agent's own transcript
                continue
            seen.add(blob)
            try:
                data = git(gitdir, "cat-file", "-p", blob)
            except subprocess.CalledProcessError:
                continue  # absent from the snapshot
            rows, unreadable = rows_of(data)
            bad = sum(unreadable.values())
            by_session: dict[str, list[dict[str, Any]]] = {}
            for row in rows:
                if isinstance(row.get("sessionId"), str) and not row.get("isSidechain"):
                    by_session.setdefault(row["sessionId"], []).append(row)
            for session, its in by_session.items():
                yield Version(repo, commit, int(time), path, blob, session, tuple(its), bad)


def license_at(repo: ClaudeRepo, gitdir: str, commit: str) -> bytes | None:
    """The repository's licence text at `commit`, if it is the licence `repo` names."""
    for name in ("LICENSE", "LICENSE.md", "LICENSE.txt", "COPYING"):
        try:
            text = git(gitdir, "show", f"{commit}:{name}")
        except subprocess.CalledProcessError:
            continue
        if all(phrase in text for phrase in LICENSES[repo.license]):
            return text
    return None


def _assistant_ids(rows: Iterable[dict[str, Any]]) -> set[str]:
    return {r["message"]["id"] for r in rows
            if r.get("type") == "assistant" and isinstance(r.get("message"), dict)
            and isinstance(r["message"].get("id"), str)}


@dataclass(frozen=True)
class Merged:
    """One session: the union of its versions' rows (each row once, by its uuid), oldest
    version first, each in its file's order; and the versions it was read from."""

    session: str
    repo: ClaudeRepo
    versions: tuple[Version, ...]
    rows: tuple[dict[str, Any], ...]


def merged_sessions(found: list[Version]) -> tuple[list[Merged], int]:
    """One session per session id, all its versions merged (a hook that rewrites the file
    keeps part of a session in one commit and the rest in another); then a session whose calls
    all appear in a longer one (a fork's copy, a resumed session) is dropped. Returns the
    sessions and how many were dropped as copies."""
    groups: dict[str, list[Version]] = {}
    for v in found:
        groups.setdefault(v.session, []).append(v)
    merged: list[Merged] = []
    for session, group in groups.items():
        group.sort(key=lambda v: (v.time, v.commit, v.path))
        rows: dict[str, dict[str, Any]] = {}
        for v in group:
            for row in v.rows:
                key = row.get("uuid")
                if isinstance(key, str) and key not in rows:
                    rows[key] = row
        merged.append(Merged(session, group[0].repo, tuple(group), tuple(rows.values())))
    merged.sort(key=lambda m: (-len(m.rows), m.session))
    kept: list[Merged] = []
    kept_ids: list[set[str]] = []
    for m in merged:
        ids = _assistant_ids(m.rows)
        if ids and any(ids <= other for other in kept_ids):
            continue
        kept_ids.append(ids)
        kept.append(m)
    return kept, len(merged) - len(kept)


@dataclass
class Built:
    """One converted session: its messages and where they came from."""

    name: str
    session: Merged
    part: int
    parts: int
    messages: list[Msg]
    tokens: int
    data: bytes = b""


def _estimate(messages: list[Msg]) -> int:
    from histtrim.adapters.anthropic import from_anthropic
    from histtrim.estimate import estimate_history_tokens

    return estimate_history_tokens(from_anthropic(messages).rows)


def build_claude(gitdirs: dict[str, str], out: Path) -> int:
    """Write the Claude Code folder into `out` (replaced whole); returns the session count."""
    found: list[Version] = []
    licences: dict[str, bytes] = {}
    unlicensed: dict[str, int] = {}
    for repo in CLAUDE_REPOS:
        if repo.slug not in gitdirs:
            raise SystemExit(f"{repo.slug}: no clone given (--claude or --mirror)")
        gitdir = gitdirs[repo.slug]
        for v in versions(repo, gitdir):
            text = license_at(repo, gitdir, v.commit)
            if text is None:
                unlicensed[repo.slug] = unlicensed.get(repo.slug, 0) + 1
                continue
            licences[f"{repo.slug}@{v.commit}"] = text
            found.append(v)
    kept, duplicates = merged_sessions(found)
    copies = 0
    scrub = Scrub()
    dropped: dict[str, int] = {}
    candidates: list[Built] = []
    short = 0
    for v in sorted(kept, key=lambda v: (v.repo.slug, v.session)):
        found_parts, why = transcript_parts([dict(r) for r in v.rows])
        for kind, n in why.items():
            dropped[kind] = dropped.get(kind, 0) + n
        parts = [corpus_messages(p) for p in found_parts]
        for k, part in enumerate(parts):
            messages = scrub.value(part)
            tokens = _estimate(messages)
            if tokens < MIN_TOKENS:
                short += 1
                continue
            owner = v.repo.slug.split("/")[0].lower()
            name = f"{owner}-{v.session[:8]}" + (f"-part{k + 1}" if len(parts) > 1 else "")
            candidates.append(Built(name, v, k + 1, len(parts), messages, tokens, jsonl(messages)))
    chosen: list[Built] = []
    size = 0
    over_budget: list[Built] = []
    kept_calls: list[set[str]] = []
    for b in sorted(candidates, key=lambda b: (-b.tokens, b.name)):
        calls = _call_ids(b.messages)
        if any(calls <= other for other in kept_calls):
            copies += 1  # a part another session holds too (a session resumed under a new id)
            continue
        kept_calls.append(calls)
        if size + len(b.data) > SIZE_BUDGET:
            over_budget.append(b)
            continue
        chosen.append(b)
        size += len(b.data)
    chosen.sort(key=lambda b: b.name)
    used: dict[str, str] = {}
    files: dict[str, bytes] = {}
    for b in chosen:
        for v in b.session.versions:
            text = licences[f"{v.repo.slug}@{v.commit}"]
            used[f"{v.repo.slug}@{v.commit}"] = licence_file(v.repo.slug, text)
            files[f"LICENSES/{licence_file(v.repo.slug, text)}"] = text
    files["PROVENANCE.md"] = claude_provenance(
        chosen, used, scrub.counts, dropped, duplicates, copies, short, over_budget,
        unlicensed,
        sum(v.skipped_lines for b in chosen for v in b.session.versions)).encode()
    publish(out, [(b.name, b.data) for b in chosen], files)
    return len(chosen)


def _call_ids(messages: list[Msg]) -> set[str]:
    return {b["id"] for m in messages if m["role"] == "assistant"
            for b in m["content"] if b.get("type") == "tool_use"}


def corpus_messages(part: Part) -> list[Msg]:
    """A part's messages as the corpus writes them: each assistant message with the usage
    and model its call recorded (the package's reader keeps them there), the cache write's
    lifetimes where recorded (`cache_creation`), and the call's time (`timestamp`, its first
    row's, UTC)."""
    out: list[Msg] = []
    for message, call in zip(part.messages, part.calls, strict=True):
        if call is None:
            out.append(message)
            continue
        message = dict(message)
        lifetimes = call.usage.get("cache_creation") if "usage" in message else None
        if isinstance(lifetimes, dict):
            kept = {k: lifetimes[k] for k in LIFETIMES if isinstance(lifetimes.get(k), int)}
            if kept:  # beside `usage`, whose counts stay the four every session has
                message["cache_creation"] = kept
        if call.timestamp is not None:
            moment = datetime.fromtimestamp(call.timestamp, UTC)
            message["timestamp"] = moment.isoformat(timespec="milliseconds").replace(
                "+00:00", "Z")
        out.append(message)
    return out


def licence_file(slug: str, text: bytes) -> str:
    return f"{slug.replace('/', '+')}-{sha256(text)[:8]}.txt"


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items())) or "none"


def claude_provenance(
    chosen: list[Built], licences: dict[str, str], scrubbed: dict[str, int],
    dropped: dict[str, int], duplicates: int, copies: int, short: int,
    over_budget: list[Built],
    unlicensed: dict[str, int], unreadable: int,
) -> str:
    rows = "\n".join(
        f"| `{b.name}.jsonl` | {b.part}/{b.parts} | {b.tokens} | `{v.repo.slug}` | `{v.commit}` "
        f"| `{v.path}` | `{v.blob}` | {v.repo.license} "
        f"(`LICENSES/{licences[f'{v.repo.slug}@{v.commit}']}`) |"
        for b in chosen for v in b.session.versions
    )
    repos = "\n".join(
        f"- https://github.com/{r.slug} ({r.license}; {', '.join(f'`{p}`' for p in r.patterns)})"
        for r in CLAUDE_REPOS
    )
    left = ", ".join(f"`{b.name}` ({b.tokens})" for b in over_budget) or "none"
    no_licence = _counts(unlicensed)
    return f"""# {CLAUDE_NAME}: provenance

Real Claude Code sessions, as their users committed the transcripts to public repositories
under a permissive licence. One file per session (or per context of a session: a `/clear`,
a compaction or a new root row starts another part), each line one Anthropic Messages API
message.

Sources (every version of every transcript file in each repository's history):

{repos}

How a transcript becomes a session (`tools/real_sessions.py`, never edited by hand):

- Rows are read in file order. Only real prompts open turns: a user row is a prompt unless
  it is a side agent's (`isSidechain`), a meta row (`isMeta`), a slash command's echo or
  output (`<command-name>`, `<local-command-stdout>`...) or an interruption
  (`[Request interrupted by user...]`); those are dropped. A notification the client injects
  as a user row (`<task-notification>`, `<bash-notification>`, `<system-reminder>`) is a
  prompt: Claude Code sends it and the model answers it.
  `/clear` ends the context and a compaction's summary (`isCompactSummary`) starts a new one
  (the summary is the new part's first user message).
- Assistant rows are grouped by message id into one assistant message (text, tool-use and
  image blocks in order, rows the client wrote after a result of the same response included,
  their results one user message after it; thinking blocks are left out: histtrim's rows
  carry no reasoning, and where a model keeps earlier thinking in its context the recorded
  input counts tokens the file does not hold); the client's own assistant rows (model
  `<synthetic>`, e.g. API errors) are dropped.
- Consecutive tool-result rows are one user message of `tool_result` blocks.
- **Recorded usage**: each assistant message carries `usage`, the provider's counts for the
  call that produced it, as the client recorded them (the message's last row):
  `input_tokens` (uncached input), `cache_read_input_tokens`, `cache_creation_input_tokens`
  (written to the cache) and `output_tokens`; the prompt of that call is their first three
  summed. `model` names the model. Where the client recorded how long the written cache
  lives, `cache_creation` keeps the split of `cache_creation_input_tokens` as the API
  reports it in `usage.cache_creation` (`ephemeral_5m_input_tokens`,
  `ephemeral_1h_input_tokens`), and `timestamp` is the call's time (the first row of its
  message id, UTC): a prompt cache's entries expire, so what a call reads depends on when
  the previous one wrote. These keys are histtrim's additions to the message (the API does
  not read them back). The conversion is the package's Claude Code reader
  (`histtrim.adapters.claude_code.transcript_parts`, the one `histtrim` uses on a user's
  own files); `timestamp` and `cache_creation` were added when it moved there (2026-12);
  with them left out, that build is byte-identical to the one before.
- Sessions are told apart by `sessionId`; the versions of one session in a repository's
  history are merged (each row once, by its uuid, the oldest version first: a hook that
  rewrites the file keeps part of a session in one commit and the rest in another; the table
  below lists every version used), and a session whose calls all appear in a longer kept
  one (a fork's copy, a resumed session) is dropped (sessions dropped so: {duplicates}); so
  is a part whose tool calls all appear in a longer kept part (parts dropped so: {copies}).
- Parts estimated below {MIN_TOKENS:,} tokens by histtrim are left out ({short} parts); the
  longest parts are kept first within {SIZE_BUDGET:,} bytes.

Rows dropped, by kind: {_counts(dropped)}. Lines of the source files that are not JSON
(the M-Claude archive has some, left by its owner's redaction) are skipped: {unreadable} in the
kept sessions' files. A call whose result row was such a line is unanswered in the session,
and a result whose call was is an orphan: the session is kept as read, and histtrim's sweep
repairs it (the tests run the sweep, then the validator, on every session).

**Scrub** (applied by the converter to every string, image data excepted; the recorded
usage is the provider's count before the scrub): secrets of common shapes (private key
blocks, `sk-`/`sk-ant-` keys, AWS `AKIA` ids, GitHub `ghp_`/`github_pat_`, Slack `xox?-`,
Google `AIza`, GitLab/npm/Hugging Face/PyPI/Stripe keys, JWTs, bearer tokens, long values of
`api_key`/`secret`/`token`/`password` assignments) become `[REDACTED <kind>]`; e-mail
addresses become `user@example.com` (`noreply@anthropic.com` and `git@github.com` are kept);
the user name in a home path (`/home/x`, `/Users/x`, `C:\\Users\\x` in any case and with any
slash, and Claude Code's names for project folders, `-home-x` and `C--Users-x`) becomes `user`.
Replaced: {_counts(scrubbed)}.

Left out for size: {left}. Versions without the repository's licence at their commit:
{no_licence}. Other repositories holding `logs/chat.json` carry no licence or a
non-permissive one and are not used, except {", ".join(f"`{r}`" for r in UNFETCHED)} (MIT),
of which no snapshot could be fetched.

`MANIFEST.sha256` lists every session file's SHA-256. To rebuild, fetch each repository
(a clone with its full history), then from histtrim's root:

    python tools/real_sessions.py --claude-mirror DIR   # DIR/<owner>+<name>/repo for each

One line per source version of each session (a session merged from several versions has
several lines): the repository (on GitHub), the commit, the file's path and git blob id at
that commit, and the licence text found at that commit (copied under `LICENSES/`).

| Session | Part | Tokens (histtrim) | Repository | Commit | Path | Git blob | Licence |
|---|---|---|---|---|---|---|---|
{rows}
"""



# --- mini-swe-agent runs ----------------------------------------------------------------------

MINI_REPO = "gruckion/mini-swe-agent"
MINI_COMMIT = "d12a71affd95403b036b2bdbd827349b77bfffb9"
MINI_TRAJS = "swebench_results/20251118_gemini-3-pro-74pct/trajs/"
MINI_NAME = "mini-swe-agent"
MINI_MIN_TOKENS = 50_000
"""Only runs histtrim estimates at 50k tokens or more are kept: the others are short."""

_ACTION = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)
"""mini-swe-agent's own `action_regex` (src/minisweagent/agents/default.py at the commit)."""


def mini_messages(data: bytes) -> tuple[list[Msg], int]:
    """A mini-swe-agent trajectory as OpenAI chat messages, and how many format errors it has.

    The agent's tool use is text: a reply with exactly one bash block is an action, and the
    next user message is its output. Here that reply becomes an assistant message with its
    recorded text and one `bash` tool call (the block's command), and the output a `tool`
    message answering it, so only the task opens a turn. A reply without exactly one block is
    answered by the harness's format-error message, which stays a user message (it opens a
    turn, as it was a user message to the model). Each assistant message keeps the recorded
    `usage` of its call: `prompt_tokens`, `cached_tokens` (the provider's
    `prompt_tokens_details.cached_tokens`) and `completion_tokens`."""
    messages: list[Msg] = []
    pending: str | None = None
    errors = 0
    for k, row in enumerate(json.loads(data)["messages"]):
        role, content = row["role"], row["content"]
        if role == "assistant":
            message: Msg = {"role": "assistant", "content": content}
            actions = _ACTION.findall(content)
            if len(actions) == 1:
                pending = f"call_{k}"
                message["tool_calls"] = [{
                    "id": pending, "type": "function",
                    "function": {"name": "bash",
                                 "arguments": json.dumps({"command": actions[0]})},
                }]
            else:
                pending = None
            usage = ((row.get("extra") or {}).get("response") or {}).get("usage") or {}
            if usage:
                message["usage"] = {
                    "prompt_tokens": usage.get("prompt_tokens"),
                    "cached_tokens": (usage.get("prompt_tokens_details") or {}).get(
                        "cached_tokens"),
                    "completion_tokens": usage.get("completion_tokens"),
                }
            messages.append(message)
        elif role == "user" and pending is not None:
            messages.append({"role": "tool", "tool_call_id": pending, "content": content})
            pending = None
        else:
            if role == "user" and messages and messages[-1]["role"] == "assistant":
                errors += 1
            messages.append({"role": role, "content": content})
    return messages, errors


def _openai_estimate(messages: list[Msg]) -> int:
    from histtrim.adapters.openai import from_openai
    from histtrim.estimate import estimate_history_tokens

    return estimate_history_tokens(from_openai(messages))


def build_mini(gitdir: str, out: Path) -> int:
    """Write the mini-swe-agent folder into `out` (replaced whole); returns the session count."""
    license_text = git(gitdir, "show", f"{MINI_COMMIT}:LICENSE.md")
    if not license_text.startswith(b"MIT License"):
        raise SystemExit(f"{MINI_REPO}: LICENSE.md is not the MIT license")
    listing = git(gitdir, "ls-tree", "-r", MINI_COMMIT, "--", MINI_TRAJS).decode().splitlines()
    scrub = Scrub()
    chosen: list[tuple[str, str, str, bytes, int, int]] = []
    short = 0
    for entry in listing:
        meta, path = entry.split("\t", 1)
        if not path.endswith(".traj.json"):
            continue
        blob = meta.split()[2]
        messages, errors = mini_messages(git(gitdir, "cat-file", "-p", blob))
        messages = scrub.value(messages)
        tokens = _openai_estimate(messages)
        if tokens < MINI_MIN_TOKENS:
            short += 1
            continue
        name = path.rsplit("/", 1)[1].removesuffix(".traj.json")
        chosen.append((name, path, blob, jsonl(messages), tokens, errors))
    rows = "\n".join(f"| `{name}.jsonl` | `{path}` | `{blob}` | {tokens} | {errors} |"
                     for name, path, blob, _, tokens, errors in chosen)
    notes = f"""# {MINI_NAME}: provenance

SWE-bench Verified runs of mini-swe-agent with Gemini 3 Pro (`google/gemini-3-pro-preview`),
as the fork's owner committed them: one task each, the agent acting through one bash command
per reply. The runs histtrim estimates at {MINI_MIN_TOKENS:,} tokens or more are kept
({len(chosen)}); the other {short} are left out as short.

- Repository: https://github.com/{MINI_REPO}
- Commit: `{MINI_COMMIT}`
- License: MIT (the repository's `LICENSE.md` at that commit, copied beside this note as
  `LICENSE`)

How a trajectory becomes a session (`tools/real_sessions.py`, `mini_messages`, never edited
by hand): each line is one OpenAI chat message. A reply with exactly one bash block (the
agent's own `action_regex`) becomes an assistant message with its recorded text and one
`bash` tool call carrying the block's command; the next user message, the command's output,
becomes the `tool` message answering it. A reply without exactly one block is answered by
the harness's format-error message, kept as a user message (column "Format errors").
**Recorded usage**: each assistant message carries `usage`, the provider's counts for its
call: `prompt_tokens`, `cached_tokens` (of the prompt, read from the cache) and
`completion_tokens` (a key histtrim adds; the API does not read it back).

Scrub: as for `claude-code` (see its PROVENANCE.md); replaced here:
{_counts(scrub.counts)}.

`MANIFEST.sha256` lists every session file's SHA-256. To rebuild, fetch the repository, then
from histtrim's root:

    python tools/real_sessions.py --mini-swe-agent PATH/TO/CLONE.git

| Session | Original file (at the commit) | Git blob | Tokens (histtrim) | Format errors |
|---|---|---|---|---|
{rows}
"""
    publish(out, [(name, data) for name, _, _, data, _, _ in chosen],
            {"LICENSE": license_text, "PROVENANCE.md": notes.encode()})
    return len(chosen)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--git", action="append", default=[], metavar="NAME=GITDIR")
    parser.add_argument("--dir", action="append", default=[], metavar="NAME=DIR")
    parser.add_argument("--claude", action="append", default=[], metavar="OWNER/NAME=GITDIR")
    parser.add_argument("--claude-mirror", metavar="DIR",
                        help="clones of CLAUDE_REPOS as DIR/OWNER+NAME/repo (a --claude wins)")
    parser.add_argument("--mini-swe-agent", metavar="GITDIR",
                        help=f"a clone of {MINI_REPO} (its runs of SWE-bench Verified)")
    parser.add_argument("--out", default="examples/real")
    args = parser.parse_args(argv)
    given = [(spec, True) for spec in args.git] + [(spec, False) for spec in args.dir]
    if not given and not args.claude and not args.claude_mirror and not args.mini_swe_agent:
        parser.error("name at least one source: --git NAME=GITDIR, --dir NAME=DIR, --claude "
                     "OWNER/NAME=GITDIR or --claude-mirror DIR")
    root = Path(args.out)
    root.mkdir(parents=True, exist_ok=True)
    if args.claude or args.claude_mirror:
        gitdirs = {}
        if args.claude_mirror:
            gitdirs = {r.slug: str(Path(args.claude_mirror) / r.slug.replace("/", "+") / "repo")
                       for r in CLAUDE_REPOS}
        for spec in args.claude:
            slug, _, location = spec.partition("=")
            if slug not in {r.slug for r in CLAUDE_REPOS} or not location:
                parser.error(f"{spec!r}: expected OWNER/NAME=GITDIR, a repository of CLAUDE_REPOS")
            gitdirs[slug] = location
        count = build_claude(gitdirs, root / CLAUDE_NAME)
        print(f"{root / CLAUDE_NAME}: {count} sessions", file=sys.stderr)
    if args.mini_swe_agent:
        count = build_mini(args.mini_swe_agent, root / MINI_NAME)
        print(f"{root / MINI_NAME}: {count} sessions", file=sys.stderr)
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
