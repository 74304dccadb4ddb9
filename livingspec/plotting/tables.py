"""Plain-text tables and one-line row summaries: the numbers notebooks print (nbval reads text)."""

from __future__ import annotations

import html
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from histtrim.carriers import parse_tool_calls, parse_tool_result, to_chat_messages
from histtrim.display.columns import fold, truncate
from histtrim.display.tables import Table, text_table
from histtrim.estimate import message_costs
from histtrim.messages import (
    TOOL_RESULTS_PREFIX,
    AssistantToolCalls,
    ChatMessage,
    ToolCall,
    ToolResults,
)
from histtrim.turns import TurnIndex, index_turns

Item = ChatMessage | AssistantToolCalls | ToolResults


def print_block(*parts: object) -> None:
    """Show the parts, one per line, as a single output.

    Jupyter may split the output of several writes into separate stream outputs depending
    on timing; one write per cell keeps committed notebook outputs byte-identical. When a
    part is a `Table` and an IPython kernel is running, the output is one rich display: the
    same text as `text/plain`, and HTML (tables as tables, the rest preformatted). A line
    wider than the output column (`COLUMNS`) is broken with a hanging indent (`fold`); a
    table's text is never broken (narrow the table instead)."""
    parts = tuple(part if isinstance(part, Table) else fold(str(part)) for part in parts)
    text = "\n".join(map(str, parts))
    shell = _ipython()
    if shell is None or not any(isinstance(part, Table) for part in parts):
        sys.stdout.write(text + "\n")
        return
    from IPython.display import display  # only inside a kernel

    chunks: list[str] = []
    pending: list[str] = []
    for part in parts:
        if isinstance(part, Table):
            if pending:
                chunks.append(f"<pre>{html.escape(chr(10).join(pending))}</pre>")
                pending = []
            chunks.append(part._repr_html_())
        elif str(part):
            pending.append(str(part))
    if pending:
        chunks.append(f"<pre>{html.escape(chr(10).join(pending))}</pre>")
    display({"text/plain": text, "text/html": "\n".join(chunks)}, raw=True)  # type: ignore[no-untyped-call]


@contextmanager
def shows_error(*kinds: type[BaseException]) -> Iterator[None]:
    """Run the block, which must raise one of `kinds`, and show the error as a traceback's
    last line reads it (`Name: message`, then its notes) through `print_block`, folded to the
    output column: a traceback's line is never broken and wraps on the site. A block that
    raises nothing is an error of its own, so the cell still fails when the call does not."""
    try:
        yield
    except kinds as error:
        print_block(f"{type(error).__name__}: {error}", *getattr(error, "__notes__", ()))
        return
    names = " or ".join(kind.__name__ for kind in kinds)
    raise AssertionError(f"expected {names}; the block raised nothing")


def _ipython() -> object | None:
    """The running IPython shell, if any (never imports IPython outside one)."""
    module = sys.modules.get("IPython")
    get = getattr(module, "get_ipython", None)
    return get() if get is not None else None


def _shorten(text: str, width: int) -> str:
    """One line of at most `width` display columns (a CJK character or an emoji is two)."""
    return truncate(text.replace("\n", " ⏎ "), width)


def row_summary(item: Item, width: int = 60) -> str:
    """One line describing a row of either representation (tool calls by id, name and args)."""
    if isinstance(item, AssistantToolCalls):
        return _shorten(_calls_text(item.text, item.tool_calls), width)
    if isinstance(item, ToolResults):
        parts = ", ".join(
            f"{r.tool_call_id}{_attached(len(r.attachments or ()))}: {r.content}"
            for r in item.results
        )
        return _shorten(f"results {parts}", width)
    parsed_calls = parse_tool_calls(item)
    if parsed_calls is not None:
        return _shorten(_calls_text(parsed_calls.text, parsed_calls.calls), width)
    result = parse_tool_result(item)
    if result is not None:
        extra = _attached(len(result.attachments or ()))
        return _shorten(f"result {result.tool_call_id}{extra}: {result.content}", width)
    return _shorten(item.content, width)


def _attached(count: int) -> str:
    return f" (+{count} attached image{'s' * (count != 1)})" if count else ""


def _calls_text(text: str | None, calls: Sequence[ToolCall]) -> str:
    listed = ", ".join(f"{c.id} {c.name} {c.arguments}" for c in calls)
    return (f"{text} · " if text else "") + f"calls {listed}"


def _role(item: Item) -> str:
    if isinstance(item, AssistantToolCalls):
        return "assistant*"
    if isinstance(item, ToolResults):
        return "tool*"
    if item.role == "user" and item.content.startswith(TOOL_RESULTS_PREFIX):
        return "user (carrier)"
    return item.role


def item_costs(history: Sequence[Item]) -> list[int]:
    """The estimate of each item; a structured item costs the provider-facing rows it becomes."""
    spans: list[int] = []
    rows: list[ChatMessage] = []
    for item in history:
        converted = to_chat_messages([item])
        spans.append(len(converted))
        rows.extend(converted)
    costs = message_costs(rows)
    out: list[int] = []
    position = 0
    for span in spans:
        out.append(sum(costs[position : position + span]))
        position += span
    return out


def _turn_labels(index: TurnIndex) -> list[str]:
    """`sys` for the leading system block, `crumb`, the 1-based turn, or `-` (no turn)."""
    labels = [str(turn + 1) if turn >= 0 else "-" for turn in index.turn_of()]
    labels[: index.prefix_len] = ["sys"] * index.prefix_len
    if index.crumb is not None:
        labels[index.crumb] = "crumb"
    return labels


def history_table(
    history: Sequence[Item], *, crumb_present: bool = False, width: int = 60
) -> Table:
    """Row, role, turn (1-based; `sys` = leading system block, `-` = before any user row),
    estimated tokens, text.

    Roles marked `*` are structured items (`AssistantToolCalls`, `ToolResults`)."""
    index = index_turns(history, crumb_present=crumb_present)
    labels = _turn_labels(index)
    costs = item_costs(history)
    return text_table(
        ["row", "role", "turn", "tokens", "content"],
        [
            (i, _role(item), labels[i], costs[i], row_summary(item, width))
            for i, item in enumerate(history)
        ],
    )
