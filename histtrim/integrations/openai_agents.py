"""histtrim in the OpenAI Agents SDK: `Runner.run(agent, input,
run_config=RunConfig(call_model_input_filter=HisttrimInputFilter()))`, or `run_with_histtrim`.

- `HisttrimInputFilter` trims the input items of each model call by whole turns (LIMIT-1,
  KEEP-1, RUN-1), counting the agent's instructions, puts a breadcrumb user message after the
  leading system items (SEEN-1) and emits `HistoryTrimmed` (SEEN-2). The run's items and the
  session are not changed: each call is trimmed again from the full input.
- `HisttrimModel` wraps a `Model`: when the provider reports a context overflow
  (`is_context_overflow`: OpenAI's `context_length_exceeded`, LiteLLM's, other providers'), it
  trims the input that overflowed to two thirds of its estimate and calls the model once more
  (RUN-2). The SDK has no overflow hook, so the retry lives in the model; it also hands
  each response's `usage.input_tokens` to the filter (USAGE-1..8, `Trimmer.report`).
- `HisttrimSession` wraps any `Session`: it stores every item and each run reads the newest
  `max_turns` whole turns, the breadcrumb first when older turns are left out.
- `run_with_histtrim(agent, input, ...)` runs `Runner.run` with the filter installed and the
  starting agent's model wrapped.

An item's row: a user or system message is one row; a run of assistant-side items (messages,
`function_call`s, reasoning, hosted calls) is one assistant row, its calls the native
envelope; each `*_call_output` is a tool row. The items sent are the input's own objects.
Needs the `openai-agents` extra: `pip install 'histtrim[openai-agents]'`."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from functools import partial
from itertools import chain, compress
from operator import is_not
from typing import Any, cast

from histtrim.carriers import (
    data_url_media_type,
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
    Trimmed,
    Trimmer,
    kept_tail,
    schema_tokens,
)
from histtrim.messages import BREADCRUMB, ChatMessage
from histtrim.policy import Policy
from histtrim.route import ResolvedRuntime

with framework_imports("openai-agents"):
    from agents import Agent, Model, ModelResponse, RunConfig, Runner, RunResult, TResponseInputItem
    from agents.memory import Session, SessionABC
    from agents.run_config import CallModelData, ModelInputData

Unit = tuple[Any, ...]
"""The input items one row stands for, by index; a unit the tool context edit rewrote
(CTX-1..9) holds its new items themselves (`tool_context_unit`)."""
CRUMB: Unit = ()
INSTRUCTIONS: Unit = (-1,)
"""The agent's instructions: sent beside the items and counted like a system row."""

OVERFLOW_CODE = "context_length_exceeded"
"""OpenAI's code for an overflow (Responses and Chat Completions; Azure OpenAI and Groq send
it too)."""
OVERFLOW_CLASSES = ("ContextWindowExceededError",)
"""LiteLLM's exception for every provider's overflow (the SDK's `LitellmModel`), by name so
LiteLLM need not be installed."""
OVERFLOW_MESSAGES = (
    "maximum context length",  # OpenAI-compatible servers without the code: vLLM, OpenRouter,
    "reduce the length of the messages",  # DeepSeek, Mistral ("... maximum context length")
    "prompt is too long",  # Anthropic ("prompt is too long: N tokens > M maximum"), Bedrock
    "input is too long",  # Bedrock
    "input tokens exceeded",  # Bedrock
    "exceeds the maximum number of tokens allowed",  # Gemini ("The input token count (N) ...")
    "too many tokens",  # Cohere ("too many tokens: size limit exceeded by N tokens")
)
"""How the providers the SDK reaches through an OpenAI-compatible client or LiteLLM word an
overflow they send without OpenAI's code, read from a 400 or 413 answer's message (sources:
each provider's error text as pydantic-ai's `_model_errors` and LiteLLM's exception mapping
match it)."""


class Breadcrumb(dict[str, Any]):
    """The context note as the SDK sends it: an ordinary user message (SEEN-1). Its type, not
    its text, is how it is told apart from a user's words."""

    def __init__(self) -> None:
        super().__init__(role="user", content=BREADCRUMB)


def is_context_overflow(error: BaseException) -> bool:
    """Whether `error` is a provider's context-window overflow: OpenAI's code, LiteLLM's
    exception, or a 400/413 answer whose message words an overflow (`OVERFLOW_MESSAGES`)."""
    if getattr(error, "code", None) == OVERFLOW_CODE:
        return True
    if any(kind.__name__ in OVERFLOW_CLASSES for kind in type(error).__mro__):
        return True
    if getattr(error, "status_code", None) not in (400, 413):
        return False
    message = getattr(error, "message", None)
    text = (message if isinstance(message, str) else str(error))[:4096].lower()
    return any(wording in text for wording in OVERFLOW_MESSAGES)


def to_rows(items: Sequence[Any]) -> tuple[list[Unit], list[ChatMessage]]:
    """The units of the input items and the provider-facing row of each."""
    units: list[Unit] = []
    rows: list[ChatMessage] = []
    for unit in item_units(items):
        units.append(unit)
        rows.append(unit_row(items, unit)[0])
    return units, rows


def item_units(items: Sequence[Any], start: int = 0) -> list[Unit]:
    """The units of the input items from `start` (a unit's first item): each user, system
    and output item alone, each run of assistant-side items together."""
    units: list[Unit] = []
    group: list[int] = []
    for i, item in enumerate(items[start:], start):
        if not isinstance(item, dict):
            raise ValueError(f"input[{i}]: expected an input item (a dict), got {type(item)}")
        if _side(item) == "assistant":
            group.append(i)
            continue
        if group:
            units.append(tuple(group))
            group = []
        units.append((i,))
    if group:
        units.append(tuple(group))
    return units


def unit_row(items: Sequence[Any], unit: Unit) -> tuple[ChatMessage, int]:
    """A unit's row and the loadable parts its text does not carry (the model's generated
    images: `Pricing.parts`)."""
    first = items[unit[0]]
    side = _side(first)
    if side == "assistant":
        return _assistant_row([items[i] for i in unit])
    try:
        return _row(side, first), 0
    except (TypeError, ValueError) as error:
        raise ValueError(f"input[{unit[0]}]: {error}") from None


def from_units(
    items: Sequence[Any], units: Sequence[Unit], last: _Made | None = None
) -> list[TResponseInputItem]:
    """The items the units stand for, in order, with the breadcrumb where `CRUMB` is.
    `last`: the last request made, resumed from the first unit that is not its own (a unit
    is made once per history, `Prefixes`: the same unit object stands for equal items), and
    left holding this one."""
    out: list[TResponseInputItem] = []
    ends: list[int] = []
    first = 0
    if last is not None:
        m = min(len(units), len(last.units))
        first = next(compress(range(m), map(is_not, last.units, units)), m)
        out, ends = last.out[: last.ends[first - 1] if first else 0], last.ends[:first]
    for unit in units[first:]:
        if unit == CRUMB:
            out.append(cast(TResponseInputItem, Breadcrumb()))
        elif unit and isinstance(unit[0], dict):
            out.extend(unit)
        elif unit != INSTRUCTIONS:
            out.extend(items[i] for i in unit)
        if last is not None:
            ends.append(len(out))
    if last is None:
        return out
    last.units, last.out, last.ends = list(units), out, ends
    return list(out)  # the caller's own list


@dataclasses.dataclass
class _Made:
    """The last request `from_units` made: the next one, whose units are its own but
    near their end (the kept run grows; a clear rewrites a few, CTX-6..10), resumes there."""

    units: list[Unit] = dataclasses.field(default_factory=list)
    out: list[TResponseInputItem] = dataclasses.field(default_factory=list)
    ends: list[int] = dataclasses.field(default_factory=list)
    """`len(out)` after each unit."""


def tool_context_unit(items: Sequence[Any]) -> Callable[[Unit, ChatMessage], Unit]:
    """Writes the items of a unit the tool context edit changed (CTX-1..9), new dicts: a
    cleared output keeps its `call_id` and gets the placeholder as an output of its own
    type (`_cleared_output`); a collapse summary is one assistant message in place of the
    calls; a call whose inputs were cleared keeps its `call_id` and name, its `arguments` "{}"."""

    def rewrite(unit: Unit, row: ChatMessage) -> Unit:
        old = [items[i] for i in unit]
        result = parse_tool_result(row)
        if result is not None:
            return tuple(_cleared_output(item, result.content) for item in old)
        parsed = parse_tool_calls(row)
        if parsed is None:
            return ({"role": "assistant", "content": row.content},)
        emptied = {call.id for call in parsed.calls if call.arguments == "{}"}
        return tuple(
            {**item, "arguments": "{}"}
            if item.get("type") == "function_call" and item.get("call_id") in emptied else item
            for item in old
        )

    return rewrite


def _cleared_output(item: dict[str, Any], text: str) -> dict[str, Any]:
    """An output item with `text` in place of what it returned, still a valid item of its
    type: a string output becomes `text`; a `shell_call_output`'s chunks one chunk of that
    stdout (its first outcome kept); a list of parts one `input_text` part; a
    `tool_search_output` loads no tools (it has no `output`)."""
    if "output" not in item:
        return {**item, "tools": []}
    output = item["output"]
    if not isinstance(output, list):
        return {**item, "output": text}
    if item.get("type") == "shell_call_output":
        first = output[0] if output and isinstance(output[0], dict) else {}
        outcome = first.get("outcome", {"type": "exit", "exit_code": 0})
        return {**item, "output": [{"stdout": text, "stderr": "", "outcome": outcome}]}
    return {**item, "output": [{"type": "input_text", "text": text}]}


def _sent(
    items: Sequence[Any], done: Trimmed[Unit], last: _Made | None = None
) -> list[TResponseInputItem]:
    """`from_units(items, done.units)`, the kept run that ends the input taken as a slice
    (else resumed from `last`, the last request made, when given)."""
    size = done.given
    start = kept_tail(done.positions, size) if done.positions else None
    if start is not None and start < size and done.units:
        tail = done.units[len(done.units) - (size - start):]
        if tail and tail[0] not in (CRUMB, INSTRUCTIONS):
            head = done.units[: len(done.units) - (size - start)]
            return [*from_units(items, head), *items[tail[0][0] :]]
    return from_units(items, done.units, last)


def has_breadcrumb(items: Sequence[Any], *, session_crumb: bool = False) -> bool:
    """Whether the item after the leading system messages is the breadcrumb: a `Breadcrumb`,
    or, when `session_crumb` (a `HisttrimSession`'s flag) says one is there, that message."""
    for item in items:
        if isinstance(item, Breadcrumb):
            return True
        if not (isinstance(item, dict) and _side(item) == "system"):
            return session_crumb and item == Breadcrumb()
    return False


def _side(item: dict[str, Any]) -> str:
    role, kind = item.get("role"), str(item.get("type", ""))
    if role in ("system", "developer"):
        return "system"
    if role == "user":
        return "user"
    if kind.endswith("_output") and isinstance(item.get("call_id"), str):
        return "output"  # `*_call_output`, and `tool_search_output` (a `tool_search_call`'s)
    return "assistant"


def _row(side: str, item: dict[str, Any]) -> ChatMessage:
    if side == "system":
        return ChatMessage.system(_text(item.get("content", ""), images=False))
    if side == "user":
        return ChatMessage.user(_text(item.get("content", ""), images=True))
    if item.get("type") == "shell_call_output" and _shell_chunks(item.get("output")):
        return result_row(item["call_id"], "".join(  # what the shell printed
            str(chunk.get("stdout", "")) + str(chunk.get("stderr", ""))
            for chunk in item["output"]))
    if "output" in item:
        output = item["output"]
    else:  # a `tool_search_output`: the tools it loaded are what the model reads
        output = {k: v for k, v in item.items() if k not in ("type", "call_id", "id", "status")}
    parts = output if isinstance(output, list) else [output] if isinstance(output, dict) else []
    targets: list[str] = []
    rest: list[Any] = []
    for part in parts:
        target = _part_target(part) if isinstance(part, dict) else None
        if target is None:
            rest.append(part)
        else:  # declared like an image: one attachment (decision "File parts")
            targets.append(target)
    if not targets:
        return result_row(item["call_id"], _text(output, images=False))
    return result_row(item["call_id"], _text(rest, images=False), targets)


def _part_target(part: dict[str, Any]) -> str | None:
    """What an image or file part is priced by (`carriers.part_target`), else None."""
    kind = part.get("type")
    if kind in ("input_image", "computer_screenshot"):
        url = part.get("image_url")
        if isinstance(url, str) and url:
            return part_target("image", url=url)
        return part_target("image", name=str(part.get("file_id") or ""))
    if kind == "input_file":
        media, name = _file_facts(part)
        return part_target("file", media, name=name)
    return None


def _assistant_row(group: Sequence[dict[str, Any]]) -> tuple[ChatMessage, int]:
    texts: list[str] = []
    calls: list[tuple[str, str, str]] = []
    generated = 0
    for item in group:
        kind = str(item.get("type", ""))
        if item.get("role") == "assistant":
            texts.append(_text(item.get("content", ""), images=False))
        elif kind.endswith("_call") and isinstance(item.get("call_id"), str):
            arguments = item.get("arguments", item.get("action", item.get("input", {})))
            name = item.get("name")
            calls.append((item["call_id"], name if isinstance(name, str) else kind,
                          arguments if isinstance(arguments, str) else _dumps(arguments)))
        elif kind == "reasoning":
            texts.extend(str(s.get("text", "")) for s in item.get("summary", ())
                         if isinstance(s, dict))
        elif kind == "image_generation_call" and isinstance(item.get("result"), str):
            # the generated image: priced as one image beside the text, never its base64
            generated += part_loads(part_target("image", name=str(item.get("id") or "")))
            texts.append(_dumps({k: v for k, v in item.items() if k != "result"}))
        else:
            texts.append(_dumps(item))
    text = "".join(texts)
    if calls:
        return dispatch_row(text or None, calls), generated
    # A text that would read as a tool-call envelope is priced as a string (as the adapters do).
    if text[:1] == "{":
        return ChatMessage.assistant(json.dumps(text, ensure_ascii=False)), generated
    return ChatMessage.assistant(text), generated


def _shell_chunks(output: object) -> bool:
    """Whether a `shell_call_output`'s output is its chunks of stdout and stderr."""
    return isinstance(output, list) and all(
        isinstance(c, dict) and isinstance(c.get("stdout", ""), str)
        and isinstance(c.get("stderr", ""), str) for c in output)


def _text(content: Any, *, images: bool) -> str:
    """A message's text; in a user message text parts are text, an `input_image` is an
    `[IMAGE:...]` marker (EST-2) and an `input_file` one attachment (`file_marker`)."""
    if isinstance(content, str):
        return framework_user_text([(content, False)]) if images else content
    if not isinstance(content, list):
        return _dumps(content)
    pieces: list[tuple[str, bool]] = []
    for part in content:
        if not isinstance(part, dict):
            pieces.append((_dumps(part), False))
        elif part.get("type") in ("input_text", "output_text", "text"):
            pieces.append((str(part.get("text", "")), False))
        elif part.get("type") == "refusal":
            pieces.append((str(part.get("refusal", "")), False))
        elif images and part.get("type") in ("input_image", "input_file"):
            pieces.append((image_marker(_part_target(part) or ""), True))
        else:
            pieces.append((_dumps(part), False))
    if not images:
        return "".join(piece for piece, _ in pieces)
    return framework_user_text(pieces)


def _file_facts(part: dict[str, Any]) -> tuple[str, str]:
    """An `input_file`'s media type (from its `data:` URL, if any) and its name."""
    name = part.get("filename") or part.get("file_id") or part.get("file_url") or ""
    return data_url_media_type(part.get("file_data")), str(name)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


class HisttrimInputFilter:
    """A `call_model_input_filter`: the spec's whole-turn trim of each model call's input.

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
        session: HisttrimSession | None = None,
    ) -> None:
        self.trimmer = Trimmer(
            runtime, budget_tokens=budget_tokens, max_turns=max_turns,
            token_counter=token_counter, on_trim=on_trim,
            policy=policy, clock=clock,
        )
        self._sent: dict[tuple[int, ...], Trimmed[Unit]] = {}
        """The last requests sent, by their items' identities: the model's usage report for
        one is recorded for the history it was made from."""
        self._made = _Made()
        """The last request sent as its units (a clear's, made again from its units)."""
        self._making = threading.Lock()
        """Held while a call resumes from `_made`; a concurrent call makes its own."""
        self.session = session
        """The session the runs use, if a `HisttrimSession`: its flag says whether the input
        starts with its breadcrumb (the SDK copies session items, so their type is lost)."""

    def _crumb(self, items: Sequence[Any]) -> bool:
        flag = self.session is not None and self.session.crumb_present
        return has_breadcrumb(items, session_crumb=flag)

    def trim(self, items: Sequence[Any], instructions: str | None) -> Trimmed[Unit]:
        """The units to send (the instructions counted as a leading system row)."""
        units, priced = self.priced(items, instructions)
        return self.trimmer.trim(units, priced, crumb=CRUMB, crumb_present=self._crumb(items),
                                 rewrite=tool_context_unit(items))

    def priced(
        self, items: Sequence[Any], instructions: str | None = None
    ) -> tuple[list[Unit], list[Priced]]:
        """The units of the items and each one's row and prices, the instructions first as a
        system row; each unit priced once per filter (`PriceCache`)."""
        return priced_units(self.trimmer, items, instructions)

    def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        items = list(data.model_data.input)
        done = self.trim(items, data.model_data.instructions)
        self.trimmer.check_sent(done)
        if self._making.acquire(blocking=False):
            try:
                sent = _sent(items, done, self._made)
            finally:
                self._making.release()
        else:
            sent = _sent(items, done)
        self._sent[_key(sent)] = done
        while len(self._sent) > SENT_KEPT:
            self._sent.pop(next(iter(self._sent)))
        return ModelInputData(input=sent, instructions=data.model_data.instructions)

    def report(self, input: Any, usage: object, tools: Any = ()) -> None:
        """The provider's usage for the request made of `input` (its `input_tokens`, cached
        input included): the next call of that history applies it (USAGE-1..8); `tools`: the
        tools the model call was given (their schemas' estimate)."""
        if isinstance(input, list):
            sent = self._sent.pop(_key(input), None)
            if sent is not None:
                self.trimmer.report(
                    sent, {"input_tokens": getattr(usage, "input_tokens", None)},
                    tool_schema_tokens=schema_tokens(_tool_schemas(tools), self.trimmer.policy),
                )

    def reactive(self, items: Sequence[Any], instructions: str | None) -> list[Any] | None:
        """After an overflow: the items trimmed to 2/3 of their estimate (RUN-2), or None
        when one turn is left. When `items` is a request this filter sent, its history holds
        the retry's cut and the retry's usage is recorded (`report`)."""
        sent = self._sent.pop(_key(items), None)
        units, priced = self.priced(items, instructions)
        done = self.trimmer.reactive(
            units, priced, crumb=CRUMB, crumb_present=self._crumb(items),
            rewrite=tool_context_unit(items), sent=sent,
        )
        if done is None:
            return None
        self.trimmer.check_pairing(done.rows)
        shorter = from_units(items, done.units)
        if sent is not None:
            self._sent[_key(shorter)] = done
            while len(self._sent) > SENT_KEPT:
                self._sent.pop(next(iter(self._sent)))
        return shorter


def priced_units(
    trimmer: Trimmer, items: Sequence[Any], instructions: str | None = None
) -> tuple[list[Unit], list[Priced]]:
    """`HisttrimInputFilter.priced` with `trimmer`'s cache."""
    cache = trimmer.cache
    cache.fit(len(items))
    seen = trimmer.prefixes.find(items)
    units: list[Unit] = []
    priced: list[Priced] = []
    if seen is not None and seen.units:  # its last unit may be a run the new items continue
        units, priced = seen.units[:-1], seen.priced[:-1]
    start = units[-1][-1] + 1 if units else 0
    shared = len(priced)
    tail = item_units(items, start)
    units.extend(tail)  # new lists (slices): each copied once
    priced.extend(
        cache.get(_anchors(items, unit), partial(unit_row, items, unit)) for unit in tail)
    trimmer.prefixes.remember(items, units, priced, seen, shared)
    if instructions:
        units = [INSTRUCTIONS, *units]
        priced = [cache.priced(ChatMessage.system(instructions)), *priced]
    return units, priced


SENT_KEPT = 16
"""How many requests sent a filter remembers until their usage is reported."""


def _key(items: Sequence[Any]) -> tuple[int, ...]:
    return tuple(map(id, items))


def _anchors(items: Sequence[Any], unit: Unit) -> tuple[object, ...]:
    """What a unit's price is cached by: its items and their values (a value replaced in an
    item is a new unit)."""
    if len(unit) == 1:
        item = items[unit[0]]
        return (item, *item.values())
    return tuple(chain.from_iterable((items[i], *items[i].values()) for i in unit))


def _tools_arg(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The `tools` a `Model.get_response`/`stream_response` call was given (after
    `system_instructions, input`: `model_settings, tools, ...`)."""
    return kwargs.get("tools", args[1] if len(args) > 1 else ())


def _tool_schemas(tools: Any) -> list[tuple[object, object, object]]:
    """The SDK's tools as (name, description, parameters); a hosted tool has no schema the
    request carries as text (none is counted)."""
    if not isinstance(tools, list | tuple):
        return []
    return [(getattr(tool, "name", ""), getattr(tool, "description", ""),
             getattr(tool, "params_json_schema", None)) for tool in tools
            if getattr(tool, "params_json_schema", None) is not None]


class HisttrimModel(Model):
    """A model that answers a context overflow once: the input trimmed to 2/3 (RUN-2)."""

    def __init__(self, inner: Model, trimming: HisttrimInputFilter) -> None:
        self.inner = inner
        self.trimming = trimming

    def _retry_input(self, instructions: str | None, input: Any, error: Exception) -> list[Any]:
        if not is_context_overflow(error) or not isinstance(input, list):
            raise error
        shorter = self.trimming.reactive(input, instructions)
        if shorter is None:
            raise error
        return shorter

    async def get_response(
        self, system_instructions: str | None, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        tools = _tools_arg(args, kwargs)
        try:
            response = await self.inner.get_response(
                system_instructions, input, *args, **kwargs)
        except Exception as error:
            shorter = self._retry_input(system_instructions, input, error)
            response = await self.inner.get_response(
                system_instructions, shorter, *args, **kwargs)
            self.trimming.report(shorter, getattr(response, "usage", None), tools)
            return response
        self.trimming.report(input, getattr(response, "usage", None), tools)
        return response

    async def stream_response(
        self, system_instructions: str | None, input: Any, *args: Any, **kwargs: Any
    ) -> AsyncIterator[Any]:
        started = False
        tools = _tools_arg(args, kwargs)
        try:
            async for event in self.inner.stream_response(
                system_instructions, input, *args, **kwargs
            ):
                started = True
                if getattr(event, "type", None) == "response.completed":
                    response = getattr(event, "response", None)
                    self.trimming.report(input, getattr(response, "usage", None), tools)
                yield event
            return
        except Exception as error:
            if started:
                raise
            shorter = self._retry_input(system_instructions, input, error)
        async for event in self.inner.stream_response(
            system_instructions, shorter, *args, **kwargs
        ):
            if getattr(event, "type", None) == "response.completed":
                response = getattr(event, "response", None)
                self.trimming.report(shorter, getattr(response, "usage", None), tools)
            yield event

    async def close(self) -> None:
        await self.inner.close()


class HisttrimSession(SessionABC):
    """A session whose runs see the newest `max_turns` whole turns (KEEP-2, LIMIT-1).

    Every item is stored in `inner` as `inner` stores it (`add_items` only appends, so
    concurrent saves, cancellation and crashes keep what `inner` keeps); `get_items()` reads
    the stored items and returns the newest `max_turns` whole turns, the breadcrumb first when
    older turns are left out (SEEN-1), with one `HistoryTrimmed` to `on_trim` (SEEN-2). The
    stored session is never rewritten, so nothing is lost; `crumb_present=True` says the
    stored items were trimmed before (by an older version of this wrapper) and begin with
    turns after an omission. `policy`: the
    runtime's (or the spec's) by default; a target below 1 holds the cut as the Agent does."""

    def __init__(
        self,
        inner: Session,
        *,
        max_turns: int,
        on_trim: OnTrim | None = None,
        crumb_present: bool = False,
        policy: Policy | None = None,
    ) -> None:
        self.inner = inner
        self.session_id = inner.session_id
        self.session_settings = inner.session_settings
        self.trimmer = Trimmer(
            budget_tokens=0, max_turns=max_turns, on_trim=on_trim, policy=policy
        )
        if not isinstance(crumb_present, bool):
            raise ValueError(f"crumb_present: expected True or False, got {crumb_present!r}")
        self.stored_crumb = crumb_present
        self.crumb_present = crumb_present
        """Whether the last `get_items()` began with the breadcrumb (the input filter reads
        it: the SDK copies session items, so their type is lost)."""

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        stored = await self.inner.get_items()
        crumb: list[Any] = [Breadcrumb()] if self.stored_crumb else []
        units, priced = priced_units(self.trimmer, [*crumb, *stored])
        done = self.trimmer.trim(units, priced, crumb=CRUMB, crumb_present=self.stored_crumb)
        view = from_units([*crumb, *stored], done.units) if done.trimmed else [*crumb, *stored]
        self.crumb_present = bool(view) and isinstance(view[0], Breadcrumb)
        if limit is not None:
            return view[-limit:] if limit > 0 else []
        return view

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        await self.inner.add_items(items)

    async def pop_item(self) -> TResponseInputItem | None:
        return await self.inner.pop_item()

    async def clear_session(self) -> None:
        await self.inner.clear_session()
        self.stored_crumb = self.crumb_present = False


async def run_with_histtrim(
    agent: Agent[Any],
    input: Any,
    *,
    trimming: HisttrimInputFilter | None = None,
    run_config: RunConfig | None = None,
    **kwargs: Any,
) -> RunResult:
    """`Runner.run` with `trimming` (default: the spec's limits, reading a `HisttrimSession`'s
    breadcrumb flag) as the input filter and the starting agent's model wrapped in
    `HisttrimModel` (overflow retry, RUN-2)."""
    session = kwargs.get("session")
    if trimming is None:
        trimming = HisttrimInputFilter(
            session=session if isinstance(session, HisttrimSession) else None
        )
    config = run_config or RunConfig()
    if config.call_model_input_filter is not None:
        raise ValueError("run_config: already has a call_model_input_filter; pass trimming only")
    model = config.model if config.model is not None else agent.model
    if not isinstance(model, Model):
        model = config.model_provider.get_model(model)
    wrapped = HisttrimModel(model, trimming)
    config = dataclasses.replace(
        config, call_model_input_filter=trimming,
        model=wrapped if config.model is not None else None,
    )
    return await Runner.run(agent.clone(model=wrapped), input, run_config=config, **kwargs)
