"""The agent under faults (issue 10, items 4, 10-13) and a fault-injection suite: a tool, a
provider and an observer that fail in every way; after each, the invariants hold (pairing
valid, history exactly as before or the turn complete, every delivery attempted)."""

from __future__ import annotations

import logging
import math
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

import histtrim.counting
from histtrim import (
    Agent,
    ChatMessage,
    EventBus,
    HistoryTrimmed,
    ProviderProfile,
    ProviderReply,
    ResolvedRuntime,
    RuntimeProfile,
    TokenLedger,
    ToolCall,
    ToolResults,
    estimate_history_tokens,
    index_turns,
    resolve_runtime,
    sweep_orphans,
)
from histtrim.agent.providers import ProviderError, ScriptedProvider
from histtrim.estimate import ToolSchema
from histtrim.events import InMemoryTransport, ObservedTrim


def runtime(**profile: object) -> ResolvedRuntime:
    return resolve_runtime(
        RuntimeProfile.model_validate(profile),
        ProviderProfile(model="m", context_window=100_000),
        "m",
    )


def state(bot: Agent) -> tuple[object, ...]:
    return (
        bot.history,
        bot.working_history(),
        bot._ledger.total,
        len(bot._ledger),
        bot.turn_id,
        list(bot.events),
        list(bot.calls),
        bot.crumb_present,
    )


def pairing_ok(bot: Agent) -> bool:
    return sweep_orphans(bot.history, crumb_present=bot.crumb_present).removed == ()


def call(name: str, arguments: str = "{}", id: str = "c1") -> ProviderReply:
    return ProviderReply(tool_calls=(ToolCall(id=id, name=name, arguments=arguments),))


def warmed(provider: Any, **kwargs: Any) -> Agent:
    """An agent with two finished turns and a budget that trims on the next one."""
    bot = Agent(provider, runtime(max_context_tokens=60), system_prompt="sys", **kwargs)
    return bot


# -------------------------------------------------------------- item 10: tools


def circular() -> object:
    loop: list[object] = []
    loop.append(loop)
    return loop


def deep() -> object:
    value: object = 0
    for _ in range(sys.getrecursionlimit() * 2):
        value = [value]
    return value


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no text")

    __repr__ = __str__


TOOL_FAULTS: dict[str, Callable[[], object]] = {
    "circular": circular,
    "lone surrogate": lambda: "bad \ud800 text",
    "surrogate inside a value": lambda: {"k": ["\udfff"]},
    "nan": lambda: {"x": math.nan},
    "too deep": deep,
    "unprintable": lambda: Unprintable(),
    "unprintable key": lambda: {Unprintable(): 1},
    "raises": lambda: 1 / 0,
    "raises a non-text error": lambda: (_ for _ in ()).throw(ValueError("\ud800")),
}


@pytest.mark.parametrize("fault", sorted(TOOL_FAULTS))
def test_item_10_every_tool_failure_is_a_tool_error_result(fault: str) -> None:
    def tool() -> object:
        return TOOL_FAULTS[fault]()

    provider = ScriptedProvider([call("tool"), ProviderReply(text="sorry")])
    bot = Agent(provider, runtime(), tools=[tool])
    outcome = bot.turn("go")
    assert outcome.reply == "sorry"
    results = [item for item in bot.history if isinstance(item, ToolResults)]
    assert len(results) == 1
    (result,) = results[0].results
    assert result.content.startswith("error: "), result.content
    result.content.encode("utf-8")
    assert pairing_ok(bot)
    assert "NaN" not in result.content
    # the next request is valid (PAIR-1) and goes through
    provider.extend([ProviderReply(text="ok")])
    assert bot.turn("again").reply == "ok"


# -------------------------------------------------------------- item 11: providers


class FaultyProvider(ScriptedProvider):
    """Fails on call number `at` (1-based) in the given way; replays the script otherwise."""

    def __init__(self, script: Sequence[ProviderReply], at: int, how: str) -> None:
        super().__init__(script)
        self.at, self.how, self.count = at, how, 0

    def complete(
        self, messages: Sequence[ChatMessage], tool_schemas: Sequence[ToolSchema]
    ) -> ProviderReply:
        self.count += 1
        if self.count != self.at:
            return super().complete(messages, tool_schemas)
        if self.how == "raises":
            raise RuntimeError("connection reset")
        if self.how == "interrupt":
            raise KeyboardInterrupt
        if self.how == "none":
            return None  # type: ignore[return-value]
        if self.how == "dict":
            return {"text": "hi"}  # type: ignore[return-value]
        raise AssertionError(self.how)


PROVIDER_FAULTS = ["raises", "interrupt", "none", "dict"]


def busy_agent(provider: Any, bus: EventBus | None = None) -> Agent:
    """Three finished turns; a budget and a turn limit that both trim on the next turn."""
    bot = Agent(
        provider,
        runtime(max_context_tokens=80, max_history_messages=3),
        system_prompt="sys",
        tools=[lambda: "out"],
        bus=bus,
    )
    history: list[Any] = []
    for n in range(3):
        history += [ChatMessage.user(f"question {n} " + "q" * 40), ChatMessage.assistant(f"a{n}")]
    bot.restore(history)
    return bot


@pytest.mark.parametrize("how", PROVIDER_FAULTS)
@pytest.mark.parametrize("at", [1, 2, 3])
def test_item_11_a_turn_is_all_or_nothing(how: str, at: int) -> None:
    script = [call("<lambda>", id="x1"), call("<lambda>", id="x2"), ProviderReply(text="done")]
    provider = FaultyProvider(script, at, how)
    transport = InMemoryTransport()
    bot = busy_agent(provider, EventBus([transport]))
    before = state(bot)
    expected: type[BaseException] = {
        "raises": RuntimeError, "interrupt": KeyboardInterrupt, "none": ProviderError,
        "dict": ProviderError,
    }[how]
    with pytest.raises(expected) as failure:
        bot.turn("new question")
    assert state(bot) == before
    assert pairing_ok(bot)
    if how in ("none", "dict"):
        assert "not a ProviderReply" in str(failure.value)
    assert any("rolled back" in note for note in getattr(failure.value, "__notes__", []))
    # retrying does not duplicate the user message
    provider.at = 0
    provider.extend([ProviderReply(text="done")] * 3)
    bot.turn("new question")
    assert [getattr(i, "content", None) for i in bot.history].count("new question") == 1
    assert bot.turn_id == before[4] + 1  # type: ignore[operator]


# -------------------------------------------------------------- item 12: observers


class BrokenTransport:
    def send(self, event: HistoryTrimmed) -> None:
        raise OSError("client went away")


def test_item_12_each_delivery_is_isolated(caplog: pytest.LogCaptureFixture) -> None:
    first, last = InMemoryTransport(), InMemoryTransport()
    seen: list[ObservedTrim] = []

    def broken_observer(observed: ObservedTrim) -> None:
        raise ValueError("dashboard down")

    bus = EventBus([first, BrokenTransport(), last], [broken_observer, seen.append])
    provider = ScriptedProvider([ProviderReply(text="done")])
    bot = busy_agent(provider, bus)
    with caplog.at_level(logging.ERROR, logger="histtrim.events"):
        outcome = bot.turn("new question")
    assert outcome.reply == "done" and outcome.events
    assert first.events == last.events == list(outcome.events)
    assert [o.event for o in seen] == list(outcome.events)
    messages = [r.getMessage() for r in caplog.records]
    assert sum("client went away" in m or "BrokenTransport" in m for m in messages) >= 1
    assert sum("dashboard down" in m or "broken_observer" in m for m in messages) >= 1
    assert pairing_ok(bot)


# -------------------------------------------------------------- item 13: constructor


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"channel": 5}, "channel"),
        ({"channel": ""}, "channel"),
        ({"alias": None}, "alias"),
        ({"alias": ""}, "alias"),
        ({"system_prompt": 3}, "system_prompt"),
        ({"system_prompt": "bad \ud800"}, "system_prompt"),
        ({"tools": [3]}, "tools"),
        ({"tools": "abc"}, "tools"),
        ({"bus": object()}, "bus"),
        ({"provider": object()}, "provider"),
        ({"runtime": {"profile": {}}}, "runtime"),
    ],
)
def test_item_13_every_argument_is_checked_when_the_agent_is_made(
    kwargs: dict[str, Any], field: str
) -> None:
    arguments: dict[str, Any] = {"provider": ScriptedProvider(), "runtime": runtime(), **kwargs}
    provider, rt = arguments.pop("provider"), arguments.pop("runtime")
    with pytest.raises((ValueError, TypeError), match=field):
        Agent(provider, rt, **arguments)


# -------------------------------------------------------------- item 4: threads


@contextmanager
def busy_switching() -> Iterator[None]:
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)


def test_item_4_a_shared_ledger_survives_six_threads_trimming(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pricing a row yields to the other threads (a sleep inside the `message_cost` that
    `Pricing` calls), so an unlocked ledger interleaves its updates on every run, not only
    on unlucky ones."""
    real = histtrim.counting.message_cost

    def slow_price(row: ChatMessage, *, current_turn: bool, **options: Any) -> int:
        time.sleep(0.0001)
        return real(row, current_turn=current_turn, **options)

    monkeypatch.setattr(histtrim.counting, "message_cost", slow_price)
    ledger = TokenLedger([ChatMessage.system("sys")])
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for n in range(60):
                ledger.extend(
                    [ChatMessage.user(f"w{worker} q{n} " + "x" * 30), ChatMessage.assistant("ok")]
                )
                ledger.trim(200)
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    with busy_switching():
        threads = [threading.Thread(target=work, args=(w,)) for w in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []
    rows = list(ledger)
    assert ledger.total == estimate_history_tokens(rows)
    assert ledger.turn_count() == index_turns(rows).turn_count
    assert ledger.total <= 200 or ledger.turn_count() == 1


def test_item_4_turns_of_one_agent_from_several_threads_are_serialized() -> None:
    """The threading contract: `Agent.turn` may be called from any thread; turns run one at a
    time, each whole."""
    provider = ScriptedProvider([ProviderReply(text=f"r{n}") for n in range(60)])
    bot = Agent(provider, runtime(max_context_tokens=200), system_prompt="sys")
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for n in range(10):
                bot.turn(f"w{worker} n{n} " + "x" * 40)
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    with busy_switching():
        threads = [threading.Thread(target=work, args=(w,)) for w in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []
    assert bot.turn_id == 60 and len(bot.calls) == 60
    assert [c.turn_id for c in bot.calls] == list(range(1, 61))
    roles = [getattr(item, "role", None) for item in bot.history]
    body = roles[bot.crumb_present :]
    assert body == ["user", "assistant"] * (len(body) // 2)
    assert bot._ledger.total == estimate_history_tokens(bot.working_history())


# -------------------------------------------------------------- the fault-injection suite


@pytest.mark.parametrize("tool_fault", sorted(TOOL_FAULTS))
@pytest.mark.parametrize("provider_fault", ["ok", *PROVIDER_FAULTS])
@pytest.mark.parametrize("observer_fault", ["ok", "transport", "observer"])
def test_fault_injection_keeps_every_invariant(
    tool_fault: str, provider_fault: str, observer_fault: str
) -> None:
    """A tool, a provider and an observer failing together, in every way above: after the
    turn, the history is either exactly as before or the turn is complete, pairing is valid,
    the ledger agrees with the rows, and every healthy client received every event."""

    def tool() -> object:
        return TOOL_FAULTS[tool_fault]()

    healthy = InMemoryTransport()
    transports: list[Any] = [healthy]
    observers: list[Any] = []
    if observer_fault == "transport":
        transports.insert(0, BrokenTransport())
    elif observer_fault == "observer":
        observers.append(lambda observed: 1 / 0)
    script = [call("tool", id="t1"), ProviderReply(text="done")]
    provider = FaultyProvider(script, 2 if provider_fault != "ok" else 0, provider_fault)
    bot = busy_agent(provider, EventBus(transports, observers))
    bot.toolbox = type(bot.toolbox)([tool])
    before = state(bot)
    try:
        outcome = bot.turn("new question")
    except (RuntimeError, KeyboardInterrupt, ProviderError):
        assert provider_fault != "ok"
        assert state(bot) == before
    else:
        assert provider_fault == "ok"
        assert outcome.reply == "done"
        assert bot.history[-1] == ChatMessage.assistant("done")
        assert healthy.events == list(outcome.events) and outcome.events
    assert pairing_ok(bot)
    assert bot._ledger.total == estimate_history_tokens(bot.working_history())
    assert bot.events == healthy.events or provider_fault != "ok"
