"""Issue 19: histtrim against the reference runtime's own answers.

`tests/data/kit_reference_answers.json` is a verbatim copy of
`../shared/reference/kit_reference_answers.json` (the vectors of our conformance kit on which the
reference runtime answered differently from histtrim, with its answer beside ours). One test per
vector, sent as the request the file holds through `histtrim conformance serve`'s own loop (in
process): histtrim gives the reference's answer, or the test names the decision in
`docs/decisions.md` that differs and pins histtrim's answer. Rewritten envelopes are compared as
JSON values (the reference writes their keys sorted).

Then a property of the orphan sweep (PAIR-2) over generated assistant/tool/user sequences,
checked against a port of the reference's three passes written from the issue's description."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from histtrim.carriers import json_object, to_chat_messages
from histtrim.conformance.serve import serve
from histtrim.messages import (
    AssistantToolCalls,
    ChatMessage,
    ToolCall,
    ToolResultMessage,
    ToolResults,
)
from histtrim.pairing import sweep_orphans, sweep_stages, validate_tool_pairing

ROOT = Path(__file__).resolve().parent.parent
DATA = json.loads((ROOT / "tests" / "data" / "kit_reference_answers.json").read_text("utf-8"))
VECTORS: list[dict[str, Any]] = DATA["vectors"]
DECISIONS = (ROOT / "docs" / "decisions.md").read_text("utf-8")

DIFFERS: dict[str, tuple[str, dict[str, Any]]] = {
    # vector id -> (the decision that differs, histtrim's answer)
    "trim_to_recent_turns-bd3e3ee9ddcd": (
        "decision-reference-input",
        {"error": {"kind": "invalid_input"}},
    ),
    "message_costs-a249048ef143": (
        "decision-declared-attachments",
        {"result": {"costs": [8, 7, 7, 7, 24, 1 + 1600 + 4]}},
    ),
}


def answer(vector: Mapping[str, Any]) -> dict[str, Any]:
    """histtrim's answer to a vector's request (its function, history and arguments exactly as
    the file holds them), read back from the line `histtrim conformance serve` writes."""
    request = {"id": vector["id"], "function": vector["function"],
               "history": vector["history"], "arguments": vector["arguments"]}
    out = io.BytesIO()
    assert serve(io.BytesIO(json.dumps(request).encode() + b"\n"), out) == 0
    (line,) = out.getvalue().splitlines()
    response = json.loads(line)
    assert response["id"] == vector["id"]
    if "error" in response:
        # every file's arguments are the function's (missing ones take their defaults): an
        # error here is about the history, never about how the request was put
        assert not response["error"]["message"].startswith("arguments."), response
        return {"error": {"kind": response["error"]["kind"]}}
    return {"result": response["result"]}


def as_values(value: Any) -> Any:
    """JSON values with every envelope-looking `content` string parsed, and the histtrim-only
    `removed` report left out: what the reference's answer can be compared on."""
    if isinstance(value, dict):
        out = {k: as_values(v) for k, v in value.items() if k != "removed"}
        content = value.get("content")
        if isinstance(content, str) and (parsed := json_object(content)) is not None:
            out["content"] = parsed
        return out
    if isinstance(value, list):
        return [as_values(v) for v in value]
    return value


def test_the_copy_is_the_reference_file_when_it_is_there() -> None:
    found = [
        folder / "shared" / "reference" / "kit_reference_answers.json"
        for folder in (ROOT.parent, ROOT.parent.parent)
    ]
    originals = [path for path in found if path.exists()]
    if not originals:
        pytest.skip("../shared/reference is not beside this clone (CI): the copy is used")
    assert json.loads(originals[0].read_text("utf-8")) == VECTORS
    assert len(VECTORS) == 22


@pytest.mark.parametrize("vector", VECTORS, ids=[v["id"] for v in VECTORS])
def test_histtrim_gives_the_reference_answer_or_names_the_decision(
    vector: dict[str, Any],
) -> None:
    got = answer(vector)
    reference = vector["reference_answer"]
    if vector["id"] in DIFFERS:
        decision, ours = DIFFERS[vector["id"]]
        assert f"({decision})=" in DECISIONS
        section = DECISIONS.split(f"({decision})=", 1)[1].split("\n(decision-", 1)[0]
        assert vector["id"] in section, f"{decision} must show {vector['id']} as its example"
        assert as_values(got) == as_values(ours)
        assert as_values(got) != as_values(reference)  # a change here: update the decision
        return
    assert as_values(got) == as_values(reference)
    assert as_values(got) != as_values(vector["histtrim_expected"])  # it was a disagreement


def test_the_declared_attachment_vector_differs_by_price_only() -> None:
    """EST-3: histtrim reads the wrapped target as an image (1 + 1,600 + 4); the reference's
    30 is that row's bytes as plain text (the decision "Declared attachments")."""
    (vector,) = [v for v in VECTORS if v["id"] == "message_costs-a249048ef143"]
    row = vector["history"][-1]["content"]
    assert vector["reference_answer"]["result"]["costs"][-1] == -(-len(row.encode()) // 4) + 4


# ------------------------------------------------------------------ the sweep, as a property


def reference_sweep(rows: list[ChatMessage]) -> list[ChatMessage]:
    """The reference's sweep, from issue 19's description: strip, pass 1, pass 2, each on
    the list the previous one left (in place, as the runtime does)."""
    rows = list(rows)

    def answered(row: ChatMessage) -> str | None:
        body = json_object(row.content)
        value = body.get("tool_call_id") if body is not None else None
        return value if isinstance(value, str) else None

    def ids_of(row: ChatMessage) -> list[str] | None:
        body = json_object(row.content) if row.role == "assistant" else None
        calls = body.get("tool_calls") if body is not None else None
        if not isinstance(calls, list):
            return None
        found = [c["id"] for c in calls if isinstance(c, dict) and isinstance(c.get("id"), str)]
        return found or None

    seen: set[str] = set()
    for i in range(len(rows) - 1, -1, -1):
        row = rows[i]
        if row.role == "tool":
            if (cid := answered(row)) is not None:
                seen.add(cid)
            continue
        body = json_object(row.content) if row.role == "assistant" else None
        if body is None or "tool_calls" not in row.content:
            continue
        calls = body.get("tool_calls")
        if not isinstance(calls, list):
            continue
        paired = [
            c for c in calls
            if isinstance(c, dict) and isinstance(c.get("id"), str) and c["id"] in seen
        ]
        if len(paired) == len(calls):
            continue
        if paired:
            rows[i] = ChatMessage.assistant(json.dumps({**body, "tool_calls": paired}))
            continue
        text = body.get("content")
        text = text.strip(RUST_SPACE) if isinstance(text, str) else ""
        if text:
            rows[i] = ChatMessage.assistant(text)
        else:
            del rows[i]

    i = 0
    while i < len(rows):
        doomed = ids_of(rows[i])
        if doomed and i > 0 and ids_of(rows[i - 1]):
            del rows[i]
            while i < len(rows) and rows[i].role == "tool":
                cid = answered(rows[i])
                if cid is not None and cid not in doomed:
                    break
                del rows[i]
        else:
            i += 1

    i = 0
    while i < len(rows):
        if rows[i].role != "tool":
            i += 1
            continue
        j = i - 1
        while j >= 0 and rows[j].role == "tool":
            j -= 1
        issued = ids_of(rows[j]) if j >= 0 and rows[j].role == "assistant" else None
        cid = answered(rows[i])
        if issued is None or (cid is not None and cid not in issued):
            del rows[i]
        else:
            i += 1
    return rows


RUST_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000"
)

CALL_IDS = st.sampled_from(["c1", "c2", "c3"])
TEXTS = st.sampled_from([None, "Checking.", "  padded \u3000", " \n\t", "\x1c"])


@st.composite
def histories(draw: st.DrawFn) -> list[ChatMessage]:
    """Rows of user, system, plain assistant, dispatch and tool kinds; every row carries a
    tag `#n` (its input position) that survives any rewrite, so order can be checked."""
    rows: list[ChatMessage] = []
    for n in range(draw(st.integers(0, 12))):
        tag = f"#{n}"
        kind = draw(st.sampled_from(
            ["user", "system", "assistant", "dispatch", "dispatch", "tool", "tool", "tool",
             "unreadable", "carrier"]
        ))
        if kind in ("user", "system", "assistant"):
            rows.append(ChatMessage(role=kind, content=f"{kind} {tag}"))
        elif kind == "carrier":
            rows.append(ChatMessage.user(f"[Tool results]\n{tag}"))
        elif kind == "dispatch":
            ids = draw(st.lists(CALL_IDS, min_size=1, max_size=3))
            calls: list[Any] = [{"id": i, "name": tag, "arguments": "{}"} for i in ids]
            if draw(st.booleans()):
                calls.append({"name": tag})  # an element with no id is never a call
            text = draw(TEXTS)
            rows.append(ChatMessage.assistant(json.dumps(
                {"content": text if text is None else f"{text}{tag}{text}",
                 "tool_calls": calls}
            )))
        elif kind == "tool":
            rows.append(ChatMessage.tool_result(draw(CALL_IDS), tag))
        else:
            rows.append(ChatMessage(role="tool", content=draw(st.sampled_from([
                f"plain {tag}",
                f'{{"tool_call_id": 7, "content": "{tag}"}}',
                f'{{"tool_call_id": "c1", "content": "{tag}", "n": NaN}}',
                f'{{"content": "{tag}"}}',
            ]))))
    return rows


def tag(row: ChatMessage) -> int:
    found = re.search(r"#(\d+)", row.content)
    assert found is not None, row
    return int(found.group(1))


@given(histories())
def test_the_sweep_is_idempotent_keeps_order_and_always_pairs(
    rows: list[ChatMessage],
) -> None:
    """PAIR-2: sweeping twice changes nothing; kept rows keep their order (each one is its
    input row, or that dispatch row stripped); the output passes the validator; every
    input tool row is kept or reported removed; and the reference's passes (stage
    "pass 2") are exactly the reference port's answer, which histtrim returns whenever a
    provider would accept it, unless two rows issue one id: there a result keeps only the
    nearest dispatch with its id (Decisions: reused call ids)."""
    swept = sweep_orphans(rows)
    again = sweep_orphans(swept.history)
    assert again.history == swept.history and again.removed == ()
    tags = [tag(row) for row in swept.history]
    assert tags == sorted(set(tags))
    for row in swept.history:
        source = rows[tag(row)]
        assert row.role == source.role
        assert row == source or row.role == "assistant"
    assert [p for p in validate_tool_pairing(swept.history) if p.is_error] == []
    tool_rows = {i for i, row in enumerate(rows) if row.role == "tool"}
    kept_tools = {tag(row) for row in swept.history if row.role == "tool"}
    removed_tools = {r.position for r in swept.removed if r.kind == "result"}
    assert kept_tools | removed_tools == tool_rows and not kept_tools & removed_tools

    stages = {step.stage: step for step in sweep_stages(rows)}
    assert list(stages["histtrim"].positions) == tags
    if reuses_an_id(rows):
        return
    reference = reference_sweep(rows)
    assert [as_values(r.model_dump()) for r in stages["pass 2"].history] == [
        as_values(r.model_dump()) for r in reference
    ]
    if not [p for p in validate_tool_pairing(reference) if p.is_error]:
        assert stages["histtrim"].history == stages["pass 2"].history


def reuses_an_id(rows: list[ChatMessage]) -> bool:
    """Whether two assistant rows issue one call id (where histtrim's strip differs)."""
    seen: set[str] = set()
    for row in rows:
        body = json_object(row.content) if row.role == "assistant" else None
        calls = body.get("tool_calls") if body is not None else None
        ids = {c["id"] for c in calls if isinstance(c, dict) and isinstance(c.get("id"), str)} \
            if isinstance(calls, list) else set()
        if ids & seen:
            return True
        seen |= ids
    return False


def test_a_reused_id_keeps_the_pair_the_reference_sweep_loses() -> None:
    """Two dispatches issue `c1`, only the second is answered: the reference's strip keeps
    both (a later row answers `c1`), then its pass 1 removes the second dispatch with its
    result, leaving the first unanswered; histtrim strips the first and keeps the intact
    pair (Decisions: reused call ids)."""
    first = ChatMessage.assistant('{"content": "Looking.", "tool_calls": [{"id": "c1", '
                                  '"name": "search", "arguments": "{}"}]}')
    second = ChatMessage.assistant('{"content": null, "tool_calls": [{"id": "c1", '
                                   '"name": "book", "arguments": "{}"}]}')
    result = ChatMessage.tool_result("c1", "booked")
    rows = [ChatMessage.user("go"), first, second, result]
    assert reference_sweep(rows) == [rows[0], first]
    swept = sweep_orphans(rows)
    assert swept.history == [rows[0], ChatMessage.assistant("Looking."), second, result]
    assert [(r.kind, r.position) for r in swept.removed] == [("call", 1)]


def test_the_port_agrees_with_the_reference_file() -> None:
    """The port used above gives the reference's answer on every sweep vector of the file."""
    sweeps = [v for v in VECTORS if v["function"] == "sweep_orphans"]
    assert len(sweeps) == 20
    for vector in sweeps:
        rows = [ChatMessage(**row) for row in vector["history"]]
        got = [r.model_dump(exclude={"kind"}) for r in reference_sweep(rows)]
        assert as_values(got) == as_values(vector["reference_answer"]["result"]["history"])


@st.composite
def structured(draw: st.DrawFn) -> list[Any]:
    """Structured items: user and plain assistant rows, dispatches, rounds of results (one
    item, several results), and tool rows with no readable id."""
    items: list[Any] = []
    for n in range(draw(st.integers(0, 10))):
        kind = draw(st.sampled_from(["user", "assistant", "calls", "results", "unreadable"]))
        if kind in ("user", "assistant"):
            items.append(ChatMessage(role=kind, content=f"{kind} #{n}"))
        elif kind == "calls":
            ids = draw(st.lists(CALL_IDS, min_size=1, max_size=3))
            text = draw(TEXTS)
            items.append(AssistantToolCalls(
                text=text, tool_calls=tuple(ToolCall(id=i, name="n") for i in ids)
            ))
        elif kind == "results":
            ids = draw(st.lists(CALL_IDS, min_size=1, max_size=3))
            items.append(ToolResults(results=tuple(
                ToolResultMessage(tool_call_id=i, content=f"#{n}") for i in ids
            )))
        else:
            items.append(ChatMessage(role="tool", content=f"plain #{n}"))
    return items


@given(structured())
def test_the_structured_sweep_is_the_row_sweep(items: list[Any]) -> None:
    """PAIR-2 on `Agent.history` items gives the rows the same sweep gives on their
    provider-facing rows, and it pairs."""
    swept = sweep_orphans(items)
    rows = sweep_orphans(to_chat_messages(items)).history
    assert [as_values(r.model_dump()) for r in to_chat_messages(swept.history)] == [
        as_values(r.model_dump()) for r in rows
    ]
    assert [p for p in validate_tool_pairing(swept.history) if p.is_error] == []
    assert sweep_orphans(swept.history).history == swept.history
