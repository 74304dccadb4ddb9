"""When each recorded provider call of examples/real/claude-code and mini-swe-agent was made,
read back from the raw transcripts their PROVENANCE.md names (the corpus files keep the
calls' usage, not their times): examples/real/call-times.json, for the cache model's
lifetimes (`histtrim.review.cache`, bench/cache_calibration.py).

A call is found in its raw transcript by its recorded usage (Claude Code: the message's
last row; mini-swe-agent: the reply at the same position), its time is the first row the
client wrote for it (Claude Code's `timestamp`; mini-swe-agent's response `created`), and
for Claude Code the lifetime its cache write bought (`cache_creation.ephemeral_1h_input_tokens`
over zero: 1 hour). A call not found is null.

    python tools/call_times.py --mirror DIR   # DIR/<owner>+<name>/repo for each source
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import deque
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_sessions import MINI_COMMIT, MINI_REPO, git

from histtrim.adapters.claude_code import rows_of

_ROW = re.compile(r"^\| `([^`]+)\.jsonl` \|(.*)$")
_FIELDS = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens",
           "output_tokens")


def _table(provenance: str) -> list[list[str]]:
    """The provenance table's rows: the session's stem, then each cell (backticks off)."""
    rows = []
    for line in provenance.splitlines():
        found = _ROW.match(line)
        if found:
            cells = [c.strip().strip("`") for c in found.group(2).split("|")]
            rows.append([found.group(1), *cells[:-1]])
    return rows


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def _key(usage: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(usage.get(k) for k in _FIELDS)


def claude_times(corpus: Path, mirror: Path) -> dict[str, list[list[Any] | None]]:
    """Per session: [seconds since the epoch, 1 if the write bought an hour else 0] or null,
    one per call (an assistant message with `usage`), in the session's order."""
    blobs: dict[str, list[tuple[str, str, str]]] = {}
    for stem, _part, _tokens, repo, _commit, path, blob, *_ in _table(
            (corpus / "PROVENANCE.md").read_text()):
        blobs.setdefault(stem, []).append((repo, path, blob))
    out: dict[str, list[list[Any] | None]] = {}
    for stem in sorted(blobs):
        first: dict[str, float] = {}
        last: dict[str, dict[str, Any]] = {}
        for repo, _path, blob in blobs[stem]:
            gitdir = str(mirror / repo.replace("/", "+") / "repo")
            rows, _ = rows_of(git(gitdir, "cat-file", "-p", blob))
            for row in rows:
                message = row.get("message")
                stamp = row.get("timestamp")
                if (row.get("type") != "assistant" or not isinstance(message, dict)
                        or not isinstance(stamp, str) or "usage" not in message):
                    continue
                ident = str(message.get("id"))
                first[ident] = min(first.get(ident, _seconds(stamp)), _seconds(stamp))
                last[ident] = message["usage"]
        found: dict[tuple[Any, ...], deque[tuple[float, int]]] = {}
        for ident in sorted(first, key=first.__getitem__):
            usage = last[ident]
            hour = int(bool((usage.get("cache_creation") or {}).get("ephemeral_1h_input_tokens")))
            found.setdefault(_key(usage), deque()).append((first[ident], hour))
        calls: list[list[Any] | None] = []
        floor = 0.0
        for line in (corpus / f"{stem}.jsonl").read_text().splitlines():
            message = json.loads(line)
            if message.get("role") != "assistant" or "usage" not in message:
                continue
            queue = found.get(_key(message["usage"]), deque())
            while queue and queue[0][0] < floor:
                queue.popleft()
            if queue:
                at, hour = queue.popleft()
                floor = at
                calls.append([at, hour])
            else:
                calls.append(None)
        out[stem] = calls
    return out


def mini_times(corpus: Path, mirror: Path) -> dict[str, list[list[Any] | None]]:
    """Per run: [the response's `created` seconds, 0] per call (an assistant reply)."""
    gitdir = str(mirror / MINI_REPO.replace("/", "+") / "repo")
    out: dict[str, list[list[Any] | None]] = {}
    for stem, path, *_ in _table((corpus / "PROVENANCE.md").read_text()):
        trajectory = json.loads(git(gitdir, "show", f"{MINI_COMMIT}:{path}"))
        created = deque(
            ((m.get("extra") or {}).get("response") or {}).get("created")
            for m in trajectory["messages"] if m.get("role") == "assistant"
        )
        calls: list[list[Any] | None] = []
        for line in (corpus / f"{stem}.jsonl").read_text().splitlines():
            message = json.loads(line)
            if message.get("role") != "assistant" or "usage" not in message:
                continue
            at = created.popleft() if created else None
            calls.append([float(at), 0] if isinstance(at, int | float) else None)
        out[stem] = calls
    return out


def _one_session_a_line(times: dict[str, dict[str, list[list[Any] | None]]]) -> str:
    """The file's JSON with each session's calls on one line (a readable diff, a small file)."""
    corpora = []
    for corpus in sorted(times):
        sessions = ",\n".join(
            f"  {json.dumps(name)}: {json.dumps(calls, separators=(',', ':'))}"
            for name, calls in sorted(times[corpus].items()))
        corpora.append(f" {json.dumps(corpus)}: {{\n{sessions}\n }}")
    return "{\n" + ",\n".join(corpora) + "\n}\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirror", required=True, metavar="DIR",
                        help="clones of the sources as DIR/<owner>+<name>/repo")
    parser.add_argument("--real", default="examples/real")
    args = parser.parse_args(argv)
    real, mirror = Path(args.real), Path(args.mirror)
    times = {
        "claude-code": claude_times(real / "claude-code", mirror),
        "mini-swe-agent": mini_times(real / "mini-swe-agent", mirror),
    }
    target = real / "call-times.json"
    staged = target.with_suffix(".tmp")
    staged.write_text(_one_session_a_line(times))
    staged.replace(target)
    for corpus, sessions in times.items():
        calls = [c for s in sessions.values() for c in s]
        print(f"{corpus}: {len(sessions)} sessions, {sum(c is not None for c in calls)} of "
              f"{len(calls)} calls timed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
