"""Pi coding-agent sessions (`~/.pi/agent/sessions/<cwd>/<time>_<id>.jsonl`) read as
Anthropic messages with one `RecordedCall` per assistant message.

A session is a `session` header, then entries: `message` (user, assistant, toolResult,
bashExecution, custom), `compaction`, `branch_summary`, `custom_message`, and settings the
model never reads (`model_change`, `thinking_level_change`, `label`, ...; counted). Version 1
files list entries in order; from version 2 each entry names its `parentId`, `/tree` and
`/fork` leave other branches in the file, and the live branch is the path from the last
entry back to the root (as pi's `buildSessionContext` reads it): entries off it are counted
as `off-branch`. After a `compaction` the context is its summary, the entries it kept
(`firstKeptEntryId`, or `firstKeptEntryIndex` in version 1) and what follows: a part of its
own. Messages go to the model the way pi sends them: errored or aborted assistant messages
are left out (counted), tool results follow their call in one user message, and a call left
without a result gets pi's own "No result provided" error result (counted as unpaired).

Usage is pi's `Usage`, in Anthropic's convention for every provider: `input` excludes the
cache, so the whole input is `input + cacheRead + cacheWrite`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from histtrim.adapters.agent_sessions import PartKind, RecordedCall, SessionPart, SessionRead
from histtrim.adapters.session_rows import (
    CopyBudget,
    Skips,
    count,
    counts,
    iso_seconds,
    json_lines,
    text_of,
)

_SETTINGS = frozenset((
    "model_change", "thinking_level_change", "label", "session_info", "custom",
))
_COMPACTION_PREFIX = (
    "The conversation history before this point was compacted into the following "
    "summary:\n\n<summary>\n"
)
_COMPACTION_SUFFIX = "\n</summary>"
_BRANCH_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:\n\n"
    "<summary>\n"
)
_BRANCH_SUFFIX = "</summary>"
_NO_RESULT = "No result provided"


def sniff(head: bytes) -> bool:
    """A Pi session's first line is its `session` header."""
    first = head.removeprefix(b"\xef\xbb\xbf").split(b"\n", 1)[0]
    return first.lstrip().startswith(b'{"type":"session"') and b'"cwd"' in first


Entry = Mapping[str, Any]


def _path(entries: Sequence[Entry], skips: Skips) -> list[Entry]:
    """The live branch: all entries in order (version 1), or the path from the last entry
    with an id back to the root through `parentId`."""
    if not any(isinstance(e.get("id"), str) for e in entries[1:]):
        return list(entries)
    by_id = {e["id"]: e for e in entries if isinstance(e.get("id"), str)}
    leaf = next((e for e in reversed(entries) if isinstance(e.get("id"), str)), None)
    path: list[Entry] = []
    seen: set[str] = set()
    while leaf is not None and leaf["id"] not in seen:
        seen.add(leaf["id"])
        path.append(leaf)
        parent = leaf.get("parentId")
        leaf = by_id.get(parent) if isinstance(parent, str) else None
    path.reverse()
    off = sum(1 for e in entries if e.get("type") != "session") - len(path)
    if off:
        skips.skip("off-branch", off)
    return path


class _Context:
    """One part's messages, as pi turns its entries into the messages it sends."""

    def __init__(self, skips: Skips) -> None:
        self.skips = skips
        self.records: list[dict[str, object]] = []
        self.calls: list[RecordedCall] = []
        self.pending: list[str] = []
        self.waiting: set[str] = set()
        """`pending` as a set: a result finds its call in constant time."""
        self.pending_at = 0
        self.answered: set[str] = set()
        self.results: dict[str, object] | None = None
        """The user message of tool results that the next result joins, while it is last."""
        self.replay = False
        """Adding what a compaction kept: its calls and faults were counted before."""

    def add(self, entry: Entry, count_call: bool) -> None:
        kind = entry.get("type")
        if kind == "message" and isinstance(entry.get("message"), dict):
            self._message(entry, entry["message"], count_call)
        elif kind == "custom_message":
            self._user(_blocks(entry.get("content")))
        elif kind == "branch_summary" and entry.get("summary"):
            self._user(_BRANCH_PREFIX + text_of(entry.get("summary")) + _BRANCH_SUFFIX)

    def summary(self, entry: Entry) -> None:
        self._user(_COMPACTION_PREFIX + text_of(entry.get("summary")) + _COMPACTION_SUFFIX)

    def _message(self, entry: Entry, message: Mapping[str, Any], count_call: bool) -> None:
        role = message.get("role")
        if role == "assistant":
            self._assistant(entry, message, count_call)
        elif role == "toolResult":
            self._result(message)
        elif role == "user" or role in ("custom", "hookMessage"):
            self._user(_blocks(message.get("content")))
        elif role == "bashExecution":
            if not message.get("excludeFromContext"):
                self._user(_bash(message))
        elif role == "branchSummary":
            self._user(_BRANCH_PREFIX + text_of(message.get("summary")) + _BRANCH_SUFFIX)
        elif role == "compactionSummary":
            self._user(_COMPACTION_PREFIX + text_of(message.get("summary")) + _COMPACTION_SUFFIX)
        elif count_call:
            self.skips.skip(f"message:{role}" if isinstance(role, str) else "message")

    def _close_calls(self) -> None:
        """Pi answers each call left without a result with an error before going on."""
        missing = [c for c in self.pending if c not in self.answered]
        if missing:
            self.skips.unpaired += 0 if self.replay else len(missing)
            for call in missing:
                self._result({"toolCallId": call, "isError": True,
                              "content": [{"type": "text", "text": _NO_RESULT}]})
        self.pending, self.waiting, self.answered = [], set(), set()

    def _user(self, content: object) -> None:
        self._close_calls()
        self.records.append({"role": "user", "content": content})

    def _assistant(self, entry: Entry, message: Mapping[str, Any], count_call: bool) -> None:
        self._close_calls()
        if message.get("stopReason") in ("error", "aborted"):
            if count_call:
                self.skips.skip(f"assistant-{message['stopReason']}")
            return
        blocks: list[dict[str, object]] = []
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                if block["text"] and not block["text"].isspace():
                    blocks.append({"type": "text", "text": block["text"]})
            elif block.get("type") == "toolCall" and isinstance(block.get("id"), str):
                args = block.get("arguments")
                blocks.append({"type": "tool_use", "id": block["id"],
                               "name": text_of(block.get("name")),
                               "input": args if isinstance(args, dict) else {}})
                self.pending.append(block["id"])
                self.waiting.add(block["id"])
                self.pending_at = len(self.records)
        if not blocks:
            blocks.append({"type": "text", "text": ""})
        if count_call:
            call = _call(entry, message, len(self.records), self.skips)
            if call is not None:
                self.calls.append(call)
        self.records.append({"role": "assistant", "content": blocks})

    def _result(self, message: Mapping[str, Any]) -> None:
        ident = message.get("toolCallId")
        if not isinstance(ident, str) or ident not in self.waiting or ident in self.answered:
            self.skips.unpaired += 0 if self.replay else 1
            return
        self.answered.add(ident)
        block: dict[str, object] = {"type": "tool_result", "tool_use_id": ident,
                                    "content": _blocks(message.get("content"), listed=True)}
        if message.get("isError") is True:
            block["is_error"] = True
        last = self.records[-1] if self.records else None
        if last is not None and last is self.results:
            assert isinstance(last["content"], list)
            last["content"].append(block)
        else:
            self.results = {"role": "user", "content": [block]}
            self.records.append(self.results)

    def finish(self) -> None:
        """At the end of the file a call may still wait for its result: the next request
        would hold it, so it is reported, not answered."""
        missing = [c for c in self.pending if c not in self.answered]
        self.skips.unpaired += len(missing)
        if missing:
            missing_set = set(missing)
            last = self.records[self.pending_at]
            content = last["content"]
            assert isinstance(content, list)
            kept = [b for b in content if not (b.get("type") == "tool_use"
                                               and b.get("id") in missing_set)]
            last["content"] = kept or [{"type": "text", "text": ""}]


def _blocks(content: object, listed: bool = False) -> Any:
    """Pi text and image content as Anthropic content."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if listed else content
    blocks: list[dict[str, object]] = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            blocks.append({"type": "text", "text": block["text"]})
        elif block.get("type") == "image" and isinstance(block.get("data"), str):
            blocks.append({"type": "image", "source": {
                "type": "base64", "media_type": text_of(block.get("mimeType")),
                "data": block["data"]}})
    return blocks


def _bash(message: Mapping[str, Any]) -> str:
    """pi's `bashExecutionToText`: what a `!` command shows the model."""
    text = f"Ran `{text_of(message.get('command'))}`\n"
    output = message.get("output")
    text += f"```\n{text_of(output)}\n```" if output else "(no output)"
    code = message.get("exitCode")
    if message.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif code is not None and code != 0:
        text += f"\n\nCommand exited with code {text_of(code)}"
    if message.get("truncated") and message.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {text_of(message['fullOutputPath'])}]"
    return text


def _call(entry: Entry, message: Mapping[str, Any], index: int,
          skips: Skips) -> RecordedCall | None:
    usage = message.get("usage")
    if not isinstance(usage, dict):
        return None
    values = counts(usage, "input", "cacheRead", "cacheWrite", "output")
    if values is None:
        skips.skip("bad-usage")
        return None
    fresh, read, write, output = values
    millis = count(message.get("timestamp"))
    model = message.get("model")
    return RecordedCall(
        record=index, input_tokens=fresh + read + write, cache_read_tokens=read,
        cache_write_tokens=write, output_tokens=output,
        model=model if isinstance(model, str) else None,
        timestamp=millis / 1000 if millis is not None else iso_seconds(entry.get("timestamp")),
    )


def read_session(data: bytes, name: str) -> SessionRead:
    """One Pi session file, each compaction starting a part."""
    skips = Skips()
    entries = list(json_lines(data, skips))
    path = _path(entries, skips)
    where = {id(entry): i for i, entry in enumerate(path)}
    by_id = {e["id"]: i for i, e in enumerate(path) if isinstance(e.get("id"), str)}
    budget = CopyBudget(len(entries))
    parts: list[SessionPart] = []
    context = _Context(skips)
    kind: PartKind = "session"
    for at, entry in enumerate(path):
        kind_of = entry.get("type")
        if kind_of == "compaction":
            kept = _kept(entries, where, by_id, at, entry)
            if context.records:
                context.finish()
                parts.append(_part(name, len(parts), kind, context))
            kind, context = "after-compaction", _Context(skips)
            context.summary(entry)
            if budget.take(at - kept):
                context.replay = True
                for earlier in path[kept:at]:
                    context.add(earlier, count_call=False)
                context.replay = False
            else:
                skips.skip("context-over-budget")
        elif kind_of in ("message", "custom_message", "branch_summary"):
            context.add(entry, count_call=True)
        elif kind_of == "session":
            continue
        else:
            skips.skip(kind_of if isinstance(kind_of, str) else "unknown")
    if context.records:
        context.finish()
        parts.append(_part(name, len(parts), kind, context))
    return SessionRead(agent="pi", parts=tuple(parts), skipped=skips.report(),
                       unpaired=skips.unpaired)


def _kept(entries: Sequence[Entry], where: Mapping[int, int], by_id: Mapping[str, int],
          at: int, compaction: Entry) -> int:
    """Where in the path the entries a compaction kept start (`at` when none is found)."""
    first = compaction.get("firstKeptEntryId")
    index = count(compaction.get("firstKeptEntryIndex"))
    found: int | None = None
    if isinstance(first, str):
        found = by_id.get(first)
    elif index is not None and index < len(entries):
        found = where.get(id(entries[index]))
    return found if found is not None and found < at else at


def _part(name: str, n: int, kind: PartKind, context: _Context) -> SessionPart:
    return SessionPart(name=name if n == 0 else f"{name}#{n + 1}", kind=kind,
                       provider_format="anthropic", records=tuple(context.records),
                       calls=tuple(context.calls))
