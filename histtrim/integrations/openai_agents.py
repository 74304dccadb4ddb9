"""histtrim in the OpenAI Agents SDK: `Runner.run(agent, input,
run_config=RunConfig(call_model_input_filter=HisttrimInputFilter()))`, or `run_with_histtrim`.

- `HisttrimInputFilter` trims the input items of each model call by whole turns (LIMIT-1,
  KEEP-1, RUN-1), counting the agent's instructions, puts a breadcrumb user message after the
  leading system items (SEEN-1) and emits `HistoryTrimmed` (SEEN-2). The run's items and the
  session are not changed: each call is trimmed again from the full input.
- `HisttrimModel` wraps a `Model`: when the provider reports a context overflow
  (`is_context_overflow`: OpenAI's `context_length_exceeded`, LiteLLM's, other providers'), it
  trims the input that overflowed to two thirds of its estimate and calls the model once more
  (RUN-2). The SDK has no overflow hook, so the retry lives in the model.
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
from collections.abc import AsyncIterator, Sequence
from typing import Any, cast

from histtrim.carriers import (
    data_url_media_type,
    file_marker,
    file_target,
    framework_user_text,
    image_marker,
)
from histtrim.counting import TokenCounter
from histtrim.integrations import framework_imports
from histtrim.integrations._trimmer import OnTrim, Trimmed, Trimmer
from histtrim.messages import BREADCRUMB, ChatMessage, ToolCall
from histtrim.policy import Policy
from histtrim.route import ResolvedRuntime

with framework_imports("openai-agents"):
    from agents import Agent, Model, ModelResponse, RunConfig, Runner, RunResult, TResponseInputItem
    from agents.memory import Session, SessionABC
    from agents.run_config import CallModelData, ModelInputData

Unit = tuple[int, ...]
"""The input items one row stands for, by index."""
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
    group: list[int] = []

    def flush() -> None:
        if group:
            units.append(tuple(group))
            rows.append(_assistant_row([items[i] for i in group]))
            group.clear()

    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ValueError(f"input[{i}]: expected an input item (a dict), got {type(item)}")
        side = _side(item)
        if side == "assistant":
            group.append(i)
            continue
        flush()
        try:
            rows.append(_row(side, item))
        except (TypeError, ValueError) as error:
            raise ValueError(f"input[{i}]: {error}") from None
        units.append((i,))
    flush()
    return units, rows


def from_units(items: Sequence[Any], units: Sequence[Unit]) -> list[TResponseInputItem]:
    """The items the units stand for, in order, with the breadcrumb where `CRUMB` is."""
    out: list[TResponseInputItem] = []
    for unit in units:
        if unit == CRUMB:
            out.append(cast(TResponseInputItem, Breadcrumb()))
        elif unit != INSTRUCTIONS:
            out.extend(items[i] for i in unit)
    return out


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
    if kind.endswith("_call_output") and isinstance(item.get("call_id"), str):
        return "output"
    return "assistant"


def _row(side: str, item: dict[str, Any]) -> ChatMessage:
    if side == "system":
        return ChatMessage.system(_text(item.get("content", ""), images=False))
    if side == "user":
        return ChatMessage.user(_text(item.get("content", ""), images=True))
    output = item.get("output", "")
    images: list[str] = []
    rest: list[Any] = []
    for part in output if isinstance(output, list) else ():
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "input_image":
            images.append(str(part.get("image_url") or part.get("file_id") or "file"))
        elif kind == "input_file":  # declared like an image: one attachment (decision)
            images.append(file_target(*_file_facts(part)))
        else:
            rest.append(part)
    text = _text(rest if images else output, images=False)
    return ChatMessage.tool_result(item["call_id"], text, attachments=images or None)


def _assistant_row(group: Sequence[dict[str, Any]]) -> ChatMessage:
    texts: list[str] = []
    calls: list[ToolCall] = []
    for item in group:
        kind = str(item.get("type", ""))
        if item.get("role") == "assistant":
            texts.append(_text(item.get("content", ""), images=False))
        elif kind.endswith("_call") and isinstance(item.get("call_id"), str):
            arguments = item.get("arguments", item.get("action", item.get("input", {})))
            calls.append(ToolCall(id=item["call_id"], name=str(item.get("name") or kind),
                                  arguments=arguments if isinstance(arguments, str)
                                  else _dumps(arguments)))
        elif kind == "reasoning":
            texts.extend(str(s.get("text", "")) for s in item.get("summary", ())
                         if isinstance(s, dict))
        else:
            texts.append(_dumps(item))
    text = "".join(texts)
    if calls:
        return ChatMessage.assistant_tool_calls(text or None, calls)
    # A text that would read as a tool-call envelope is priced as a string (as the adapters do).
    return ChatMessage.assistant(json.dumps(text, ensure_ascii=False) if text[:1] == "{" else text)


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
        elif images and part.get("type") == "input_image":
            target = part.get("image_url") or part.get("file_id") or "file"
            pieces.append((image_marker(str(target)), True))
        elif images and part.get("type") == "input_file":
            pieces.append((file_marker(*_file_facts(part)), True))
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
    `Policy(token_trim_target=Fraction(7, 10))` to keep the Agent's cache-stable cut."""

    def __init__(
        self,
        runtime: ResolvedRuntime | None = None,
        *,
        budget_tokens: int | None = None,
        max_turns: int | None = None,
        token_counter: TokenCounter | None = None,
        on_trim: OnTrim | None = None,
        policy: Policy | None = None,
        session: HisttrimSession | None = None,
    ) -> None:
        self.trimmer = Trimmer(
            runtime, budget_tokens=budget_tokens, max_turns=max_turns,
            token_counter=token_counter, on_trim=on_trim,
            policy=policy,
        )
        self.session = session
        """The session the runs use, if a `HisttrimSession`: its flag says whether the input
        starts with its breadcrumb (the SDK copies session items, so their type is lost)."""

    def _crumb(self, items: Sequence[Any]) -> bool:
        flag = self.session is not None and self.session.crumb_present
        return has_breadcrumb(items, session_crumb=flag)

    def trim(self, items: Sequence[Any], instructions: str | None) -> Trimmed[Unit]:
        """The units to send (the instructions counted as a leading system row)."""
        units, rows = to_rows(items)
        if instructions:
            units, rows = [INSTRUCTIONS, *units], [ChatMessage.system(instructions), *rows]
        return self.trimmer.trim(units, rows, crumb=CRUMB, crumb_present=self._crumb(items))

    def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        items = list(data.model_data.input)
        done = self.trim(items, data.model_data.instructions)
        self.trimmer.check_pairing(done.rows)
        return ModelInputData(
            input=from_units(items, done.units), instructions=data.model_data.instructions
        )

    def reactive(self, items: Sequence[Any], instructions: str | None) -> list[Any] | None:
        """After an overflow: the items trimmed to 2/3 of their estimate (RUN-2), or None
        when one turn is left."""
        units, rows = to_rows(items)
        if instructions:
            units, rows = [INSTRUCTIONS, *units], [ChatMessage.system(instructions), *rows]
        done = self.trimmer.reactive(units, rows, crumb=CRUMB, crumb_present=self._crumb(items))
        if done is None:
            return None
        self.trimmer.check_pairing(done.rows)
        return from_units(items, done.units)


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
        try:
            return await self.inner.get_response(system_instructions, input, *args, **kwargs)
        except Exception as error:
            shorter = self._retry_input(system_instructions, input, error)
        return await self.inner.get_response(system_instructions, shorter, *args, **kwargs)

    async def stream_response(
        self, system_instructions: str | None, input: Any, *args: Any, **kwargs: Any
    ) -> AsyncIterator[Any]:
        started = False
        try:
            async for event in self.inner.stream_response(
                system_instructions, input, *args, **kwargs
            ):
                started = True
                yield event
            return
        except Exception as error:
            if started:
                raise
            shorter = self._retry_input(system_instructions, input, error)
        async for event in self.inner.stream_response(
            system_instructions, shorter, *args, **kwargs
        ):
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
        units, rows = to_rows([*crumb, *stored])
        done = self.trimmer.trim(units, rows, crumb=CRUMB, crumb_present=self.stored_crumb)
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
