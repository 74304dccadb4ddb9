"""A recorded session ready to replay: the user turns, what the model answered at each call
and what each tool returned (with the files it declared), read from either history
representation."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from histtrim.agent.providers import ProviderReply
from histtrim.agent.tools import ToolOutput
from histtrim.carriers import parse_tool_calls, parse_tool_result
from histtrim.messages import (
    AssistantToolCalls,
    Attachment,
    ChatMessage,
    ConversationMessage,
    ToolCall,
    ToolResultMessage,
    ToolResults,
)
from histtrim.review.recorded import RecordedUsage
from histtrim.turns import index_turns, leading_system_count


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ReplayTurn(_Frozen):
    """One recorded user turn: the user's text, what the model answered at each provider
    call (tool rounds, then the reply), and the tool outputs in call order, with the files
    each tool declared (a bare string is an output that declared none)."""

    user: str
    steps: tuple[ProviderReply, ...]
    outputs: tuple[ToolOutput, ...] = ()

    @field_validator("outputs", mode="before")
    @classmethod
    def _texts(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return tuple(ToolOutput(content=v) if isinstance(v, str) else v for v in value)
        return value


class ReviewSession(_Frozen):
    """A recorded session ready to replay: the system prompt, the restored part (loaded with
    `Agent.restore`, breadcrumb flag included) and the turns to replay."""

    name: str
    system_prompt: str | None = None
    restored: tuple[ConversationMessage, ...] = ()
    crumb_present: bool = False
    turns: tuple[ReplayTurn, ...]
    tools: tuple[str, ...] = ()
    times: tuple[float | None, ...] = ()
    """When each recorded provider call was made (seconds; one per step of every turn, in
    order; None where unknown), for the replay's clock (`ReplaySettings.recorded_times`);
    empty: none recorded."""
    recorded: RecordedUsage | None = None
    """The provider's recorded usage (an agent's own file): how the replay's provider
    counts each request (`histtrim.review.recorded`)."""


    @field_validator("times")
    @classmethod
    def _finite(cls, value: tuple[float | None, ...]) -> tuple[float | None, ...]:
        for at in value:
            if at is not None and not math.isfinite(at):
                raise ValueError(f"expected finite seconds or null, got {at}")
        return value

    def with_times(self, times: Sequence[float | None]) -> ReviewSession:
        """This session with the recorded times of its file's provider calls (one per
        assistant message, in order), aligned from the end: the restored part's calls come
        first, and a turn's closing empty reply that the file does not hold (a turn that
        ends on tool results) has no time. As it is when the file has fewer calls."""
        steps = [s for turn in self.turns for s in turn.steps]
        closers = {
            id(turn.steps[-1]) for turn in self.turns
            if turn.steps and not turn.steps[-1].text and not turn.steps[-1].tool_calls
        }
        recorded = sum(1 for s in steps if id(s) not in closers)
        if len(times) < recorded:
            return self
        found = iter(times[len(times) - recorded:])
        return self.model_validate({**dict(self), "times": tuple(
            None if id(s) in closers else next(found) for s in steps)})

    def history(self) -> list[ConversationMessage]:
        """The whole recorded conversation as structured items (system prompt, restored part,
        then every turn with its tool rounds): what the turn map prices."""
        items: list[ConversationMessage] = []
        if self.system_prompt is not None:
            items.append(ChatMessage.system(self.system_prompt))
        items.extend(self.restored)
        for turn in self.turns:
            items.append(ChatMessage.user(turn.user))
            outputs = iter(turn.outputs)
            for step in turn.steps:
                if not step.tool_calls:
                    items.append(ChatMessage.assistant(step.text or ""))
                    continue
                items.append(AssistantToolCalls(text=step.text, tool_calls=step.tool_calls))
                items.append(ToolResults(results=tuple(
                    _result(call, next(outputs, NO_OUTPUT)) for call in step.tool_calls
                )))
        return items


NO_OUTPUT = ToolOutput(content="")
"""What a call the recording has no output for returns."""


def _result(call: ToolCall, output: ToolOutput) -> ToolResultMessage:
    return ToolResultMessage(
        tool_call_id=call.id, content=output.content, tool_name=call.name,
        attachments=output.attachments or None,
    )


def _output(content: str, attachments: tuple[Attachment, ...] | None) -> ToolOutput:
    return ToolOutput(content=content, attachments=attachments or ())


def session_from_items(
    name: str,
    items: Sequence[ConversationMessage],
    *,
    crumb_present: bool = False,
    restored_turns: int = 0,
) -> ReviewSession:
    """A recorded history as a replay: leading system rows become the system prompt; the
    first `restored_turns` turns (and the breadcrumb) are restored, the rest replayed.

    Provider-facing rows (native envelopes) and structured items are both read, with the
    files each tool declared: the replayed tools declare them again (EST-3)."""
    index = index_turns(items, crumb_present=crumb_present)
    prefix = leading_system_count(items)
    system = [item.content for item in items[:prefix] if isinstance(item, ChatMessage)]
    if isinstance(restored_turns, bool) or not isinstance(restored_turns, int):
        raise ValueError(f"restored_turns: expected a whole number, got {restored_turns!r}")
    if restored_turns < 0:
        raise ValueError(f"restored_turns: expected a whole number >= 0, got {restored_turns}")
    if restored_turns > index.turn_count:
        raise ValueError(
            f"restored_turns: {restored_turns} but the session has {index.turn_count} turns"
        )
    cut = index.turn_start(restored_turns) if restored_turns < index.turn_count else len(items)
    if restored_turns == 0:
        cut = index.body_start if index.turn_count == 0 else index.starts[0]
    restored = tuple(items[prefix:cut])
    turns: list[ReplayTurn] = []
    tools: dict[str, None] = {}
    for turn in range(restored_turns, index.turn_count):
        start, end = index.starts[turn], index.turn_end(turn)
        opener = items[start]
        assert isinstance(opener, ChatMessage)
        steps: list[ProviderReply] = []
        outputs: list[ToolOutput] = []
        for item in items[start + 1 : end]:
            calls = item if isinstance(item, AssistantToolCalls) else None
            if isinstance(item, ChatMessage) and item.role == "assistant":
                parsed = parse_tool_calls(item)
                if parsed is None:
                    steps.append(ProviderReply(text=item.content))
                    break  # the turn's reply: the agent ends the turn here
                calls = AssistantToolCalls(text=parsed.text, tool_calls=parsed.calls)
            if calls is not None:
                steps.append(ProviderReply(text=calls.text, tool_calls=calls.tool_calls))
                tools.update(dict.fromkeys(call.name for call in calls.tool_calls))
            elif isinstance(item, ToolResults):
                outputs.extend(_output(r.content, r.attachments) for r in item.results)
            elif isinstance(item, ChatMessage) and item.role == "tool":
                result = parse_tool_result(item)
                outputs.append(
                    _output(item.content, None)
                    if result is None
                    else _output(result.content, result.attachments)
                )
        if not steps or steps[-1].tool_calls:
            steps.append(ProviderReply(text=""))  # a turn recorded without its reply
        turns.append(ReplayTurn(user=opener.content, steps=tuple(steps), outputs=tuple(outputs)))
    return ReviewSession(
        name=name,
        system_prompt="\n\n".join(system) if system else None,
        restored=restored,
        crumb_present=crumb_present,
        turns=tuple(turns),
        tools=tuple(tools),
    )


MAX_TIMES_BYTES = 64_000_000
"""The largest call-times file read (examples/real/call-times.json is under 300 kB)."""


def recorded_times(path: str | Path) -> dict[str, list[float | None]]:
    """A call-times file (tools/call_times.py: {corpus: {session: [[seconds, 1h], ...]}}) as
    each session's call times by name (the first name wins across corpora); a bad file
    names what is wrong in one line."""
    source = Path(path)
    with source.open("rb") as handle:
        data = handle.read(MAX_TIMES_BYTES + 1)
    if len(data) > MAX_TIMES_BYTES:
        raise ValueError(f"{source}: over {MAX_TIMES_BYTES} bytes")
    try:
        document = json.loads(data)
    except ValueError as error:
        raise ValueError(f"{source}: not JSON ({error})") from None
    if not isinstance(document, dict):
        raise ValueError(f"{source}: expected an object of corpora")
    out: dict[str, list[float | None]] = {}
    for corpus, sessions in document.items():
        if not isinstance(sessions, dict):
            raise ValueError(f"{source}: {corpus}: expected an object of sessions")
        for name, calls in sessions.items():
            if not isinstance(calls, list):
                raise ValueError(f"{source}: {corpus}.{name}: expected a list of calls")
            out.setdefault(name, [_seconds(source, f"{corpus}.{name}", c) for c in calls])
    return out


def _seconds(source: Path, where: str, call: Any) -> float | None:
    if call is None:
        return None
    at = call[0] if isinstance(call, list) and call else call
    if isinstance(at, bool) or not isinstance(at, int | float) or not math.isfinite(at):
        raise ValueError(f"{source}: {where}: expected [seconds, ...] or null, got {call!r}")
    return float(at)


def with_recorded_times(
    sessions: Sequence[ReviewSession], times: dict[str, list[float | None]]
) -> list[ReviewSession]:
    """Each session with its recorded call times, where `times` has one per step."""
    return [s.with_times(times[s.name]) if s.name in times else s for s in sessions]
