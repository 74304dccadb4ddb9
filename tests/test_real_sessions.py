"""The real corpus (examples/real/: tau-bench airline and SWE-agent sessions): carried with its
license and provenance, exactly as tools/real_sessions.py builds it, and every session goes
through the trims, the sweep and the validator without an error (PAIR-1, PAIR-2)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import sys
from fractions import Fraction
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

from histtrim.adapters.openai import trim_openai
from histtrim.cli.sessions import read_session
from histtrim.estimate import estimate_history_tokens
from histtrim.messages import ChatMessage
from histtrim.pairing import PairingProblem, sweep_orphans, sweep_stages, validate_tool_pairing
from histtrim.trim import trim_to_recent_turn_count, trim_to_recent_turns
from histtrim.turns import leading_system_count

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "examples" / "real"
FOLDERS = {"tau-bench-airline": 200, "swe-agent": 5}


@cache
def builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("real_sessions", ROOT / "tools/real_sessions.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@cache
def rows_of(path: Path) -> list[ChatMessage]:
    session = read_session(str(path))
    assert session.format == "openai" and session.rows is not None
    return session.rows


def sessions(folder: str) -> list[Path]:
    return sorted((REAL / folder).glob("*.jsonl"))


@pytest.mark.parametrize("folder", FOLDERS)
def test_the_corpus_carries_its_license_and_provenance(folder: str) -> None:
    corpus = next(c for c in builder().CORPORA.values() if c.name == folder)
    here = REAL / folder
    license_text = (here / "LICENSE").read_bytes()
    assert license_text.startswith(b"MIT License")
    assert hashlib.sha256(license_text).hexdigest() == corpus.license_sha256
    note = (here / "PROVENANCE.md").read_text()
    assert corpus.repository in note and f"`{corpus.commit}`" in note
    assert re.fullmatch(r"[0-9a-f]{40}", corpus.commit)
    for source in corpus.sources:
        assert f"| `{source.path}` | `{source.sha256}` |" in note
    lines = (here / "MANIFEST.sha256").read_text().splitlines()
    manifest = {name: digest for digest, name in (line.split("  ", 1) for line in lines)}
    files = sessions(folder)
    assert sorted(manifest) == [p.name for p in files] and len(files) == FOLDERS[folder]
    for path in files:
        assert hashlib.sha256(path.read_bytes()).hexdigest() == manifest[path.name], path.name
    assert {p.name for p in here.iterdir()} == {*manifest, "LICENSE", "PROVENANCE.md",
                                                 "MANIFEST.sha256"}


def test_swe_agent_rows_are_converted_as_the_script_says() -> None:
    """A tool row's one-item `tool_call_ids` becomes `tool_call_id`; SWE-agent's own fields go;
    a row naming two calls is refused, not guessed."""
    traj = {"history": [
        {"role": "assistant", "content": "Look.", "thought": "Look.", "action": "ls",
         "agent": "main", "message_type": "action",
         "tool_calls": [{"id": "c1", "type": "function",
                         "function": {"name": "bash", "arguments": "{}"}}]},
        {"role": "tool", "content": "a.py", "agent": "main", "message_type": "observation",
         "tool_call_ids": ["c1"]},
    ]}
    messages = builder().swe_messages(json.dumps(traj).encode(), "x.traj")
    assert messages == [
        {"role": "assistant", "content": "Look.", "tool_calls": traj["history"][0]["tool_calls"]},
        {"role": "tool", "content": "a.py", "tool_call_id": "c1"},
    ]
    traj["history"][1]["tool_call_ids"] = ["c1", "c2"]
    with pytest.raises(SystemExit, match="expected one call"):
        builder().swe_messages(json.dumps(traj).encode(), "x.traj")


def _whole(rows: list[ChatMessage], kept: list[ChatMessage], dropped: list[ChatMessage]) -> bool:
    """Kept plus dropped is the original, in order (the system block stays in front)."""
    prefix = leading_system_count(rows)
    return kept[:prefix] + dropped + kept[prefix:] == rows


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_real_session_passes_the_trims_the_sweep_and_the_validator(folder: str) -> None:
    for path in sessions(folder):
        rows = rows_of(path)
        assert not [p for p in validate_tool_pairing(rows) if p.is_error], path.name
        swept = sweep_orphans(rows)
        assert not swept.changed and swept.history == rows, path.name  # nothing to repair
        total = estimate_history_tokens(rows)
        assert total > 0
        for budget in (1_000, 2_000, 4_000):
            for target in (Fraction(1), Fraction(7, 10), Fraction(1, 2)):
                trimmed = trim_to_recent_turns(rows, budget, target=target)
                assert _whole(rows, trimmed.history, trimmed.dropped), (path.name, budget)
                assert trimmed.tokens_before == total
                errors = [p for p in validate_tool_pairing(trimmed.history) if p.is_error]
                assert not errors, (path.name, budget, target, errors)
        by_turns = trim_to_recent_turn_count(rows, 3)
        assert _whole(rows, by_turns.history, by_turns.dropped)
        assert not [p for p in validate_tool_pairing(by_turns.history) if p.is_error]
        messages = [json.loads(line) for line in path.read_text().splitlines()]
        adapted = trim_openai(messages, budget_tokens=2_000)
        assert not [p for p in validate_tool_pairing(adapted.rows) if p.is_error]


def _reuses(path: Path) -> bool:
    """Whether one session issues an id in two assistant rows (read from the JSON itself)."""
    seen: set[str] = set()
    for line in path.read_text().splitlines():
        ids = {call["id"] for call in json.loads(line).get("tool_calls") or ()}
        if ids & seen:
            return True
        seen |= ids
    return False


def test_a_reused_call_id_is_reported_but_is_no_error() -> None:
    """tau-bench's task 0, trial 0: row 12 (`search_onestop_flight`) reuses the id of row 8's
    `search_direct_flight`, row 16 (`calculate`) that of row 6's `get_user_details`; each
    result answers the dispatch right before it (Decisions: reused call ids)."""
    rows = rows_of(REAL / "tau-bench-airline/task-00-trial-0.jsonl")
    cid = "call_HGn16KZh9oNCruxsMJ4gYXan"
    problems = validate_tool_pairing(rows)
    assert problems == [
        PairingProblem("reused_id", 12, cid, earlier=8),
        PairingProblem("reused_id", 16, "call_oIHazX6yQrB8hUwl4cRilFKj", earlier=6),
    ]
    assert not any(p.is_error for p in problems)
    assert str(problems[0]) == (
        f"row 12: a call reusing the id of row 8's call (not an error: each result answers "
        f"the dispatch right before it) (tool_call_id='{cid}')"
    )
    # every session that reuses an id is reported, and no other
    for folder in FOLDERS:
        for path in sessions(folder):
            reported = any(p.kind == "reused_id" for p in validate_tool_pairing(rows_of(path)))
            assert reported == _reuses(path), path.name


@pytest.mark.parametrize(
    ("name", "lost", "stripped"),
    [
        ("tau-bench-airline/task-00-trial-0.jsonl", 9, 8),  # the first call's result
        ("tau-bench-airline/task-00-trial-0.jsonl", 13, 12),  # the second call's result
        # SWE-agent issues one id for every call: the reference's strip keeps row 12's call
        # (row 14 answers its id), then its pass 1 removes the seven intact rounds after it
        ("swe-agent/marshmallow-1867-function-calling-replace-from-source.jsonl", 13, 12),
    ],
)
def test_the_sweep_strips_only_the_call_whose_result_is_lost(
    name: str, lost: int, stripped: int
) -> None:
    """A result answers the nearest dispatch before it that issued its id: with one result
    lost, the strip removes that call alone and every other round stays."""
    rows = rows_of(REAL / name)
    broken = rows[:lost] + rows[lost + 1 :]
    strip, *_, last = sweep_stages(broken)
    assert [(r.kind, r.position) for r in strip.removed] == [("call", stripped)]
    assert [(r.kind, r.position) for r in last.removed] == [("call", stripped)]
    others = [row for i, row in enumerate(broken) if i != stripped]
    assert [row for i, row in zip(last.positions, last.history, strict=True) if i != stripped] \
        == others
    assert not [p for p in validate_tool_pairing(last.history) if p.is_error]


def test_the_kit_carries_real_vectors_that_name_their_session_and_commit() -> None:
    """Issue 29: real sessions in the conformance kit, for the trims, the sweep and the
    estimate; each source names an existing session file and its repository at the commit
    its provenance records."""
    from histtrim.conformance.vectors import load

    vectors, _ = load(ROOT / "conformance" / "vectors")
    real = [v for v in vectors if v.source.startswith("real:")]
    functions = {v.function for v in real}
    assert {"trim_to_recent_turns", "sweep_orphans", "estimate_history_tokens"} <= functions
    assert len(real) >= 24
    for vector in real:
        found = re.fullmatch(r"real:([\w-]+/[\w.-]+\.jsonl) \(([\w-]+/[\w-]+)@([0-9a-f]{12})\)"
                             r"( row \d+ removed)?", vector.source)
        assert found, vector.source
        path, repository, commit, _ = found.groups()
        assert (REAL / path).is_file()
        note = (REAL / path).parent.joinpath("PROVENANCE.md").read_text()
        assert f"https://github.com/{repository}" in note and f"`{commit}" in note
        if found.group(4):  # a session with one result lost: the sweep strips its call alone
            lost = int(found.group(4).split()[1])
            removed = vector.expected["result"]["removed"]
            assert [(r["kind"], r["position"]) for r in removed] == [("call", lost - 1)]


def test_review_reads_the_real_sessions_as_they_are() -> None:
    """`histtrim review examples/real` reads OpenAI messages as recorded: every user turn
    replayed, every tool round with its output, and trims happen at a 2,000-token budget."""
    from histtrim import Policy, ProviderProfile, RuntimeProfile
    from histtrim.cli.review import load_sessions
    from histtrim.review.compare import run_review
    from histtrim.review.replay import ReplaySettings

    loaded = load_sessions([str(REAL / folder) for folder in FOLDERS])
    assert len(loaded) == sum(FOLDERS.values())
    for session in loaded:
        messages = [json.loads(line) for line in next(REAL.rglob(f"{session.name}.jsonl"))
                    .read_text().splitlines()]
        assert len(session.turns) == sum(m["role"] == "user" for m in messages)
        calls = sum(len(m.get("tool_calls") or ()) for m in messages)
        assert sum(len(t.outputs) for t in session.turns) == calls, session.name
    settings = ReplaySettings(
        profile=RuntimeProfile(max_context_tokens=2_000),
        provider=ProviderProfile(model="replay-model", context_window=200_000),
    )
    picked = [s for s in loaded if s.name in ("task-00-trial-0", "function-calling-simple")]
    (summary,) = run_review(picked, [("spec", Policy())], settings, workers=1).summaries()
    assert summary.sessions == 2 and summary.failed_turns == 0 and summary.token_trims > 0
