"""Whole-turn trimming of LangChain message lists, returning LangChain messages.

`trim_messages` takes the arguments of LangChain's `trim_messages` that mean the same here
(`max_tokens`, `token_counter`, `include_system`, `strategy="last"`), so switching is a
change of import. Unlike LangChain's, it keeps or drops whole turns: an `AIMessage`'s tool
calls and their `ToolMessage`s go together (TURN-4, PAIR-1), and the newest turn always stays,
even over `max_tokens` (KEEP-3, CAP-1). langchain-core is an optional extra
(`pip install histtrim[langchain]`), imported only when this module is used."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from histtrim.carriers import file_marker, file_target, framework_user_text, image_marker
from histtrim.counting import Pricing
from histtrim.estimate import message_costs
from histtrim.low_water import holds_cut, plan_held_trim, request_points, two_prices
from histtrim.messages import BREADCRUMB, ChatMessage, ToolCall
from histtrim.policy import SPEC, Policy
from histtrim.trim import first_turn_within
from histtrim.turns import TurnIndex, index_turns

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

TokenCounter = Callable[..., int] | Any
"""A LangChain token counter: a callable on a list of messages or on one message, a chat
model (its `get_num_tokens_from_messages`), or "approximate"."""


def _lc() -> Any:
    try:
        import langchain_core.messages as messages
    except ImportError:  # pragma: no cover - the extra is installed wherever this is tested
        raise ImportError(
            "histtrim.adapters.langchain needs langchain-core: pip install 'histtrim[langchain]'"
        ) from None
    return messages


def trim_messages(
    messages: Sequence[BaseMessage],
    *,
    max_tokens: int,
    token_counter: TokenCounter | None = None,
    include_system: bool = True,
    strategy: str = "last",
    allow_partial: bool = False,
    start_on: Any = None,
    end_on: Any = None,
    breadcrumb: bool = False,
    policy: Policy = SPEC,
) -> list[BaseMessage]:
    """The newest whole turns that fit `max_tokens`, as the input's own message objects.

    `token_counter` prices each message once (default: histtrim's estimate, EST-1..4, images
    included); `include_system` keeps the leading `SystemMessage`s (TURN-5; unlike
    LangChain's, it defaults to True). Turns always start on a `HumanMessage` and the newest
    turn is kept whole, so `start_on`/`end_on` are accepted for drop-in use and have nothing
    left to fix. With `breadcrumb=True` a `HumanMessage` with the breadcrumb text goes after
    the system messages when turns were dropped (SEEN-1), counted toward `max_tokens`. A
    `policy` with a low-water `token_trim_target` keeps the cut the `Agent` would hold
    (`histtrim.low_water`), so the messages passed on every request keep a stable prefix."""
    if strategy != "last":
        raise ValueError("strategy: histtrim keeps the newest whole turns; only 'last' applies")
    if allow_partial:
        raise ValueError("allow_partial: histtrim never splits a message or a turn")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 0:
        raise ValueError(f"max_tokens: expected a non-negative integer, got {max_tokens!r}")
    del start_on, end_on  # satisfied by construction: see the docstring
    items = list(messages)
    rows = from_langchain(items)
    count = _counter(token_counter)
    costs = message_costs(rows, policy=policy) if count is None else [count(m) for m in items]
    index = index_turns(rows)
    if holds_cut(policy):
        return _held(items, rows, index, costs, count, max_tokens, include_system, breadcrumb,
                     policy)
    if sum(costs) <= max_tokens or index.turn_count <= 1:
        return items
    # Kept whatever happens: the leading system messages (include_system) and the crumb.
    prefix = index.prefix_len if include_system else 0
    crumb: list[BaseMessage] = []
    if breadcrumb:
        crumb = [_lc().HumanMessage(content=BREADCRUMB)]
        crumb_row = ChatMessage.user(BREADCRUMB)
        price = message_costs([crumb_row], policy=policy)[0] if count is None else count(crumb[0])
        costs = [*costs[:prefix], price, *costs[prefix:]]
    shift = len(crumb)
    view = TurnIndex(
        len(costs), prefix, prefix if crumb else None, tuple(s + shift for s in index.starts), []
    )
    first, _ = first_turn_within(view, costs, max_tokens)  # >= 1: the whole list is over
    return [*items[:prefix], *crumb, *items[index.starts[first] :]]


def _held(
    items: list[BaseMessage], rows: list[ChatMessage], index: TurnIndex, costs: list[int],
    count: Callable[[Any], int] | None, max_tokens: int, include_system: bool,
    breadcrumb: bool, policy: Policy = SPEC,
) -> list[BaseMessage]:
    """`trim_messages` with a low-water mark: the cut the `Agent` would hold (`plan_held_trim`)."""
    prefix = index.prefix_len if include_system else 0
    view = TurnIndex(len(rows), prefix, None, index.starts, index.facts)
    prices = (costs, costs) if count is not None else two_prices(rows, view, Pricing(policy))
    crumb = _lc().HumanMessage(content=BREADCRUMB)
    plan = plan_held_trim(
        view, prices, request_points(rows), budget_tokens=max_tokens,
        crumb_cost=lambda: (
            message_costs([ChatMessage.user(BREADCRUMB)], policy=policy)[0]
            if count is None else count(crumb)
        ),
        breadcrumb=breadcrumb, token_target=policy.token_trim_target,
    )
    return plan.kept(items, crumb) if plan.trimmed else items


def from_langchain(messages: Sequence[BaseMessage]) -> list[ChatMessage]:
    """The provider-facing row of each message: system, human and AI text (image blocks as
    `[IMAGE:...]` markers, priced as images, EST-2), tool calls as the native envelope and a
    `ToolMessage` as the tool-result envelope (its image blocks declared attachments, EST-3).
    The role comes from the message type, never from its text."""
    lc = _lc()
    rows: list[ChatMessage] = []
    for i, message in enumerate(messages):
        try:
            rows.append(_row(lc, message))
        except (ValueError, TypeError) as error:
            raise ValueError(f"messages[{i}]: {error}") from None
    return rows


def _row(lc: Any, message: Any) -> ChatMessage:
    if isinstance(message, lc.SystemMessage):
        return ChatMessage.system(_text(message.content, images=False))
    if isinstance(message, lc.HumanMessage):
        return ChatMessage.user(_text(message.content, images=True))
    if isinstance(message, lc.AIMessage):
        text = _text(message.content, images=False)
        if not message.tool_calls:
            if text.startswith("{"):  # would read as a tool-call envelope: price it as a string
                return ChatMessage.assistant(json.dumps(text, ensure_ascii=False))
            return ChatMessage.assistant(text)
        calls = [ToolCall(id=c["id"] or "?", name=c["name"], arguments=c["args"])
                 for c in message.tool_calls]
        return ChatMessage.assistant_tool_calls(text or None, calls)
    if isinstance(message, lc.ToolMessage):
        return _tool_row(message.tool_call_id, message.content)
    if isinstance(message, lc.ChatMessage):  # a role given as text: read as the providers do
        side = CHAT_ROLES.get(message.role, "assistant")
        return _row(lc, (lc.SystemMessage if side == "system" else lc.HumanMessage
                         if side == "user" else lc.AIMessage)(content=message.content))
    if isinstance(message, lc.FunctionMessage):  # legacy: a function's output, no call id
        return _row(lc, lc.AIMessage(content=message.content))
    raise TypeError(
        f"expected a SystemMessage, HumanMessage, AIMessage, ToolMessage, ChatMessage or "
        f"FunctionMessage, got {type(message).__name__}"
    )


CHAT_ROLES = {"system": "system", "developer": "system", "user": "user", "human": "user"}
"""A LangChain `ChatMessage`'s role as its row's: any other role (`assistant`, `ai`, `tool`,
`function`, a custom one) is the assistant's side of the turn, which never opens a turn."""


def _tool_row(call_id: str, content: Any) -> ChatMessage:
    """A `ToolMessage` as the tool-result envelope: its image blocks are the images the tool
    declared (attachments, priced only in the current turn: EST-2, EST-3), not text."""
    if not isinstance(content, list):
        return ChatMessage.tool_result(call_id, _text(content, images=False))
    images: list[str] = []
    rest: list[Any] = []
    for block in content:
        url = _image_url(block) if isinstance(block, dict) else None
        if url is not None:
            images.append(url)
        elif isinstance(block, dict) and block.get("type") in FILE_BLOCKS:
            images.append(file_target(*_file_facts(block)))  # one attachment (decision)
        else:
            rest.append(block)
    if not images:
        return ChatMessage.tool_result(call_id, _text(content, images=False))
    return ChatMessage.tool_result(call_id, _text(rest, images=False), attachments=images)


def _text(content: Any, *, images: bool) -> str:
    """A message's text; in a human message text blocks are text, image blocks `[IMAGE:url]`
    markers (EST-2) and `file`, `audio` and `video` blocks one attachment each
    (`file_marker`)."""
    if isinstance(content, str):
        return framework_user_text([(content, False)]) if images else content
    if not isinstance(content, list):
        raise TypeError(f"content: expected a string or a list of blocks, got {type(content)}")
    pieces: list[tuple[str, bool]] = []
    for block in content:
        url = _image_url(block) if images and isinstance(block, dict) else None
        if isinstance(block, str):
            pieces.append((block, False))
        elif isinstance(block, dict) and block.get("type") == "text":
            pieces.append((str(block.get("text", "")), False))
        elif url is not None:
            pieces.append((image_marker(url), True))
        elif images and isinstance(block, dict) and block.get("type") in FILE_BLOCKS:
            pieces.append((file_marker(*_file_facts(block)), True))
        else:
            pieces.append((json.dumps(block, ensure_ascii=False, default=str), False))
    if not images:
        return "".join(piece for piece, _ in pieces)
    return framework_user_text(pieces)


FILE_BLOCKS = ("file", "audio", "video")
"""LangChain's standard content blocks for files that are not images."""


def _file_facts(block: dict[str, Any]) -> tuple[str, str]:
    """A file block's media type and name (its `mime_type`; its `filename`, id or URL)."""
    media = block.get("mime_type")
    extras = block.get("extras")
    name = (extras.get("filename") if isinstance(extras, dict) else None) or block.get(
        "filename") or block.get("file_id") or block.get("id") or block.get("url") or ""
    return (media if isinstance(media, str) and media else "application/octet-stream"), str(name)


def _image_url(block: dict[str, Any]) -> str | None:
    if block.get("type") == "image_url":
        image = block.get("image_url")
        url = image.get("url") if isinstance(image, dict) else image
        return url if isinstance(url, str) else None
    if block.get("type") == "image":
        if isinstance(block.get("url"), str):
            return str(block["url"])
        if isinstance(block.get("base64"), str):
            return f"data:{block.get('mime_type', 'image/png')};base64,{block['base64']}"
    return None


def _counter(token_counter: TokenCounter | None) -> Callable[[Any], int] | None:
    """One message's count, whatever shape of counter LangChain users pass."""
    if token_counter is None:
        return None
    if token_counter == "approximate":
        from langchain_core.messages.utils import count_tokens_approximately

        return lambda message: int(count_tokens_approximately([message]))
    model_count = getattr(token_counter, "get_num_tokens_from_messages", None)
    if model_count is not None:
        return lambda message: int(model_count([message]))
    if not callable(token_counter):
        raise ValueError("token_counter: expected a callable, a chat model or 'approximate'")
    parameters = list(inspect.signature(token_counter).parameters.values())
    annotation = parameters[0].annotation if parameters else None
    lc = _lc()
    if annotation is lc.BaseMessage or annotation == "BaseMessage":
        return lambda message: int(token_counter(message))
    return lambda message: int(token_counter([message]))
