"""Small wrong results (issue 10, items 14-15): a cap never lengthens a result, flags are
strict bools, a bare str is not a sequence of texts, every public entry point accepts what the
others accept, and numpy integers are integers."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from histtrim import (
    ChatMessage,
    ContextCapacityExceeded,
    ProviderProfile,
    RuntimeProfile,
    TokenLedger,
    cap_tool_result,
    check_request,
    estimate_history_tokens,
    index_turns,
    resolve_runtime,
    trim_to_recent_turn_count,
    trim_to_recent_turns,
)
from histtrim.adapters.openai import trim_openai
from histtrim.estimate import estimate_hooks, estimate_tool_schemas


@given(st.text(max_size=300), st.integers(1, 400))
def test_item_14_a_cap_never_lengthens_and_stays_bounded(content: str, cap: int) -> None:
    capped = cap_tool_result(content, cap)
    assert len(capped) <= len(content)
    if len(content) <= cap:
        assert capped == content
        return
    marker = f"\n\n[... {len(content) - cap} characters truncated ...]\n\n"
    assert len(capped) <= cap + len(marker)


def test_item_14_the_reported_case() -> None:
    assert cap_tool_result("abcdef", 1) == "a"  # too short to hold the marker (issue 20: 18)
    assert cap_tool_result("abcdefghijklmnopqrstuvwxyz" * 2, 30) == (
        "abcdefghij\n\n[... 37 characters truncated ...]\n\nvwxyz"
    )
    long = "x" * 1000
    marker = "\n\n[... 900 characters truncated ...]\n\n"
    assert len(cap_tool_result(long, 100)) == 100 + len(marker)


ROWS = [ChatMessage.user("a" * 40), ChatMessage.assistant("b"), ChatMessage.user("c")]


def test_item_15_a_bare_str_is_not_a_sequence_of_texts() -> None:
    with pytest.raises(ValueError, match="hooks"):
        estimate_hooks("abcdefgh")
    with pytest.raises(ValueError, match="schemas"):
        estimate_tool_schemas("abc")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"schemas\[0\]"):
        estimate_tool_schemas([3])  # type: ignore[list-item]


@pytest.mark.parametrize("flag", ["no", 1, None, np.bool_(True)])
def test_item_15_flags_are_strict_bools(flag: Any) -> None:
    strict = "crumb_present must be a bool"
    with pytest.raises(ValueError, match=strict):
        index_turns(ROWS, crumb_present=flag)
    with pytest.raises(ValueError, match=strict):
        trim_openai([{"role": "user", "content": "hi"}], max_turns=1, crumb_present=flag)
    with pytest.raises(ValueError, match=strict):
        TokenLedger(ROWS).turn_count(crumb_present=flag)


def test_item_15_index_turns_accepts_dicts_like_the_trims() -> None:
    dicts = [row.model_dump() for row in ROWS]
    assert index_turns(dicts) == index_turns(ROWS)
    with pytest.raises(ValueError):
        index_turns([{"role": "nobody", "content": "x"}])


@pytest.mark.parametrize("kind", [np.int64, np.int32, np.uint16])
def test_item_15_numpy_integers_are_limits(kind: Any) -> None:
    assert trim_to_recent_turns(ROWS, kind(5)) == trim_to_recent_turns(ROWS, 5)
    assert trim_to_recent_turn_count(ROWS, kind(1)).kept_turns == 1
    assert TokenLedger(ROWS).needs_trim(kind(5)) is True
    assert cap_tool_result("x" * 100, kind(50)) == cap_tool_result("x" * 100, 50)
    with pytest.raises(ValueError, match="budget_tokens"):
        trim_to_recent_turns(ROWS, np.float64(5))  # type: ignore[arg-type]


def test_issue_11_a_prompt_that_alone_fills_the_window_says_context_window() -> None:
    runtime = resolve_runtime(RuntimeProfile(), ProviderProfile(model="m", context_window=10), "m")
    with pytest.raises(ContextCapacityExceeded) as failure:
        check_request([ChatMessage.system("s" * 100)], runtime=runtime)
    message = str(failure.value)
    assert "alone meet or exceed the model context window (10 tokens)" in message
    assert "context budget" not in message
    assert estimate_history_tokens([ChatMessage.system("s" * 100)]) > 10
