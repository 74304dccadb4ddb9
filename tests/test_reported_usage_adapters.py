"""USAGE-1..6 on recorded transcripts: the adapters (`trim_openai`, `trim_anthropic`) and
`histtrim trim` read the last reply's recorded usage and trim on it; without usage, or with an
unusable one (USAGE-5), they trim as before."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from histtrim.adapters import last_reply_report, recorded_report
from histtrim.adapters.anthropic import trim_anthropic
from histtrim.adapters.openai import from_openai, trim_openai
from histtrim.cli import main
from histtrim.estimate import estimate_history_tokens
from histtrim.policy import Policy
from histtrim.reported_usage import PROVIDER_UNITS, calibrated

BIG = "x" * 2000


def openai_session(usage: Any) -> list[dict[str, Any]]:
    """Three turns; the last reply recorded with `usage`, then a new question."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}]
    for t in range(3):
        messages += [{"role": "user", "content": f"turn{t} {BIG}"},
                     {"role": "assistant", "content": f"answer {t}"}]
    messages[-1]["usage"] = usage
    messages.append({"role": "user", "content": "and now?"})
    return messages


def test_usage_1_the_openai_adapter_trims_on_the_recorded_prompt_tokens() -> None:
    """USAGE-1..3: the request before the last reply is estimated at E; it recorded 3E, over
    a budget of 2E (which the estimate fits): the trim runs on E/3E of the budget and states
    its figures in provider units."""
    request = openai_session(None)[:6]
    estimated = estimate_history_tokens(from_openai(request))
    messages = openai_session({"prompt_tokens": 3 * estimated, "completion_tokens": 5})
    budget = 2 * estimated
    assert not trim_openai(messages, budget_tokens=budget, usage=False).trimmed
    done = trim_openai(messages, budget_tokens=budget)
    assert done.trimmed and done.event is not None
    assert done.event.counter == PROVIDER_UNITS and done.event.budget == budget
    total = estimate_history_tokens(from_openai(messages))
    assert done.event.tokens_before == calibrated(total, 3 * estimated, estimated)
    assert done.event.tokens_after <= budget
    assert done.records[-1] == messages[-1]  # kept messages come back untouched
    assert recorded_report(messages, from_openai(messages)) == (3 * estimated, estimated)


@pytest.mark.parametrize("usage", [{"prompt_tokens": 0}, {"prompt_tokens": -1},
                                   {"prompt_tokens": "9000"}, {"completion_tokens": 3}, None])
def test_usage_5_bad_recorded_usage_trims_as_the_estimate_does(usage: Any) -> None:
    messages = openai_session(usage)
    budget = estimate_history_tokens(from_openai(messages)) // 2
    with_usage = trim_openai(messages, budget_tokens=budget)
    without = trim_openai(messages, budget_tokens=budget, usage=False)
    assert with_usage.records == without.records and with_usage.event == without.event


def test_usage_5_the_anthropic_adapter_sums_input_and_cache_tokens() -> None:
    """USAGE-5: Anthropic's input is input_tokens + cache reads + cache writes."""
    messages: list[dict[str, Any]] = []
    for t in range(3):
        messages += [{"role": "user", "content": f"turn{t} {BIG}"},
                     {"role": "assistant", "content": [{"type": "text", "text": f"a{t}"}]}]
    messages[-1]["usage"] = {"input_tokens": 10, "cache_read_input_tokens": 9000,
                             "cache_creation_input_tokens": 990}
    body = {"system": "S", "messages": messages}
    _, done = trim_anthropic(body, budget_tokens=5000)
    _, cached_only = trim_anthropic(body, budget_tokens=5000, usage=False)
    assert done.event is not None and done.event.tokens_before > 10_000 - 1
    assert done.event.counter == PROVIDER_UNITS
    assert cached_only.event is None  # the estimate (about 1,550) fits 5,000


def test_usage_4_a_report_within_the_budget_never_moves_the_held_cut() -> None:
    """USAGE-4: with a low-water Policy and a report under the budget, the adapter holds the
    cut the estimate alone holds (byte-stable prefix)."""
    messages = openai_session({"prompt_tokens": 10})
    low = Policy(token_trim_target=Fraction(7, 10))
    budget = estimate_history_tokens(from_openai(messages)) - 100
    held = trim_openai(messages, budget_tokens=budget, policy=low)
    same = trim_openai(messages, budget_tokens=budget, policy=low, usage=False)
    assert held.records == same.records


def test_the_back_scan_is_bounded_by_two_turns() -> None:
    """The last reply is looked for back to the turn before the current one, no further."""
    roles = ["user", "assistant", "user", "user", "user", "user"]
    seen: list[int] = []

    def role(i: int) -> str:
        seen.append(i)
        return roles[i]

    assert last_reply_report(6, role, lambda i: {"usage": {"prompt_tokens": 5}},
                             lambda end: 10) is None
    assert min(seen) >= 3
    assert last_reply_report(3, lambda i: roles[i], lambda i: {"usage": {"prompt_tokens": 50}},
                             lambda end: end * 10) == (50, 10)


def test_usage_1_histtrim_trim_reads_the_recorded_usage(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    """`histtrim trim` on an OpenAI JSON Lines transcript: the event in provider units; with
    --ignore-usage the estimate alone (which fits) drops nothing."""
    request = openai_session(None)[:6]
    estimated = estimate_history_tokens(from_openai(request))
    messages = openai_session({"prompt_tokens": 3 * estimated})
    source = tmp_path / "session.jsonl"
    source.write_text("".join(json.dumps(m) + "\n" for m in messages), encoding="utf-8")
    budget = str(2 * estimated)
    out = tmp_path / "out.jsonl"
    assert main(["trim", str(source), "--format", "openai", "--budget", budget,
                 "-o", str(out)]) == 0
    event = json.loads(capsys.readouterr().err.splitlines()[0])
    assert event["counter"] == PROVIDER_UNITS and event["reason"] == "token_budget"
    assert event["tokens_after"] <= 2 * estimated
    kept = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert kept[-1] == messages[-1]
    assert main(["trim", str(source), "--format", "openai", "--budget", budget,
                 "--ignore-usage", "-o", str(out)]) == 0
    assert "history_trimmed" not in capsys.readouterr().err
