"""Gemini CLI chats (`~/.gemini/tmp/<project>/chats/session-*.jsonl`, and the one JSON
object per chat it wrote before 2026-04) read as OpenAI chat messages with one
`RecordedCall` per model response.

The JSON Lines file is a log Gemini CLI replays (chatRecordingService): a header line
(`sessionId`, `projectHash`), message records keyed by `id` (a record whose id was seen
replaces that message where it stands: a response is written again once its tool calls
ran), `{"$set": {...}}` metadata updates (a `$set` of `messages` replaces the whole list),
and `{"$rewindTo": id}`, which removes that message and every later one (all of them when
the id is unknown). The conversation before a rewind, or before a `$set` of `messages`
that drops messages (a compression), is a part of its own; the part after it starts from
what was kept, and each response's usage is counted in the first part that holds it.

Usage (`tokens`) follows Gemini's `usageMetadata`: `input` is `promptTokenCount`, which
includes the `cached` tokens (`cachedContentTokenCount`), so it is the whole input; the
output is `output` + `thoughts` (candidates and thinking, both billed as output); Gemini
records no cache writes. `tool` (`toolUsePromptTokenCount`, what a built-in tool such as
search added to the prompt) is left out: no record of the file holds that text. `info`,
`error` and `warning` messages are the CLI's own notes, never sent to the model: they are
counted and left out, as are thoughts."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from histtrim.adapters.agent_sessions import PartKind, RecordedCall, SessionPart, SessionRead
from histtrim.adapters.session_rows import (
    CopyBudget,
    Skips,
    counts,
    iso_seconds,
    json_lines,
    loads,
    text_of,
)

_HEADER = re.compile(rb'\A\s*\{\s*"sessionId"\s*:\s*"[^"\\]{0,200}"\s*,\s*"projectHash"\s*:')
_NOTES = frozenset(("info", "error", "warning"))


def sniff(head: bytes) -> bool:
    """A Gemini CLI chat starts with its header: `sessionId` then `projectHash`."""
    return _HEADER.match(head.removeprefix(b"\xef\xbb\xbf")) is not None


class _Chat:
    """The messages as Gemini CLI would load them at this point of the log."""

    def __init__(self, name: str, budget: CopyBudget, skips: Skips, kind: PartKind) -> None:
        self.name, self.budget, self.skips = name, budget, skips
        self.order: list[str] = []
        self.where: dict[str, int] = {}
        self.messages: dict[str, Mapping[str, Any]] = {}
        self.parts: list[SessionPart] = []
        self.kind: PartKind = kind
        self.side = kind == "side-agent"
        self.changed = False
        self.counted: set[str] = set()
        self.faults: set[str] = set()

    def put(self, record: Mapping[str, Any]) -> None:
        kind = record.get("type")
        if kind in _NOTES or kind not in ("user", "gemini"):
            self.skips.skip(kind if isinstance(kind, str) else "unknown")
            return
        key = record["id"]
        if key not in self.where:
            self.where[key] = len(self.order)
            self.order.append(key)
        self.messages[key] = record
        self.changed = True

    def rewind(self, key: str) -> None:
        self.close()
        at = self.where.get(key, 0)
        for gone in self.order[at:]:
            del self.where[gone], self.messages[gone]
        del self.order[at:]
        self.kind = "after-rewind" if not self.side else "side-agent"

    def replace(self, records: list[Any]) -> None:
        kept = [r for r in records if isinstance(r, dict) and isinstance(r.get("id"), str)]
        dropped = set(self.order) - {r["id"] for r in kept}
        if dropped:
            self.close()
            self.kind = "after-compaction" if not self.side else "side-agent"
        self.order, self.where, self.messages = [], {}, {}
        for record in kept:
            self.put(record)
        self.changed = True

    def close(self) -> None:
        """Writes the conversation so far as a part, when it holds anything new."""
        if not self.changed or not self.order:
            return
        self.changed = False
        if self.parts and not self.budget.take(len(self.order)):
            self.skips.skip("context-over-budget")
            return
        records: list[dict[str, object]] = []
        calls: list[RecordedCall] = []
        for key in self.order:
            message = self.messages[key]
            if message.get("type") == "user":
                records.append({"role": "user", "content": _content(message.get("content"))})
                continue
            call = self._call(key, message, len(records))
            if call is not None:
                calls.append(call)
            records.extend(self._answer(key, message))
        name = self.name if not self.parts else f"{self.name}#{len(self.parts) + 1}"
        self.parts.append(SessionPart(name=name, kind=self.kind, provider_format="openai",
                                      records=tuple(records), calls=tuple(calls)))

    def _call(self, key: str, message: Mapping[str, Any], index: int) -> RecordedCall | None:
        tokens = message.get("tokens")
        if key in self.counted or not isinstance(tokens, dict):
            return None
        self.counted.add(key)
        values = counts(tokens, "input", "cached", "output", "thoughts")
        if values is None:
            self.skips.skip("bad-usage")
            return None
        prompt, cached, output, thoughts = values
        model = message.get("model")
        return RecordedCall(
            record=index, input_tokens=prompt, cache_read_tokens=min(cached, prompt),
            cache_write_tokens=0, output_tokens=output + thoughts,
            model=model if isinstance(model, str) else None,
            timestamp=iso_seconds(message.get("timestamp")),
        )

    def _answer(self, key: str, message: Mapping[str, Any]) -> list[dict[str, object]]:
        """The model's message, then one tool message per call that has its result."""
        text = _content(message.get("content"), images=False)
        calls: list[dict[str, object]] = []
        results: list[dict[str, object]] = []
        tool_calls = message.get("toolCalls")
        for n, call in enumerate(tool_calls if isinstance(tool_calls, list) else ()):
            if not isinstance(call, dict):
                continue
            ident = call.get("id")
            ident = ident if isinstance(ident, str) and ident else f"{key}-{n}"
            if call.get("result") is None:
                if f"{key}\0{n}" not in self.faults:
                    self.faults.add(f"{key}\0{n}")
                    self.skips.unpaired += 1
                continue
            args = call.get("args")
            calls.append({"id": ident, "type": "function", "function": {
                "name": text_of(call.get("name")),
                "arguments": json.dumps(args if isinstance(args, dict) else {},
                                        ensure_ascii=False),
            }})
            results.append({"role": "tool", "tool_call_id": ident,
                            "content": _result(call.get("result"))})
        answer: dict[str, object] = {"role": "assistant", "content": text}
        if calls:
            answer["tool_calls"] = calls
        return [answer, *results]


def _parts(content: object) -> list[Any]:
    if isinstance(content, list):
        return content
    return [content] if content is not None else []


def _content(content: object, images: bool = True) -> Any:
    """Gemini parts as OpenAI content: their text, with inline images as image parts."""
    texts: list[str] = []
    pictures: list[dict[str, object]] = []
    for part in _parts(content):
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            inline = part.get("inlineData")
            if isinstance(part.get("text"), str):
                if not part.get("thought"):
                    texts.append(part["text"])
            elif images and isinstance(inline, dict) and str(inline.get("mimeType", "")
                                                                 ).startswith("image/"):
                url = f"data:{inline['mimeType']};base64,{text_of(inline.get('data'))}"
                pictures.append({"type": "image_url", "image_url": {"url": url}})
            elif "functionResponse" in part:
                texts.append(_response(part["functionResponse"]))
    text = "".join(texts)
    if pictures:
        return [{"type": "text", "text": text}, *pictures] if text else pictures
    return text


def _response(response: object) -> str:
    body = response.get("response") if isinstance(response, dict) else None
    if isinstance(body, dict):
        for key in ("output", "error"):
            if isinstance(body.get(key), str):
                return str(body[key])
    return text_of(body)


def _result(result: object) -> str:
    """A tool call's result parts as the text the model read."""
    texts: list[str] = []
    for part in _parts(result):
        if isinstance(part, dict) and "functionResponse" in part:
            texts.append(_response(part["functionResponse"]))
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif isinstance(part, str):
            texts.append(part)
    return "\n".join(texts)


def read_session(data: bytes, name: str) -> SessionRead:
    """One Gemini CLI chat file (JSON Lines, or the older single JSON object)."""
    skips = Skips()
    data = data.removeprefix(b"\xef\xbb\xbf")
    whole = loads(data) if data[:4096].lstrip()[:1] == b"{" else None
    if isinstance(whole, dict) and isinstance(whole.get("messages"), list):
        records: list[Any] = [{k: v for k, v in whole.items() if k != "messages"},
                              *whole["messages"]]
    else:
        records = list(json_lines(data, skips))
    side = any(isinstance(r, dict) and r.get("kind") == "subagent" for r in records[:1])
    chat = _Chat(name, CopyBudget(len(records)), skips, "side-agent" if side else "session")
    for record in records:
        if not isinstance(record, dict):
            skips.skip("garbled")
        elif isinstance(record.get("$rewindTo"), str):
            chat.rewind(record["$rewindTo"])
        elif isinstance(record.get("id"), str):
            chat.put(record)
        elif isinstance(record.get("$set"), dict):
            if isinstance(record["$set"].get("messages"), list):
                chat.replace(record["$set"]["messages"])
        elif isinstance(record.get("sessionId"), str):
            for message in record.get("messages") or () if whole is None else ():
                if isinstance(message, dict) and isinstance(message.get("id"), str):
                    chat.put(message)
        else:
            skips.skip("unknown")
    chat.close()
    return SessionRead(agent="gemini-cli", parts=tuple(chat.parts), skipped=skips.report(),
                       unpaired=skips.unpaired)
