"""histtrim in a LangChain v1 agent: `create_agent(model, middleware=[HisttrimMiddleware()])`.

`wrap_model_call` (and its async twin) trims the messages of each model request by whole turns
(LIMIT-1, KEEP-1, RUN-1), counting the system prompt, puts the breadcrumb `HumanMessage` after
it (SEEN-1), emits `HistoryTrimmed` (SEEN-2) and, when the model raises LangChain's
`ContextOverflowError`, trims the request to two thirds of its estimate and calls the model once
more (RUN-2). The graph state is not changed: the next request is trimmed again from the full
history. With `persist=True`, `before_model` also trims the stored state (`RemoveMessage` of
every message, then the kept ones and the breadcrumb): the dropped turns leave the state.

Each response's `usage_metadata["input_tokens"]` is the provider's count of the request
sent: a count over the budget trims the next request to the budget in provider units, once,
and the cut is held, per conversation (USAGE-1..8, `Trimmer.report`). The rows are the ones
`histtrim.adapters.langchain.from_langchain` builds; the messages sent are
the state's own objects. Needs the `langchain` extra: `pip install 'histtrim[langchain]'`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any

from histtrim.adapters.langchain import langchain_row
from histtrim.carriers import parse_tool_calls, parse_tool_result
from histtrim.counting import TokenCounter
from histtrim.integrations import framework_imports
from histtrim.integrations._trimmer import OnTrim, Priced, Trimmed, Trimmer, schema_tokens
from histtrim.messages import BREADCRUMB, ChatMessage
from histtrim.policy import Policy
from histtrim.route import ResolvedRuntime

with framework_imports("langchain"):
    from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
    from langchain_core.exceptions import ContextOverflowError
    from langchain_core.messages import (
        AIMessage,
        AnyMessage,
        BaseMessage,
        HumanMessage,
        RemoveMessage,
        SystemMessage,
        ToolMessage,
    )
    from langgraph.graph.message import REMOVE_ALL_MESSAGES
    from langgraph.runtime import Runtime

BREADCRUMB_ID = "histtrim-breadcrumb"
"""The id of the breadcrumb `HumanMessage` the middleware writes."""


def tool_context_message(message: AnyMessage, row: ChatMessage) -> AnyMessage:
    """The message sent for a row the tool context edit changed (CTX-1..9): a cleared
    `ToolMessage` keeps its `tool_call_id` and gets the placeholder; a collapse summary is an
    `AIMessage` of its text in place of the call message; a call message whose inputs were
    cleared keeps its calls, their `args` emptied. A copy: the state is never edited."""
    if isinstance(message, ToolMessage):
        result = parse_tool_result(row)
        return message.model_copy(
            update={"content": row.content if result is None else result.content}
        )
    parsed = parse_tool_calls(row)
    if isinstance(message, AIMessage) and parsed is not None:
        emptied = {call.id for call in parsed.calls if call.arguments == "{}"}
        calls = [{**call, "args": {}} if call["id"] in emptied else call
                 for call in message.tool_calls]
        return message.model_copy(update={"tool_calls": calls})
    if isinstance(message, AIMessage):
        return AIMessage(content=row.content)
    return message.model_copy(update={"content": row.content})


def breadcrumb() -> HumanMessage:
    """The context note as LangChain sends it: a `HumanMessage` (SEEN-1)."""
    return HumanMessage(content=BREADCRUMB, id=BREADCRUMB_ID)


def is_breadcrumb(message: BaseMessage) -> bool:
    """Whether `message` is exactly the breadcrumb the middleware writes: a `HumanMessage`
    with its id and its text and nothing else. An id is chosen by whoever sends the message
    (a LangGraph server client sets them), so the id alone never makes a crumb: a client's
    own message under that id stays the client's turn, and the crumb's text alone is a turn
    too (decision "The breadcrumb owner flag")."""
    return (
        type(message) is HumanMessage
        and message.id == BREADCRUMB_ID
        and message.content == BREADCRUMB
        and not message.name
        and not message.additional_kwargs
        and not message.response_metadata
    )


def has_breadcrumb(messages: Sequence[BaseMessage]) -> bool:
    """Whether the message after the leading system messages (`SystemMessage`) is the
    middleware's breadcrumb."""
    prefix = 0
    while prefix < len(messages) and isinstance(messages[prefix], SystemMessage):
        prefix += 1
    return prefix < len(messages) and is_breadcrumb(messages[prefix])


class HisttrimMiddleware(AgentMiddleware[Any, Any, Any]):
    """The spec's whole-turn trimming as LangChain agent middleware.

    Limits as `histtrim.integrations._trimmer.Trimmer` takes them: a `ResolvedRuntime`, or a
    plain `budget_tokens` (and `max_turns`); `token_counter` prices a row's text; `on_trim`
    receives each `HistoryTrimmed`; `policy` (default: the runtime's) sets the low-water marks,
    e.g. `Policy(token_trim_target=Fraction(7, 10))` to keep the Agent's cache-stable cut;
    `clock` (seconds) times each request for the policy's `cold_cache` (CACHE-1..3).
    `persist=True` also trims the stored state."""

    def __init__(
        self,
        runtime: ResolvedRuntime | None = None,
        *,
        budget_tokens: int | None = None,
        max_turns: int | None = None,
        token_counter: TokenCounter | None = None,
        on_trim: OnTrim | None = None,
        policy: Policy | None = None,
        clock: Callable[[], float] | None = None,
        persist: bool = False,
    ) -> None:
        super().__init__()
        self.trimmer = Trimmer(
            runtime, budget_tokens=budget_tokens, max_turns=max_turns,
            token_counter=token_counter, on_trim=on_trim,
            policy=policy, clock=clock,
        )
        if not isinstance(persist, bool):
            raise ValueError(f"persist: expected True or False, got {persist!r}")
        self.persist = persist

    def trim(
        self, messages: Sequence[AnyMessage], *, request: bool = False
    ) -> Trimmed[AnyMessage]:
        """The messages to keep (the input's own objects, breadcrumb added), and the events;
        for a `request`, then the policy's tool context edit (CTX-1..9), never persisted."""
        items: list[AnyMessage] = list(messages)
        crumb: AnyMessage = breadcrumb()
        return self.trimmer.trim(
            items, self.priced(items), crumb=crumb, crumb_present=has_breadcrumb(items),
            rewrite=tool_context_message if request else None,
        )

    def priced(self, messages: Sequence[AnyMessage]) -> list[Priced]:
        """Each message's row (`histtrim.adapters.langchain.langchain_row`) and prices, each
        message priced once per middleware (`PriceCache`)."""
        cache = self.trimmer.cache
        cache.fit(len(messages))
        seen = self.trimmer.prefixes.find(messages)
        start = 0 if seen is None else len(seen.items)
        out: list[Priced] = [] if seen is None else list(seen.priced)
        for i, message in enumerate(messages[start:], start):
            anchors = (message, message.content, getattr(message, "tool_calls", None),
                       getattr(message, "tool_call_id", None))
            try:
                out.append(cache.get(anchors, partial(langchain_row, message)))
            except (ValueError, TypeError) as error:
                raise ValueError(f"messages[{i}]: {error}") from None
        self.trimmer.prefixes.remember(messages, [], out, seen, start)
        return out

    def before_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """With `persist=True`: trim the stored messages (the system prompt is not in the
        state; the request trim below still counts it)."""
        if not self.persist:
            return None
        done = self.trim(state["messages"])
        if not done.trimmed:
            return None
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *done.units]}

    async def abefore_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return self.before_model(state, runtime)

    def _request(
        self, request: ModelRequest[Any]
    ) -> tuple[ModelRequest[Any], Trimmed[AnyMessage]]:
        system: list[AnyMessage] = (
            [] if request.system_message is None else [request.system_message]
        )
        done = self.trim([*system, *request.messages], request=True)
        self.trimmer.check_sent(done)
        return request.override(messages=done.units[len(system) :]), done

    def _retry(
        self, request: ModelRequest[Any], sent: Trimmed[AnyMessage], error: ContextOverflowError
    ) -> tuple[ModelRequest[Any], Trimmed[AnyMessage]]:
        """The request after an overflow (RUN-2) and its trim, whose cut the history holds
        and whose usage is recorded like any request's."""
        crumb: AnyMessage = breadcrumb()
        done = self.trimmer.reactive(
            sent.units, sent.priced, crumb=crumb, crumb_present=sent.crumb_present,
            rewrite=tool_context_message, sent=sent,
        )
        if done is None:
            raise error
        self.trimmer.check_pairing(done.rows)
        system = 0 if request.system_message is None else 1
        return request.override(messages=done.units[system:]), done

    def _report(
        self, request: ModelRequest[Any], sent: Trimmed[AnyMessage] | None, response: Any
    ) -> None:
        """The AI message's `usage_metadata["input_tokens"]` (cached input included) as the
        provider's count of the request sent (USAGE-1..6)."""
        results = getattr(response, "result", [response])
        for message in results if isinstance(results, list) else []:
            usage = getattr(message, "usage_metadata", None)
            if isinstance(usage, dict):
                metadata = getattr(message, "response_metadata", None) or {}
                model = request.model
                self.trimmer.report(
                    sent, {"input_tokens": usage.get("input_tokens")},
                    model=metadata.get("model_name") if isinstance(metadata, dict) else None,
                    expected_model=getattr(model, "model_name", getattr(model, "model", None)),
                    tool_schema_tokens=schema_tokens(
                        map(_tool_schema, request.tools or ()), self.trimmer.policy),
                )
                return

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """Send the trimmed request; on a context overflow, once more trimmed to 2/3 (RUN-2).
        The response's reported usage calibrates the next request (USAGE-1..6)."""
        trimmed, sent = self._request(request)
        try:
            response = handler(trimmed)
        except ContextOverflowError as error:
            again, sent = self._retry(request, sent, error)
            response = handler(again)
        self._report(request, sent, response)
        return response

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        trimmed, sent = self._request(request)
        try:
            response = await handler(trimmed)
        except ContextOverflowError as error:
            again, sent = self._retry(request, sent, error)
            response = await handler(again)
        self._report(request, sent, response)
        return response


def _tool_schema(tool: Any) -> tuple[object, object, object]:
    """A LangChain tool (a `BaseTool` or a provider's dict) as (name, description,
    parameters)."""
    if isinstance(tool, dict):
        spec = tool.get("function", tool)
        return (spec.get("name"), spec.get("description"),
                spec.get("parameters", spec.get("input_schema")))
    make = getattr(getattr(tool, "tool_call_schema", None), "model_json_schema", None)
    params = make() if callable(make) else {}
    return getattr(tool, "name", ""), getattr(tool, "description", ""), params
