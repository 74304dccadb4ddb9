"""Safety nets: the orphan sweep (PAIR-2), the tool-result cap (PAIR-3) and the channel
sender cache that counts rows (LIMIT-3)."""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from histtrim import (
    DEFAULT_CHANNEL_CACHE_ROWS,
    AssistantToolCalls,
    ChannelSenderCache,
    ChatMessage,
    ConversationMessage,
    PairingProblem,
    Policy,
    ToolCall,
    ToolResultMessage,
    ToolResults,
    cap_tool_result,
    opens_turn,
    parse_tool_result,
    sweep_orphans,
    to_chat_messages,
    trim_conversation_to_recent_turns,
    validate_tool_pairing,
)
from histtrim.carriers import parse_tool_calls, tool_results_carrier
from histtrim.pairing import OrphanRemoval


def pairing_problems(rows: Sequence[ChatMessage]) -> list[str]:
    """Independent check: every tool row answers a call issued earlier in its turn, and every
    call is answered later in its turn."""
    problems: list[str] = []
    issued: set[str] = set()
    answered: set[str] = set()

    def close() -> None:
        problems.extend(f"call {cid} unanswered" for cid in sorted(issued - answered))

    for row in rows:
        if opens_turn(row):
            close()
            issued, answered = set(), set()
        calls = parse_tool_calls(row)
        if calls is not None:
            issued.update(call.id for call in calls.calls)
        if row.role == "tool":
            result = parse_tool_result(row)
            if result is None or result.tool_call_id not in issued:
                problems.append(f"result {result and result.tool_call_id} without call")
            else:
                answered.add(result.tool_call_id)
    close()
    return problems


def _call(cid: str) -> ToolCall:
    return ToolCall(id=cid, name="grep", arguments={"pattern": cid})


def _native_session() -> list[ChatMessage]:
    return [
        ChatMessage.system("You help Ana with her shop."),
        ChatMessage.tool_result("ghost", "left over from an edited session"),
        ChatMessage.user("Find LegacyPay."),
        ChatMessage.assistant_tool_calls("Searching.", [_call("c1"), _call("c2")]),
        ChatMessage.tool_result("c1", "src/checkout.py:42"),
        ChatMessage.assistant("Found one."),
        ChatMessage.user("Run the tests."),
        ChatMessage.assistant_tool_calls(None, [_call("c3")]),
        tool_results_carrier([("run_tests", "4 passed")]),
        ChatMessage.assistant("All green."),
    ]


def test_pair_2_sweep_of_a_restored_native_session() -> None:
    """PAIR-2: results without a call go, calls without a result are stripped (text kept,
    row dropped when it had none); the prompt-mode carrier stays."""
    session = _native_session()
    snapshot = copy.deepcopy(session)
    swept = sweep_orphans(session)
    assert swept.removed == (
        OrphanRemoval("result", "ghost", 1),
        OrphanRemoval("call", "c2", 3),
        OrphanRemoval("call", "c3", 7),
    )
    assert swept.history == [
        session[0],
        session[2],
        ChatMessage.assistant_tool_calls("Searching.", [_call("c1")]),
        session[4],
        session[5],
        session[6],
        session[8],
        session[9],
    ]
    assert pairing_problems(swept.history) == []
    assert pairing_problems(session) != []
    assert session == snapshot


def test_pair_2_sweep_of_a_structured_session() -> None:
    """PAIR-2: the same rules on `Agent.history` items; a partial `ToolResults` keeps its
    answered results, a call-only row with text becomes a plain assistant row."""
    session: list[ConversationMessage] = [
        ChatMessage.user("Find LegacyPay."),
        AssistantToolCalls(text=None, tool_calls=(_call("c1"),)),
        ToolResults(
            results=(
                ToolResultMessage(tool_call_id="c1", content="src/checkout.py:42"),
                ToolResultMessage(tool_call_id="zz", content="stale"),
            )
        ),
        AssistantToolCalls(text="Let me also check refunds.", tool_calls=(_call("c9"),)),
        ChatMessage.user("Thanks."),
    ]
    swept = sweep_orphans(session)
    assert swept.removed == (OrphanRemoval("result", "zz", 2), OrphanRemoval("call", "c9", 3))
    assert swept.history == [
        session[0],
        session[1],
        ToolResults(results=(ToolResultMessage(tool_call_id="c1", content="src/checkout.py:42"),)),
        ChatMessage.assistant("Let me also check refunds."),
        session[4],
    ]
    assert pairing_problems(to_chat_messages(swept.history)) == []


def test_pair_2_a_pair_split_across_turns_is_orphaned() -> None:
    """PAIR-1, PAIR-2: a call and its result belong to one turn; split across a real user
    message (an edited session), neither can be kept safely by whole-turn trims."""
    session = [
        ChatMessage.user("one"),
        ChatMessage.assistant_tool_calls(None, [_call("c1")]),
        ChatMessage.user("two"),
        ChatMessage.tool_result("c1", "late"),
    ]
    swept = sweep_orphans(session)
    assert [r.kind for r in swept.removed] == ["call", "result"]
    assert swept.history == [session[0], session[2]]


def test_pair_2_tool_row_without_a_readable_id_stays_only_after_a_dispatch() -> None:
    """Issue 19: a tool row whose tool_call_id cannot be read stays only right after a
    native dispatch (the reference's pass 2); after a user row it goes, and the validator
    reports it there as an error (providers reject it)."""
    legacy = ChatMessage(role="tool", content="not json")
    session = [ChatMessage.user("hi"), legacy]
    swept = sweep_orphans(session)
    assert swept.removed == (OrphanRemoval("result", None, 1),)
    assert swept.history == session[:1]
    assert validate_tool_pairing(session) == [PairingProblem("orphan_result", 1, None)]
    assert validate_tool_pairing(session)[0].is_error
    assert "no readable tool_call_id not right after" in str(validate_tool_pairing(session)[0])
    kept = [
        ChatMessage.user("hi"),
        ChatMessage.assistant_tool_calls(None, [_call("c1")]),
        ChatMessage.tool_result("c1", "ok"),
        legacy,
    ]
    assert sweep_orphans(kept).history == kept
    assert validate_tool_pairing(kept) == [PairingProblem("legacy_result", 3, None)]
    assert not validate_tool_pairing(kept)[0].is_error


def test_sweep_accepts_dicts_and_the_crumb_flag() -> None:
    rows = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "[earlier turns omitted to fit the context window]"},
        {"role": "user", "content": "hi"},
    ]
    assert sweep_orphans(rows, crumb_present=True).history == [ChatMessage(**r) for r in rows]
    with pytest.raises(ValueError, match="breadcrumb"):
        sweep_orphans([rows[0], {"role": "assistant", "content": "hi"}], crumb_present=True)


# -------------------------------------------------------------------- generated histories

ids = st.sampled_from(["a", "b", "c", "d"])


@st.composite
def messy_rows(draw: st.DrawFn) -> list[ConversationMessage]:
    """Any mix of both representations with ids from a small pool: orphans of every kind."""
    rows: list[ConversationMessage] = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(
            st.sampled_from(
                [
                    "user",
                    "text",
                    "native_call",
                    "native_result",
                    "calls",
                    "results",
                    "carrier",
                    "system",
                ]
            )
        )
        if kind == "user":
            rows.append(ChatMessage.user(draw(st.sampled_from(["hi", "next", "go"]))))
        elif kind == "text":
            rows.append(ChatMessage.assistant("ok"))
        elif kind == "system":
            rows.append(ChatMessage.system("note"))
        elif kind == "carrier":
            rows.append(tool_results_carrier([("grep", "out")]))
        elif kind == "native_call":
            calls = [_call(i) for i in draw(st.lists(ids, min_size=1, max_size=3, unique=True))]
            rows.append(
                ChatMessage.assistant_tool_calls(draw(st.sampled_from([None, "", "t"])), calls)
            )
        elif kind == "native_result":
            rows.append(ChatMessage.tool_result(draw(ids), "out"))
        elif kind == "calls":
            calls = tuple(
                _call(i) for i in draw(st.lists(ids, min_size=1, max_size=3, unique=True))
            )
            rows.append(
                AssistantToolCalls(text=draw(st.sampled_from([None, "t"])), tool_calls=calls)
            )
        else:
            results = tuple(
                ToolResultMessage(tool_call_id=i, content="out")
                for i in draw(st.lists(ids, min_size=1, max_size=3))
            )
            rows.append(ToolResults(results=results))
    return rows


@st.composite
def paired_rows(draw: st.DrawFn) -> list[ConversationMessage]:
    """Consistent histories: every round's calls answered right after, in either form."""
    rows: list[ConversationMessage] = [ChatMessage.system("s")]
    serial = 0
    for turn in range(draw(st.integers(0, 5))):
        rows.append(ChatMessage.user(f"u{turn}"))
        for _ in range(draw(st.integers(0, 2))):
            count = draw(st.integers(1, 3))
            calls = [_call(f"k{serial + n}") for n in range(count)]
            serial += count
            if draw(st.booleans()):
                rows.append(AssistantToolCalls(text=None, tool_calls=tuple(calls)))
                rows.append(
                    ToolResults(
                        results=tuple(
                            ToolResultMessage(tool_call_id=c.id, content="out") for c in calls
                        )
                    )
                )
            else:
                rows.append(ChatMessage.assistant_tool_calls("t", calls))
                rows.extend(ChatMessage.tool_result(c.id, "out") for c in calls)
        rows.append(ChatMessage.assistant("done"))
    return rows


def _plain(row: ConversationMessage) -> bool:
    return isinstance(row, ChatMessage) and row.role != "tool" and parse_tool_calls(row) is None


@given(messy_rows())
def test_pair_2_sweep_leaves_a_consistent_history(rows: list[ConversationMessage]) -> None:
    """PAIR-2: whatever came in, the swept history pairs every call with its result."""
    snapshot = copy.deepcopy(rows)
    swept = sweep_orphans(rows)
    assert rows == snapshot
    assert pairing_problems(to_chat_messages(swept.history)) == []
    assert sweep_orphans(swept.history).removed == ()
    plain_in = [r for r in rows if _plain(r)]
    plain_out = iter(r for r in swept.history if _plain(r))
    # users, carriers, texts and system rows all survive, in order (a subsequence check)
    assert all(any(r == out for out in plain_out) for r in plain_in)
    kept_plain = [r for r in swept.history if _plain(r)]
    assert [r for r in kept_plain if opens_turn(r)] == [r for r in rows if opens_turn(r)]


@given(paired_rows())
def test_pair_1_sweep_is_a_no_op_on_consistent_histories(
    rows: list[ConversationMessage],
) -> None:
    """PAIR-1: whole-turn retention keeps pairs together, so the sweep finds nothing after
    any turn-limit trim of a consistent history."""
    assert sweep_orphans(rows).history == rows
    for limit in range(4):
        trimmed = trim_conversation_to_recent_turns(rows, limit).history
        assert sweep_orphans(trimmed).removed == ()


# -------------------------------------------------------------------- tool-result cap


def test_pair_3_cap_keeps_head_and_tail_with_a_marker() -> None:
    """PAIR-3: an over-long result keeps its first 2/3 and last 1/3 of the limit."""
    assert cap_tool_result("a" * 60 + "b" * 60, 60) == (
        "a" * 40 + "\n\n[... 60 characters truncated ...]\n\n" + "b" * 20
    )
    assert cap_tool_result("abcdefghij", 6) == "abcdef"  # a cap below the marker: a plain cut
    assert cap_tool_result("abcdef", 6) == "abcdef"
    assert cap_tool_result("x" * 100_000, 0) == "x" * 100_000
    assert len(cap_tool_result("y" * 60_000)) == 50_000 + len(
        "\n\n[... 10000 characters truncated ...]\n\n"
    )


def test_pair_3_a_cut_just_above_the_cap_is_never_silent() -> None:
    """PAIR-3 (issue 20 item 18): a 50,001-character result keeps a head and a tail with the
    marker between, shrunk so the result is no longer than its input (it was the first
    50,000 characters, no marker: the model never learned its end was missing)."""
    content = "h" * 30_000 + "t" * 20_001
    capped = cap_tool_result(content)
    marker = "\n\n[... 37 characters truncated ...]\n\n"
    assert capped == content[:33_309] + marker + content[-16_655:]
    assert len(capped) == len(content)


@given(st.integers(0, 300), st.integers(1, 300), st.fractions(0, 1))
def test_pair_3_every_cut_keeps_head_marker_tail(length: int, cap: int, share: Fraction) -> None:
    """PAIR-3: whenever the cap cuts a result that can hold its marker, the result is a head
    of the input, the marker naming the characters left out, and a tail of the input, in the
    policy's shares of at most `cap` characters, and never longer than the input."""
    content = "".join(chr(0x61 + i % 26) if i % 7 else "ñ" for i in range(length))
    policy = Policy(tool_result_head=share)
    capped = cap_tool_result(content, cap, policy=policy)
    assert len(capped) <= len(content)
    if len(content) <= cap:
        assert capped == content
        return
    found = re.search(r"\n\n\[\.\.\. (\d+) characters truncated \.\.\.\]\n\n", capped)
    if found is None:  # only a result too short to hold the marker is a plain cut
        assert len(content) <= len(f"\n\n[... {len(content)} characters truncated ...]\n\n")
        assert capped == content[:cap]
        return
    kept = len(content) - int(found.group(1))
    head, tail = policy.tool_result_split(kept)
    assert 1 <= kept <= cap
    assert capped == content[:head] + found.group(0) + content[len(content) - tail :]


def test_cap_rejects_bad_limits() -> None:
    with pytest.raises(ValueError, match="max_tool_result_chars"):
        cap_tool_result("abc", -1)
    with pytest.raises(ValueError, match="max_tool_result_chars"):
        cap_tool_result("abc", True)


@given(st.text(max_size=300), st.integers(0, 120))
def test_pair_3_cap_bounds_one_result(content: str, limit: int) -> None:
    """PAIR-3: the cap bounds a single result; below the limit (or with 0) it is untouched; it
    never lengthens a result, and a cap below the marker's length is a plain cut."""
    capped = cap_tool_result(content, limit)
    if limit == 0 or len(content) <= limit:
        assert capped == content
        return
    head = limit * 2 // 3
    marker = f"\n\n[... {len(content) - limit} characters truncated ...]\n\n"
    marked = content[:head] + marker + content[len(content) - (limit - head) :]
    if limit >= len(marker) and len(marked) < len(content):
        assert capped == marked
    else:
        assert capped == content[:limit]
    assert len(capped) < len(content)


# -------------------------------------------------------------------- channel sender cache


def test_limit_3_channel_cache_zero_means_the_default() -> None:
    """LIMIT-3: a channel sender cache counts rows and treats 0 as the default (50)."""
    cache = ChannelSenderCache(0)
    assert cache.capacity == DEFAULT_CHANNEL_CACHE_ROWS == 50
    dropped = cache.extend("ana", [ChatMessage.user(f"m{i}") for i in range(60)])
    assert dropped == 10
    assert [r.content for r in cache.rows("ana")] == [f"m{i}" for i in range(10, 60)]


def test_limit_3_channel_cache_counts_rows_not_turns() -> None:
    """LIMIT-3: tool rows use slots of their own; the oldest row goes first, mid-turn."""
    cache = ChannelSenderCache(3)
    turn = [
        ChatMessage.user("search"),
        ChatMessage.assistant_tool_calls(None, [_call("c1")]),
        ChatMessage.tool_result("c1", "out"),
        ChatMessage.assistant("done"),
    ]
    assert cache.extend("ana", turn) == 1
    assert cache.rows("ana") == turn[1:]
    assert cache.rows("bob") == []
    cache.append("bob", ChatMessage.user("hola"))
    assert cache.senders() == ["ana", "bob"]


def test_channel_cache_rejects_bad_sizes() -> None:
    with pytest.raises(ValueError, match="max_rows"):
        ChannelSenderCache(-1)


@given(st.integers(0, 80), st.integers(0, 120))
def test_limit_3_channel_cache_keeps_the_newest_rows(size: int, count: int) -> None:
    """LIMIT-3: at most `size or 50` rows per sender, the newest ones, in order."""
    cache = ChannelSenderCache(size)
    rows = [ChatMessage.user(f"m{i}") for i in range(count)]
    dropped = cache.extend("s", rows)
    keep = size or 50
    assert cache.rows("s") == rows[max(0, count - keep) :]
    assert dropped == max(0, count - keep)
