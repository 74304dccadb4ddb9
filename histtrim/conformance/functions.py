"""The reference side of the protocol: each protocol function computed by histtrim, from the
JSON a vector carries to the JSON result an implementation must return.

The stateless functions live here; the agent-loop scenarios are in `scenario.py`."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from pydantic import ValidationError

from histtrim import (
    capacity,
    carriers,
    estimate,
    low_water,
    pairing,
    reported_usage,
    route,
    safety,
    tool_context,
    trim,
    turns,
    visible,
)
from histtrim.config import AgentConfig, ModelRoute, ProviderProfile, RuntimeProfile
from histtrim.conformance.codec import (
    INVALID_INPUT,
    JsonObject,
    ProtocolError,
    history_list,
    invalid,
    optional,
    require,
    rows_json,
)
from histtrim.counting import Pricing
from histtrim.messages import ChatMessage, chat_rows, conversation_rows
from histtrim.policy import ColdCache, ColdCuts, Policy, ToolContext

Function = Callable[[Any, Mapping[str, Any]], JsonObject]
"""(history, arguments) -> result; raises `ProtocolError` for an expected error."""


def _flag(arguments: Mapping[str, Any], name: str) -> bool:
    value = optional(arguments, name, False)
    if not isinstance(value, bool):
        raise ProtocolError(INVALID_INPUT, f"arguments.{name}: expected a boolean")
    return value


def estimate_history_tokens(history: Any, arguments: Mapping[str, Any]) -> JsonObject:
    return {"tokens": estimate.estimate_history_tokens(history_list(history))}


def message_costs(history: Any, arguments: Mapping[str, Any]) -> JsonObject:
    return {"costs": estimate.message_costs(chat_rows(history_list(history)))}


def index_turns(history: Any, arguments: Mapping[str, Any]) -> JsonObject:
    rows = conversation_rows(history_list(history))
    index = turns.index_turns(rows, crumb_present=_flag(arguments, "crumb_present"))
    return {
        "prefix_len": index.prefix_len,
        "crumb": index.crumb,
        "starts": list(index.starts),
        "turn_count": index.turn_count,
    }


def _whole_turn(result: Any) -> JsonObject:
    return {
        "history": rows_json(result.history),
        "dropped": rows_json(result.dropped),
        "dropped_messages": result.dropped_messages,
        "dropped_turns": result.dropped_turns,
        "kept_turns": result.kept_turns,
        "trimmed": result.trimmed,
    }


def trim_to_recent_turns(history: Any, arguments: Mapping[str, Any]) -> JsonObject:
    result = trim.trim_to_recent_turns(
        history_list(history),
        require(arguments, "budget_tokens", int),
        crumb_present=_flag(arguments, "crumb_present"),
    )
    return {
        **_whole_turn(result),
        "tokens_before": result.tokens_before,
        "tokens_after": result.tokens_after,
    }


def trim_to_recent_turn_count(history: Any, arguments: Mapping[str, Any]) -> JsonObject:
    return _whole_turn(
        trim.trim_to_recent_turn_count(
            history_list(history),
            require(arguments, "max_turns", int),
            crumb_present=_flag(arguments, "has_leading_breadcrumb"),
        )
    )


def trim_conversation_to_recent_turns(history: Any, arguments: Mapping[str, Any]) -> JsonObject:
    return _whole_turn(
        trim.trim_conversation_to_recent_turns(
            history_list(history),
            require(arguments, "max_turns", int),
            crumb_present=_flag(arguments, "has_leading_breadcrumb"),
        )
    )


def drop_oldest_whole_turn(history: Any, arguments: Mapping[str, Any]) -> JsonObject:
    kept, dropped = trim.drop_oldest_whole_turn(
        conversation_rows(history_list(history)), crumb_present=_flag(arguments, "crumb_present")
    )
    return {"history": rows_json(kept), "dropped_messages": dropped}


def insert_breadcrumb(history: Any, arguments: Mapping[str, Any]) -> JsonObject:
    rows = trim.insert_breadcrumb(
        conversation_rows(history_list(history)),
        crumb_present=_flag(arguments, "crumb_present"),
    )
    return {"history": rows_json(rows)}


def to_chat_messages(history: Any, arguments: Mapping[str, Any]) -> JsonObject:
    rows = carriers.to_chat_messages(conversation_rows(history_list(history)))
    return {"history": rows_json(rows)}


def resolved_json(resolved: route.ResolvedRuntime) -> JsonObject:
    return {
        "capacity": resolved.capacity,
        "context_window": resolved.context_window,
        "effective_context_budget": resolved.effective_context_budget(),
        "model_context_window": resolved.model_context_window,
    }


def runtime_of(value: Any) -> route.ResolvedRuntime:
    """`{"profile", "provider", "selected_model"}` resolved (ROUTE-1)."""
    if not isinstance(value, Mapping):
        raise ProtocolError(INVALID_INPUT, "arguments.runtime: expected an object")
    provider = value.get("provider")
    model = value.get("selected_model")
    if model is not None and not isinstance(model, str):
        raise ProtocolError(INVALID_INPUT, "arguments.selected_model: expected a string or null")
    return route.resolve_runtime(
        RuntimeProfile.model_validate(value.get("profile", {})),
        None if provider is None else ProviderProfile.model_validate(provider),
        model,
    )


def resolve_runtime(history: Any, arguments: Mapping[str, Any]) -> JsonObject:
    return resolved_json(runtime_of(arguments))


def select_route(history: Any, arguments: Mapping[str, Any]) -> JsonObject:
    config = AgentConfig.model_validate(require(arguments, "config", dict))
    session = optional(arguments, "session_model", None)
    if isinstance(session, Mapping):
        session = ModelRoute.model_validate(session)
    resolved = route.select_route(
        config,
        require(arguments, "agent", str),
        hint=optional(arguments, "hint", None),
        session_model=session,
    )
    return {"provider": resolved.provider_alias, "model": resolved.model, **resolved_json(resolved)}


def capacity_report(history: Any, arguments: Mapping[str, Any]) -> JsonObject:
    report = capacity.capacity_report(
        history_list(history),
        runtime=runtime_of(require(arguments, "runtime", dict)),
        tool_schemas=optional(arguments, "tool_schemas", []),
        hooks=optional(arguments, "hooks", []),
    )
    return {**report.model_dump(), "fits": report.fits}


def check_request(history: Any, arguments: Mapping[str, Any]) -> JsonObject:
    """The capacity check (CAP-2): the report when the request fits, else an error."""
    result = capacity_report(history, arguments)
    if not result["fits"]:
        raise ProtocolError(
            "capacity_exceeded", f"request of {result['total']} tokens > {result['window']}"
        )
    return result


def sweep_orphans(history: Any, arguments: Mapping[str, Any]) -> JsonObject:
    swept = pairing.sweep_orphans(
        history_list(history), crumb_present=_flag(arguments, "crumb_present")
    )
    return {
        "history": rows_json(swept.history),
        "removed": [
            {"kind": r.kind, "tool_call_id": r.tool_call_id, "position": r.position}
            for r in swept.removed
        ],
    }


def cap_tool_result(history: Any, arguments: Mapping[str, Any]) -> JsonObject:
    return {
        "content": safety.cap_tool_result(
            require(arguments, "content", str), require(arguments, "max_chars", int)
        )
    }


def channel_sender_cache(history: Any, arguments: Mapping[str, Any]) -> JsonObject:
    """Rows appended per sender, in order: what each append dropped and what is left (LIMIT-3)."""
    cache = safety.ChannelSenderCache(require(arguments, "max_rows", int))
    appends = require(arguments, "appends", list)
    dropped = []
    for entry in appends:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("sender"), str):
            raise ProtocolError(INVALID_INPUT, "arguments.appends: expected {sender, row} objects")
        (row,) = chat_rows([entry.get("row", {})])
        dropped.append(cache.append(entry["sender"], row))
    return {
        "dropped": dropped,
        "rows": {str(sender): rows_json(cache.rows(sender)) for sender in cache.senders()},
    }


def held_cut(history: Any, arguments: Mapping[str, Any]) -> JsonObject:
    """Each request the history records, trimmed by a caller passing its whole history
    (as `histtrim.adapters.trim_records_held` trims it), and how often the prompt prefix was
    rewritten: one replay over the history (`low_water.replay_requests`), linear in it.
    With `cold_cache` on and `times`, the requests that found the cache cold (CACHE-1) cut
    deep now (CACHE-2), and the last request's event says so (CACHE-3)."""
    rows = chat_rows(history_list(history))
    budget = require(arguments, "budget_tokens", int)
    limit = optional(arguments, "max_turns", None)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
        raise ProtocolError(INVALID_INPUT, "arguments.max_turns: expected an integer or null")
    chosen = Policy(
        token_trim_target=optional(arguments, "token_target", "1"),
        turn_trim_target=optional(arguments, "turn_target", "1"),
    )
    index = turns.index_turns(rows)
    pricing, crumb_row = Pricing(chosen), trim.breadcrumb_message()
    points = low_water.request_points(rows)
    cold, cold_ends = _cold_requests(arguments, points, budget, chosen.token_trim_target)
    prices = low_water.two_prices(rows, index, pricing)
    body = index.body_start
    sent = _SentRows(rows, body, crumb_row)
    requests: list[JsonObject] = []
    moves, previous = 0, None
    for request in low_water.replay_requests(
        index, prices, points, max_turns=limit, budget_tokens=budget,
        crumb_cost=lambda: pricing.plain(crumb_row), turn_target=chosen.turn_trim_target,
        token_target=chosen.token_trim_target, cold=cold,
    ):
        cut = index.turn_start(request.first)  # turn 0 takes the rows before any turn
        now = (request.end, request.crumb_inserted, cut)
        moves += previous is not None and not sent.starts_with(now, previous)
        previous = now
        requests.append({"end": request.end, "cut": cut, "breadcrumb": request.crumb_inserted,
                         "tokens": request.tokens, "cold": request.end in cold_ends})
    if low_water.holds_cut(chosen) or cold is not None:  # the last request's events, as
        plan = low_water.plan_held_trim(  # `trim_records_held` reports them
            index, prices, points, max_turns=limit, budget_tokens=budget,
            crumb_cost=lambda: pricing.plain(crumb_row), turn_target=chosen.turn_trim_target,
            token_target=chosen.token_trim_target, cold=cold,
        )
    else:
        split = index.current_turn_after + 1  # its current turn at its current price (EST-2)
        plan = visible.plan_visible_trim(
            index, [*prices[0][:split], *prices[1][split:]], max_turns=limit,
            budget_tokens=budget, crumb_cost=lambda: pricing.plain(crumb_row),
        )
    return {"requests": requests, "cut_moves": moves,
            "events": [event.model_dump(mode="json") for event in plan.events]}


def _cold_requests(
    arguments: Mapping[str, Any], points: Sequence[int], budget: int, target: Fraction
) -> tuple[ColdCuts | None, frozenset[int]]:
    """CACHE-1: the requests (`points`) that find the prompt cache cold, from `times` (one
    per request, seconds or null) and `cold_cache`, and the cut each makes (`ColdCache.trim`:
    None when off or without a budget)."""
    rule = ColdCache.model_validate(optional(arguments, "cold_cache", {}))
    times = optional(arguments, "times", [])
    if not isinstance(times, list) or (times and len(times) != len(points)):
        raise ProtocolError(INVALID_INPUT, f"arguments.times: expected [] or {len(points)} "
                            "times, one per request the history records")
    if any(t is not None and (isinstance(t, bool) or not isinstance(t, int | float)
                              or not math.isfinite(t)) for t in times):
        raise ProtocolError(INVALID_INPUT, "arguments.times: expected finite numbers or null")
    ends = frozenset(points[k] for k in range(1, len(times))
                     if rule.is_cold(times[k], times[k - 1]))
    deep = rule.trim(budget, target)
    return (ColdCuts(ends, deep) if ends and deep is not None else None), ends


def _tool_context(arguments: Mapping[str, Any]) -> Policy:
    """`arguments.tool_context`: the `ToolContext` settings (CTX-1..9) as a JSON object."""
    settings = optional(arguments, "tool_context", {})
    if not isinstance(settings, dict):
        raise ProtocolError(INVALID_INPUT, "arguments.tool_context: expected an object")
    return Policy(tool_context=ToolContext.model_validate(settings))


def collapse_tool_context(history: Any, arguments: Mapping[str, Any]) -> JsonObject:
    """The reference's collapse (CTX-1..5): the rows sent and the stored row each stands for."""
    keep = require(arguments, "keep_turns", int)
    edit = tool_context.collapse_tool_context(
        chat_rows(history_list(history)), keep, crumb_present=_flag(arguments, "crumb_present")
    )
    return {
        "rows": rows_json(edit.messages), "source_rows": edit.source_rows,
        "dropped_messages": edit.dropped_messages, "collapsed_turns": edit.collapsed_turns,
    }


def clear_tool_results(history: Any, arguments: Mapping[str, Any]) -> JsonObject:
    """Placeholder clearing (CTX-6..9) of the history as the current request; with
    `budget_tokens`, fitted to it (CTX-10, down to `token_trim_target`, a fraction's text)."""
    policy = _tool_context(arguments)
    budget = optional(arguments, "budget_tokens", 0)
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ProtocolError(INVALID_INPUT, "arguments.budget_tokens: expected an integer >= 0")
    target = optional(arguments, "token_trim_target", "1")
    try:
        policy = policy.model_copy(update={
            "token_trim_target": Policy.model_validate({"token_trim_target": target})
            .token_trim_target})
    except ValidationError:
        raise ProtocolError(
            INVALID_INPUT, "arguments.token_trim_target: expected a fraction in (0, 1]"
        ) from None
    edit = tool_context.clear_tool_results(
        chat_rows(history_list(history)), policy.tool_context,
        crumb_present=_flag(arguments, "crumb_present"), policy=policy,
        budget_tokens=budget,
    )
    return {
        "rows": rows_json(edit.messages), "cleared": list(edit.cleared),
        "cleared_inputs": edit.cleared_inputs,
        "tokens": estimate.estimate_history_tokens(edit.messages, policy=policy),
    }


def tool_context_requests(history: Any, arguments: Mapping[str, Any]) -> JsonObject:
    """Each request the history records, sent through the tool context edit, and how often a
    request does not extend the previous one row for row (CTX-9's stable prefix). With
    `budget_tokens`, a request still over it is fitted (CTX-10); with `cold_cache` on and
    `times`, a cold request clears now, in one batch, and the clear is held (CACHE-2)."""
    policy = _tool_context(arguments)
    rows = chat_rows(history_list(history))
    budget = optional(arguments, "budget_tokens", 0)
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise ProtocolError(INVALID_INPUT, "arguments.budget_tokens: expected an integer >= 0")
    points = low_water.request_points(rows)
    cold, cold_ends = _cold_requests(arguments, points, budget, policy.token_trim_target)
    requests: list[JsonObject] = []
    breaks, previous = 0, None
    for end in points:
        ends = frozenset(e for e in cold_ends if e <= end) if cold is not None else frozenset()
        sent = tool_context.edit_tool_context(
            rows[:end], policy, budget_tokens=budget or None,
            cold=ColdCuts(ends, cold.trim) if cold is not None and ends else None,
        ).messages
        breaks += previous is not None and sent[: len(previous)] != previous
        previous = sent
        requests.append({
            "end": end, "rows": len(sent),
            "tokens": estimate.estimate_history_tokens(sent, policy=policy),
            "cold": end in cold_ends,
        })
    return {"requests": requests, "prefix_breaks": breaks}


def _reported_arguments(arguments: Mapping[str, Any]) -> tuple[int, int, int, int, Any]:
    schemas = optional(arguments, "tool_schema_tokens", 0)
    if isinstance(schemas, bool) or not isinstance(schemas, int):
        raise ProtocolError(INVALID_INPUT, "arguments.tool_schema_tokens: expected an integer")
    return (
        require(arguments, "budget_tokens", int),
        require(arguments, "reported_input_tokens", int),
        require(arguments, "reported_population_estimated", int),
        schemas,
        Policy(token_trim_target=optional(arguments, "token_target", "1")).token_trim_target,
    )


def trim_to_reported_budget(history: Any, arguments: Mapping[str, Any]) -> JsonObject:
    """USAGE-1..4: the reference runtime's reported-usage trim (figures in provider units)."""
    budget, reported, estimated, schemas, target = _reported_arguments(arguments)
    result = reported_usage.trim_to_reported_budget(
        history_list(history), budget, reported, estimated, schemas,
        crumb_present=_flag(arguments, "crumb_present"), target=target,
    )
    return {
        **_whole_turn(result),
        "tokens_before": result.tokens_before,
        "tokens_after": result.tokens_after,
    }


def trim_to_reported_budget_with_crumb(history: Any, arguments: Mapping[str, Any]) -> JsonObject:
    """USAGE-6: the same trim made visible: the breadcrumb once (owner's flag) and the event."""
    budget, reported, estimated, schemas, target = _reported_arguments(arguments)
    done = reported_usage.trim_to_reported_budget_with_crumb(
        history_list(history), budget, reported, estimated, schemas,
        crumb_present=_flag(arguments, "crumb_present"), target=target,
    )
    return {
        "history": rows_json(done.history),
        "crumb_present": done.crumb_present,
        "event": None if done.event is None else done.event.model_dump(mode="json"),
    }


def reported_input_tokens(history: Any, arguments: Mapping[str, Any]) -> JsonObject:
    """USAGE-5: the input tokens a provider's usage report states, or null (no report)."""
    model = optional(arguments, "model", None)
    expected = optional(arguments, "expected_model", None)
    for name, value in (("model", model), ("expected_model", expected)):
        if value is not None and not isinstance(value, str):
            raise ProtocolError(INVALID_INPUT, f"arguments.{name}: expected a string or null")
    usage = optional(arguments, "usage", None)
    return {"tokens": reported_usage.reported_input_tokens(
        usage, model=model, expected_model=expected
    )}


def refused_report(history: Any, arguments: Mapping[str, Any]) -> JsonObject:
    """USAGE-7: whether a report is refused as far above its request's estimate (the spec's
    `Policy`: 8 times the estimate plus 131,072 tokens)."""
    values = [require(arguments, name, int) for name in (
        "reported_input_tokens", "reported_population_estimated")]
    schemas = optional(arguments, "tool_schema_tokens", 0)
    if isinstance(schemas, bool) or not isinstance(schemas, int):
        raise ProtocolError(INVALID_INPUT, "arguments.tool_schema_tokens: expected an integer")
    try:
        reason = reported_usage.refused_report(values[0], values[1], schemas)
    except ValueError as error:
        raise ProtocolError(INVALID_INPUT, f"arguments: {error}") from None
    return {"refused": reason is not None}


def fit_hidden_prefix(history: Any, arguments: Mapping[str, Any]) -> JsonObject:
    """USAGE-8: the hidden prefix and the rows' ratio fitted on (estimate, report) pairs."""
    pairs = require(arguments, "pairs", list)
    if not all(isinstance(p, list) and len(p) == 2 and all(
            isinstance(v, int) and not isinstance(v, bool) for v in p) for p in pairs):
        raise ProtocolError(INVALID_INPUT, "arguments.pairs: expected [estimate, report] pairs")
    schemas = optional(arguments, "tool_schema_tokens", 0)
    if isinstance(schemas, bool) or not isinstance(schemas, int):
        raise ProtocolError(INVALID_INPUT, "arguments.tool_schema_tokens: expected an integer")
    try:
        fitted = reported_usage.fit_hidden_prefix([(e, r) for e, r in pairs], schemas)
    except ValueError as error:
        raise ProtocolError(INVALID_INPUT, f"arguments: {error}") from None
    if fitted is None:
        return {"prefix": None, "ratio": None, "margin": None}
    return {"prefix": fitted.prefix, "ratio": str(fitted.ratio), "margin": fitted.margin}


class _SentRows:
    """The rows a request sends, `rows[:body]`, the breadcrumb if inserted, `rows[cut:end]`,
    compared row for row as JSON only where two requests' cuts differ (each row's JSON is
    made once)."""

    def __init__(self, rows: Sequence[ChatMessage], body: int, crumb: ChatMessage) -> None:
        self.rows, self.body, self.crumb = rows, body, crumb.model_dump_json()
        self.json: dict[int, str] = {}

    def _row(self, sent: tuple[int, bool, int], at: int) -> str:
        _, crumb, cut = sent
        if crumb and at == self.body:
            return self.crumb
        position = cut + at - self.body - crumb
        if position not in self.json:
            self.json[position] = self.rows[position].model_dump_json()
        return self.json[position]

    def starts_with(self, sent: tuple[int, bool, int], earlier: tuple[int, bool, int]) -> bool:
        """Whether request `sent` (end, breadcrumb, cut) starts with all of `earlier`."""
        if sent[1:] == earlier[1:]:
            return sent[0] >= earlier[0]
        if self._length(sent) < self._length(earlier):
            return False
        return all(self._row(sent, at) == self._row(earlier, at)
                   for at in range(self.body, self._length(earlier)))

    def _length(self, sent: tuple[int, bool, int]) -> int:
        end, crumb, cut = sent
        return self.body + crumb + end - cut


def guarded(function: Function) -> Function:
    """Bad input becomes the `invalid_input` protocol error."""

    def call(history: Any, arguments: Mapping[str, Any]) -> JsonObject:
        try:
            return function(history, arguments)
        except (ValueError, ValidationError) as error:  # ValidationError is a ValueError
            raise invalid(error) from None

    call.__name__ = function.__name__
    return call


STATELESS: dict[str, Function] = {
    f.__name__: guarded(f)
    for f in (
        estimate_history_tokens,
        message_costs,
        index_turns,
        trim_to_recent_turns,
        trim_to_recent_turn_count,
        trim_conversation_to_recent_turns,
        drop_oldest_whole_turn,
        insert_breadcrumb,
        to_chat_messages,
        resolve_runtime,
        select_route,
        capacity_report,
        check_request,
        sweep_orphans,
        cap_tool_result,
        channel_sender_cache,
        held_cut,
        collapse_tool_context,
        clear_tool_results,
        tool_context_requests,
        trim_to_reported_budget,
        trim_to_reported_budget_with_crumb,
        reported_input_tokens,
        refused_report,
        fit_hidden_prefix,
    )
}
