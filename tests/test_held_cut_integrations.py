"""RUN-1, SEEN-1 in the frameworks: each integration, given the framework's whole history on
every model call and `Policy(token_trim_target=7/10)`, rewrites the prompt prefix as often as
the Agent would on the same session (±1) and pays the Agent's input cost with a prompt cache
(within 10 %, both cache models). Driven by each framework's own fake model."""

from __future__ import annotations

from fractions import Fraction

import pytest
from framework_runs import RUNS

from histtrim.events import HistoryTrimmed
from histtrim.policy import Policy
from histtrim.review.prefix import agent_prompts, prefix_cost, request_prompts

LOW = Policy(token_trim_target=Fraction(7, 10))
TURNS = 36
BUDGET = 2_400


@pytest.mark.parametrize("name", sorted(RUNS))
def test_the_integration_holds_the_agents_cut(name: str) -> None:
    events: list[HistoryTrimmed] = []
    sent, history = RUNS[name](LOW, None, events, BUDGET, TURNS)
    whole = prefix_cost(request_prompts(sent))
    agent = prefix_cost(agent_prompts(name, history, BUDGET, LOW))
    assert agent.cut_moves >= 3  # over the budget several times
    assert whole.requests == agent.requests == 2 * TURNS
    assert abs(whole.cut_moves - agent.cut_moves) <= 1
    assert whole.anthropic == pytest.approx(agent.anthropic, rel=0.1)
    assert whole.openai == pytest.approx(agent.openai, rel=0.1)
    assert events  # the integration trimmed, and said so
