"""Shared hypothesis strategies: random histories whose structure is known by construction.

Each strategy yields a `GeneratedHistory`: the rows plus where the system prefix, the
breadcrumb and every turn start are, and how the estimate should price each row. Tests
use that record as an oracle that never consults `histtrim.turns`.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import product
from typing import Any, Generic, Literal, TypeVar

from hypothesis import strategies as st

from histtrim.carriers import image_marker, image_target, tool_results_carrier
from histtrim.messages import (
    BREADCRUMB,
    AssistantToolCalls,
    ChatMessage,
    ConversationMessage,
    ToolCall,
    ToolResultMessage,
    ToolResults,
)
from histtrim.trim import breadcrumb_message

M = TypeVar("M")

LOADABLE_TARGETS = (
    "/tmp/screenshot.png",
    "https://example.com/cat.jpg",
    "http://intranet/diagram.gif",
    "data:image/png;base64,iVBORw0KGgo=",
    "C:\\Users\\ana\\foto.png",
    "C:/reports/chart.png",
    "\\\\fileserver\\share\\scan.png",
    "  /padded/target.png  ",
)
"""Targets the runtime can load (Decisions, "Images": `/`, http(s), data:, drive, UNC)."""

NON_LOADABLE_TARGETS = ("photo.png", "", "ftp://example.com/a.png", "relative/x.png", "~/pic.png")
"""Marker targets that are plain text, not dispatched images."""

MALFORMED_TOOL_CONTENTS = (
    "plain output, no envelope [IMAGE:/tmp/a.png]",
    '{"tool_call_id": 7, "content": "x"}',
    '{"tool_call_id": "call_x", "content": "x", "attachments": "nope"}',
    '{"tool_call_id": "call_x", "content": "x", "attachments": [{"kind": "image"}]}',
    "{not json",
    "[1, 2, 3]",
)
"""`tool` row contents that are not a valid envelope: priced as plain text, never paired."""

USER_TEXTS = (
    "Find every TODO in src/ and list the files",
    "Search the repo for files named *.toml",
    "¿Dónde está el archivo de configuración?",
    "Résumé des échecs, por favor — merci",
    "日本語で説明してください 😀",
    "ok",
    "",
    "Summarise this log: " + "x" * 397,
    BREADCRUMB,  # a real user message equal to the breadcrumb text: an ordinary turn
    "[tool results] in lower case is a real question",
    " [Tool results] after a space is a real question",
    "[Tool results",
)
"""Texts of real user rows; none starts with `[Tool results]` at position 0."""

ASSISTANT_TEXTS = (
    "I'll search for it.",
    "Found 3 matches in src/app.py.",
    "Voilà — c'est fini ✅",
    "Here is the chart: [IMAGE:/tmp/chart.png]",  # assistant marker text is plain text
    "a",
    "",
    "Long answer. " * 40,
)
TOOL_OUTPUTS = (
    "src/app.py:12: # TODO: handle errors",
    "no matches",
    "captured [IMAGE:/tmp/out.png] as text",  # marker text in a tool's output (EST-3)
    "año, niño, señal",
    "",
    "line\n" * 120,
)
SYSTEM_TEXTS = ("You are a careful coding assistant.", "Reply in Spanish — en español.")
TOOL_NAMES = ("search_files", "read_file", "screenshot", "grep")

IMAGE_SETS: tuple[tuple[str, ...], ...] = (
    (),
    (),
    ("/tmp/screenshot.png",),
    ("photo.png",),
    ("https://example.com/cat.jpg", ""),
    ("data:image/png;base64,iVBORw0KGgo=", "C:\\Users\\ana\\foto.png", "~/pic.png"),
    ("  /padded/target.png  ", "\\\\fileserver\\share\\scan.png"),
)
"""Marker targets appended to a real user row (loadable and not)."""

ATTACHMENT_SETS: tuple[tuple[str, ...] | None, ...] = (
    None,
    None,
    (),
    ("/tmp/screenshot.png",),
    ("photo.png",),
    ("https://example.com/cat.jpg", "relative/x.png"),
    ("C:/reports/chart.png", "http://intranet/diagram.gif"),
)
"""Attachments a tool declares with its result (None: no `attachments` array)."""

CARRIER_ATTACHMENT_SETS: tuple[tuple[str, ...], ...] = (
    (),
    (),
    ("/tmp/screenshot.png",),
    ("https://example.com/cat.jpg", "data:image/png;base64,iVBORw0KGgo="),
)
"""Declared (loadable) attachments of a `[Tool results]` carrier."""

_ALPHABET = "abcdefghijklmnopqrstuvwxyz ABCXYZ0123456789.,:;!?-_/'\"\nñáéüçß€日本語😀✅"
FREE_TEXT = st.text(alphabet=_ALPHABET, max_size=24)
"""Random text without brackets (so it never forms a marker or a carrier prefix)."""


# Strategies are built once and reused: building them on every draw dominates generation.
@cache
def _pick(choices: tuple[Any, ...]) -> st.SearchStrategy[Any]:
    return st.sampled_from(choices)


@cache
def _text(choices: tuple[str, ...], free_text: bool) -> st.SearchStrategy[str]:
    return st.one_of(_pick(choices), FREE_TEXT) if free_text else _pick(choices)


@cache
def _product(pools: tuple[tuple[Any, ...], ...]) -> st.SearchStrategy[tuple[Any, ...]]:
    return st.sampled_from(tuple(product(*pools)))


@cache
def _ints(low: int, high: int) -> st.SearchStrategy[int]:
    return st.integers(low, high)


@cache
def _kinds(choices: tuple[str, ...], max_size: int) -> st.SearchStrategy[list[str]]:
    return st.lists(_pick(choices), max_size=max_size)


_BOOLEANS = st.booleans()


@dataclass(frozen=True)
class Pricing:
    """How EST-2/EST-3 price a row when its images are dispatched.

    `scope` is "always" for real user rows and "current" for tool results / carriers with
    declared attachments (dispatched only after the last real user row). Rows without a
    `Pricing` are plain text: `ceil(bytes(content) / 4) + 4`."""

    scope: Literal["always", "current"]
    text: str
    images: int


@dataclass(frozen=True)
class GeneratedHistory(Generic[M]):
    """A generated history and its structure, recorded while it was built."""

    rows: tuple[M, ...]
    prefix_len: int
    crumb: bool
    turn_starts: tuple[int, ...]
    pricing: tuple[Pricing | None, ...]

    @property
    def history(self) -> list[M]:
        """A fresh list of the rows (what a test passes to a trim)."""
        return list(self.rows)

    @property
    def body_start(self) -> int:
        return self.prefix_len + self.crumb

    @property
    def turn_count(self) -> int:
        return len(self.turn_starts)

    def turn_start(self, turn: int) -> int:
        """First row kept when turns `turn..` are kept; turn 0 takes the preamble."""
        return self.body_start if turn == 0 else self.turn_starts[turn]

    def owner(self, row: int) -> int:
        """The turn a row belongs to (preamble rows go with turn 0); -1 for prefix/crumb."""
        if row < self.body_start:
            return -1
        return max(bisect_right(self.turn_starts, row) - 1, 0)


class _Builder:
    """Appends rows and records their structure; `structured` picks the representation.

    Each piece is picked with one draw from pre-built choices, which keeps generation
    cheap enough for 500 examples per property."""

    def __init__(
        self, draw: Callable[[st.SearchStrategy[Any]], Any], structured: bool, free_text: bool
    ) -> None:
        self.draw = draw
        self.structured = structured
        self.free_text = free_text
        self.rows: list[Any] = []
        self.pricing: list[Pricing | None] = []
        self.turn_starts: list[int] = []
        self.calls = 0

    def add(self, row: Any, pricing: Pricing | None = None) -> None:
        self.rows.append(row)
        self.pricing.append(pricing)

    def pick(self, *pools: tuple[Any, ...]) -> tuple[Any, ...]:
        """One draw from the product of `pools` (one choice per pool)."""
        return tuple(self.draw(_product(pools)))

    def text(self, choices: tuple[str, ...], picked: str | None = None) -> str:
        """`picked` (or a fresh pick from `choices`), or random text when `free_text` is on."""
        if self.free_text:
            return str(self.draw(_text(choices, True)))
        return picked if picked is not None else str(self.draw(_pick(choices)))

    def user_opener(self, images: bool) -> None:
        """A real user row, maybe with loadable and non-loadable `[IMAGE:...]` markers."""
        text, targets = self.pick(USER_TEXTS, IMAGE_SETS if images else ((),))
        content = priced = self.text(USER_TEXTS, text)
        count = 0
        for target in targets:
            marker = image_marker(target)
            content += " " + marker
            if image_target(target) is not None:
                count += 1
                priced += " "
            else:
                priced += " " + marker
        self.turn_starts.append(len(self.rows))
        self.add(ChatMessage.user(content), Pricing("always", priced, count))

    def native_exchange(self, images: bool) -> None:
        """An assistant tool-call row followed by one result per call."""
        n, query, text = self.pick((1, 2, 3), USER_TEXTS[:5], (None, *ASSISTANT_TEXTS[:3]))
        ids = [f"call_{self.calls + i}" for i in range(n)]
        self.calls += n
        names = [TOOL_NAMES[(self.calls + i) % len(TOOL_NAMES)] for i in range(n)]
        calls = [
            ToolCall.model_validate({"id": i, "name": name, "arguments": {"query": query}})
            for i, name in zip(ids, names, strict=True)
        ]
        attachment_sets = ATTACHMENT_SETS if images else (None,)
        picks = [self.pick(TOOL_OUTPUTS, attachment_sets) for _ in ids]
        outputs = [self.text(TOOL_OUTPUTS, output) for output, _ in picks]
        if self.structured:
            self.add(AssistantToolCalls(text=text, tool_calls=tuple(calls)))
            results = [
                ToolResultMessage(
                    tool_call_id=i, content=o, tool_name=name,
                    attachments=targets,
                )
                for i, o, name, (_, targets) in zip(ids, outputs, names, picks, strict=True)
            ]
            split = self.draw(_ints(1, n))
            self.add(ToolResults(results=tuple(results[:split])))
            if results[split:]:
                self.add(ToolResults(results=tuple(results[split:])))
            return
        self.add(ChatMessage.assistant_tool_calls(text, calls))
        for call_id, output, (_, targets) in zip(ids, outputs, picks, strict=True):
            if targets is None:
                self.add(ChatMessage.tool_result(call_id, output))
                continue
            count = sum(1 for t in targets if image_target(t) is not None)
            self.add(
                ChatMessage.tool_result(call_id, output, attachments=targets),
                Pricing("current", output, count),
            )

    def prompt_exchange(self, images: bool) -> None:
        """Prompt mode: the assistant writes the call as text, results come back in a
        `[Tool results]` user carrier (part of the same turn, TURN-3)."""
        name = TOOL_NAMES[len(self.rows) % len(TOOL_NAMES)]
        self.add(
            ChatMessage.assistant(f'<tool_call>{{"name": "{name}", "arguments": {{}}}}</tool_call>')
        )
        declared = CARRIER_ATTACHMENT_SETS if images and not self.structured else ((),)
        output, targets = self.pick(TOOL_OUTPUTS, declared)
        pairs = [(name, self.text(TOOL_OUTPUTS, output))]
        carrier = tool_results_carrier(pairs, attachments=targets)
        if targets:
            self.add(carrier, Pricing("current", tool_results_carrier(pairs).content, len(targets)))
        else:
            self.add(carrier)

    def assistant(self) -> None:
        self.add(ChatMessage.assistant(self.text(ASSISTANT_TEXTS)))

    def late_system(self) -> None:
        self.add(ChatMessage.system(self.draw(_pick(SYSTEM_TEXTS))))

    def malformed_tool(self) -> None:
        content = self.draw(_pick(MALFORMED_TOOL_CONTENTS))
        self.add(ChatMessage(role="tool", content=content))


def _histories(
    draw: Callable[[st.SearchStrategy[Any]], Any],
    *,
    structured: bool,
    min_turns: int,
    max_turns: int,
    max_steps: int,
    max_system: int,
    crumb: bool | None,
    late_system: bool,
    preamble: bool,
    images: bool,
    native_tools: bool,
    carriers: bool,
    malformed: bool,
    free_text: bool,
) -> GeneratedHistory[Any]:
    b = _Builder(draw, structured, free_text)
    for _ in range(draw(_ints(0, max_system))):
        b.late_system()
    prefix_len = len(b.rows)
    has_crumb = draw(_BOOLEANS) if crumb is None else crumb
    if has_crumb:
        b.add(breadcrumb_message())

    exchanges = ["assistant"]
    if native_tools:
        exchanges.append("native")
    if carriers:
        exchanges.append("prompt")
    steps = [*exchanges]
    if late_system:
        steps.append("late_system")
    if malformed and not structured:
        steps.append("malformed")

    def run(kind: str) -> None:
        if kind == "assistant":
            b.assistant()
        elif kind == "native":
            b.native_exchange(images)
        elif kind == "prompt":
            b.prompt_exchange(images)
        elif kind == "late_system":
            b.late_system()
        else:
            b.malformed_tool()

    if preamble:
        # Rows before the first real user row (never a system row: that would extend the prefix).
        for kind in draw(_kinds(tuple(exchanges), 2)):
            run(kind)
    for _ in range(draw(_ints(min_turns, max_turns))):
        b.user_opener(images)
        for kind in draw(_kinds(tuple(steps), max_steps)):
            run(kind)
    return GeneratedHistory(
        tuple(b.rows), prefix_len, has_crumb, tuple(b.turn_starts), tuple(b.pricing)
    )


@st.composite
def chat_histories(
    draw: st.DrawFn,
    *,
    min_turns: int = 0,
    max_turns: int = 6,
    max_steps: int = 4,
    max_system: int = 2,
    crumb: bool | None = None,
    late_system: bool = True,
    preamble: bool = True,
    images: bool = True,
    native_tools: bool = True,
    carriers: bool = True,
    malformed: bool = True,
    free_text: bool = False,
) -> GeneratedHistory[ChatMessage]:
    """Provider-facing histories: leading system rows, an optional breadcrumb (`crumb`:
    None draws it), an optional preamble, then turns of a real user row followed by
    assistant text, native tool calls with their results, `[Tool results]` carriers,
    late system rows and malformed tool rows; user images and declared attachments.
    `free_text` mixes random text into the sampled phrases (slower to generate)."""
    return _histories(
        draw,
        structured=False,
        min_turns=min_turns,
        max_turns=max_turns,
        max_steps=max_steps,
        max_system=max_system,
        crumb=crumb,
        late_system=late_system,
        preamble=preamble,
        images=images,
        native_tools=native_tools,
        carriers=carriers,
        malformed=malformed,
        free_text=free_text,
    )


@st.composite
def conversation_histories(
    draw: st.DrawFn,
    *,
    min_turns: int = 0,
    max_turns: int = 6,
    max_steps: int = 4,
    max_system: int = 2,
    crumb: bool | None = None,
    late_system: bool = True,
    preamble: bool = True,
    tool_calls: bool = True,
    carriers: bool = True,
    free_text: bool = False,
    images: bool = True,
) -> GeneratedHistory[ConversationMessage]:
    """Structured `Agent.history` items: chat rows, `AssistantToolCalls` and `ToolResults`
    (a round's results sometimes split in two items, some declaring images), carriers and
    late system rows."""
    return _histories(
        draw,
        structured=True,
        min_turns=min_turns,
        max_turns=max_turns,
        max_steps=max_steps,
        max_system=max_system,
        crumb=crumb,
        late_system=late_system,
        preamble=preamble,
        images=images,
        native_tools=tool_calls,
        carriers=carriers,
        malformed=False,
        free_text=free_text,
    )


def token_budgets(total: int, boundaries: Sequence[int] = ()) -> st.SearchStrategy[int]:
    """Budgets for a history whose estimate is `total`: 0 (no trim) or 1 now and then, any
    value up to a little over the total, and mostly each of `boundaries` (e.g. the size of
    every whole-turn suffix) exactly, one below or one above."""
    anywhere = st.integers(1, total + 50)
    edges = sorted({max(b + d, 0) for b in boundaries for d in (-1, 0, 1)})
    if not edges:
        return st.one_of(anywhere, st.sampled_from((1, 0)))
    # Hypothesis favours the first branch (its "simplest" choice): put the edges first.
    near = st.sampled_from(edges)
    return st.one_of(near, anywhere, near, st.sampled_from((1, 0)))
