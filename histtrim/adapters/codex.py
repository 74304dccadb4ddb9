"""Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`) read as OpenAI chat
messages, with each provider call's recorded usage.

Each line is `{timestamp, type, payload}`: `session_meta` (who and where), `turn_context` (the
model of the turns that follow), `response_item` (what the Responses API saw: messages,
reasoning, function and custom tool calls and their outputs), `event_msg` (the client's events,
among them `token_count`) and `compacted` (a compaction: its `replacement_history` is the new
context, else its summary is). The oldest rollouts wrote the items bare, without the wrapper.

A call's output items (reasoning, assistant text, tool calls) are one assistant message; the
outputs that answer its calls are `tool` messages. Its usage is the `token_count` event's
`info.last_token_usage`, in OpenAI's convention (input includes `cached_input_tokens`). Codex
writes an event twice (the second repeats the same `total_token_usage`: dropped), and an event
with `info: null` is a rate-limit notice (skipped). Older versions write the event before the
call's items, newer ones after them and after the outputs of the tools the call ran: a count
goes to the newest call without one, else to the next call."""

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
from histtrim.adapters.session_rows import CopyBudget, Skips, iso_seconds, json_lines, tally

Msg = dict[str, Any]


_CALLS = {
    "function_call": "function",
    "custom_tool_call": "custom",
    "local_shell_call": "local_shell",
}
"""Output items that call a tool, each made an OpenAI tool call."""
_OUTPUTS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")
_SILENT = ("reasoning", "ghost_snapshot", "compaction", "web_search_call",
           "image_generation_call", "other")
"""Items the conversation rows do not hold (reasoning, the client's snapshots, encrypted
compaction markers, server-side tool calls that have no result to pair): counted."""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _text(content: Any) -> str:
    """A message's text: its `input_text`/`output_text` parts joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(p["text"] for p in content
                   if isinstance(p, dict) and isinstance(p.get("text"), str))


def _images(content: Any) -> list[Msg]:
    if not isinstance(content, list):
        return []
    return [{"type": "image_url", "image_url": {"url": p["image_url"]}} for p in content
            if isinstance(p, dict) and p.get("type") == "input_image"
            and isinstance(p.get("image_url"), str)]


def _output_text(output: Any) -> str:
    """A tool output: a string, `{content, success}`, or a list of content items."""
    while isinstance(output, dict):
        output = output.get("content", "")
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return _text(output)
    return json.dumps(output, ensure_ascii=False)


@dataclass
class _Part:
    kind: PartKind
    messages: list[Msg] = field(default_factory=list)
    calls: list[RecordedCall] = field(default_factory=list)
    open: bool = False
    """The last message is an assistant message that more output items may join."""
    last: int | None = None
    """The index of the newest assistant message."""
    counted: bool = False
    """The newest assistant message already has its call's usage."""


_CONTEXT = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions")
"""How the user messages Codex writes itself begin (they open no user turn)."""


class _Reader:
    def __init__(self, budget: CopyBudget) -> None:
        self.budget = budget
        self.parts: list[_Part] = [_Part("session")]
        self.skipped: dict[str, int] = {}
        self.model: str | None = None
        self.pending: tuple[dict[str, Any], float | None] | None = None
        self.last_total: Any = None
        self.system: str | None = None
        self.after = False
        """Counts follow their call's items (newer Codex, after the tool outputs too): a
        counted call takes no more items."""

    @property
    def part(self) -> _Part:
        return self.parts[-1]

    def item(self, item: dict[str, Any]) -> None:
        kind = item.get("type")
        part = self.part
        if not isinstance(kind, str):
            tally(self.skipped, "response_item without type")
            return
        if kind == "message":
            role = item.get("role")
            text = _text(item.get("content"))
            if role == "assistant":
                self._assistant()["content"].append(text)  # joined once, at the end
                return
            if role not in ("user", "developer", "system"):
                tally(self.skipped, f"message role {role}")
                return
            images = _images(item.get("content"))
            content: Any = [{"type": "text", "text": text}, *images] if images else text
            part.messages.append({"role": role, "content": content})
            part.open = False
        elif kind in _CALLS:
            call_id = item.get("call_id") or item.get("id")
            if not isinstance(call_id, str):
                tally(self.skipped, f"{kind} without call_id")
                return
            if kind == "function_call":
                name, arguments = item.get("name"), item.get("arguments")
            elif kind == "custom_tool_call":
                name, arguments = item.get("name"), item.get("input")
            else:
                name, arguments = "local_shell", json.dumps(item.get("action"))
            message = self._assistant()
            message.setdefault("tool_calls", []).append({
                "id": call_id, "type": "function",
                "function": {"name": name if isinstance(name, str) else str(name),
                             "arguments": arguments if isinstance(arguments, str)
                             else json.dumps(arguments)},
            })
        elif kind in _OUTPUTS:
            call_id = item.get("call_id")
            if not isinstance(call_id, str):
                tally(self.skipped, f"{kind} without call_id")
                return
            part.messages.append({"role": "tool", "tool_call_id": call_id,
                                  "content": _output_text(item.get("output"))})
            part.open = False
        elif kind in _SILENT:
            tally(self.skipped, str(kind))
        else:
            tally(self.skipped, f"response_item {kind}")

    def _assistant(self) -> Msg:
        """The assistant message output items join: the open one, else a new one (which
        takes a count that came before its items)."""
        part = self.part
        if part.open and not (part.counted and self.after):
            return part.messages[-1]
        message: Msg = {"role": "assistant", "content": []}
        part.messages.append(message)
        part.open, part.counted, part.last = True, False, len(part.messages) - 1
        if self.pending is not None:
            self._record(*self.pending)
            self.pending = None
        return message

    def token_count(self, payload: dict[str, Any], timestamp: float | None) -> None:
        info = payload.get("info")
        if info is None and "input_tokens" in payload:  # the oldest rollouts: the counts bare
            info = {"last_token_usage": payload}
        if not isinstance(info, dict):
            tally(self.skipped, "rate-limit notice")
            return
        last, total = info.get("last_token_usage"), info.get("total_token_usage")
        if not isinstance(last, dict):
            tally(self.skipped, "token_count without last_token_usage")
            return
        if total is not None and total == self.last_total:
            tally(self.skipped, "repeated token_count")
            return
        self.last_total = total
        part = self.part
        if part.last is not None and not part.counted:
            self.after = True  # the newest call's count, after its items (and outputs)
            self._record(last, timestamp)
        else:
            if self.pending is not None:
                tally(self.skipped, "token_count without a call")
            self.pending = (last, timestamp)

    def _record(self, last: dict[str, Any], timestamp: float | None) -> None:
        part = self.part
        total = _int(last.get("input_tokens"))
        cached = min(_int(last.get("cached_input_tokens")), total)
        record = part.last if part.last is not None else len(part.messages) - 1
        part.calls.append(RecordedCall(
            record=record, input_tokens=total, cache_read_tokens=cached,
            cache_write_tokens=0, output_tokens=_int(last.get("output_tokens")),
            model=self.model, timestamp=timestamp,
        ))
        part.counted = True

    def compacted(self, payload: dict[str, Any]) -> None:
        """A compaction: a new context, its replacement history if recorded, else the
        summary as the user message it starts with."""
        self._close()
        self.parts.append(_Part("after-compaction"))
        history = payload.get("replacement_history")
        if isinstance(history, list):
            for item in history:
                if isinstance(item, dict):
                    self.item(item)
            self.part.open = False
            self.part.counted = True  # the history's replies are no calls of this file
        elif isinstance(payload.get("message"), str):
            self.part.messages.append({"role": "user", "content": payload["message"]})

    def rolled_back(self, payload: dict[str, Any]) -> None:
        """`thread_rolled_back`: the last `num_turns` user turns are gone; what is left is a
        new context (its replies were counted in the part before)."""
        turns = payload.get("num_turns")
        if not isinstance(turns, int) or isinstance(turns, bool) or turns < 1:
            tally(self.skipped, "thread_rolled_back without num_turns")
            return
        self._close()
        messages = self.part.messages
        cut = len(messages)
        while turns and cut:
            cut -= 1
            message = messages[cut]
            if message["role"] == "user" and not str(message["content"]).startswith(_CONTEXT):
                turns -= 1
        kept = messages[:cut]
        part = _Part("after-rewind")
        if self.budget.take(len(kept)):
            part.messages = list(kept)
        else:
            tally(self.skipped, "rewind past the copy bound")
        part.counted = True
        self.parts.append(part)

    def _close(self) -> None:
        if self.pending is not None:
            tally(self.skipped, "token_count without a call")
            self.pending = None

    def row(self, row: dict[str, Any]) -> None:
        kind, payload = row.get("type"), row.get("payload")
        if "payload" not in row and isinstance(kind, str):  # an item written bare
            if kind in ("message", *_CALLS, *_OUTPUTS, *_SILENT):
                self.item(row)
            elif row.get("record_type") == "state" or "instructions" in row:
                tally(self.skipped, "session_meta")
            else:
                tally(self.skipped, str(kind))
            return
        if not isinstance(payload, dict):
            tally(self.skipped, f"{kind} without payload")
            return
        if kind == "response_item":
            self.item(payload)
        elif kind == "event_msg":
            if payload.get("type") == "token_count":
                self.token_count(payload, iso_seconds(row.get("timestamp")))
            elif payload.get("type") == "thread_rolled_back":
                self.rolled_back(payload)
            else:
                tally(self.skipped, "event_msg")
        elif kind == "turn_context":
            if isinstance(payload.get("model"), str):
                self.model = payload["model"]
            tally(self.skipped, "turn_context")
        elif kind == "session_meta":
            instructions = payload.get("instructions")
            base = payload.get("base_instructions")
            if isinstance(base, dict):
                instructions = base.get("text")
            if isinstance(instructions, str) and instructions:
                self.system = instructions
            tally(self.skipped, "session_meta")
        elif kind == "compacted":
            self.compacted(payload)
        else:
            tally(self.skipped, str(kind))


def read_rows(rows: list[dict[str, Any]], name: str) -> SessionRead:
    """A rollout's records: the session, then each context a compaction started."""
    reader = _Reader(CopyBudget(len(rows)))
    for row in rows:
        try:
            reader.row(row)
        except RecursionError:  # a value nested past what json can write back
            tally(reader.skipped, "garbled")
    reader._close()
    kept = [p for p in reader.parts if any(m["role"] == "assistant" for m in p.messages)]
    for part in kept:
        for message in part.messages:
            if message["role"] == "assistant" and isinstance(message["content"], list):
                message["content"] = "".join(message["content"])
    parts = tuple(
        SessionPart(
            name=name if len(kept) == 1 else f"{name}-part{k + 1}", kind=p.kind,
            provider_format="openai", records=tuple(p.messages), calls=tuple(p.calls),
            system=reader.system,
        )
        for k, p in enumerate(kept)
    )
    return SessionRead(agent="codex", parts=parts, skipped=reader.skipped,
                       unpaired=sum(_unpaired(p.records) for p in parts))


def _unpaired(records: tuple[dict[str, object], ...]) -> int:
    calls: set[object] = set()
    results: set[object] = set()
    for record in records:
        tool_calls = record.get("tool_calls")
        if isinstance(tool_calls, list):
            calls.update(c.get("id") for c in tool_calls if isinstance(c, dict))
        if record.get("role") == "tool":
            results.add(record.get("tool_call_id"))
    return len(calls ^ results)


def read_session(data: bytes, name: str) -> SessionRead:
    """One rollout file; a line that is not a JSON object is counted `garbled`."""
    skips = Skips()
    rows = list(json_lines(data, skips))
    read = read_rows(rows, name)
    if not skips.counts:
        return read
    skipped = dict(read.skipped)
    for kind, n in skips.counts.items():
        tally(skipped, kind, n)
    return read.model_copy(update={"skipped": skipped})


_SNIFF = re.compile(rb'"type"\s*:\s*"(?:session_meta|response_item|turn_context|event_msg)"'
                    rb'\s*,\s*"payload"\s*:')


def sniff(head: bytes) -> bool:
    """A Codex rollout: a record `{"type": "session_meta"|..., "payload": ...}`."""
    return _SNIFF.search(head) is not None
