"""Claude Code transcripts: a project's `~/.claude/projects/<project>/<session>.jsonl`, or the
`logs/chat.json` array a logging hook commits, read as Anthropic messages with each provider
call's recorded usage.

What each row is (`row_kind`): only real prompts open turns; the client's own rows (meta
rows, slash commands and their output, interruptions, its synthetic assistant rows) are left
out and counted. A notification the client writes as a user row (`<task-notification>`,
`<bash-notification>`, `<system-reminder>`) is sent to the model, which answers it: a
prompt. Claude Code writes one assistant row per streamed block, each repeating the call's
usage: the rows of one `message.id` are one assistant message and one call, whose output
count is the last row's. `/clear` ends a context; a compaction (a `compact_boundary` row,
then the `isCompactSummary` row) or a new root row (`parentUuid: null`) starts another; side
agents' rows (`isSidechain`) are their own parts. Thinking blocks are left out (histtrim's
rows carry no reasoning). A large tool result is what the model saw: the short
`<persisted-output>` preview Claude Code wrote in the transcript, kept as written."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from histtrim.adapters.agent_sessions import (
    PartKind,
    RecordedCall,
    SessionPart,
    SessionRead,
)
from histtrim.adapters.session_rows import Skips, iso_seconds, json_lines, tally

Msg = dict[str, Any]


_COMMAND = re.compile(r"^\s*<(command-name|command-message|local-command-stdout|"
                      r"local-command-stderr|local-command-caveat|command-args)>")
_CAVEAT = re.compile(r"^\s*(Caveat:|<local-command-caveat>)")
_INTERRUPT = re.compile(r"^\[Request interrupted by user")
_CLEAR = re.compile(r"^\s*<command-name>/clear</command-name>")
_KEPT_BLOCKS = ("text", "tool_use", "image")
USAGE_KEYS = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens",
              "output_tokens")
"""The recorded usage a message keeps: Anthropic's counts (input excludes the cache)."""
LIFETIMES = ("ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens")


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(b.get("text", "") for b in content
                   if isinstance(b, dict) and isinstance(b.get("text", ""), str))


def _blocks(content: Any, kinds: tuple[str, ...]) -> list[Any]:
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") in kinds]


def row_kind(row: dict[str, Any]) -> str:
    """What a transcript row is: `prompt` (a real prompt, which opens a turn), `assistant`,
    `results` (tool results), `clear` (`/clear`: the context starts over), `compact` (the
    summary a compaction starts the new context with), or why it is dropped: `side-agent`,
    `meta`, `command` (a slash command's echo or output), `interruption`, `synthetic` (the
    client's own assistant text, such as an API error), `empty`, or the row's own type
    (system, summary, snapshots...). A notification the client injects as a user row
    (`<task-notification>`, `<system-reminder>`...) is a prompt: the model reads it."""
    kind = row.get("type")
    if row.get("isSidechain"):
        return "side-agent"
    message = row.get("message")
    if kind == "assistant":
        if not isinstance(message, dict):
            return "assistant without message"
        if message.get("model") == "<synthetic>":
            return "synthetic"
        blocks = _blocks(message.get("content"), _KEPT_BLOCKS)
        return "assistant" if blocks else "thinking only"
    if kind != "user" or not isinstance(message, dict):
        return str(kind)
    if row.get("isMeta"):
        return "meta"
    content = message.get("content")
    if row.get("isCompactSummary"):
        return "compact"
    if _blocks(content, ("tool_result",)):
        return "results"
    text = _text_of(content)
    if _CLEAR.match(text):
        return "clear"
    if _COMMAND.match(text):
        return "command"
    if _INTERRUPT.match(text):
        return "interruption"
    if not text.strip() and not (isinstance(content, list) and content):
        return "empty"
    return "prompt"


@dataclass
class Call:
    """What the rows of one assistant message recorded: its message id, the first row's
    time, and the last row's usage and model."""

    id: str | None
    timestamp: float | None
    usage: dict[str, Any] = field(default_factory=dict)
    model: str | None = None


@dataclass
class Part:
    """One context: its kind, its messages (each assistant message with the `usage` and
    `model` the client recorded, as the corpus keeps them) and each message's `Call` (None
    for a user message)."""

    kind: PartKind
    messages: list[Msg] = field(default_factory=list)
    calls: list[Call | None] = field(default_factory=list)


def _recorded(usage: Any) -> dict[str, int]:
    if not isinstance(usage, dict):
        return {}
    return {k: usage[k] for k in USAGE_KEYS
            if isinstance(usage.get(k), int) and not isinstance(usage.get(k), bool)}


def transcript_parts(rows: list[dict[str, Any]]) -> tuple[list[Part], dict[str, int]]:
    """A transcript's main-line rows as Anthropic messages, one `Part` per context (a
    `/clear`, a compaction or a new root row starts another), with what was dropped, by kind.
    Side-agent rows are dropped here (`read_rows` reads them as parts of their own).

    An assistant message is the consecutive rows of one message id, its text, tool-use and
    image blocks in order (thinking blocks are left out), with the usage of the call that
    produced it (the last row's, as the client records it) under `usage`; consecutive
    tool-result rows are one user message."""
    parts: list[Part] = [Part("session")]
    dropped: dict[str, int] = {}
    results_open = False
    last_id: str | None = None
    open_at: int | None = None
    """The assistant message of `last_id`, while only its results follow it: the rows of
    its message id that come after a result still belong to it."""
    previous = ""
    started: dict[str, float | None] = {}
    """Each message id's first row time (a thinking-only row included): the call's time."""
    for row in rows:
        kind = row_kind(row)
        message = row.get("message")
        if not isinstance(message, dict):
            message = {}
        if kind in ("assistant", "thinking only") and isinstance(message.get("id"), str):
            started.setdefault(message["id"], iso_seconds(row.get("timestamp")))
        if kind == "meta" and previous == "command" and not _CAVEAT.match(
            _text_of(message.get("content") or "")
        ):
            kind = "prompt"  # a custom slash command's prompt, which the client expands
        previous = kind
        part = parts[-1]
        new_root = (row.get("parentUuid", "") is None and kind in ("prompt", "compact")
                    and part.messages)
        if kind == "system" and row.get("subtype") == "compact_boundary" and part.messages:
            parts.append(Part("after-compaction"))  # the summary row, if any, opens it
            last_id, results_open, open_at = None, False, None
            tally(dropped, "system")
            continue
        if kind == "compact" and part.kind == "after-compaction" and not part.messages:
            new_root = False  # the boundary row started this part
        elif kind in ("clear", "compact") or new_root:
            next_kind: PartKind = ("after-clear" if kind == "clear" else
                                   "after-compaction" if kind == "compact" else "session")
            parts.append(Part(next_kind))
            part, last_id, results_open, open_at = parts[-1], None, False, None
            if kind == "clear":
                continue
        if kind == "assistant":
            blocks = _blocks(message["content"], _KEPT_BLOCKS)
            recorded = _recorded(message.get("usage"))
            msg_id = message.get("id") if isinstance(message.get("id"), str) else None
            model = message.get("model") if isinstance(message.get("model"), str) else None
            call = part.calls[open_at] if open_at is not None else None
            if call is not None and open_at is not None and msg_id == last_id and (
                    msg_id is not None or open_at == len(part.messages) - 1):
                part.messages[open_at]["content"].extend(blocks)
                if recorded:
                    part.messages[open_at]["usage"] = recorded
                    call.usage = message["usage"]
                continue
            entry: Msg = {"role": "assistant", "content": list(blocks)}
            if recorded:
                entry["usage"] = recorded
            if model:
                entry["model"] = model
            part.messages.append(entry)
            when = started[msg_id] if msg_id is not None else iso_seconds(row.get("timestamp"))
            part.calls.append(Call(msg_id, when,
                                   message["usage"] if recorded else {}, model))
            last_id, results_open, open_at = msg_id, False, len(part.messages) - 1
        elif kind == "results":
            blocks = []
            for block in _blocks(message["content"], ("tool_result",)):
                inner = block.get("content")
                if isinstance(inner, list):
                    kept = _blocks(inner, ("text", "image"))
                    if len(kept) < len(inner):  # e.g. a tool search's `tool_reference`
                        tally(dropped, "result block not text or image", len(inner) - len(kept))
                        block = {**block, "content": kept}
                blocks.append(block)
            if part.messages and part.messages[-1]["role"] == "user" and results_open:
                part.messages[-1]["content"].extend(blocks)
            else:
                part.messages.append({"role": "user", "content": list(blocks)})
                part.calls.append(None)
            results_open = True
            if open_at != len(part.messages) - 2:  # not the results of the open message
                last_id, open_at = None, None
        elif kind in ("prompt", "compact"):
            content = message.get("content")
            if isinstance(content, list):
                content = _blocks(content, ("text", "image"))
            elif not isinstance(content, str):
                tally(dropped, "empty")  # a summary row without text
                continue
            part.messages.append({"role": "user", "content": content})
            part.calls.append(None)
            last_id, results_open, open_at = None, False, None
        else:
            tally(dropped, kind)
    out: list[Part] = []
    for part in parts:
        start = next((i for i, (m, c) in enumerate(zip(part.messages, part.calls, strict=True))
                      if m["role"] == "user" and _opens(m)), len(part.messages))
        if start:  # a context the file holds from its middle on: it starts at its first prompt
            tally(dropped, "before the first prompt", start)
            part.messages, part.calls = part.messages[start:], part.calls[start:]
        if any(m["role"] == "assistant" for m in part.messages):
            out.append(part)
    return out, dropped


def _opens(message: Msg) -> bool:
    """A user message that is not tool results (a prompt or a compaction's summary)."""
    content = message["content"]
    return not (isinstance(content, list) and content
                and all(b.get("type") == "tool_result" for b in content))


def rows_of(data: bytes) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """A transcript file's rows (the `logs/chat.json` array, or JSON Lines whose unreadable
    lines are counted and skipped), and what was not a readable row, by kind."""
    text = data.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text[:1] == b"[":
        try:
            rows = json.loads(data.removeprefix(b"\xef\xbb\xbf"))
        except (ValueError, RecursionError):
            return [], {"garbled": 1}
        if not isinstance(rows, list):
            return [], {"garbled": 1}
        kept = [r for r in rows if isinstance(r, dict)]
        return kept, {"garbled": len(rows) - len(kept)} if len(kept) < len(rows) else {}
    skips = Skips()
    rows = list(json_lines(data, skips))
    return rows, skips.report()


def call_of(call: Call, record: int) -> RecordedCall:
    """One call's recorded usage, normalized: input is Anthropic's uncached input plus what
    was read from and written to the cache."""
    usage = call.usage
    counts = _recorded(usage)
    read = counts.get("cache_read_input_tokens", 0)
    write = counts.get("cache_creation_input_tokens", 0)
    lifetimes = usage.get("cache_creation") if isinstance(usage, dict) else None
    five = one = None
    if isinstance(lifetimes, dict):
        five, one = (v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None
                     for v in (lifetimes.get(k) for k in LIFETIMES))
    return RecordedCall(
        record=record,
        input_tokens=max(0, counts.get("input_tokens", 0)) + max(0, read) + max(0, write),
        cache_read_tokens=max(0, read),
        cache_write_tokens=max(0, write),
        cache_write_5m_tokens=five,
        cache_write_1h_tokens=one,
        output_tokens=max(0, counts.get("output_tokens", 0)),
        model=call.model,
        timestamp=call.timestamp,
    )


def session_part(part: Part, name: str) -> SessionPart:
    """A part as provider records (the `usage` and `model` the corpus keeps taken out) and
    one `RecordedCall` per call with usage: rows of one message id the client split by a
    tool result are one call, at its first message."""
    records: list[dict[str, object]] = []
    calls: list[RecordedCall] = []
    seen: dict[str, int] = {}
    for message, call in zip(part.messages, part.calls, strict=True):
        records.append({k: v for k, v in message.items() if k not in ("usage", "model")})
        if call is None or not _recorded(call.usage):
            continue
        if call.id is not None and call.id in seen:
            first = calls[seen[call.id]]
            calls[seen[call.id]] = call_of(call, first.record).model_copy(
                update={"timestamp": first.timestamp})
            continue
        if call.id is not None:
            seen[call.id] = len(calls)
        calls.append(call_of(call, len(records) - 1))
    return SessionPart(name=name, kind=part.kind, provider_format="anthropic",
                       records=tuple(records), calls=tuple(calls))


def read_rows(rows: list[dict[str, Any]], name: str) -> SessionRead:
    """A transcript's rows: the main line's contexts, then each side agent's (by `agentId`
    when rows name it), with what was skipped."""
    main = [r for r in rows if not r.get("isSidechain")]
    agents: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row.get("isSidechain"):
            key = row.get("agentId")
            agents.setdefault(key if isinstance(key, str) else "", []).append(row)
    parts, skipped = transcript_parts(main)
    out = [session_part(p, name if len(parts) == 1 else f"{name}-part{k + 1}")
           for k, p in enumerate(parts)]
    for key, its in agents.items():
        side, why = transcript_parts([{**r, "isSidechain": False} for r in its])
        for kind, n in why.items():
            tally(skipped, kind, n)
        for k, p in enumerate(side):
            label = f"{name}-agent{'-' + key if key else ''}" + (
                f"-part{k + 1}" if len(side) > 1 else "")
            out.append(session_part(Part("side-agent", p.messages, p.calls), label))
    unpaired = sum(_unpaired(p.records) for p in out)
    return SessionRead(agent="claude-code", parts=tuple(out), skipped=skipped,
                       unpaired=unpaired)


def _unpaired(records: tuple[dict[str, object], ...]) -> int:
    """Tool calls with no result and results with no call, in one part."""
    calls: set[str] = set()
    results: set[str] = set()
    for record in records:
        for block in _blocks(record.get("content"), ("tool_use", "tool_result")):
            if block.get("type") == "tool_use":
                calls.add(_key(block.get("id")))
            else:
                results.add(_key(block.get("tool_use_id")))
    return len(calls ^ results)


def _key(value: object) -> str:
    """A call id as a set key (an id that is not a string is still one, never a crash)."""
    return value if isinstance(value, str) else repr(value)


def read_session(data: bytes, name: str) -> SessionRead:
    """One transcript file (JSON Lines or the `logs/chat.json` array)."""
    rows, unreadable = rows_of(data)
    read = read_rows(rows, name)
    if not unreadable:
        return read
    skipped = dict(read.skipped)
    for kind, n in unreadable.items():
        tally(skipped, kind, n)
    return read.model_copy(update={"skipped": skipped})


_SNIFF = re.compile(rb'"(?:parentUuid|isSidechain|leafUuid|isSnapshotUpdate)"\s*:')
_TYPE = re.compile(rb'"type"\s*:\s*"(?:user|assistant|summary|system|file-history-snapshot)"')


def sniff(head: bytes) -> bool:
    """A Claude Code transcript: its first records name a `parentUuid`, `isSidechain`,
    `leafUuid` or `isSnapshotUpdate` (keys of Claude Code's rows only), and a row type
    Claude Code writes."""
    return _SNIFF.search(head) is not None and _TYPE.search(head) is not None
