"""Real cases: sessions agents really had (`examples/real/`: tau-bench's airline sessions and
SWE-agent's demonstrations, MIT; a Claude Code transcript, CC0), through the trims, the
estimate and the sweep. Each source names the session file and the repository and commit it
was converted from."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

from histtrim.adapters.anthropic import from_anthropic
from histtrim.cli.sessions import read_session
from histtrim.conformance.codec import rows_json
from histtrim.estimate import estimate_history_tokens
from histtrim.messages import ChatMessage
from histtrim.pairing import validate_tool_pairing
from histtrim.turns import index_turns
from livingspec.vectors.cases import Case

REAL = Path(__file__).resolve().parents[2] / "examples" / "real"
PER_FOLDER = {"tau-bench-airline": 4, "swe-agent": 2, "claude-code": 1}
"""How many sessions of each folder, the smallest first (the kit stays light: the smallest
long session is about 100 KB, and each case carries its history; mini-swe-agent's runs are
OpenAI messages like SWE-agent's, at twice that size, and are left out)."""


def _origin(path: Path) -> str:
    """`owner/name@commit` from the provenance note beside the session: the folder's
    repository and commit, or the session's own line (Claude Code: one per session)."""
    note = (path.parent / "PROVENANCE.md").read_text("utf-8")
    own = re.search(rf"^\| `{re.escape(path.name)}` \|[^|]*\|[^|]*\| `([\w/-]+)` \| "
                    r"`([0-9a-f]{40})`", note, re.MULTILINE)
    if own:
        return f"{own.group(1)}@{own.group(2)[:12]}"
    repository = re.search(r"Repository: https://github\.com/(\S+)", note)
    commit = re.search(r"Commit: `([0-9a-f]{40})`", note)
    assert repository and commit, f"{path}: no repository or commit in PROVENANCE.md"
    return f"{repository.group(1)}@{commit.group(1)[:12]}"


def _picked(folder: Path) -> list[Path]:
    """The smallest sessions, half of them (rounded up) among those that reuse a call id or
    break the pairing as recorded (what the sweep must repair)."""
    paths = sorted(folder.glob("*.jsonl"), key=lambda p: (p.stat().st_size, p.name))
    reusing = [p for p in paths if _reuses(_rows(p))]
    count = PER_FOLDER[folder.name]
    chosen = reusing[: (count + 1) // 2]
    chosen += [p for p in paths if p not in chosen][: count - len(chosen)]
    return sorted(chosen)


def _rows(path: Path) -> list[ChatMessage]:
    if path.parent.name == "claude-code":  # Anthropic messages
        return from_anthropic([json.loads(line) for line in path.read_text().splitlines()]).rows
    rows = read_session(str(path)).rows
    assert rows is not None
    return rows


def _reuses(rows: list[ChatMessage]) -> bool:
    return any(p.kind == "reused_id" or p.is_error for p in validate_tool_pairing(rows))


def _lost_result(rows: list[ChatMessage]) -> int | None:
    """The result to lose: the one after the first call whose id is issued again later
    (where the sweep must strip that call only), else the first result."""
    reused = [p.earlier + 1 for p in validate_tool_pairing(rows) if p.earlier is not None]
    results = [i for i, row in enumerate(rows) if row.role == "tool"]
    return next((i for i in sorted(reused) if i in results), results[0] if results else None)


def real_cases() -> Iterator[Case]:
    for name in PER_FOLDER:
        folder = REAL / name
        for path in _picked(folder):
            source = f"real:{name}/{path.name} ({_origin(path)})"
            rows = _rows(path)
            history = rows_json(rows)
            total = estimate_history_tokens(rows)
            turns = index_turns(rows).turn_count
            tools = any(row.role == "tool" for row in rows)
            yield Case(source, ("EST-1", "EST-4"), "message_costs", history, {})
            yield Case(source, ("EST-1", "EST-4"), "estimate_history_tokens", history, {})
            # a one-turn session (SWE-agent's runs) keeps its turn at any budget: one case
            for budget in (1_000, 2_000, total // 2, total) if turns > 1 else (1_000,):
                rules = ("TURN-6",) if budget >= total else ("KEEP-1", "CAP-1", "PAIR-1")
                yield Case(source, rules, "trim_to_recent_turns", history,
                           {"budget_tokens": budget, "crumb_present": False})
            if turns > 2:
                yield Case(source, ("KEEP-2", "LIMIT-1"), "trim_to_recent_turn_count",
                           history, {"max_turns": 2, "has_leading_breadcrumb": False})
            yield Case(source, ("PAIR-2",), "sweep_orphans", history, {"crumb_present": False})
            lost = _lost_result(rows) if tools else None
            if lost is not None:  # the first tool result lost, as in an edited session
                yield Case(f"{source} row {lost} removed", ("PAIR-2",), "sweep_orphans",
                           rows_json(rows[:lost] + rows[lost + 1 :]), {"crumb_present": False})
