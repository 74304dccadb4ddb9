"""The legacy `agent::run` path (SEEN-4): a whole-turn count trim reported only through
`logging`, on a provider-facing history."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from histtrim.agent.providers import Provider, checked_reply
from histtrim.agent.tools import Tool, _Toolbox
from histtrim.capacity import check_request
from histtrim.messages import ChatMessage, chat_rows
from histtrim.route import ResolvedRuntime
from histtrim.trim import trim_to_recent_turn_count

LEGACY_LOGGER = "histtrim.legacy"
LEGACY_TRIM_LOG = "trim_history: dropped oldest whole turns"
FINAL_SUMMARY_PROMPT = (
    "The tool iteration limit was reached. Without calling tools, summarize what was done "
    "and what remains."
)
"""A request-only system row appended to the final summary request; never recorded."""


@dataclass(frozen=True)
class LegacyRunResult:
    """What `legacy_run` returns: the new provider-facing history and the final reply."""

    history: list[ChatMessage]
    reply: str
    provider_calls: int
    dropped_messages: int


def legacy_run(
    provider: Provider,
    history: Iterable[ChatMessage | Mapping[str, Any]],
    text: str,
    *,
    runtime: ResolvedRuntime,
    tools: Iterable[Tool | Callable[..., object]] = (),
    logger: logging.Logger | None = None,
) -> LegacyRunResult:
    """The legacy `agent::run` path (SEEN-4): one turn on a provider-facing history with the
    whole-turn count limit, reported only through `logging`: no breadcrumb, no event.

    Requests are capacity-checked; a provider overflow propagates. The input is not changed."""
    log = logger if logger is not None else logging.getLogger(LEGACY_LOGGER)
    profile = runtime.profile
    toolbox = _Toolbox(tools, runtime.policy)
    rows = [*chat_rows(history), ChatMessage.user(text)]
    trimmed = trim_to_recent_turn_count(
        rows, runtime.max_turns, target=runtime.policy.turn_trim_target
    )
    if trimmed.trimmed:
        log.info(
            "%s: dropped_turns=%d dropped_messages=%d kept_turns=%d max_turns=%d",
            LEGACY_TRIM_LOG,
            trimmed.dropped_turns,
            trimmed.dropped_messages,
            trimmed.kept_turns,
            runtime.max_turns,
        )
    rows = trimmed.history
    calls = 0
    for _ in range(profile.max_tool_iterations):
        check_request(rows, runtime=runtime, tool_schemas=toolbox.schemas)
        calls += 1
        answer = checked_reply(provider, provider.complete(rows, toolbox.schemas))
        if not answer.tool_calls:
            rows.append(ChatMessage.assistant(answer.text or ""))
            return LegacyRunResult(rows, answer.text or "", calls, trimmed.dropped_messages)
        rows.append(ChatMessage.assistant_tool_calls(answer.text, answer.tool_calls))
        for call in answer.tool_calls:
            result = toolbox.run(call, runtime.max_tool_result_chars)
            rows.append(ChatMessage.tool_result(result.tool_call_id, result.content))
    request = [*rows, ChatMessage.system(FINAL_SUMMARY_PROMPT)]
    check_request(request, runtime=runtime)
    reply = checked_reply(provider, provider.complete(request, ())).text or ""
    rows.append(ChatMessage.assistant(reply))
    return LegacyRunResult(rows, reply, calls + 1, trimmed.dropped_messages)
