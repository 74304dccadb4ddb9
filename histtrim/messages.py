"""TURN-1: the two history representations, provider-facing `ChatMessage` rows and the
structured `ConversationMessage` union, plus the constants every layer shares."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from itertools import repeat
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, NamedTuple, Self

from pydantic import (
    ConfigDict,
    Discriminator,
    Field,
    StrictStr,
    Tag,
    TypeAdapter,
    field_validator,
)

from histtrim._unset import HidesUnset, unset_by_default

Role = Literal["system", "user", "assistant", "tool"]

TOOL_RESULTS_PREFIX = "[Tool results]"
"""A user row starting with this text carries tool results (prompt mode): never a new turn."""

BREADCRUMB = "[earlier turns omitted to fit the context window]"
"""The context note inserted before the first kept turn after a trim (SEEN-1)."""

BYTES_PER_TOKEN = 4
FRAME_TOKENS = 4
"""EST-1: a row costs `ceil(utf8_bytes / BYTES_PER_TOKEN) + FRAME_TOKENS` as plain text."""


MAX_JSON_DEPTH = 128
"""The reference parser's nesting budget: every `[` or `{` spends one level and the
parser fails when none is left, so 127 nested arrays/objects parse and 128 do not."""


def json_too_deep(value: Any) -> bool:
    """Whether a Python value (dicts/lists) nests `MAX_JSON_DEPTH` levels or more, found
    without recursion (so a hostile value never reaches Python's recursion limit)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping | list | tuple):
            if depth + 1 >= MAX_JSON_DEPTH:
                return True
            children = item.values() if isinstance(item, Mapping) else item
            stack.extend((child, depth + 1) for child in children)
    return False


class RowFacts(NamedTuple):
    """What every limit and the estimate read from a row, computed once per (frozen) row."""

    opens_turn: bool
    """TURN-2/TURN-3: a real user row opens a turn; a `[Tool results]` carrier does not."""
    utf8_bytes: int
    image_markers: bool
    """A real user row with an `[IMAGE:...]` marker in its text: its price needs the marker
    split (EST-2)."""
    declares_attachments: bool = False
    """A tool result or `[Tool results]` carrier that may declare attachments: in the current
    turn its price needs the envelope parsed (EST-2, EST-3); any other row is its bytes."""
    plain_tokens: int = FRAME_TOKENS
    """The row priced as plain text (EST-1, EST-4): one cached integer, summed at C speed."""


_NOT_A_ROW = RowFacts(opens_turn=False, utf8_bytes=0, image_markers=False)


def row_facts(role: str, content: str) -> RowFacts:
    """The facts of a row with this role and text (what `ChatMessage` caches; a reader that
    prices rows without making them uses the same rule). Non-UTF-8 text raises ValueError."""
    size = len(content) if content.isascii() else len(content.encode("utf-8"))
    real_user = role == "user" and not content.startswith(TOOL_RESULTS_PREFIX)
    # An escaped key (`"\u0061ttachments"`) still declares attachments.
    declares = (role == "tool" and ('"attachments"' in content or "\\u" in content)) or (
        role == "user" and not real_user and "[Tool attachments: " in content
    )
    return RowFacts(
        real_user,
        size,
        real_user and "[IMAGE:" in content,
        declares,
        -(-size // BYTES_PER_TOKEN) + FRAME_TOKENS,
    )


class _Frozen(HidesUnset):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ToolCall(_Frozen):
    """One call the assistant asked for; `arguments` is JSON text (a dict is encoded)."""

    id: StrictStr = Field(min_length=1)
    name: StrictStr = Field(min_length=1)
    arguments: StrictStr = "{}"

    @field_validator("arguments", mode="before")
    @classmethod
    def _encode_arguments(cls, value: Any) -> Any:
        if isinstance(value, Mapping | list):
            if json_too_deep(value):
                raise ValueError(f"arguments nest {MAX_JSON_DEPTH} levels or more")
            return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        return value


class Attachment(_Frozen):
    """A file a tool declared with its result; only images are dispatched to the model."""

    kind: StrictStr = "image"
    target: StrictStr = Field(min_length=1)


def as_attachments(value: Any) -> Any:
    """Declared attachments as a tuple: a bare target string is one image (a lone str is
    refused, so a path is never read as a sequence of one-letter targets)."""
    if isinstance(value, str):
        raise ValueError("expected a list of attachments, got one string (wrap it in a list)")
    if isinstance(value, bytes | Mapping) or not isinstance(value, Iterable):
        return value  # left to the field's own validation, which names what it expected
    return tuple(Attachment(target=a) if isinstance(a, str) else a for a in value)


class ChatMessage(_Frozen):
    """A provider-facing row: `content` is exactly the text sent to the provider."""

    kind: Literal["chat"] = "chat"
    role: Role
    content: StrictStr
    extras: StrictStr | None = unset_by_default()
    """What a foreign format says that the row cannot (e.g. an OpenAI message's `name`), as
    the compact JSON text of an object keyed by adapter. Kept beside `content`, so no text
    can forge it; never read by the estimate or the turn rules; left out of dumps when unset."""

    @field_validator("extras")
    @classmethod
    def _json_object(cls, extras: str | None) -> str | None:
        if extras is not None:
            try:
                extras.encode("utf-8")
                ok = isinstance(json.loads(extras), dict)
            except (ValueError, RecursionError):
                ok = False
            if not ok:
                raise ValueError("extras must be the JSON text of an object")
        return extras

    @field_validator("content")
    @classmethod
    def _utf8(cls, content: str) -> str:
        if not content.isascii():
            try:
                content.encode("utf-8")
            except UnicodeEncodeError as error:
                raise ValueError(f"content is not valid UTF-8 text: {error.reason}") from None
        return content

    if TYPE_CHECKING:
        facts: ClassVar[RowFacts]  # per row, set once by model_post_init

    def model_post_init(self, context: Any, /) -> None:
        """Compute the row facts once, when the row is made: every later trim reads them."""
        self.__dict__["facts"] = row_facts(self.role, self.content)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy whose facts match its (possibly updated) content."""
        copied = super().model_copy(update=update, deep=deep)
        copied.model_post_init(None)
        return copied

    @classmethod
    def system(cls, text: str) -> ChatMessage:
        return cls(role="system", content=text)

    @classmethod
    def user(cls, text: str) -> ChatMessage:
        return cls(role="user", content=text)

    @classmethod
    def assistant(cls, text: str) -> ChatMessage:
        return cls(role="assistant", content=text)

    @classmethod
    def assistant_tool_calls(
        cls, text: str | None, calls: Iterable[ToolCall | Mapping[str, Any]]
    ) -> ChatMessage:
        """A native tool-call row: `{"content": text|null, "tool_calls": [...]}`."""
        checked = AssistantToolCalls(text=text, tool_calls=tuple(calls))  # type: ignore[arg-type]
        envelope = {
            "content": checked.text,
            "tool_calls": [call.model_dump() for call in checked.tool_calls],
        }
        return cls(role="assistant", content=_compact(envelope))

    @classmethod
    def tool_result(
        cls,
        tool_call_id: str,
        content: str,
        *,
        attachments: Sequence[Attachment | str] | None = None,
    ) -> ChatMessage:
        """A native tool-result row; `attachments` (image targets) are declared by the tool."""
        result = ToolResultMessage(
            tool_call_id=tool_call_id,
            content=content,
            attachments=attachments,  # type: ignore[arg-type]  # targets become Attachments
        )
        return result.row()


class AssistantToolCalls(_Frozen):
    """Structured: the assistant's text (if any) and the tool calls it made."""

    kind: Literal["assistant_tool_calls"] = "assistant_tool_calls"
    facts: ClassVar[RowFacts] = _NOT_A_ROW
    text: StrictStr | None = None
    tool_calls: tuple[ToolCall, ...] = Field(min_length=1)


class ToolResultMessage(_Frozen):
    """Structured: the output of one tool call, and the files the tool declared with it
    (EST-3: its images are these attachments, never marker text in `content`)."""

    tool_call_id: StrictStr = Field(min_length=1)
    content: StrictStr
    tool_name: StrictStr | None = None
    attachments: tuple[Attachment, ...] | None = unset_by_default()
    """None: the tool declared none (the row has no `attachments` array); left out of dumps."""

    @field_validator("attachments", mode="before")
    @classmethod
    def _as_tuple(cls, value: Any) -> Any:
        return as_attachments(value)

    def row(self) -> ChatMessage:
        """The native tool row the provider gets: the envelope, attachments included."""
        envelope: dict[str, Any] = {"tool_call_id": self.tool_call_id, "content": self.content}
        if self.attachments is not None:
            envelope["attachments"] = [a.model_dump() for a in self.attachments]
        return ChatMessage(role="tool", content=_compact(envelope))


class ToolResults(_Frozen):
    """Structured: the results of one round of tool calls."""

    kind: Literal["tool_results"] = "tool_results"
    facts: ClassVar[RowFacts] = _NOT_A_ROW
    results: tuple[ToolResultMessage, ...] = Field(min_length=1)


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return str(value.get("kind", "chat"))
    return str(getattr(value, "kind", "chat"))


ConversationMessage = Annotated[
    Annotated[ChatMessage, Tag("chat")]
    | Annotated[AssistantToolCalls, Tag("assistant_tool_calls")]
    | Annotated[ToolResults, Tag("tool_results")],
    Discriminator(
        _kind,
        custom_error_type="invalid_kind",
        custom_error_message="kind must be 'chat', 'assistant_tool_calls' or 'tool_results'",
        custom_error_context={"discriminator": "kind"},
    ),
]
"""A structured `Agent.history` item, discriminated on `kind` ("chat" by default)."""

Row = ChatMessage | AssistantToolCalls | ToolResults
"""Any row of either representation (the plain union, for typing)."""

_CHAT_ROWS: TypeAdapter[list[ChatMessage]] = TypeAdapter(list[ChatMessage])
_CONVERSATION: TypeAdapter[list[ConversationMessage]] = TypeAdapter(list[ConversationMessage])
_STRUCTURED = (ChatMessage, AssistantToolCalls, ToolResults)


def chat_rows(history: Iterable[ChatMessage | Mapping[str, Any]]) -> Sequence[ChatMessage]:
    """The rows as `ChatMessage` objects; dicts are validated (errors name the row and field)."""
    rows = history if isinstance(history, Sequence) else list(history)
    if all(map(isinstance, rows, repeat(ChatMessage))):  # C speed: this runs at every trim
        return rows  # type: ignore[return-value]
    return _CHAT_ROWS.validate_python(list(rows))


def conversation_rows(
    history: Iterable[ConversationMessage | Mapping[str, Any]],
) -> Sequence[ConversationMessage]:
    """The items as structured messages; dicts are validated (errors name the item and field)."""
    rows = history if isinstance(history, Sequence) else list(history)
    if all(isinstance(row, _STRUCTURED) for row in rows):
        return rows  # type: ignore[return-value]
    return _CONVERSATION.validate_python(list(rows))


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
