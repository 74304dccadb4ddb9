"""OpenHands trajectories (the event list `save_trajectory_path` and the evaluation
outputs' `history` hold, or one event per line, as the CLI joins a conversation OpenHands
stored one event per file, `sessions/<id>/events/<n>.json`) read as OpenAI chat messages with
one `RecordedCall` per model response.

Events become messages the way `ConversationMemory` (OpenHands) makes them: a user or agent
`message` action is a user or assistant message; an agent action with `tool_call_metadata`
holds its response's assistant message (content and every tool call of that response)
until each of those calls has its observation, then the message and the results go in
together (a response whose calls never all come back is left out, as OpenHands filters it,
and its calls are counted as unpaired); `finish` is an assistant message with its thought;
the `system` action is the part's system prompt. Observations are written with their
`content` (OpenHands adds a line or two, such as a command's exit code, the file leaves
out). Environment events (`agent_state_changed`, `change_agent_state`, `null`...) never
reach the model: they are counted, as are `recall` observations (the workspace and
microagent context OpenHands renders into a user message from its own templates). A
`condensation` action forgets the events it names (`forgotten_event_ids`, or
`forgotten_events_start_id` to `forgotten_events_end_id`) and may insert a summary: what
follows is a part of its own.

Usage is the one `tool_call_metadata.model_response.usage` records (LiteLLM's, OpenAI's
convention: `prompt_tokens` is the whole input, cache reads and writes included), or, for
a response with no tool call, the last entry of the event's `llm_metrics.token_usages`;
each response counts once, by its id."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from histtrim.adapters.agent_sessions import PartKind, RecordedCall, SessionPart, SessionRead
from histtrim.adapters.session_rows import (
    CopyBudget,
    Skips,
    array_items,
    count,
    counts,
    iso_seconds,
    json_lines,
    loads,
    text_of,
)

_EVENT = re.compile(
    rb'\A\s*\[?\s*\{\s*(?:"id"\s*:\s*-?\d{1,19}\s*,\s*)?"timestamp"\s*:\s*"[^"\\]{0,64}"\s*,'
    rb'\s*"source"\s*:\s*"(?:user|agent|environment)"'
)
_ENVIRONMENT = frozenset((
    "agent_state_changed", "change_agent_state", "null", "recall", "condensation_request",
))

Event = Mapping[str, Any]


def sniff(head: bytes) -> bool:
    """An OpenHands event starts with `id`, `timestamp` and `source`, in that order."""
    return _EVENT.match(head.removeprefix(b"\xef\xbb\xbf")) is not None


def _events(data: bytes, skips: Skips) -> Iterator[Any]:
    data = data.removeprefix(b"\xef\xbb\xbf")
    start = data[:4096].lstrip()[:1]
    whole = loads(data) if start in (b"[", b"{") else None
    if isinstance(whole, dict):
        whole = whole.get("history", whole.get("trajectory"))
    if isinstance(whole, list):
        yield from whole
    elif start == b"[":
        yield from array_items(data.decode("utf-8", "replace"), skips)
    else:
        yield from json_lines(data, skips)


def _metadata(event: Event) -> tuple[str, str, Mapping[str, Any]] | None:
    """(response id, tool call id, the response) of an event that answers a tool call."""
    meta = event.get("tool_call_metadata")
    if not isinstance(meta, dict):
        return None
    response = meta.get("model_response")
    call = meta.get("tool_call_id")
    if not isinstance(response, dict) or not isinstance(call, str):
        return None
    ident = response.get("id")
    return (ident if isinstance(ident, str) else f"call:{call}"), call, response


def _choice(response: Mapping[str, Any]) -> Mapping[str, Any]:
    choices = response.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    return message if isinstance(message, dict) else {}


class _Memory:
    """One part's messages, built as OpenHands' ConversationMemory builds them."""

    def __init__(self, reader: _Reader) -> None:
        self.reader = reader
        self.records: list[dict[str, object]] = []
        self.calls: list[RecordedCall] = []
        self.pending: dict[str, _Pending] = {}
        self.owner: dict[str, str] = {}
        self.results: dict[str, dict[str, object]] = {}

    def add(self, event: Event) -> None:
        action, observation = event.get("action"), event.get("observation")
        if isinstance(action, str):
            self._action(action, event)
        elif isinstance(observation, str):
            self._observation(observation, event)

    def _action(self, action: str, event: Event) -> None:
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        assert isinstance(args, dict)
        agent = event.get("source") == "agent"
        answer = _metadata(event)
        if action == "message":
            text = text_of(args.get("content"))
            self._append({"role": "assistant" if agent else "user",
                          "content": _with_images(text, args.get("image_urls"))}, event)
        elif action == "finish" and agent:
            thought = text_of(args.get("thought"))
            content = text_of(_choice(answer[2]).get("content")) if answer else ""
            text = thought if not content or content == thought else (
                f"{thought}\n{content}" if thought else content)
            self._append({"role": "assistant", "content": text}, event,
                         answer[0] if answer else None, answer[2] if answer else None)
        elif action == "system":
            self.reader.system = text_of(args.get("content"))
        elif action == "run" and not agent:
            self._append({"role": "user", "content":
                          f"User executed the command:\n{text_of(args.get('command'))}"}, event)
        elif answer is not None and agent:
            response_id, _, response = answer
            message = _choice(response)
            calls = message.get("tool_calls")
            written: list[dict[str, object]] = []
            for call in calls if isinstance(calls, list) else ():
                function = call.get("function") if isinstance(call, dict) else None
                if isinstance(function, dict) and isinstance(call.get("id"), str):
                    written.append({"id": call["id"], "type": "function", "function": {
                        "name": text_of(function.get("name")),
                        "arguments": text_of(function.get("arguments"))}})
            content = text_of(message.get("content"))
            assistant: dict[str, object] = {
                "role": "assistant", "content": content if content.strip() else None,
                "tool_calls": written}
            if response_id in self.pending:
                return
            ids = [str(c["id"]) for c in written]
            waiting = _Pending(assistant, ids, response, event,
                               {i for i in ids if i not in self.results})
            self.pending[response_id] = waiting
            for ident in ids:
                self.owner[ident] = response_id
            self._complete(response_id)
        elif self.reader.counting:
            self.reader.skips.skip(action)

    def _observation(self, observation: str, event: Event) -> None:
        answer = _metadata(event)
        if answer is not None:
            self.results[answer[1]] = {"role": "tool", "tool_call_id": answer[1],
                                       "content": text_of(event.get("content"))}
            owner = self.owner.get(answer[1])
            waiting = self.pending.get(owner) if owner is not None else None
            if owner is not None and waiting is not None:
                waiting.missing.discard(answer[1])
                self._complete(owner)
        elif observation == "run":
            self._append({"role": "user", "content": "Observed result of command executed "
                          f"by user:\n{text_of(event.get('content'))}"}, event)
        elif observation == "error":
            self._append({"role": "user", "content": text_of(event.get("content"))
                          + "\n[Error occurred in processing last action]"}, event)
        elif observation == "condensation_summary":
            self._append({"role": "user", "content": text_of(event.get("content"))}, event)
        elif self.reader.counting:
            self.reader.skips.skip(observation)

    def _complete(self, response_id: str) -> None:
        waiting = self.pending[response_id]
        if waiting.missing:
            return
        del self.pending[response_id]
        self._append(waiting.assistant, waiting.event, response_id, waiting.response)
        for ident in waiting.ids:
            self.records.append(self.results.pop(ident))

    def _append(self, message: dict[str, object], event: Event,
                response_id: str | None = None,
                response: Mapping[str, Any] | None = None) -> None:
        if message["role"] == "assistant":
            call = self.reader.call(event, len(self.records), response_id, response)
            if call is not None:
                self.calls.append(call)
        self.records.append(message)

    def finish(self) -> None:
        """Responses whose calls never all came back, and results no call asked for."""
        if self.reader.counting:
            self.reader.skips.unpaired += sum(len(w.missing) for w in self.pending.values())
            wanted = {i for w in self.pending.values() for i in w.ids}
            self.reader.skips.unpaired += sum(1 for i in self.results if i not in wanted)


@dataclass
class _Pending:
    """A response's assistant message, waiting for the results of its calls."""

    assistant: dict[str, object]
    ids: list[str]
    response: Mapping[str, Any]
    event: Event
    missing: set[str]


def _with_images(text: str, urls: object) -> object:
    if not isinstance(urls, list) or not urls:
        return text
    parts: list[dict[str, object]] = [{"type": "text", "text": text}]
    parts += [{"type": "image_url", "image_url": {"url": u}} for u in urls if isinstance(u, str)]
    return parts


class _Reader:
    def __init__(self, name: str, skips: Skips) -> None:
        self.name, self.skips = name, skips
        self.system: str | None = None
        self.counted: set[str] = set()
        self.counting = True
        self.parts: list[SessionPart] = []

    def call(self, event: Event, index: int, response_id: str | None,
             response: Mapping[str, Any] | None) -> RecordedCall | None:
        """The usage of the response an assistant message came from, the first time."""
        if not self.counting:
            return None
        usage: object = response.get("usage") if response else None
        model: object = response.get("model") if response else None
        created: object = response.get("created") if response else None
        if usage is None:
            usage, response_id, model = _metrics_usage(event)
            created = None
        if not isinstance(usage, dict) or response_id is None or response_id in self.counted:
            return None
        self.counted.add(response_id)
        values = counts(usage, "prompt_tokens", "completion_tokens")
        read = _cache_read(usage)
        write = counts(usage, "cache_creation_input_tokens", "cache_write_tokens")
        if values is None or read is None or write is None:
            self.skips.skip("bad-usage")
            return None
        prompt, output = values
        seconds = count(created)
        return RecordedCall(
            record=index, input_tokens=prompt, cache_read_tokens=min(read, prompt),
            cache_write_tokens=min(max(write), prompt), output_tokens=output,
            model=model if isinstance(model, str) and model else None,
            timestamp=float(seconds) if seconds else iso_seconds(event.get("timestamp")),
        )

    def close(self, memory: _Memory, kind: PartKind) -> None:
        memory.finish()
        if memory.records:
            n = len(self.parts)
            self.parts.append(SessionPart(
                name=self.name if n == 0 else f"{self.name}#{n + 1}", kind=kind,
                provider_format="openai", records=tuple(memory.records),
                calls=tuple(memory.calls), system=self.system))


def _cache_read(usage: Mapping[str, Any]) -> int | None:
    if usage.get("cache_read_input_tokens") is not None:
        return count(usage["cache_read_input_tokens"])
    if usage.get("cache_read_tokens") is not None:
        return count(usage["cache_read_tokens"])
    details = usage.get("prompt_tokens_details")
    if isinstance(details, dict) and details.get("cached_tokens") is not None:
        return count(details["cached_tokens"])
    return 0


def _metrics_usage(event: Event) -> tuple[object, str | None, object]:
    """The last per-response usage of an event's `llm_metrics` (OpenHands 0.2x on)."""
    metrics = event.get("llm_metrics")
    usages = metrics.get("token_usages") if isinstance(metrics, dict) else None
    last = usages[-1] if isinstance(usages, list) and usages else None
    if not isinstance(last, dict) or not isinstance(last.get("response_id"), str):
        return None, None, None
    return last, last["response_id"], last.get("model")


def read_session(data: bytes, name: str) -> SessionRead:
    """One OpenHands trajectory, each condensation starting a part."""
    skips = Skips()
    reader = _Reader(name, skips)
    events: list[Event] = []
    for event in _events(data, skips):
        if isinstance(event, dict):
            events.append(event)
        else:
            skips.skip("garbled")
    budget = CopyBudget(len(events))
    memory = _Memory(reader)
    view: list[Event] = []
    kind: PartKind = "session"
    for event in events:
        if event.get("action") == "condensation":
            args = event.get("args") if isinstance(event.get("args"), dict) else {}
            assert isinstance(args, dict)
            reader.close(memory, kind)
            kind, memory = "after-compaction", _Memory(reader)
            if budget.take(len(view)):  # the scan of the view, and what it keeps
                view = _condensed(view, args)
                reader.counting = False
                for kept in view:
                    memory.add(kept)
                reader.counting = True
            else:
                view = []
                skips.skip("context-over-budget")
            continue
        if not isinstance(event.get("action"), str) and not isinstance(
                event.get("observation"), str):
            skips.skip("unknown")
            continue
        view.append(event)
        memory.add(event)
    reader.close(memory, kind)
    return SessionRead(agent="openhands", parts=tuple(reader.parts), skipped=skips.report(),
                       unpaired=skips.unpaired)


def _condensed(view: list[Event], args: Mapping[str, Any]) -> list[Event]:
    """The events a condensation keeps, with its summary where it says."""
    ids = args.get("forgotten_event_ids")
    start = count(args.get("forgotten_events_start_id"))
    end = count(args.get("forgotten_events_end_id"))
    if isinstance(ids, list):
        forgotten = {i for i in ids if count(i) is not None}
        kept = [e for e in view if e.get("id") not in forgotten]
    elif start is not None and end is not None:
        kept = [e for e in view if not (count(e.get("id")) is not None
                                        and start <= e["id"] <= end)]
    else:
        kept = list(view)
    summary, offset = args.get("summary"), count(args.get("summary_offset"))
    if isinstance(summary, str) and offset is not None:
        kept.insert(min(offset, len(kept)), {"observation": "condensation_summary",
                                             "content": summary})
    return kept
