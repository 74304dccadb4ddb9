"""Anthropic Messages request bodies <-> histtrim provider-facing rows, and whole-turn trims
that take and return Anthropic bodies.

Each message is paired with one row that says what the library needs (its role, whether it
opens a turn, its price); the message itself is kept as given, outside the row, so the round
trip is exact and no text can forge a role, a block or a message:

- the top-level `system` (a string or text blocks) is one leading system row;
- a user message with `tool_result` blocks is a `[Tool results]` carrier row: it continues
  the turn of the `tool_use` it answers (TURN-3), and the images inside its results are
  declared attachments, priced only in the current turn (EST-2, EST-3);
- any other user message is a user row, its images `[IMAGE:...]` markers priced as images
  (EST-2); an assistant message with `tool_use` blocks is a native tool-call row.

Messages are hostile: `anthropic_checks` checks each one before it is converted here; rows
made by the library are written as messages by `anthropic_write`.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring
from typing import Any

from histtrim.adapters import RecordTrimResult, recorded_report, trim_records
from histtrim.adapters.anthropic_checks import (
    AnthropicFormatError,
    check_block,
    checked_blocks,
    image_target,
)
from histtrim.adapters.anthropic_write import AnthropicMessage, row_message
from histtrim.adapters.kinds import json_kind
from histtrim.carriers import (
    file_marker,
    image_marker,
    json_object,
    parse_tool_calls,
    part_target,
    tool_results_carrier,
)
from histtrim.messages import BREADCRUMB, TOOL_RESULTS_PREFIX, ChatMessage, ToolCall
from histtrim.policy import SPEC, Policy
from histtrim.tool_context import carrier_sections


@dataclass(frozen=True)
class AnthropicConversation:
    """A request body read for trimming: its rows (the system row first, when there is a
    `system`) and the untouched messages and other keys they came from."""

    rows: list[ChatMessage]
    messages: list[AnthropicMessage]
    body: dict[str, Any]
    """The request body's other keys (model, system, tools, ...), `messages` a placeholder."""

    @property
    def system_rows(self) -> int:
        return len(self.rows) - len(self.messages)

    def to_body(self, messages: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any]:
        """The request body with `messages` (default: the ones read), key order kept."""
        out = copy.deepcopy(self.body)
        out["messages"] = copy.deepcopy(list(self.messages if messages is None else messages))
        return out


def from_anthropic(
    body: Mapping[str, Any] | Sequence[Mapping[str, Any]],
) -> AnthropicConversation:
    """Read a request body (or just its list of messages); bad input names the field."""
    if isinstance(body, Mapping):
        messages = body.get("messages")
        if not isinstance(messages, list):
            raise AnthropicFormatError("messages", f"expected a list, got {json_kind(messages)}")
        # The other keys, deep-copied, with a placeholder where `messages` goes back.
        document = {k: None if k == "messages" else copy.deepcopy(v) for k, v in body.items()}
    elif isinstance(body, Sequence) and not isinstance(body, str | bytes):
        document, messages = {"messages": None}, list(body)
    else:
        raise AnthropicFormatError("", f"expected a request body or a list, got {json_kind(body)}")
    rows: list[ChatMessage] = []
    if "system" in document:
        rows.append(ChatMessage.system(_system_text(document["system"])))
    rows.extend(message_row(message, f"messages[{i}]") for i, message in enumerate(messages))
    messages = copy.deepcopy(messages)
    return AnthropicConversation(rows, messages, document)


def to_anthropic(source: AnthropicConversation | Iterable[ChatMessage]) -> dict[str, Any]:
    """The request body of a conversation read by `from_anthropic` (exactly as read), or a
    body built from provider-facing rows (system rows become `system`, tool-call envelopes
    `tool_use` blocks, tool-result envelopes `tool_result` blocks)."""
    if isinstance(source, AnthropicConversation):
        return source.to_body()
    system: list[str] = []
    messages: list[AnthropicMessage] = []
    for row in source:
        if row.role == "system":
            system.append(row.content)
        else:
            messages.append(row_message(row))
    body: dict[str, Any] = {}
    if system:
        body["system"] = "\n\n".join(system)
    body["messages"] = messages
    return body


def anthropic_breadcrumb() -> AnthropicMessage:
    """The breadcrumb as an Anthropic message (a user message, like the row)."""
    return {"role": "user", "content": BREADCRUMB}


def trim_anthropic(
    body: Mapping[str, Any],
    *,
    budget_tokens: int | None = None,
    max_turns: int | None = None,
    crumb_present: bool = False,
    breadcrumb: bool = True,
    policy: Policy = SPEC,
    usage: bool = True,
) -> tuple[dict[str, Any], RecordTrimResult[AnthropicMessage | None]]:
    """Trim a request body by token budget or turn count, whole turns only: a `tool_use` and
    its `tool_result` are kept or dropped together, the `system` always stays (TURN-5).

    Returns the trimmed body (kept messages untouched, the breadcrumb message inserted first
    unless `breadcrumb=False`) and the trim result with its `HistoryTrimmed` event. With
    `usage`, the last assistant message's recorded `usage` (input, cache reads and writes,
    USAGE-5) decides when it is over the budget (USAGE-1..3)."""
    conversation = from_anthropic(body)
    system = conversation.system_rows
    records: list[AnthropicMessage | None] = [None] * system + list(conversation.messages)
    result = trim_records(
        records,
        conversation.rows,
        budget_tokens=budget_tokens,
        max_turns=max_turns,
        crumb_present=crumb_present,
        breadcrumb_record=anthropic_breadcrumb() if breadcrumb else None,
        policy=policy,
        reported=recorded_report(records, conversation.rows, policy=policy,
                                 crumb_present=crumb_present) if usage else None,
        edit_record=edited_message,
    )
    kept = [record for record in result.records[system:] if record is not None]
    return conversation.to_body(kept), result


def edited_message(message: AnthropicMessage | None, row: ChatMessage) -> AnthropicMessage:
    """The message of a row the tool context edit changed (CTX-1..9): a collapse summary is
    an assistant text message; a cleared `[Tool results]` carrier keeps each `tool_result`
    block (its id, its error flag), each with its own section's cleared output (the whole
    cleared text when the sections cannot be read one to one); a call whose inputs were
    cleared keeps its blocks, the cleared calls' `input` emptied."""
    assert message is not None  # system rows are never edited
    if row.role == "user" and row.content.startswith(TOOL_RESULTS_PREFIX):
        blocks_in = message["content"]
        results = [
            k for k, block in enumerate(blocks_in)
            if isinstance(block, Mapping) and block.get("type") == "tool_result"
        ]
        found = carrier_sections(row.content)
        if found is not None and len(found[0]) == len(results):
            texts = [output for _, output in found[0]]
        else:
            texts = [row.content[len(TOOL_RESULTS_PREFIX):].lstrip("\n")] * len(results)
        blocks = list(blocks_in)
        for k, text in zip(results, texts, strict=True):
            blocks[k] = {key: v for key, v in blocks_in[k].items() if key != "content"} | {
                "content": text}
        return {**message, "content": blocks}
    parsed = parse_tool_calls(row)
    if parsed is None:
        return {"role": "assistant", "content": row.content}
    emptied = {call.id for call in parsed.calls if call.arguments == "{}"}
    blocks = [
        {**block, "input": {}}
        if isinstance(block, Mapping) and block.get("type") == "tool_use"
        and block.get("id") in emptied else block
        for block in message["content"]
    ]
    return {**message, "content": blocks}


# -- messages -> rows --------------------------------------------------------------------

_PLAIN = frozenset(("role", "content"))
_TEXT = frozenset(("type", "text"))
_TOOL_USE = frozenset(("type", "id", "name", "input"))
_RESULT_KEYS = frozenset(("type", "tool_use_id", "content", "is_error"))
_string = encode_basestring


def message_sketch(message: Mapping[str, Any]) -> tuple[str, str, tuple[str, ...]] | None:
    """The usual messages' row without a `ChatMessage`: (role, text, ids) of an assistant
    message of text and `tool_use` blocks (the ids it dispatches), or of a user message of
    `tool_result` blocks with string content (the ids it answers, `result_ids`); None for any
    other message (`message_row` reads it). The text is exactly `message_row`'s (a test holds
    them equal)."""
    content = message.get("content")
    if type(content) is not list or message.keys() != _PLAIN or not content:
        return None
    role = message.get("role")
    if role == "assistant":
        texts, calls, ids = [], [], []
        for block in content:
            if type(block) is not dict:
                return None
            keys, kind = block.keys(), block.get("type")
            if kind == "tool_use" and keys == _TOOL_USE:
                call_id, name, arguments = block["id"], block["name"], block["input"]
                if not (type(call_id) is str and call_id and type(name) is str and name
                        and type(arguments) is dict):
                    return None
                calls.append(f'{{"id":{_string(call_id)},"name":{_string(name)},'
                             f'"arguments":{_string(_dumps(arguments))}}}')
                ids.append(call_id)
            elif kind == "text" and keys == _TEXT and type(block["text"]) is str:
                texts.append(block["text"])
            else:
                return None
        if not calls:
            return None
        text = "".join(texts)
        said = _string(text) if text else "null"
        return "assistant", f'{{"content":{said},"tool_calls":[{",".join(calls)}]}}', tuple(ids)
    if role != "user":
        return None
    parts, ids = [TOOL_RESULTS_PREFIX], []
    for block in content:
        if type(block) is not dict or block.get("type") != "tool_result":
            return None
        if not block.keys() <= _RESULT_KEYS:
            return None
        call_id, output = block.get("tool_use_id"), block.get("content", "")
        error = block.get("is_error", False)
        if not (type(call_id) is str and call_id and type(output) is str and type(error) is bool):
            return None
        name = call_id + " error" if error else call_id
        parts.append(f'<tool_result name="{name}">\n{output}\n</tool_result>')
        ids.append(call_id)
    return "user", "\n".join(parts), tuple(ids)


def result_ids(message: Mapping[str, Any]) -> tuple[str, ...]:
    """The `tool_use_id`s a user message's `tool_result` blocks answer, in order: the API
    pairs each `tool_use` with a result in the very next message (PAIR-1 for this format)."""
    content = message.get("content")
    if message.get("role") != "user" or type(content) is not list:
        return ()
    return tuple(
        block["tool_use_id"] for block in content
        if type(block) is dict and block.get("type") == "tool_result"
        and type(block.get("tool_use_id")) is str
    )


def message_row(message: object, where: str = "") -> ChatMessage:
    """The row of one message; errors name the field under `where` (e.g. `messages[3]`)."""
    role, blocks = checked_blocks(message, where)
    if role == "assistant":
        return _assistant_row(blocks)
    if any(block["type"] == "tool_result" for block in blocks):
        return _results_row(blocks)
    return ChatMessage.user("".join(_render(block) for block in blocks))


def _render(block: Mapping[str, Any]) -> str:
    """A block's priced text: text as is, an image as a marker, a document one attachment
    (`file_marker`), any other block as JSON."""
    if block["type"] == "text":
        return str(block["text"])
    if block["type"] == "image":
        return image_marker(image_target("", block))
    if block["type"] == "document":
        return file_marker(*_document_facts(block))
    return _dumps(block)


def _document_facts(block: Mapping[str, Any]) -> tuple[str, str]:
    """A document block's media type and name (its title, or its URL)."""
    source = block.get("source")
    source = source if isinstance(source, Mapping) else {}
    media = source.get("media_type") if source.get("type") == "base64" else None
    if source.get("type") == "text":
        media = "text/plain"
    name = block.get("title") or source.get("url") or ""
    return (media if isinstance(media, str) and media else "application/pdf"), str(name)


def _assistant_row(blocks: Sequence[Mapping[str, Any]]) -> ChatMessage:
    calls = [
        ToolCall(id=b["id"], name=b["name"], arguments=_dumps(b["input"]))
        for b in blocks
        if b["type"] == "tool_use"
    ]
    text = "".join(_render(b) for b in blocks if b["type"] != "tool_use")
    if calls:
        return ChatMessage.assistant_tool_calls(text or None, calls)
    if json_object(text) is not None:
        # Text that reads as a JSON object would read as a tool-call envelope: price it as
        # its JSON string instead, so no text becomes a call.
        return ChatMessage.assistant(_dumps(text))
    return ChatMessage.assistant(text)


def _results_row(blocks: Sequence[Mapping[str, Any]]) -> ChatMessage:
    """A `[Tool results]` carrier: each result's text, and its images as declared
    attachments (dispatched, so priced, only in the current turn)."""
    results, extra = tool_results(blocks)
    row = tool_results_carrier(
        [(r.tool_use_id + (" error" if r.is_error else ""), r.text) for r in results],
        attachments=[image for r in results for image in r.images],
    )
    if extra:
        row = ChatMessage.user(row.content + "\n" + extra)
    return row


@dataclass(frozen=True)
class ToolResultBlock:
    """A checked `tool_result` block: its call, its text and the targets of its images
    (the images the tool declared, EST-3)."""

    tool_use_id: str
    is_error: bool
    text: str
    images: tuple[str, ...]


def tool_results(blocks: Sequence[Mapping[str, Any]]) -> tuple[list[ToolResultBlock], str]:
    """A checked user message's `tool_result` blocks, and the priced text of its other
    blocks (what a client added after the results)."""
    results: list[ToolResultBlock] = []
    extra: list[str] = []
    for block in blocks:
        if block["type"] != "tool_result":
            extra.append(_render(block))
            continue
        content = block.get("content", "")
        inner = [{"type": "text", "text": content}] if isinstance(content, str) else content
        results.append(ToolResultBlock(
            block["tool_use_id"],
            bool(block.get("is_error")),
            "".join(str(b["text"]) for b in inner if b["type"] == "text"),
            tuple(tool_image_target(b) for b in inner if b["type"] == "image"),
        ))
    return results, "".join(extra)


def tool_image_target(block: Mapping[str, Any]) -> str:
    """A checked image block inside a `tool_result` as its declared attachment's target, by
    the one rule for an image a tool sends (`carriers.part_target`): its URL, or for base64
    data a short `data:` target naming its type, never the encoding. An older result is priced
    by the bytes of its row (EST-4), so a screenshot there costs its short target, as in the
    reference's rows, not 4 bytes of text for every 3 of image (decision "Declared
    attachments of tool results"); the message keeps the data."""
    source = block["source"]
    if source["type"] == "base64":
        return part_target("image", source["media_type"])
    return part_target("image", url=image_target("", block))


def _system_text(system: object) -> str:
    if isinstance(system, str):
        return system
    if not isinstance(system, list):
        raise AnthropicFormatError(
            "system", f"expected a string or a list of text blocks, got {json_kind(system)}"
        )
    texts = []
    for k, block in enumerate(system):
        checked = check_block(f"system[{k}]", block)
        if checked["type"] != "text":
            raise AnthropicFormatError(
                f"system[{k}].type", f"expected 'text', got {checked['type']!r}"
            )
        texts.append(str(checked["text"]))
    return "\n\n".join(texts)


def _dumps(value: object) -> str:
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as error:
        raise AnthropicFormatError("", f"not JSON-serializable: {error}") from None
