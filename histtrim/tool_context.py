"""CTX-1..12: tool context retention, a request-time edit of the provider-facing rows.

Two members of one family, chosen by `Policy.tool_context`: the reference runtime's collapse
(`keep_tool_context_turns`: older turns keep their prompt, one `[Tool exchange: ...]` row and
their closing reply) and placeholder clearing (older tool results become a placeholder, their
calls stay). Both read the history alone, never change it (the stored history, the ledger and
every transcript keep all their rows) and keep every call paired with its result."""

from __future__ import annotations

import json
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate, compress
from operator import is_not
from typing import Any, cast

from histtrim.carriers import (
    ATTACHMENTS_HEADER,
    json_object,
    parse_tool_calls,
    parse_tool_result,
    tool_call_ids,
    tool_results_carrier,
)
from histtrim.counting import Pricing, TokenCounter
from histtrim.messages import TOOL_RESULTS_PREFIX, ChatMessage, Role, chat_rows
from histtrim.policy import SPEC, ColdCuts, Policy, ToolContext, low_water_tokens
from histtrim.turns import crumb_slot, leading_system_count

PARSE_ERROR_PREFIX = "[Tool call parse error]"
"""CTX-3: the loop's own mid-turn feedback row; it belongs to the turn it interrupts."""
EXCHANGE_PREFIX = "[Tool exchange:"
EXCHANGE_SUFFIX = "results collapsed]"


def exchange_summary(calls: int) -> str:
    """CTX-2: the row that stands for a collapsed turn's tool exchange."""
    return f"{EXCHANGE_PREFIX} {calls} tool call(s) — {EXCHANGE_SUFFIX}"


def opens_retention_turn(row: ChatMessage) -> bool:
    """CTX-3: a turn boundary (TURN-2) that is not the loop's `[Tool call parse error]` row."""
    return row.facts.opens_turn and not row.content.startswith(PARSE_ERROR_PREFIX)


@dataclass(frozen=True)
class ToolContextEdit:
    """The rows to send and what they left out: `source_rows[i]` is the input row that
    `messages[i]` stands for (a summary stands for the call row it replaces)."""

    messages: list[ChatMessage]
    source_rows: list[int]
    dropped_messages: int = 0
    """Collapse: tool-call and tool-result rows left out."""
    collapsed_turns: int = 0
    cleared_results: int = 0
    cleared_inputs: int = 0
    cleared: tuple[int, ...] = ()
    """Clear: the input rows of the cleared results, in order."""
    tokens: int | None = None
    """Clear: the estimate of `messages` (the policy's prices), when the edit knows it."""
    resumed: int = 0
    """Clear with a `ClearMemo`: the rows the previous edit with it had read; of those, only
    the rows `touched` are sent otherwise than in its request."""
    touched: tuple[int, ...] = ()
    dropped: tuple[int, ...] = ()
    """Clear with `drop_cleared` (CTX-12): the input rows left out, in order (`source_rows`
    and these are every input row, once)."""
    dropped_exchanges: int = 0
    """CTX-12: the running turn's cleared exchanges left out (`dropped_messages` rows)."""

    @property
    def changed(self) -> bool:
        return bool(self.collapsed_turns or self.cleared_results)

    @classmethod
    def identity(cls, rows: Sequence[ChatMessage]) -> ToolContextEdit:
        return cls(list(rows), list(range(len(rows))))


def _body_start(rows: Sequence[ChatMessage], crumb_present: bool) -> int:
    prefix = leading_system_count(rows)
    if crumb_present:
        crumb_slot(rows, prefix)
    return prefix + int(crumb_present)


def _boundaries(rows: Sequence[ChatMessage], start: int) -> list[int]:
    return [i for i in range(start, len(rows)) if opens_retention_turn(rows[i])]


# ------------------------------------------------------------------ collapse (CTX-1..5)


def _is_closing_reply(row: ChatMessage) -> bool:
    """An assistant row that dispatches no native call (a carrier of calls is never a reply)."""
    return row.role == "assistant" and tool_call_ids(row) is None


def _count_calls(rows: Sequence[ChatMessage]) -> int:
    """The calls a drained span made: its dispatched ids, else its result rows, at least 1."""
    dispatched = sum(len(tool_call_ids(r) or ()) for r in rows if r.role == "assistant")
    if dispatched:
        return dispatched
    results = sum(
        1 for r in rows
        if r.role == "tool" or (r.role == "user" and r.content.startswith(TOOL_RESULTS_PREFIX))
    )
    return max(results, 1)


def collapse_tool_context(
    history: Iterable[ChatMessage | Mapping[str, Any]],
    keep_turns: int,
    *,
    crumb_present: bool = False,
) -> ToolContextEdit:
    """CTX-1..5: every turn older than the newest `keep_turns + 1` sends its prompt, one
    `[Tool exchange: N tool call(s) — results collapsed]` row in place of the row that opened
    its tool exchange, and its closing reply; the running turn is never collapsed. O(rows)."""
    if isinstance(keep_turns, bool) or not isinstance(keep_turns, int) or keep_turns < 0:
        raise ValueError(f"keep_turns: expected a whole number >= 0, got {keep_turns!r}")
    rows = chat_rows(history)
    bounds = _boundaries(rows, _body_start(rows, crumb_present))
    protected = keep_turns + 1
    if len(bounds) <= protected:
        return ToolContextEdit.identity(rows)
    out: list[ChatMessage] = []
    source: list[int] = []
    dropped = collapsed = cursor = 0
    for turn in range(len(bounds) - protected):
        boundary = bounds[turn]
        out.extend(rows[cursor : boundary + 1])
        source.extend(range(cursor, boundary + 1))
        start, end = boundary + 1, bounds[turn + 1]
        closing = end - 1 if end > start and _is_closing_reply(rows[end - 1]) else None
        drain_end = end if closing is None else closing
        if drain_end > start:
            drained = rows[start:drain_end]
            dropped += len(drained)
            collapsed += 1
            if rows[start].role == "assistant":
                out.append(ChatMessage.assistant(exchange_summary(_count_calls(drained))))
                source.append(start)
        if closing is not None:
            out.append(rows[closing])
            source.append(closing)
        cursor = end
    out.extend(rows[cursor:])
    source.extend(range(cursor, len(rows)))
    return ToolContextEdit(out, source, dropped, collapsed)


# ------------------------------------------------------------------ clear (CTX-6..9)


@dataclass(frozen=True, slots=True)
class _Result:
    row: int
    call_id: str | None
    names: tuple[str, ...]
    """The tool each output answers (a carrier's id-named outputs resolved to their call's)."""
    content: str
    images: bool
    calls: tuple[tuple[str, int], ...]
    """(call id, row) of the call each output answers: the nearest row before it that
    issued the id (decision "Reused call ids")."""


_TOOL_RESULT_OPEN = '<tool_result name="'
_TOOL_RESULT_CLOSE = "\n</tool_result>"
_ERROR_SUFFIX = " error"


def carrier_sections(content: str) -> tuple[list[tuple[str, str]], str] | None:
    """A `[Tool results]` carrier's (name, output) sections and the text after them, its
    attachments block left out; None when the outputs hold the markup themselves (which
    section ends where is then ambiguous) or the carrier is not the markup. One pass."""
    if not content.startswith(TOOL_RESULTS_PREFIX + "\n"):
        return None
    body = content[len(TOOL_RESULTS_PREFIX) + 1:]
    header = ATTACHMENTS_HEADER.match(body)
    if header is not None and body[header.end():header.end() + 1] in ("\n", ""):
        count = int(header.group(1)) if len(header.group(1)) < 7 else 10**7
        lines = body.split("\n", count + 1)
        if len(lines) <= count + 1:
            return None
        body = lines[-1]
    sections: list[tuple[str, str]] = []
    at = 0
    while body.startswith(_TOOL_RESULT_OPEN, at):
        name_end = body.find('">\n', at)
        if name_end < 0:
            return None
        name = body[at + len(_TOOL_RESULT_OPEN):name_end]
        close = body.find(_TOOL_RESULT_CLOSE, name_end + 3)
        if close < 0 or '"' in name or "\n" in name:
            return None
        sections.append((name, body[name_end + 3:close]))
        at = close + len(_TOOL_RESULT_CLOSE)
        if body.startswith("\n" + _TOOL_RESULT_OPEN, at):
            at += 1
    if not sections or body.count(_TOOL_RESULT_OPEN) != len(sections):
        return None
    if body.count(_TOOL_RESULT_CLOSE[1:]) != len(sections):
        return None
    return sections, body[at:]


@lru_cache(maxsize=1 << 16)
def _calls(content: str) -> tuple[tuple[str, str], ...]:
    """(id, name) of each native call an assistant row with this text dispatches. Cached: a
    request is rebuilt at every provider call, and its rows are the previous request's."""
    parsed = parse_tool_calls(ChatMessage(role="assistant", content=content))
    return () if parsed is None else tuple((c.id, c.name) for c in parsed.calls)


@lru_cache(maxsize=1 << 16)
def _answer(content: str) -> tuple[str, str, bool] | None:
    """(call id, output, holds images) of a tool row with this text; None when its envelope
    is unreadable."""
    result = parse_tool_result(ChatMessage(role="tool", content=content))
    if result is None:
        return None
    return result.tool_call_id, result.content, bool(result.attachments)


@lru_cache(maxsize=1 << 16)
def _carrier(content: str) -> tuple[tuple[str, ...], bool]:
    """The names a carrier's outputs carry (a tool's, or a call id, `id error` for a
    failed one) and whether it declares images."""
    found = carrier_sections(content)
    names = tuple(n for n, _ in found[0]) if found is not None else _carrier_names(content)
    lines = content.split("\n", 2)
    return names, len(lines) > 1 and ATTACHMENTS_HEADER.fullmatch(lines[1]) is not None


def _carrier_names(content: str) -> tuple[str, ...]:
    """The `name="..."` of each `<tool_result>` in a prompt-mode carrier, in one pass."""
    names: list[str] = []
    at = content.find(_TOOL_RESULT_OPEN)
    while at >= 0:
        start = at + len(_TOOL_RESULT_OPEN)
        end = content.find('"', start)
        if end < 0:
            break
        names.append(content[start:end])
        at = content.find(_TOOL_RESULT_OPEN, end)
    return tuple(names)


def _preview(text: str, placeholder: str, preview: int) -> str:
    """CTX-7: the placeholder, then the output's first `preview` characters when it is
    longer."""
    if preview and len(text) > preview:
        return f"{placeholder}\n{text[:preview]}"
    return placeholder


@lru_cache(maxsize=1 << 16)
def _cleared_content(
    role: str, call_id: str | None, content: str, placeholder: str, preview: int
) -> str:
    """The result with its output replaced (CTX-7): a tool row keeps its call id (its images
    go with the output); a carrier keeps each section's name, each output its own preview
    (one whose outputs hold the markup is cleared whole, without one). Cached: each request
    clears again."""
    if role == "tool":
        return _compact({"tool_call_id": call_id, "content": _preview(content, placeholder,
                                                                      preview)})
    found = carrier_sections(content)
    if found is None:
        return f"{TOOL_RESULTS_PREFIX}\n{placeholder}"
    sections, tail = found
    cleared = tool_results_carrier(
        [(name, _preview(output, placeholder, preview)) for name, output in sections])
    return cleared.content + tail


@lru_cache(maxsize=1 << 16)
def _cleared_row(role: Role, content: str) -> ChatMessage:
    """One row object per cleared text: rows are frozen, and a request rebuilt at every call
    then holds the same objects as the last one."""
    return ChatMessage(role=role, content=content)


def _text_cost(pricing: Pricing, role: str, content: str) -> int:
    """A row with this text priced as plain text (it declares no images)."""
    if pricing.counter is None:
        policy = pricing.policy
        size = len(content) if content.isascii() else len(content.encode("utf-8"))
        return -(-size // policy.bytes_per_token) + policy.frame_tokens
    return pricing.plain(ChatMessage.model_validate({"role": role, "content": content}))


@lru_cache(maxsize=1 << 12)
def _without_inputs(row: ChatMessage, ids: frozenset[str], text: bool = False) -> ChatMessage:
    """The call row with the arguments of the calls `ids` emptied (`{}`) and, with `text`,
    without its text (CTX-11), the rest as it was. Cached: each request clears again."""
    envelope = json_object(row.content)
    assert envelope is not None
    if text:
        envelope["content"] = None
    for call in envelope["tool_calls"]:
        if isinstance(call, dict) and call.get("id") in ids:
            target = call["function"] if isinstance(call.get("function"), dict) else call
            target["arguments"] = "{}"
    return row.model_copy(update={"content": _compact(envelope)})


def _freed(pricing: Pricing, value: object, empty: str) -> int:
    """At least what replacing `value` (as JSON) by `empty` frees in a row: whole tokens of
    the bytes removed, rounded down (the estimate), or the counter's difference."""
    text = _compact(value)
    if pricing.counter is None:
        size = len(text) if text.isascii() else len(text.encode("utf-8"))
        return max(0, (size - len(empty)) // pricing.policy.bytes_per_token)
    return max(0, _text_cost(pricing, "assistant", text)
               - _text_cost(pricing, "assistant", empty))


def _call_row_freed(pricing: Pricing, content: str) -> tuple[dict[str, int], int]:
    """What clearing frees in this call row, in one parse of it: each call's arguments alone
    (`clear_inputs`, by call id) and the row's text (`clear_text`)."""
    envelope = json_object(content)
    if envelope is None:
        return {}, 0
    calls = envelope.get("tool_calls")
    freed: dict[str, int] = {}
    for call in calls if isinstance(calls, list) else ():
        if not isinstance(call, dict) or not isinstance(call.get("id"), str):
            continue
        target = call["function"] if isinstance(call.get("function"), dict) else call
        tokens = _freed(pricing, target.get("arguments", "{}"), '"{}"')
        freed[call["id"]] = freed.get(call["id"], 0) + tokens
    return freed, _freed(pricing, envelope.get("content"), "null")


@lru_cache(maxsize=1 << 16)
def _bare_carrier(content: str) -> bool:
    """A `[Tool results]` carrier of outputs alone (no attachments, no text after them): one
    CTX-12 may leave out whole. Cached: each request drops again."""
    found = carrier_sections(content)
    return found is not None and not found[1].strip() and not content.startswith(
        TOOL_RESULTS_PREFIX + "\n[")


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class ClearMemo:
    """What a clear (CTX-6..10) computed for the rows it last edited: pass one to each edit
    of a history that grows between provider calls, and an edit reads only the rows added
    since (and, once a new turn starts, the last turn's rows that declare images, priced
    again as older rows). Edits of other rows, or under other settings, start over. Holds
    the rows it read (references, no copies)."""

    __slots__ = ("_scan",)

    def __init__(self) -> None:
        self._scan: _Scan | None = None


def clear_tool_results(
    history: Iterable[ChatMessage | Mapping[str, Any]],
    settings: ToolContext,
    *,
    crumb_present: bool = False,
    policy: Policy = SPEC,
    token_counter: TokenCounter | None = None,
    budget_tokens: int | None = None,
    memo: ClearMemo | None = None,
    cold: ColdCuts | None = None,
) -> ToolContextEdit:
    """CTX-6..9: the oldest eligible tool results replaced by `settings.placeholder`, their
    calls kept. Eligible: not among the newest `keep` results (or in the newest `keep` turns),
    not a tool of `exclude_tools`, longer than `min_chars` (or holding an image). A request
    estimated above `trigger_tokens` clears; with `hold` the trigger reads the request as
    sent, replayed over the requests the history records, so between two clears each request
    extends the last.

    CTX-10, with a positive `budget_tokens` (the budget the whole-turn trim applied): a
    request still over it as sent clears the oldest eligible results but the newest `keep`
    (the running turn's too), in one batch down to the policy's low-water mark of the
    budget, and, only if it is still over, the newest `keep` too until it fits, never the
    newest exchange's; what `clear_inputs` and `clear_text` (CTX-11) free is counted.
    Replayed like `hold`, so between two such clears each request extends the last. With
    `drop_cleared` (CTX-12), a request still over it then leaves out the running turn's
    oldest cleared exchanges whole, as few as it takes (`ToolContextEdit.dropped`).
    Linear in the rows; with a `memo`, in the rows added since the last edit.

    CACHE-2, `cold`: the requests (ends of these rows) made with the prompt cache cold. At
    each, a request over `trigger_tokens * cut_from` clears now, down to `clear_to` of the
    trigger, and one over the cold cut's budget fits its low-water mark, in one batch;
    replayed like `hold` (the clear then holds: later requests extend it row for row)."""
    given = history if isinstance(history, Sequence) else list(history)
    key = (settings, policy, token_counter, crumb_present, budget_tokens or 0)
    scan = None if memo is None else memo._scan
    ends = frozenset() if cold is None else cold.ends
    rows: Sequence[ChatMessage]
    if scan is None or not scan.extends(key, given) or any(
            e < scan.n and e not in scan.cold_ends for e in ends):  # an earlier one: replay
        rows = chat_rows(given)
        scan = _Scan(key, rows, _body_start(rows, crumb_present))
    else:  # its first rows are the scanned rows: only the new ones are read
        new = given[scan.n:]
        checked = chat_rows(new)
        rows = cast(Sequence[ChatMessage], given if checked is new else [
            *given[: scan.n], *checked])  # the first n: `extends` found them ChatMessage
        scan.resumed = scan.n
    if cold is not None and ends:
        scan.chill(cold)
    scan.extend(rows)
    if memo is not None:
        memo._scan = scan
    return scan.edit(rows)


_Key = tuple[ToolContext, Policy, "TokenCounter | None", bool, int]


class _Scan:
    """A clear's state over `rows[:n]`, extended in place by the rows that follow: the tool
    results and their calls, each row's price and the prefix sums, the candidates and what
    clearing each frees, the replay of the requests, and the request last sent."""

    def __init__(self, key: _Key, rows: Sequence[ChatMessage], start: int) -> None:
        settings, policy, counter, _, budget = key
        self.key = key
        self.settings = settings
        self.pricing = Pricing(policy, counter)
        self.rows: list[ChatMessage] = []
        self.n = 0
        self.resumed = 0
        """How many rows the last edit had already read (0: it read them all)."""
        self.start = start
        self.names: dict[str, str] = {}
        self.call_row: dict[str, int] = {}
        self.result_rows: list[int] = []
        self.candidates: list[_Result] = []
        self.cand_rows: list[int] = []
        self.news: list[str] = []
        self.gain: list[int] = []
        """What clearing each candidate frees (negative when its placeholder is longer)."""
        self.freed = [0]
        """Prefix sums of the gains, the negative ones as 0 (for the clear points)."""
        self.exact = [0]
        """Prefix sums of the gains (the size of the request sent)."""
        self.args: dict[str, int] = {}
        """`clear_inputs`: what emptying each call's arguments frees, at least (by call id)."""
        self.texts: dict[int, int] = {}
        """`clear_text`: what each call row's text frees, until a candidate claims it."""
        self.inputs: list[int] = []
        """What clearing each candidate frees in its calls' rows: their arguments
        (`clear_inputs`) and the text of the rows it is the oldest candidate of (`clear_text`)."""
        self.sent = [0]
        """Prefix sums of the gains as `freed`, each candidate's `inputs` added: what the
        request as sent loses (the fit reads it, CTX-10)."""
        self.costs: list[int] = []
        self.full = [0]
        self.declaring: list[int] = []
        """Rows of the current turn that declare images: priced as older once one follows."""
        self.bounds: list[int] = []
        self.replies: list[int] = []
        """The assistant rows (the newest before a request opens its newest exchange)."""
        self.points: list[int] = []
        """The requests the rows record, but the last (the whole rows)."""
        self.log: list[int] = []
        """The clears made after the replay reached each of `points`."""
        ratio = settings.clear_to
        self.goal = settings.trigger_tokens * ratio.numerator // ratio.denominator
        self.fit_goal = 0 if not budget else low_water_tokens(budget, policy.token_trim_target)
        self.budget = budget
        self.replays = settings.hold or bool(budget)
        self.cold_ends: frozenset[int] = frozenset()
        """CACHE-2: the requests made with the cache cold (`chill`)."""
        self.cold_trigger = self.cold_budget = self.cold_goal = 0
        self.out: list[ChatMessage] = []
        self.out_done = 0
        self.by_call: dict[int, set[str]] = {}
        self.inputs_gain: dict[int, int] = {}
        self.touched: set[int] = set()
        self.moved: set[int] = set()
        """Rows `extends` found equal but other objects (sent as the new ones)."""

    def chill(self, cold: ColdCuts) -> None:
        """CACHE-2: the cold requests `cold` names, replayed from now on (with `hold`)."""
        share = cold.trim.cut_from
        self.cold_ends = self.cold_ends | cold.ends
        self.cold_trigger = self.settings.trigger_tokens * share.numerator // share.denominator
        self.cold_budget = cold.trim.budget_tokens
        self.cold_goal = low_water_tokens(cold.trim.budget_tokens, cold.trim.token_target)
        self.replays = True

    def extends(self, key: _Key, rows: Sequence[object]) -> bool:
        """Whether `rows` are the scanned rows and more, under `key` (one pass at C speed
        for identity, then equality for the rows that are other objects, each a
        `ChatMessage`); an equal row that is another object takes the old one's place."""
        n = self.n
        if key != self.key or len(rows) < n or not n:
            return False
        swaps: list[tuple[int, ChatMessage]] = []
        for i in compress(range(n), map(is_not, self.rows, rows)):
            row = rows[i]
            if not (isinstance(row, ChatMessage) and self.rows[i] == row):
                return False
            swaps.append((i, row))
        for i, row in swaps:  # (the breadcrumb row, made again at each trim)
            if self.out[i] is self.rows[i]:
                self.out[i] = row
                self.moved.add(i)
            self.rows[i] = row
        return True

    def extend(self, rows: Sequence[ChatMessage]) -> None:
        """Read `rows[n:]`: O(new rows), plus the repriced rows of the turn that ended."""
        old, n = self.n, len(rows)
        new = rows[old:]
        self.rows.extend(new)
        pricing = self.pricing
        self.costs.extend(pricing.costs(new))
        dirty = old
        for i in range(old, n):  # the turns of `Pricing.costs` (no crumb flag), as it reads
            row = rows[i]
            if row.facts.opens_turn and self.declaring:
                dirty = min(dirty, self.declaring[0])
                for d in self.declaring:
                    if d < old:
                        self.costs[d] = pricing.cost(self.rows[d], current_turn=False)
                self.declaring = []
            if row.facts.declares_attachments:
                self.declaring.append(i)
        del self.full[dirty + 1:]
        self.full.extend(accumulate(self.costs[dirty:], initial=self.full[dirty]))
        del self.full[dirty + 1]  # accumulate repeats its initial value
        first_new = len(self.candidates)
        self._read(rows, old, n)
        # the candidates whose price moved, and those just read: their gains again
        k = bisect_left(self.cand_rows, dirty)
        k = min(k, first_new)
        text = _text_cost
        for j in range(k, len(self.candidates)):
            r = self.candidates[j]
            gain = self.costs[r.row] - text(pricing, rows[r.row].role, self.news[j])
            if j < len(self.gain):
                self.gain[j] = gain
            else:
                self.gain.append(gain)
        del self.freed[k + 1:]
        del self.exact[k + 1:]
        self.freed.extend(accumulate((max(g, 0) for g in self.gain[k:]), initial=self.freed[k]))
        del self.freed[k + 1]
        self.exact.extend(accumulate(self.gain[k:], initial=self.exact[k]))
        del self.exact[k + 1]
        del self.sent[k + 1:]
        self.sent.extend(accumulate(
            (max(g, 0) + a for g, a in zip(self.gain[k:], self.inputs[k:], strict=True)),
            initial=self.sent[k]))
        del self.sent[k + 1]
        for p in range(max(old, 1), n):
            if rows[p].role == "assistant" and rows[p - 1].role != "assistant":
                self.points.append(p)
        if self.replays:
            keep = bisect_left(self.points, dirty + 1)
            del self.log[keep:]
            done = self.log[-1] if self.log else 0
            for end in self.points[len(self.log):]:
                done = self._step(done, end)
                self.log.append(done)
        self.n = n

    def _read(self, rows: Sequence[ChatMessage], old: int, n: int) -> None:
        """The tool results of rows `old..n`, each with the tool it answers and its call's
        row. An output named by a call id (an Anthropic `tool_use_id`) is named by that
        call's tool: one naming in every format (CTX-6's `exclude_tools`)."""
        names, call_row = self.names, self.call_row
        settings = self.settings
        excluded = set(settings.exclude_tools)
        placeholder, preview = settings.placeholder, settings.preview_chars
        for i in range(max(old, self.start), n):
            row = rows[i]
            if opens_retention_turn(row):
                self.bounds.append(i)
            found: _Result | None = None
            if row.role == "assistant":
                self.replies.append(i)
                if '"tool_calls"' in row.content or "\\u" in row.content:  # escaped key too
                    for call_id, name in _calls(row.content):
                        names[call_id] = name
                        call_row[call_id] = i
                    if settings.clear_inputs or settings.clear_text:
                        freed, text = _call_row_freed(self.pricing, row.content)
                        if settings.clear_inputs:
                            self.args.update(freed)
                        if settings.clear_text:
                            self.texts[i] = text
            elif row.role == "tool":
                answer = _answer(row.content)
                if answer is not None:  # an unreadable legacy row is never rewritten
                    call_id, output, images = answer
                    tool = names.get(call_id)
                    at = call_row.get(call_id)
                    found = _Result(
                        i, call_id, () if tool is None else (tool,), output, images,
                        () if at is None else ((call_id, at),),
                    )
            elif row.role == "user" and row.content.startswith(TOOL_RESULTS_PREFIX):
                body = row.content[len(TOOL_RESULTS_PREFIX):].lstrip("\n")
                raw, images = _carrier(row.content)
                tools: list[str] = []
                calls: list[tuple[str, int]] = []
                for name in raw:
                    call_id = name if name in names else name.removesuffix(_ERROR_SUFFIX)
                    if call_id in names:
                        tools.append(names[call_id])
                        calls.append((call_id, call_row[call_id]))
                    else:
                        tools.append(name)
                found = _Result(i, None, tuple(tools), body, images, tuple(calls))
            if found is None:
                continue
            self.result_rows.append(i)
            if (excluded and excluded.intersection(found.names)) or not (
                len(found.content) > settings.min_chars or found.images
            ):
                continue
            self.candidates.append(found)
            self.cand_rows.append(i)
            self.inputs.append(sum(self.args.get(c, 0) for c, _ in found.calls) + sum(
                self.texts.pop(at, 0) for at in {at for _, at in found.calls}))
            source = found.content if found.call_id is not None else row.content
            self.news.append(
                _cleared_content(row.role, found.call_id, source, placeholder, preview))

    def _eligible(self, end: int) -> int:
        """How many candidates a request `rows[:end]` may clear (a prefix of them)."""
        settings = self.settings
        keep = settings.keep
        if keep == 0:
            limit = end
        elif settings.keep_unit == "results":
            present = bisect_left(self.result_rows, end)
            limit = self.result_rows[present - keep] if present > keep else 0
        else:
            turns = bisect_left(self.bounds, end)
            limit = self.bounds[turns - keep] if turns > keep else 0
        return bisect_left(self.cand_rows, limit)

    def _clear_from(self, done: int, end: int) -> int:
        """Candidates cleared once request `rows[:end]` (with `done` cleared) triggers."""
        most = self._eligible(end)
        upto = most
        if self.settings.clear_to:
            upto = max(done, min(most, bisect_left(
                self.freed, self.full[end] - self.goal, done, max(most, done))))
        if upto <= done or self.freed[upto] - self.freed[done] < self.settings.clear_at_least:
            return done
        return upto

    def _fit_from(
        self, done: int, end: int, goal: int | None = None, budget: int | None = None
    ) -> int:
        """CTX-10: candidates cleared once request `rows[:end]` is over the budget as sent:
        all but the newest `keep` results, from the oldest, until it fits the low water.
        The last resort, when that still leaves it over the budget: the newest `keep`
        results too, from the oldest, until it fits the budget (not the low water: as few
        as it takes), never the newest exchange's (the results after the newest reply)."""
        keep = self.settings.keep
        present = bisect_left(self.result_rows, end)
        limit = end if not keep else (
            self.result_rows[present - keep] if present > keep else 0)
        most = bisect_left(self.cand_rows, limit)
        goal = self.fit_goal if goal is None else goal
        budget = self.budget if budget is None else budget
        upto = done if most <= done else bisect_left(
            self.sent, self.full[end] - goal, done, most)
        if self.full[end] - self.sent[upto] > budget:
            replies = bisect_left(self.replies, end)
            newest = self.replies[replies - 1] if replies else 0
            beyond = bisect_left(self.cand_rows, newest)
            if beyond > upto:
                upto = bisect_left(self.sent, self.full[end] - budget, upto, beyond)
        return upto

    def _step(self, done: int, end: int) -> int:
        """The replay at request `rows[:end]`: the trigger (held, or at the last request),
        then the budget (CTX-10)."""
        hold = self.settings.hold
        if (hold or end == self.n_end) and (
            self.full[end] - self.freed[done] > self.settings.trigger_tokens
        ):
            done = max(done, self._clear_from(done if hold else 0, end))
        if self.budget and self.full[end] - self.sent[done] > self.budget:
            done = self._fit_from(done, end)
        if end in self.cold_ends:  # CACHE-2: the cache is cold, clear now what is due soon
            if self.full[end] - self.freed[done] > self.cold_trigger:
                done = max(done, self._clear_from(done, end))
            if self.cold_budget and self.full[end] - self.sent[done] > self.cold_budget:
                done = self._fit_from(done, end, self.cold_goal, self.cold_budget)
        return done

    @property
    def n_end(self) -> int:
        return len(self.rows)

    def edit(self, rows: Sequence[ChatMessage]) -> ToolContextEdit:
        """The request for the rows read: the clears of the replay (or of the trigger) made
        on the last edit's request, only the rows that change written again."""
        n = self.n
        if self.replays:
            done = self._step(self.log[-1] if self.log else 0, n)
        elif self.full[n] > self.settings.trigger_tokens:
            done = self._clear_from(0, n)
        else:
            done = 0
        resumed = self.resumed
        out = self.out
        touched, self.moved = self.moved, set()
        if len(out) != resumed:  # a scan made anew
            out[:] = rows
            self.out_done, self.by_call, self.inputs_gain = 0, {}, {}
        else:
            out.extend(rows[resumed:])
        candidates, news = self.candidates, self.news
        before = self.out_done
        for j in range(min(before, done), max(before, done)):
            at = candidates[j].row
            out[at] = _cleared_row(rows[at].role, news[j]) if j < done else rows[at]
            touched.add(at)
        if self.settings.clear_inputs or self.settings.clear_text:
            self._inputs(rows, before, done, touched)
        self.out_done = done
        self.touched = touched
        if not done:
            return ToolContextEdit.identity(rows)
        tokens = self.full[n] - self.exact[done] + sum(self.inputs_gain.values())
        inputs = sum(map(len, self.by_call.values())) if self.settings.clear_inputs else 0
        if self.settings.drop_cleared and self.budget and tokens > self.budget:
            dropped = self._drop(rows, done, tokens - self.budget)
            if dropped is not None:
                messages, source, gone, exchanges, freed = dropped
                return ToolContextEdit(
                    messages, source, dropped_messages=len(gone), cleared_results=done,
                    cleared_inputs=inputs, cleared=tuple(self.cand_rows[:done]),
                    tokens=tokens - freed, dropped=gone, dropped_exchanges=exchanges,
                )
        return ToolContextEdit(
            list(out), list(range(n)), cleared_results=done, cleared_inputs=inputs,
            cleared=tuple(self.cand_rows[:done]), tokens=tokens, resumed=resumed,
            touched=tuple(sorted(touched)),
        )

    def _drop(
        self, rows: Sequence[ChatMessage], done: int, over: int
    ) -> tuple[list[ChatMessage], list[int], tuple[int, ...], int, int] | None:
        """CTX-12: the request with the running turn's oldest cleared exchanges left out
        until `over` tokens are freed (fewer when too few can go), or None when none can:
        an exchange is a call row and the result rows up to the next assistant row, each of
        them cleared, answering only that row's calls and all of them; never the newest
        exchange (from the newest assistant row on). The call row keeps its text as a text
        row, or goes too. Returns (rows, source rows, rows left out, exchanges, freed)."""
        replies, out, pricing = self.replies, self.out, self.pricing
        turn = self.bounds[-1] if self.bounds else self.start
        cleared = dict(zip(self.cand_rows[:done], range(done), strict=True))
        gone: list[int] = []
        texts: dict[int, ChatMessage] = {}
        freed = exchanges = 0
        for k in range(bisect_left(replies, turn), len(replies) - 1):
            if freed >= over:
                break
            at, end = replies[k], replies[k + 1]
            ids = {call_id for call_id, _ in _calls(rows[at].content)}
            if not ids or end == at + 1:
                continue
            answered: set[str] = set()
            cost = 0
            for r in range(at + 1, end):
                j = cleared.get(r)
                result = None if j is None else self.candidates[j]
                if result is None or not result.calls or any(
                        row != at for _, row in result.calls) or (
                        result.call_id is None and not _bare_carrier(rows[r].content)):
                    break
                answered.update(call_id for call_id, _ in result.calls)
                cost += _text_cost(pricing, out[r].role, out[r].content)
            else:
                if ids <= answered:
                    envelope = json_object(out[at].content) or {}
                    text = envelope.get("content")
                    call_row = self.costs[at] + self.inputs_gain.get(at, 0)
                    if isinstance(text, str) and text.strip():
                        texts[at] = ChatMessage(role="assistant", content=text)
                        call_row -= _text_cost(pricing, "assistant", text)
                    else:
                        gone.append(at)
                    gone.extend(range(at + 1, end))
                    freed += cost + call_row
                    exchanges += 1
        if not exchanges:
            return None
        left = set(gone)
        source = [i for i in range(self.n) if i not in left]
        return ([texts.get(i, out[i]) for i in source], source, tuple(sorted(gone)),
                exchanges, freed)

    def _inputs(
        self, rows: Sequence[ChatMessage], before: int, done: int, touched: set[int]
    ) -> None:
        """`clear_inputs`: the calls of the cleared results lose their arguments (each
        result's own call, decision "Reused call ids"); `clear_text`: their rows lose their
        text (CTX-11); only the calls that change are written again."""
        by_call = self.by_call
        changed: set[int] = set()
        if done >= before:
            for r in self.candidates[before:done]:
                for call_id, at in r.calls:
                    by_call.setdefault(at, set()).add(call_id)
                    changed.add(at)
        else:
            changed = set(by_call)
            by_call.clear()
            for r in self.candidates[:done]:
                for call_id, at in r.calls:
                    by_call.setdefault(at, set()).add(call_id)
        out, pricing = self.out, self.pricing
        for at in changed:
            ids = by_call.get(at)
            if not ids:
                out[at] = rows[at]
                self.inputs_gain.pop(at, None)
            else:
                out[at] = _without_inputs(
                    rows[at], frozenset(ids) if self.settings.clear_inputs else frozenset(),
                    self.settings.clear_text)
                self.inputs_gain[at] = (
                    _text_cost(pricing, "assistant", out[at].content) - self.costs[at])
            touched.add(at)


def edit_tool_context(
    history: Iterable[ChatMessage | Mapping[str, Any]],
    policy: Policy = SPEC,
    *,
    crumb_present: bool = False,
    token_counter: TokenCounter | None = None,
    budget_tokens: int | None = None,
    memo: ClearMemo | None = None,
    cold: ColdCuts | None = None,
) -> ToolContextEdit:
    """The request the policy's `tool_context` sends for these rows: the one entry point of
    every path (library, Agent, adapters, CLI, review). `budget_tokens`, the budget the
    whole-turn trim applied: a clear policy fits a request still over it (CTX-10); `memo`:
    a clear resumes from the last edit of these rows (`ClearMemo`); `cold`: the requests made
    with the prompt cache cold, where a clear clears in one batch (CACHE-2)."""
    settings = policy.tool_context
    if settings.mode == "collapse":
        return collapse_tool_context(history, settings.keep_turns, crumb_present=crumb_present)
    if settings.mode == "clear":
        return clear_tool_results(
            history, settings, crumb_present=crumb_present, policy=policy,
            token_counter=token_counter, budget_tokens=budget_tokens, memo=memo, cold=cold,
        )
    return ToolContextEdit.identity(chat_rows(history))
