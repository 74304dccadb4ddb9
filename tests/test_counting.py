"""Bring your own counter: `token_counter` on the budget trim (KEEP-1), the capacity check
(CAP-2), the ledger and the Agent (RUN-1), replacing only EST-1's text part; called once per
row, its result cached on the row; trims and events made with it say so (SEEN-2)."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from histtrim import (
    BREADCRUMB,
    IMAGE_TOKENS,
    Agent,
    ChatMessage,
    ContextCapacityExceeded,
    ProviderProfile,
    ProviderReply,
    ResolvedRuntime,
    RuntimeProfile,
    TokenLedger,
    ToolCall,
    capacity_report,
    check_request,
    estimate_history_tokens,
    resolve_runtime,
    text_tokens,
    trim_to_recent_turns,
)
from histtrim.adapters.tokenizers import row_text
from histtrim.agent.providers import ScriptedProvider
from histtrim.carriers import image_marker
from histtrim.counting import counted_costs, counted_tokens, counter_name
from histtrim.messages import FRAME_TOKENS
from livingspec.examples import agent_session, many_turns_session
from livingspec.strategies import chat_histories, token_budgets


class Words:
    """A deterministic counter: one token per whitespace-separated word; counts its calls."""

    name = "words"

    def __init__(self) -> None:
        self.rows: list[ChatMessage] = []

    @property
    def calls(self) -> int:
        return len(self.rows)

    def __call__(self, row: ChatMessage) -> int:
        self.rows.append(row)  # kept alive: identities stay unique
        return len(row.content.split())


def est1_text(row: ChatMessage) -> int:
    """EST-1's own text part as a counter (markers of real user rows left out, as EST-2 says)."""
    return text_tokens(row_text(row))


def runtime(window: int = 100_000, **profile: object) -> ResolvedRuntime:
    provider = ProviderProfile(model="m", context_window=window)
    return resolve_runtime(RuntimeProfile.model_validate(profile), provider, "m")


# ------------------------------------------------------------------ what the counter replaces


def test_a_counted_row_costs_counter_plus_framing_plus_dispatched_images() -> None:
    """The counter replaces ceil(bytes/4) only; the 4 framing tokens and EST-2's image price
    stay: a user row with one loadable marker costs counter + 4 + 1600."""
    words = Words()
    rows = [
        ChatMessage.system("be brief"),
        ChatMessage.user(f"what is on this screen {image_marker('/tmp/s.png')}"),
        ChatMessage.assistant("a stack trace"),
    ]
    costs = counted_costs(rows, words)
    assert costs == [
        2 + FRAME_TOKENS,
        6 + FRAME_TOKENS + IMAGE_TOKENS,
        3 + FRAME_TOKENS,
    ]


@given(case=chat_histories(), data=st.data())
def test_est1_as_a_counter_trims_exactly_like_the_spec(case: Any, data: st.DataObject) -> None:
    """KEEP-1: with EST-1's own byte count as the counter, every trim of a history without
    current-turn attachments keeps and drops what the default trim does; only `counter` differs."""
    rows = case.history
    budget = data.draw(token_budgets(estimate_history_tokens(rows)))
    plain = trim_to_recent_turns(rows, budget, crumb_present=case.crumb)
    counted = trim_to_recent_turns(rows, budget, crumb_present=case.crumb, token_counter=est1_text)
    if estimate_history_tokens(rows) == sum(counted_costs(rows, est1_text)):
        assert counted.history == plain.history
        assert counted.dropped == plain.dropped
        assert (counted.tokens_before, counted.tokens_after) == (
            plain.tokens_before,
            plain.tokens_after,
        )
    assert plain.counter is None
    assert counted.counter == "est1_text"


def test_a_trim_with_a_counter_says_so_and_uses_its_numbers() -> None:
    """KEEP-1 with a counter: the budget is met in counted tokens, and the result names it."""
    rows = many_turns_session(12)
    words = Words()
    total = sum(counted_costs(rows, words))
    result = trim_to_recent_turns(rows, total // 2, token_counter=words)
    assert result.trimmed
    assert result.counter == "words"
    assert result.tokens_before == total
    assert result.tokens_after == sum(counted_costs(result.history, words)) <= total // 2
    assert "counted by words" in repr(result)
    assert "counted by" not in repr(trim_to_recent_turns(rows, total // 2))
    assert [*result.history[:1], *result.dropped, *result.history[1:]] == rows


# ------------------------------------------------------------------ once per row, cached


def test_the_counter_is_called_once_per_row_across_trims() -> None:
    rows = agent_session()
    words = Words()
    for budget in (0, 50, 200, 10_000):
        trim_to_recent_turns(rows, budget, token_counter=words)
    capacity_report(rows, runtime=runtime(), token_counter=words)
    assert words.calls == len(rows)
    other = Words()  # another counter gets its own count, cached beside the first
    trim_to_recent_turns(rows, 100, token_counter=other)
    trim_to_recent_turns(rows, 100, token_counter=words)
    assert (other.calls, words.calls) == (len(rows), len(rows))


def test_the_ledger_with_a_counter_calls_it_once_per_new_row() -> None:
    """RUN-1: O(new rows) per boundary with a counter too (appends, trims and rebuilds)."""
    words = Words()
    ledger = TokenLedger(token_counter=words)
    rows = many_turns_session(30)
    for n, row in enumerate(rows, 1):
        ledger.append(row)
        assert words.calls == n
        ledger.needs_trim(100)
    ledger.trim(ledger.total // 3)
    ledger.rebuild(list(ledger))
    assert words.calls == len(rows)
    assert ledger.total == sum(counted_costs(list(ledger), words))


def test_the_agent_calls_the_counter_once_per_row_it_ever_records() -> None:
    """RUN-1 with a counter: each turn counts exactly its four new rows (user, tool call, tool
    result, reply) plus the breadcrumb each trim inserts, however many boundaries, trims and
    rebuilds happened; no row is ever counted twice; trims and events name the counter (SEEN-2)."""
    words = Words()

    def read_log() -> str:
        """Read the shop's log."""
        return " ".join(["line"] * 40)

    turns = 25
    script = []
    for n in range(turns):
        script += [
            ProviderReply(tool_calls=(ToolCall(id=f"c{n}", name="read_log"),)),
            ProviderReply(text=f"answer {n} " + "done " * 20),
        ]
    rt = runtime(max_context_tokens=600)
    agent = Agent(ScriptedProvider(script), rt, system_prompt="be brief", tools=[read_log],
                  token_counter=words)
    assert words.calls == 1  # the system prompt
    for n in range(turns):
        before = words.calls
        outcome = agent.turn(f"question {n}")
        counted = words.rows[before:]
        crumbs = [row for row in counted if row.content == BREADCRUMB]
        assert len(counted) - len(crumbs) == 4
        assert len(outcome.events) <= len(crumbs) <= 2 * len(outcome.events)
        assert all(event.counter == "words" for event in outcome.events)
    assert len({id(row) for row in words.rows}) == words.calls
    assert len(agent.events) >= turns // 2, "the budget must have trimmed"
    assert agent.events[-1].to_wire()["counter"] == "words"
    sent = agent.working_history()[:-1]  # the last request: everything before the final reply
    assert agent.calls[-1].history_tokens == sum(counted_costs(sent, words))


def test_without_a_counter_events_and_wire_are_unchanged() -> None:
    agent = Agent(ScriptedProvider([ProviderReply(text="x" * 4000)] * 4), runtime(
        max_context_tokens=800))
    for n in range(4):
        agent.turn(f"question {n}")
    assert agent.events
    assert all(e.counter is None and "counter" not in e.to_wire() for e in agent.events)
    assert "counter" not in repr(agent.events[0])


def test_a_copy_with_new_content_is_counted_again_and_pickles_drop_the_cache() -> None:
    words = Words()
    row = ChatMessage.user("one two three")
    assert counted_tokens(row, words) == 3
    changed = row.model_copy(update={"content": "one two"})
    assert counted_tokens(changed, words) == 2
    assert counted_tokens(row, words) == 3
    assert words.calls == 2  # the copy did not spoil the original's cache

    def local(row: ChatMessage) -> int:  # not picklable: the cache must not be pickled
        return 1

    counted_tokens(row, local)
    clone = pickle.loads(pickle.dumps(row))
    assert clone == row
    assert counted_tokens(clone, words) == 3
    assert counted_tokens(copy.deepcopy(row), words) == 3
    assert words.calls == 4


# ------------------------------------------------------------------ hostile counters


@pytest.mark.parametrize("bad", [-1, 2.5, "3", None, True])
def test_a_counter_must_return_a_non_negative_integer(bad: object) -> None:
    row = ChatMessage.user("hello")
    with pytest.raises(ValueError, match="token_counter '<lambda>' must return an integer >= 0"):
        trim_to_recent_turns([row, row], 1, token_counter=lambda r: bad)  # type: ignore[arg-type,return-value]

    def bad_counter(r: ChatMessage) -> object:
        return bad

    with pytest.raises(ValueError, match="token_counter 'bad_counter'"):
        counted_tokens(row, bad_counter)  # type: ignore[arg-type]
    assert row.__dict__.get("_counted_tokens", {}).get(bad_counter) is None


def test_a_failing_counter_leaves_the_ledger_as_it_was() -> None:
    rows = agent_session()
    calls = 0

    def flaky(row: ChatMessage) -> int:
        nonlocal calls
        calls += 1
        if "PAYMENT" in row.content.upper() and calls > len(rows):
            raise RuntimeError("tokenizer crashed")
        return len(row.content) // 3

    ledger = TokenLedger(rows, token_counter=flaky)
    before = (list(ledger), ledger.total, ledger.turn_count())
    new = ChatMessage.user("the payment page is down again")
    with pytest.raises(RuntimeError):
        ledger.append(new)
    with pytest.raises(RuntimeError):
        ledger.rebuild([*rows, new])
    with pytest.raises(RuntimeError):
        ledger.insert(1, new)
    assert (list(ledger), ledger.total, ledger.turn_count()) == before


def test_counter_names() -> None:
    assert counter_name(Words()) == "words"
    assert counter_name(est1_text) == "est1_text"
    assert counter_name(lambda row: 0) == "<lambda>"

    class Unnamed:
        def __call__(self, row: ChatMessage) -> int:
            return 0

    assert counter_name(Unnamed()) == "Unnamed"


# ------------------------------------------------------------------ CAP-2 with a counter


def test_the_capacity_check_uses_the_counter_for_the_messages_only() -> None:
    """CAP-2: messages + images + hooks + tool schemas <= window, with the messages' text counted
    by the counter; hooks and schemas stay the spec's estimate. A request the byte estimate lets
    through fails before dispatch when the counter says it does not fit."""
    rows = [ChatMessage.system("s"), ChatMessage.user("x " * 2000)]  # 4000 bytes, 2000 words
    words: Callable[[ChatMessage], int] = Words()
    rt = runtime(window=1500)
    assert check_request(rows, runtime=rt).total == estimate_history_tokens(rows) <= 1500
    report = capacity_report(rows, runtime=rt, hooks=["hook text"], token_counter=words)
    assert report.counter == "words"
    assert report.messages == 1 + 4 + 2000 + 4
    assert report.hooks == text_tokens("hook text")
    assert not report.fits
    with pytest.raises(ContextCapacityExceeded, match=r"\(messages counted by words\)"):
        check_request(rows, runtime=rt, token_counter=words)


def test_the_agent_refuses_a_request_its_counter_says_is_over_the_window() -> None:
    """CAP-2 in the loop: the check before dispatch uses the agent's counter; no provider call."""
    provider = ScriptedProvider([ProviderReply(text="never")])
    agent = Agent(provider, runtime(window=1500, max_context_tokens=0), token_counter=Words())
    with pytest.raises(ContextCapacityExceeded):
        agent.turn("x " * 2000)
    assert provider.requests == []
