"""Issue 46 item 16: the integrations' price cache is bounded in bytes, not entries. It kept
two generations of up to 8,192 entries each with its full row, so 20 cancelled pydantic-ai
runs of a 200 KB prompt left 4.0 MB behind (16k such entries: 3.3 GB). It now keeps what it
holds within `CACHE_BYTES` (or twice the call in progress), and a cancelled run's entries
age out with the calls after it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from histtrim.integrations._trimmer import CACHE_BYTES, ENTRY_BYTES, PriceCache, Trimmer
from histtrim.messages import ChatMessage


def test_many_large_rows_stay_within_the_byte_budget() -> None:
    cache = Trimmer(budget_tokens=100).cache
    big = 200_000
    for i in range(3 * CACHE_BYTES // big):
        cache.fit(1)
        cache.priced(ChatMessage.user(f"{i} " + "x" * big))
        assert cache.bytes <= CACHE_BYTES
    assert cache.bytes > CACHE_BYTES // 4  # the budget is used, not wasted


def test_many_small_rows_cost_their_entries() -> None:
    cache = PriceCache(Trimmer(budget_tokens=100).pricing, budget=64 * ENTRY_BYTES)
    for i in range(1_000):
        cache.priced(ChatMessage.user(f"row {i}"))
    assert len(cache._rows) + len(cache._old_rows) <= 64


def test_a_call_larger_than_the_budget_keeps_its_own_rows() -> None:
    """A history over the budget is held whole while its call runs (it would otherwise be
    evicted by itself and priced again on every call), and only then."""
    calls = []
    cache = PriceCache(Trimmer(budget_tokens=100).pricing, budget=100_000)
    rows = [ChatMessage.user(f"{i} " + "y" * 1_000) for i in range(300)]  # ~300 KB
    for _ in range(3):
        cache.fit(len(rows))
        before = len(cache._rows)
        priced = [cache.priced(row) for row in rows]
        calls.append(len(cache._rows) - before)
        assert [p.row for p in priced] == rows
    assert calls[1:] == [0, 0]  # the second and third calls price nothing again
    for i in range(200):  # later small calls: the large history ages out
        cache.fit(1)
        cache.priced(ChatMessage.user(f"small {i} " + "z" * 1_000))
    assert cache.bytes <= 100_000


async def _cancelled_runs(capability: Any, runs: range, size: int) -> None:
    """A pydantic-ai agent run per `runs` with a distinct prompt of `size` characters, each
    cancelled while its request is in flight (the model never answers)."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    started = asyncio.Event()

    async def hang(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        started.set()
        await asyncio.Event().wait()
        raise AssertionError("never answered")

    agent = Agent(FunctionModel(hang), capabilities=[capability])
    for k in runs:
        started.clear()
        task = asyncio.create_task(agent.run(f"{k} " + "p" * size))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


def test_cancelled_pydantic_ai_runs_leave_at_most_the_budget() -> None:
    """Round three's test made heavy: runs of a distinct 200 KB prompt, each cancelled while
    its request is in flight, leave at most the byte budget's worth of prompts in the
    capability's cache (each run's prompt stayed before, 20 runs: 4.0 MB)."""
    pytest.importorskip("pydantic_ai")
    from histtrim.integrations.pydantic_ai import HisttrimCapability

    capability = HisttrimCapability(budget_tokens=0)
    cache = capability.trimmer.cache
    cache.budget = 1 << 20
    asyncio.run(_cancelled_runs(capability, range(12), 200_000))
    held = {id(a) for entries in (cache._groups, cache._old_groups, cache._ids, cache._old_ids)
            for anchors, _ in entries.values() for a in anchors
            if len(getattr(a, "content", "")) > 200_000}
    assert cache.bytes <= cache.budget
    assert 0 < len(held) <= cache.budget // 200_000


def test_cancelled_runs_leave_one_history_not_four() -> None:
    """The histories an instance remembers (`Prefixes`, 4 of them) are bounded in bytes too:
    runs of a distinct 1 MB prompt, each cancelled in flight, leave the newest history (its
    items and its row: 2 prompts' bytes, traced) and older ones only within the budget;
    before, the last 4 histories stayed whatever their size (4.05 MB traced here)."""
    pytest.importorskip("pydantic_ai")
    import gc
    import tracemalloc

    from histtrim.integrations.pydantic_ai import HisttrimCapability

    big = 1_000_000
    capability = HisttrimCapability(budget_tokens=0)
    capability.trimmer.cache.budget = 1 << 18
    capability.trimmer.prefixes.budget = 1 << 18

    async def retained() -> int:
        await _cancelled_runs(capability, range(1), big)
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            await _cancelled_runs(capability, range(1, 7), big)
            gc.collect()
            return tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()

    assert asyncio.run(retained()) < 2.5 * big
    assert len(capability.trimmer.prefixes._seen) == 1

