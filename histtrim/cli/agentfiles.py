"""Agents' own session files (Claude Code, Codex CLI, Gemini CLI, Pi, OpenHands) for `trim`,
`estimate` and `review`: told from their content, read by the package's readers, and handed
on as the request the agent would send next (an Anthropic or OpenAI body)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path

from histtrim.adapters.agent_sessions import (
    AgentFormat,
    RecordedCall,
    SessionPart,
    SessionRead,
    detect,
    reader,
)
from histtrim.cli.errors import InputError
from histtrim.cli.jsontext import check_value
from histtrim.policy import SPEC, ColdCache, Policy
from histtrim.reported_usage import usable_report, warn_refused

AGENT_NAMES: dict[AgentFormat, str] = {
    "claude-code": "Claude Code", "codex": "Codex CLI", "gemini-cli": "Gemini CLI",
    "pi": "Pi", "openhands": "OpenHands",
}
PROVIDER_NAMES = {"anthropic": "Anthropic", "openai": "OpenAI"}


@dataclass(frozen=True)
class AgentFile:
    """An agent's session file as read: the reader's answer, the part a request is made of,
    and that request's bytes."""

    agent: AgentFormat
    read: SessionRead
    part: SessionPart
    body: bytes

    @property
    def format(self) -> str:
        return self.part.provider_format

    def note(self, source: str, what: str) -> str:
        """One line on stderr: which agent wrote the file and which part `what` is."""
        index = self.read.parts.index(self.part) + 1
        skipped = sum(self.read.skipped.values())
        return (
            f"histtrim: {source}: {_article(AGENT_NAMES[self.agent])} "
            f"{AGENT_NAMES[self.agent]} session; {what} the "
            f"{PROVIDER_NAMES[self.format]} request it would send next, from part {index} of "
            f"{len(self.read.parts)} ({self.part.kind}, {len(self.part.records)} messages, "
            f"{len(self.part.calls)} recorded calls; {skipped} rows skipped, "
            f"{self.read.unpaired} unpaired)"
        )


def _article(name: str) -> str:
    return "an" if name[0] in "AEIOU" else "a"


def main_part(read: SessionRead, *, longest: bool = False) -> SessionPart | None:
    """The part a request is made of: the last context of the main line (what the agent
    sends next), or with `longest` the one with the most messages; a file holding only side
    agents gives its last."""
    main = [p for p in read.parts if p.kind != "side-agent"] or list(read.parts)
    if not main:
        return None
    if longest:
        return max(reversed(main), key=lambda p: len(p.records))
    return main[-1]


def request_body(part: SessionPart) -> bytes:
    """The part as the request body its provider reads: Anthropic's `system` and `messages`,
    or OpenAI's `messages` (the system prompt first); the recorded model when known. One
    message a line, so a line number names a message."""
    model = next((c.model for c in reversed(part.calls) if c.model), None)
    body: dict[str, object] = {"model": model} if model else {}
    messages = list(part.records)
    if part.provider_format == "anthropic":
        if part.system:
            body["system"] = part.system
    elif part.system:
        messages.insert(0, {"role": "system", "content": part.system})
    head = json.dumps(body, ensure_ascii=False)[:-1] + (", " if body else "")
    lines = ",\n".join(json.dumps(m, ensure_ascii=False) for m in messages)
    return f'{head}"messages": [\n{lines}\n]}}\n'.encode()


def checked_body(source: str, part: SessionPart) -> bytes:
    """`request_body`, once every string of the part is text UTF-8 can write: a lone
    surrogate (JSON's `\\ud800` escape, which the readers accept) is one error naming the
    message and field, never a traceback."""
    for i, record in enumerate(part.records):
        check_value(source, record, line=None, field=f"message {i + 1}")
    check_value(source, part.system, line=None, field="system")
    for call in part.calls:
        check_value(source, call.model, line=None, field=f"message {call.record + 1}.model")
    return request_body(part)


def read_agent(data: bytes, name: str) -> tuple[AgentFormat, SessionRead] | None:
    """The agent format the file's content shows and its reader's answer, or None."""
    agent = detect(data)
    if agent is None:
        return None
    return agent, reader(agent)(data, name)


def read_agent_file(
    source: str, data: bytes, format: str | None, *, longest: bool = False
) -> AgentFile | None:
    """The file as an agent's session, or None when it is not one (or `--format` names
    the format to read it as)."""
    if format is not None:
        return None
    found = read_agent(data, Path(source).stem)
    if found is None:
        return None
    agent, read = found
    part = main_part(read, longest=longest)
    if part is None:
        raise InputError(source, f"a {AGENT_NAMES[agent]} session with no conversation "
                         f"(rows skipped: {sum(read.skipped.values())})")
    return AgentFile(agent, read, part, checked_body(source, part))


def cold_requests(
    agent: AgentFile, rule: ColdCache, now: float | None
) -> tuple[frozenset[int], bool]:
    """CACHE-1 read from the file's recorded times: the requests made with the prompt cache
    cold (each recorded call more than the lifetime after the one before; its request ends
    before its reply, as `call_report` counts it), and whether the request written next, at
    `now` (default: the last recorded call's time, so warm), is cold. An untimed call is
    never cold, nor the one after it."""
    if not rule.lifetime:
        return frozenset(), False
    shift = 1 if agent.part.system else 0
    ends: set[int] = set()
    last: float | None = None
    for call in agent.part.calls:
        if rule.is_cold(call.timestamp, last):
            ends.add(call.record + shift)
        last = call.timestamp
    when = last if now is None else now
    return frozenset(ends), rule.is_cold(when, last)


def last_call(part: SessionPart) -> RecordedCall | None:
    return part.calls[-1] if part.calls else None


def call_report(
    agent: AgentFile, costs: Sequence[int], policy: Policy = SPEC,
    warn: Callable[[str], object] = warn_refused,
) -> tuple[int, int] | None:
    """The last call's recorded input and histtrim's estimate of its request (the rows
    before its reply; `costs` per row of the body, its system prompt first): USAGE-5's
    report, when USAGE-7's rule lets it be used (`usable_report`)."""
    call = last_call(agent.part)
    if call is None or call.input_tokens <= 0:
        return None
    estimate = sum(costs[:call.record + (1 if agent.part.system else 0)])
    if usable_report(call.input_tokens, estimate, policy=policy, warn=warn) is None:
        return None
    return call.input_tokens, estimate


def call_pairs(agent: AgentFile, costs: Sequence[int]) -> list[tuple[int, int]]:
    """USAGE-8 on an agent's file: (the estimate of the rows before each recorded call's
    reply, its recorded input), oldest first; one pass over `costs`."""
    shift = 1 if agent.part.system else 0
    sums = list(accumulate(costs, initial=0))
    return [(sums[min(call.record + shift, len(costs))], call.input_tokens)
            for call in agent.part.calls if call.input_tokens > 0]
