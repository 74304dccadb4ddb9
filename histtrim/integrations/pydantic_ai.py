"""histtrim in a pydantic-ai agent: `Agent(model, capabilities=[HisttrimCapability()])`.

`prepare_model_request` trims the messages of each model request by whole turns (LIMIT-1,
KEEP-1, RUN-1), counting `Agent(instructions=...)` (sent beside the messages) like a system
row, puts the breadcrumb request after the system prompt (SEEN-1) and emits
`HistoryTrimmed` (SEEN-2); `on_model_request_error` answers pydantic-ai's
`ModelContextWindowExceededError` by trimming the request that overflowed to two thirds of its
estimate and asking for one more attempt (`RetryModelRequest`, RUN-2). Each response's
`usage.input_tokens` is the provider's count of the request sent (USAGE-1..6,
`Trimmer.report`). The run's stored history (`result.all_messages()`) is not changed: each
request is trimmed again from the full history.

pydantic-ai keeps `Agent(system_prompt=...)` as a `SystemPromptPart` inside the first
`ModelRequest`, beside the first user prompt: here each part of a request is its own row, so
the system prompt is the leading system block and stays when its request's user prompt is
dropped (TURN-5). Such a request is sent as a copy holding the kept parts (the part objects are
the history's own); every other message sent is the history's own object, untouched.
Needs the `pydantic-ai` extra: `pip install 'histtrim[pydantic-ai]'`."""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import compress
from operator import is_, is_not
from typing import Any, cast

from histtrim.carriers import (
    dispatch_row,
    framework_user_text,
    image_marker,
    parse_tool_calls,
    parse_tool_result,
    part_loads,
    part_target,
    result_row,
)
from histtrim.counting import TokenCounter
from histtrim.integrations import framework_imports
from histtrim.integrations._trimmer import (
    OnTrim,
    Priced,
    Seen,
    Trimmed,
    Trimmer,
    kept_tail,
    schema_tokens,
)
from histtrim.messages import BREADCRUMB, TOOL_RESULTS_PREFIX, ChatMessage
from histtrim.policy import Policy
from histtrim.route import ResolvedRuntime

with framework_imports("pydantic-ai"):
    from pydantic_ai import RunContext
    from pydantic_ai.capabilities import AbstractCapability, WrapRunHandler
    from pydantic_ai.exceptions import ModelContextWindowExceededError, RetryModelRequest
    from pydantic_ai.messages import (
        MULTI_MODAL_CONTENT_TYPES,
        BinaryContent,
        FilePart,
        FileUrl,
        ImageUrl,
        ModelMessage,
        ModelRequest,
        ModelResponse,
        RetryFeedbackPart,
        RetryPromptPart,
        SystemPromptPart,
        TextPart,
        ThinkingPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.models import ModelRequestContext

CRUMB_METADATA = {"histtrim": "breadcrumb"}
"""The breadcrumb request's `metadata` (never sent to the model): how it is told apart."""


@dataclass(frozen=True)
class Unit:
    """What one row stands for: some parts of message `message` (None: the breadcrumb)."""

    message: int | None
    parts: tuple[int, ...]
    replaced: tuple[Any, ...] = ()
    """The parts sent instead of `parts`, for a unit the tool context edit changed."""


CRUMB = Unit(None, ())
INSTRUCTIONS = Unit(-1, ())
"""`Agent(instructions=...)`: sent beside the messages and counted like a system row."""


def breadcrumb() -> ModelRequest:
    """The context note as pydantic-ai sends it: a request with one user prompt (SEEN-1)."""
    return ModelRequest(parts=[UserPromptPart(BREADCRUMB)], metadata=dict(CRUMB_METADATA))


def to_rows(messages: Sequence[ModelMessage]) -> tuple[list[Unit], list[ChatMessage]]:
    """The units of `messages` and the provider-facing row of each: a response is one
    assistant row (its tool calls the native envelope); in a request each system prompt, user
    prompt and tool return is a row, and any other part goes with the row next to it."""
    units: list[Unit] = []
    rows: list[ChatMessage] = []
    for m, message in enumerate(messages):
        for parts, row, _ in message_rows(message, m):
            units.append(Unit(m, parts))
            rows.append(row)
    return units, rows


def message_rows(message: Any, m: int = 0) -> list[tuple[tuple[int, ...], ChatMessage, int]]:
    """One message's units (the indexes of its parts), each with its row and the loadable
    parts its text does not carry (a response's generated files: `Pricing.parts`)."""
    try:
        if isinstance(message, ModelResponse):
            row, parts = _response_row(message)
            return [(tuple(range(len(message.parts))), row, parts)]
        if isinstance(message, ModelRequest):
            return [(parts, row, 0) for parts, row in _request_rows(message)]
        raise TypeError(f"expected a ModelRequest or a ModelResponse, got {type(message)}")
    except (TypeError, ValueError) as error:
        raise ValueError(f"messages[{m}]: {error}") from None


@dataclass
class _Made:
    """The last request `from_units` made: the next one, whose units extend or only change
    near their end (a clear's, CTX-6..10), resumes from the last group they share."""

    messages: Sequence[ModelMessage] = ()
    history: int = 0
    """The number of the history it was made from (`Seen.number`; 0: none known)."""
    units: list[Unit] = field(default_factory=list)
    out: list[ModelMessage] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)
    """The unit where each message (or breadcrumb) of `out` begins."""
    sizes: list[int] = field(default_factory=list)
    """`len(out)` before each of `starts`."""


def _resume(
    messages: Sequence[ModelMessage], units: Sequence[Unit], last: _Made, history: Seen | None
) -> tuple[int, list[ModelMessage], list[int], list[int]]:
    """Where `from_units` resumes from `last`: the last message start before the first unit
    that differs (compared at C speed), and what was made before it; 0 when none. Only for
    `history`, the history these units were made from, when it is the last request's or
    extends it (`Seen.origin`: its messages start with that one's, found equal once by
    `Prefixes.find`, so they are not compared again here)."""
    m = min(len(units), len(last.units))
    first = next(compress(range(m), map(is_not, last.units, units)), m)
    k = bisect_right(last.starts, first) - 1
    if k >= 0 and last.starts[k] == first:
        k -= 1  # its unit changed: whether a message starts there is read again
    if k < 0 or history is None or not last.history or last.history not in (
            history.number, history.origin) or len(messages) < len(last.messages):
        return 0, [], [], []
    return last.starts[k], last.out[: last.sizes[k]], last.starts[:k], last.sizes[:k]


def from_units(
    messages: Sequence[ModelMessage], units: Sequence[Unit],
    copies: dict[int, tuple[ModelMessage, tuple[Any, ...], ModelMessage]] | None = None,
    last: _Made | None = None, history: Seen | None = None,
) -> list[ModelMessage]:
    """The messages the units stand for, in order: a message whose parts are all kept is the
    original object (resumed from `last`: its object in the last request, an equal one);
    one with some parts kept is a copy holding them; `CRUMB` is the breadcrumb request.
    `copies`, the copies the last request made (by their message): one that sends the same
    parts of a message again (a clear's, CTX-6..10) reuses its copy; it is left holding
    this request's copies only. `last`: the last request made, resumed where the units
    stop being its own, and left holding this one; `history`: the history the units were
    made from (`Trimmed.seen`)."""
    begin = 0
    out: list[ModelMessage] = []
    starts: list[int] = []
    sizes: list[int] = []
    if last is not None:
        begin, out, starts, sizes = _resume(messages, units, last, history)
    group: list[Any] = []  # part indexes, or the parts a rewritten unit sends
    owner: int | None = None
    made_now: dict[int, tuple[ModelMessage, tuple[Any, ...], ModelMessage]] = {}

    def flush() -> None:
        if owner is None:
            return
        message = messages[owner]
        if len(group) == len(message.parts) and all(isinstance(i, int) for i in group):
            out.append(message)
        else:
            parts = tuple(message.parts[i] if isinstance(i, int) else i for i in group)
            made = None if copies is None else copies.get(id(message))
            if not (made is not None and made[0] is message and len(made[1]) == len(parts)
                    and all(map(is_, made[1], parts))):
                copy = replace(message, parts=list(parts))  # type: ignore[arg-type]
                made = (message, parts, copy)
            made_now[id(message)] = made
            out.append(made[2])

    for u in range(begin, len(units)):
        unit = units[u]
        if unit == INSTRUCTIONS:
            continue
        kept = list(unit.replaced or unit.parts)
        if unit.message is None:
            flush()
            starts.append(u)
            sizes.append(len(out))
            owner, group = None, []
            out.append(breadcrumb())
        elif unit.message != owner:
            flush()
            starts.append(u)
            sizes.append(len(out))
            owner, group = unit.message, kept
        else:
            group.extend(kept)
    flush()
    if copies is not None:
        copies.clear()
        copies.update(made_now)
    if last is not None:
        last.messages, last.units, last.out = messages, list(units), out
        last.history = 0 if history is None else history.number
        last.starts, last.sizes = starts, sizes
        return list(out)
    return out


def tool_context_unit(messages: Sequence[ModelMessage]) -> Callable[[Unit, ChatMessage], Unit]:
    """Writes the parts of a unit the tool context edit changed (CTX-1..9), copies: a cleared
    `ToolReturnPart` (or tool `RetryPromptPart`) keeps its `tool_call_id` and gets the
    placeholder as its content; a collapse summary is one `TextPart` in place of the
    response's parts; a call whose inputs were cleared keeps its id and name, `args` {}."""

    def rewrite(unit: Unit, row: ChatMessage) -> Unit:
        assert unit.message is not None and unit.message >= 0
        parts = [messages[unit.message].parts[i] for i in unit.parts]
        result = parse_tool_result(row)
        if result is not None:
            new = [replace(cast(Any, p), content=result.content)
                   if isinstance(p, ToolReturnPart | RetryPromptPart) else p for p in parts]
            return Unit(unit.message, unit.parts, tuple(new))
        parsed = parse_tool_calls(row)
        if parsed is None:
            return Unit(unit.message, unit.parts, (TextPart(row.content),))
        emptied = {call.id for call in parsed.calls if call.arguments == "{}"}
        new = [replace(cast(Any, p), args={}) if isinstance(p, ToolCallPart)
               and p.tool_call_id in emptied else p for p in parts]
        return Unit(unit.message, unit.parts, tuple(new))

    return rewrite


def _sent(
    messages: Sequence[ModelMessage], units: Sequence[Unit], done: Trimmed[Unit],
    copies: dict[int, tuple[ModelMessage, tuple[Any, ...], ModelMessage]] | None = None,
    last: _Made | None = None,
) -> list[ModelMessage]:
    """`from_units(messages, done.units)`, with the kept run that ends the history taken as a
    slice of `messages` when it starts a message (a whole-turn cut)."""
    start = kept_tail(done.positions, done.given) if done.positions else None
    if start is not None and start < len(units):
        unit = units[start]
        if unit.message is not None and unit.message >= 0 and unit.parts[:1] == (0,):
            head = done.units[: len(done.units) - (len(units) - start)]
            return [*from_units(messages, head), *messages[unit.message :]]
    return from_units(messages, done.units, copies, last, done.seen)


def has_breadcrumb(messages: Sequence[ModelMessage], units: Sequence[Unit]) -> bool:
    """Whether the unit after the leading system prompts is a breadcrumb request."""
    for unit in units:
        if unit == INSTRUCTIONS:
            continue
        if unit.message is None:
            return True
        message = messages[unit.message]
        if not all(isinstance(message.parts[i], SystemPromptPart) for i in unit.parts):
            return isinstance(message, ModelRequest) and message.metadata == CRUMB_METADATA
    return False


def _response_row(message: ModelResponse) -> tuple[ChatMessage, int]:
    texts: list[str] = []
    calls: list[tuple[str, str, str]] = []
    files = 0
    for part in message.parts:
        if isinstance(part, ToolCallPart):
            calls.append((part.tool_call_id, part.tool_name, part.args_as_json_str()))
        elif isinstance(part, TextPart | ThinkingPart):
            texts.append(part.content)
        elif isinstance(part, FilePart):  # the model's own file: priced beside the text
            files += part_loads(_file_target(part.content))
        else:
            texts.append(_dumps(part))
    text = "".join(texts)
    if calls:
        return dispatch_row(text or None, calls), files
    # A text that would read as a tool-call envelope is priced as a string (as the adapters do).
    if text[:1] == "{":
        return ChatMessage.assistant(json.dumps(text, ensure_ascii=False)), files
    return ChatMessage.assistant(text), files


def _request_rows(message: ModelRequest) -> list[tuple[tuple[int, ...], ChatMessage]]:
    rows: list[tuple[list[int], ChatMessage]] = []
    loose: list[int] = []  # parts that make no row of their own: they join a neighbour
    for i, part in enumerate(message.parts):
        row = _part_row(part)
        if row is None:
            if rows:
                rows[-1][0].append(i)
            else:
                loose.append(i)
            continue
        rows.append(([*loose, i], row))
        loose = []
    if loose:  # no part made a row: the request continues the turn, priced by its text
        text = TOOL_RESULTS_PREFIX + "\n" + "".join(_dumps(message.parts[i]) for i in loose)
        rows.append((loose, ChatMessage.user(text)))
    return [(tuple(parts), row) for parts, row in rows]


def _part_row(part: Any) -> ChatMessage | None:
    if isinstance(part, SystemPromptPart):
        return ChatMessage.system(part.content)
    if isinstance(part, UserPromptPart):
        return ChatMessage.user(_user_text(part.content))
    if isinstance(part, ToolReturnPart):  # its files: the images the tool declared (EST-3)
        targets = [_file_target(item) for item in part.files]
        return result_row(part.tool_call_id, part.model_response_str(), targets or None)
    if isinstance(part, RetryPromptPart) and part.tool_name is not None:
        return result_row(part.tool_call_id, part.model_response())
    if isinstance(part, RetryPromptPart | RetryFeedbackPart):
        return None  # feedback from the framework, not a person: it never opens a turn
    return None


def _user_text(content: Any) -> str:
    """A user prompt's text: its text as text, each image an `[IMAGE:...]` marker (EST-2) and
    each other file (a document, audio, video) one attachment (`part_target`)."""
    if isinstance(content, str):
        return framework_user_text([(content, False)])
    pieces: list[tuple[str, bool]] = []
    for item in content:
        if isinstance(item, str):
            pieces.append((item, False))
        elif isinstance(item, MULTI_MODAL_CONTENT_TYPES):
            pieces.append((image_marker(_file_target(item)), True))
        else:
            pieces.append((_dumps(item), False))
    return framework_user_text(pieces)


def _file_target(item: Any) -> str:
    """What a pydantic-ai file is priced by (`carriers.part_target`): an image by its URL or
    as inline bytes, any other file as one attachment; never its bytes."""
    if isinstance(item, ImageUrl):
        return part_target("image", url=item.url)
    if isinstance(item, BinaryContent):
        kind = "image" if item.is_image else "file"
        return part_target(kind, item.media_type, name=item.identifier)
    if isinstance(item, FileUrl):
        return part_target("file", _media_type(item), url=item.url)
    media = getattr(item, "media_type", None)
    media = media if isinstance(media, str) and media else None
    kind = "image" if media is not None and media.startswith("image/") else "file"
    return part_target(kind, media, name=str(getattr(item, "file_id", "") or ""))


def _media_type(item: FileUrl) -> str:
    try:
        return item.media_type
    except ValueError:  # no type given and none inferred from the URL
        return "application/octet-stream"


def _dumps(value: Any) -> str:
    return repr(value)


class HisttrimCapability(AbstractCapability[Any]):
    """The spec's whole-turn trimming as a pydantic-ai capability.

    Limits as `Trimmer` takes them: a `ResolvedRuntime`, or a plain `budget_tokens` (and
    `max_turns`); `token_counter` prices a row's text; `on_trim` receives each event;
    `policy` (default: the runtime's) sets the low-water marks, e.g.
    `Policy(token_trim_target=Fraction(7, 10))` to keep the Agent's cache-stable cut;
    `clock` (seconds) times each request for the policy's `cold_cache` (CACHE-1..3)."""

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
    ) -> None:
        self.trimmer = Trimmer(
            runtime, budget_tokens=budget_tokens, max_turns=max_turns,
            token_counter=token_counter, on_trim=on_trim,
            policy=policy, clock=clock,
        )
        self._sent: dict[str | None, tuple[list[ModelMessage], Trimmed[Unit]]] = {}
        """Per run: the messages the last attempt was prepared from and what it sent."""
        self._retry: dict[str | None, list[ModelMessage]] = {}
        """Per run: what the attempt after an overflow sends."""
        self._retried: set[str | None] = set()
        """The runs whose attempt in flight is the one after an overflow (it is not retried)."""
        self._copies: dict[int, tuple[ModelMessage, tuple[Any, ...], ModelMessage]] = {}
        """The message copies the last request sent (`from_units`)."""
        self._made = _Made()
        """The last request `from_units` made, which the next resumes."""

    def trim(
        self, messages: Sequence[ModelMessage], instructions: str | None = None
    ) -> tuple[list[ModelMessage], Trimmed[Unit]]:
        """The messages to send (the history's own objects, breadcrumb added) and the trim;
        `instructions` are counted as a leading system row."""
        return self._trim(messages, instructions)

    def _trim(
        self, messages: Sequence[ModelMessage], instructions: str | None = None,
        owned: bool = False,
    ) -> tuple[list[ModelMessage], Trimmed[Unit]]:
        """`trim`; `owned`: `messages` is this capability's own list, never changed after
        (remembered as is, `Prefixes.remember`)."""
        units, priced = self.priced(messages, owned=owned)
        if instructions:
            units = [INSTRUCTIONS, *units]
            priced = [self.trimmer.cache.priced(ChatMessage.system(instructions)), *priced]
        done = self.trimmer.trim(
            units, priced, crumb=CRUMB, crumb_present=has_breadcrumb(messages, units),
            rewrite=tool_context_unit(messages),
        )
        return _sent(messages, units, done, self._copies, self._made), done

    def priced(
        self, messages: Sequence[ModelMessage], *, owned: bool = False
    ) -> tuple[list[Unit], list[Priced]]:
        """The units of `messages` (`to_rows`) and each one's row and prices, each message
        priced once per capability (`PriceCache`); `owned` as `_trim`'s."""
        cache = self.trimmer.cache
        cache.fit(len(messages))
        seen = self.trimmer.prefixes.find(messages)
        start = 0 if seen is None else len(seen.items)
        units: list[Unit] = [] if seen is None else list(seen.units)
        priced: list[Priced] = [] if seen is None else list(seen.priced)
        shared = len(priced)
        for m, message in enumerate(messages[start:], start):
            anchors = (message, *getattr(message, "parts", ()))
            for parts, row in cache.group(anchors, partial(message_rows, message, m)):
                units.append(Unit(m, parts))
                priced.append(row)
        self.trimmer.prefixes.remember(messages, units, priced, seen, shared, owned=owned)
        return units, priced

    async def wrap_run(self, ctx: RunContext[Any], *, handler: WrapRunHandler) -> Any:
        """The run, and then its per-run state forgotten however it ended (completed,
        failed or cancelled): the capability holds only the runs in flight."""
        try:
            return await handler()
        finally:
            self._sent.pop(ctx.run_id, None)
            self._retry.pop(ctx.run_id, None)
            self._retried.discard(ctx.run_id)

    async def prepare_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        retry = self._retry.pop(ctx.run_id, None)
        if retry is not None:
            return replace(request_context, messages=retry)
        messages = list(request_context.messages)
        parts = request_context.model_request_parameters.instruction_parts or []
        sent, done = self._trim(messages, "\n\n".join(part.content for part in parts), True)
        self.trimmer.check_sent(done)
        self._sent[ctx.run_id] = (messages, done)
        return replace(request_context, messages=sent)

    async def after_model_request(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext,
        response: ModelResponse,
    ) -> ModelResponse:
        """The response's `usage.input_tokens` (cached input included) as the provider's count
        of the request sent (USAGE-1..6): the next request of this history applies it."""
        sent = self._sent.pop(ctx.run_id, None)
        self._retried.discard(ctx.run_id)
        if sent is not None:
            usage = getattr(response, "usage", None)
            tools = getattr(request_context.model_request_parameters, "function_tools", None)
            self.trimmer.report(
                sent[1], {"input_tokens": getattr(usage, "input_tokens", None)},
                model=getattr(response, "model_name", None),
                expected_model=getattr(request_context.model, "model_name", None),
                tool_schema_tokens=schema_tokens(
                    ((getattr(t, "name", ""), getattr(t, "description", ""),
                      getattr(t, "parameters_json_schema", None)) for t in tools or ()),
                    self.trimmer.policy),
            )
        return response

    async def on_model_request_error(
        self, ctx: RunContext[Any], *, request_context: ModelRequestContext, error: Exception
    ) -> ModelResponse:
        """A context overflow: one more attempt, trimmed to 2/3 of what overflowed (RUN-2)."""
        sent = self._sent.pop(ctx.run_id, None)
        if ctx.run_id in self._retried:  # the attempt after an overflow overflowed too
            self._retried.discard(ctx.run_id)
            raise error
        if not isinstance(error, ModelContextWindowExceededError) or sent is None:
            raise error
        messages, done = sent
        again = self.trimmer.reactive(
            done.units, done.priced, crumb=CRUMB, crumb_present=done.crumb_present,
            rewrite=tool_context_unit(messages), sent=done,
        )
        if again is None:
            raise error
        self.trimmer.check_pairing(again.rows)
        self._retry[ctx.run_id] = from_units(messages, again.units)
        self._sent[ctx.run_id] = (messages, again)  # the retry's usage is recorded too
        self._retried.add(ctx.run_id)
        raise RetryModelRequest()
