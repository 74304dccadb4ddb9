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

from histtrim.carriers import (
    dispatch_row,
    framework_user_text,
    image_marker,
    part_loads,
    part_target,
    result_row,
)
from histtrim.counting import Pricing
from histtrim.estimate import message_costs
from histtrim.low_water import holds_cut, plan_held_trim, request_points
from histtrim.messages import BREADCRUMB, ChatMessage
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
    priced = langchain_rows(items)
    rows = [row for row, _ in priced]
    count = _counter(token_counter)
    index = index_turns(rows)
    if count is None:
        pricing = Pricing(policy)
        costs = message_costs(rows, index, policy=policy)
        for i, (_, parts) in enumerate(priced):
            if parts:
                costs[i] += pricing.parts(parts)
    else:
        costs = [count(m) for m in items]
    # A budget of 0 is over at every request: the held cut is then the newest turn at every
    # request, the trim to fit's answer (the low-water replay reads 0 as "no budget").
    if holds_cut(policy) and max_tokens > 0:
        return _held(items, priced, index, costs, count, max_tokens, include_system, breadcrumb,
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
    items: list[BaseMessage], priced: list[tuple[ChatMessage, int]], index: TurnIndex,
    costs: list[int], count: Callable[[Any], int] | None, max_tokens: int,
    include_system: bool, breadcrumb: bool, policy: Policy = SPEC,
) -> list[BaseMessage]:
    """`trim_messages` with a low-water mark: the cut the `Agent` would hold (`plan_held_trim`)."""
    rows = [row for row, _ in priced]
    prefix = index.prefix_len if include_system else 0
    view = TurnIndex(len(rows), prefix, None, index.starts, index.facts)
    if count is not None:
        prices: tuple[list[int], list[int]] = (costs, costs)
    else:
        pricing = Pricing(policy)
        both = [pricing.both(row, parts) for row, parts in priced]
        prices = ([older for older, _ in both], [current for _, current in both])
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
    """The provider-facing row of each message: system, human and AI text (a human message's
    image and file blocks as `[IMAGE:...]` markers, priced as images, EST-2), tool calls as the
    native envelope and a `ToolMessage` as the tool-result envelope (its image and file blocks
    declared attachments, EST-3). The role comes from the message type, never from its text.
    An AI or system message's own image and file blocks are not in its row's text: they are
    priced beside it (`langchain_rows`)."""
    return [row for row, _ in langchain_rows(messages)]


def langchain_rows(messages: Sequence[BaseMessage]) -> list[tuple[ChatMessage, int]]:
    """`from_langchain`'s rows, each with the loadable parts its text does not carry (an AI
    message's generated images and files), priced at one image each (`Pricing.parts`)."""
    lc = _lc()
    rows: list[tuple[ChatMessage, int]] = []
    for i, message in enumerate(messages):
        try:
            rows.append(langchain_row(message, lc))
        except (ValueError, TypeError) as error:
            raise ValueError(f"messages[{i}]: {error}") from None
    return rows


def langchain_row(message: Any, lc: Any = None) -> tuple[ChatMessage, int]:
    """One message's row and its parts priced beside the text (`langchain_rows`)."""
    lc = lc or _lc()
    if isinstance(message, lc.SystemMessage):
        text, parts = _own_text(message.content)
        return ChatMessage.system(text), parts
    if isinstance(message, lc.HumanMessage):
        return ChatMessage.user(_user_text(message.content)), 0
    if isinstance(message, lc.AIMessage):
        text, parts = _own_text(message.content)
        if not message.tool_calls:
            if text.startswith("{"):  # would read as a tool-call envelope: price it as a string
                return ChatMessage.assistant(json.dumps(text, ensure_ascii=False)), parts
            return ChatMessage.assistant(text), parts
        calls = [(_call_id(c.get("id")), str(c.get("name") or ""), _arguments(c.get("args")))
                 for c in message.tool_calls]
        return dispatch_row(text or None, calls), parts
    if isinstance(message, lc.ToolMessage):
        return _tool_row(message.tool_call_id, message.content), 0
    if isinstance(message, lc.ChatMessage):  # a role given as text: read as the providers do
        side = CHAT_ROLES.get(message.role, "assistant")
        kind = (lc.SystemMessage if side == "system" else lc.HumanMessage
                if side == "user" else lc.AIMessage)
        return langchain_row(kind(content=message.content), lc)
    if isinstance(message, lc.FunctionMessage):  # legacy: a function's output, no call id
        return langchain_row(lc.AIMessage(content=message.content), lc)
    raise TypeError(
        f"expected a SystemMessage, HumanMessage, AIMessage, ToolMessage, ChatMessage or "
        f"FunctionMessage, got {type(message).__name__}"
    )


def _call_id(value: object) -> str:
    """A tool call's id as its row carries it: the string the framework holds (the empty one
    too: some providers send it), "?" when it holds none."""
    return value if isinstance(value, str) else "?"


def _arguments(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps({} if value is None else value, separators=(",", ":"),
                      ensure_ascii=False, default=str)


CHAT_ROLES = {"system": "system", "developer": "system", "user": "user", "human": "user"}
"""A LangChain `ChatMessage`'s role as its row's: any other role (`assistant`, `ai`, `tool`,
`function`, a custom one) is the assistant's side of the turn, which never opens a turn."""


def _tool_row(call_id: str, content: Any) -> ChatMessage:
    """A `ToolMessage` as the tool-result envelope: its image and file blocks are the files the
    tool declared (attachments, priced only in the current turn: EST-2, EST-3), not text."""
    if not isinstance(content, list):
        return result_row(call_id, _plain(content))
    targets: list[str] = []
    rest: list[Any] = []
    for block in content:
        target = _block_target(block)
        if target is None:
            rest.append(block)
        else:
            targets.append(target)
    if not targets:
        return result_row(call_id, _plain(content))
    return result_row(call_id, _plain(rest), targets)


def _plain(content: Any) -> str:
    """A message's text, every block that is not text as its JSON."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise TypeError(f"content: expected a string or a list of blocks, got {type(content)}")
    return "".join(_piece(block) for block in content)


def _piece(block: Any) -> str:
    if isinstance(block, str):
        return block
    if isinstance(block, dict) and block.get("type") == "text":
        return str(block.get("text", ""))
    return json.dumps(block, ensure_ascii=False, default=str)


def _own_text(content: Any) -> tuple[str, int]:
    """An AI or system message's text (its image and file blocks left out) and how many of
    those blocks load: they are priced as images beside the text (`carriers.part_target`)."""
    if isinstance(content, str):
        return content, 0
    if not isinstance(content, list):
        raise TypeError(f"content: expected a string or a list of blocks, got {type(content)}")
    pieces: list[str] = []
    parts = 0
    for block in content:
        target = _block_target(block)
        if target is None:
            pieces.append(_piece(block))
        else:
            parts += part_loads(target)
    return "".join(pieces), parts


def _user_text(content: Any) -> str:
    """A human message's text: text blocks are text, image blocks `[IMAGE:...]` markers
    (EST-2) and `file`, `audio` and `video` blocks one attachment each (`part_target`)."""
    if isinstance(content, str):
        return framework_user_text([(content, False)])
    if not isinstance(content, list):
        raise TypeError(f"content: expected a string or a list of blocks, got {type(content)}")
    pieces: list[tuple[str, bool]] = []
    for block in content:
        target = _block_target(block)
        if target is None:
            pieces.append((_piece(block), False))
        else:
            pieces.append((image_marker(target), True))
    return framework_user_text(pieces)


FILE_BLOCKS = ("file", "audio", "video")
"""LangChain's standard content blocks for files that are not images."""


def _block_target(block: Any) -> str | None:
    """The target a block is priced by when it is an image or a file (`part_target`), else
    None (text, reasoning, anything else: its JSON is text)."""
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind == "image_url":
        image = block.get("image_url")
        url = image.get("url") if isinstance(image, dict) else image
        return part_target("image", url=url) if isinstance(url, str) else None
    if kind == "image":
        if isinstance(block.get("url"), str):
            return part_target("image", _media(block), url=block["url"])
        if isinstance(block.get("base64") or block.get("data"), str):  # v1, v0 base64 data
            return part_target("image", _media(block) or "image/png", name=_name(block))
        if isinstance(block.get("file_id") or block.get("id"), str):
            return part_target("image", _media(block), name=_name(block))
        return None
    if kind in FILE_BLOCKS:
        url = block.get("url")
        return part_target(str(kind), _media(block) or "application/octet-stream",
                           url=url if isinstance(url, str) else None, name=_name(block))
    return None


def _media(block: dict[str, Any]) -> str | None:
    media = block.get("mime_type")
    return media if isinstance(media, str) and media else None


def _name(block: dict[str, Any]) -> str:
    """A block's name: its `filename` (in `extras` or on the block), its id, else its URL."""
    extras = block.get("extras")
    name = (extras.get("filename") if isinstance(extras, dict) else None) or block.get(
        "filename") or block.get("file_id") or block.get("id") or block.get("url") or ""
    return str(name)


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
