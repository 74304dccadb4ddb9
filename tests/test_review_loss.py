"""The needed context lost (`histtrim.review.loss`): what a policy's request no longer holds
of what the model went on to write, measured on recorded sessions without a model."""

from __future__ import annotations

from pathlib import Path

import pytest

from histtrim.agent.providers import ProviderReply
from histtrim.cli import main
from histtrim.config import ProviderProfile, RuntimeProfile
from histtrim.messages import ChatMessage, ToolCall
from histtrim.policy import SPEC, Policy, ToolContext
from histtrim.review.loss import ContextLoss, RowTokens, distinctive_tokens, request_loss
from histtrim.review.replay import ReplaySettings, replay_session
from histtrim.review.sessions import ReplayTurn, ReviewSession
from histtrim.tool_context import collapse_tool_context

ROOT = Path(__file__).resolve().parent.parent
M = ChatMessage


def test_distinctive_tokens_are_identifiers_numbers_and_paths() -> None:
    text = "Read src/app.py at line 1234: fooBar and snake_case, v2 the words Error."
    assert distinctive_tokens(text) == {"src/app.py", "1234", "fooBar", "snake_case"}
    assert distinctive_tokens("") == set()


def test_request_loss_counts_what_the_sent_request_dropped() -> None:
    full = [
        M.system("policy_v1"),
        M.user("fix it"),
        M.assistant_tool_calls(None, [ToolCall(id="c1", name="grep")]),
        M.tool_result("c1", "found parse_header in lib/http.c line 4411"),
        M.assistant("Found it."),
        M.user("now?"),
    ]
    reply = "parse_header at lib/http.c:4411 again; policy_v1 says ok; new_thing"
    sent = collapse_tool_context(full, 0).messages
    loss = request_loss(reply, full, sent, system=frozenset({"policy_v1"}))
    # needed: parse_header, lib/http.c:4411 is not in the request as one token, lib/http.c is
    # not either; the tool result holds parse_header only (policy_v1 is the system prompt's)
    assert loss == ContextLoss(needed=1, lost=1, requests=1) and loss.share == 1.0
    assert request_loss(reply, full, full).lost == 0
    assert request_loss("nothing distinctive here", full, sent) == ContextLoss(requests=1)
    total = loss + request_loss(reply, full, full, system=frozenset({"policy_v1"}))
    assert (total.needed, total.lost, total.requests, total.share) == (2, 1, 2, 0.5)


def test_row_tokens_are_found_once_per_row_text() -> None:
    tokens = RowTokens()
    row = M.user("alpha_1 beta_2")
    calls = []
    original = distinctive_tokens

    def counting(text: str) -> set[str]:
        calls.append(text)
        return original(text)

    import histtrim.review.loss as loss_module

    loss_module.distinctive_tokens = counting  # type: ignore[assignment]
    try:
        for _ in range(3):
            assert tokens.present({"alpha_1"}, [row, M.user("alpha_1 beta_2")]) == {"alpha_1"}
    finally:
        loss_module.distinctive_tokens = original
    assert calls == ["alpha_1 beta_2"]


def _session() -> ReviewSession:
    turns = []
    for n in range(4):
        call = ToolCall(id=f"c{n}", name="read", arguments=f'{{"path":"src/mod_{n}.py"}}')
        turns.append(ReplayTurn(
            user=f"step {n}: read the next module",
            steps=(
                ProviderReply(tool_calls=(call,)),
                ProviderReply(text=f"handler_{n} is next; the last one returned {999 + n}"),
            ),
            outputs=(f"def handler_{n}(): return {1000 + n}",),
        ))
    return ReviewSession(name="s", system_prompt="sys", turns=tuple(turns), tools=("read",))


@pytest.mark.parametrize(("policy", "lost"), [
    (SPEC, 0),
    (Policy(tool_context=ToolContext(mode="collapse", keep_turns=0)), 3),
])
def test_replay_measures_the_loss_of_each_billed_request(policy: Policy, lost: int) -> None:
    settings = ReplaySettings(
        profile=RuntimeProfile(max_context_tokens=0),
        provider=ProviderProfile(model="m", context_window=100_000), measure_loss=True,
    )
    replay = replay_session(_session(), policy, settings)
    assert replay.loss.requests == replay.calls == 8
    # each reply names handler_n (its own turn's result: never collapsed) and, from turn 1 on,
    # the number the turn before returned (only in that turn's result: collapsed with keep 0)
    assert (replay.loss.needed, replay.loss.lost) == (4 + 3, lost)
    off = replay_session(_session(), policy, settings.model_copy(update={"measure_loss": False}))
    assert off.loss == ContextLoss() and off.tokens == replay.tokens


def test_cli_review_prints_the_loss_per_policy(capsys: pytest.CaptureFixture[str]) -> None:
    session = ROOT / "examples" / "sessions" / "coding-agent-1.jsonl"
    policy = ROOT / "examples" / "policies" / "collapse-2.toml"
    assert main(["review", str(session), "--policy", str(policy)]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("needed context lost"))
    spec, collapsed = (float(v.rstrip("%")) for v in line.split()[-2:])
    assert collapsed > spec >= 0
