"""`Policy`: the spec's constants in one model, threaded through every function that uses one
(EST-1, EST-2, RUN-2, LIMIT-2, LIMIT-3, BUDGET-1, PAIR-3)."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import re
from fractions import Fraction
from pathlib import Path

import pytest
from pydantic import ValidationError

import histtrim
from histtrim import (
    Agent,
    ChannelSenderCache,
    ChatMessage,
    Policy,
    ProviderProfile,
    ProviderReply,
    RuntimeProfile,
    TokenLedger,
    cap_tool_result,
    estimate_history_tokens,
    resolve_runtime,
    trim_to_recent_turns,
)
from histtrim.agent.providers import Overflow, ScriptedProvider
from histtrim.carriers import image_marker
from histtrim.estimate import estimate_tool_schemas
from histtrim.policy import SPEC

ROOT = Path(__file__).resolve().parent.parent
SPEC_FILE = ROOT / "examples" / "policies" / "spec.toml"


def test_policy_is_the_spec() -> None:
    """The numbers as RULES.md and docs/decisions.md state them."""
    assert Policy() == SPEC
    assert SPEC.bytes_per_token == 4 and SPEC.frame_tokens == 4  # EST-1
    assert SPEC.image_tokens == 1600  # EST-2
    assert SPEC.reactive_target == Fraction(2, 3)  # RUN-2
    assert SPEC.default_max_history_turns == 50  # LIMIT-2
    assert SPEC.fallback_context_tokens == 32_000  # BUDGET-1
    assert SPEC.max_tool_result_chars == 50_000  # PAIR-3
    assert SPEC.tool_result_head == Fraction(2, 3)
    assert SPEC.channel_cache_rows == 50  # LIMIT-3


def test_spec_file_loads_as_policy() -> None:
    """The spec written out as a file is `Policy()`; so is its JSON round trip."""
    assert Policy.load(SPEC_FILE) == Policy()
    text = json.dumps(Policy().model_dump(mode="json"))
    assert Policy.loads(text, format="json") == Policy()


def _functions_with_policy() -> dict[str, inspect.Parameter]:
    found: dict[str, inspect.Parameter] = {}
    for info in pkgutil.walk_packages(histtrim.__path__, "histtrim."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if getattr(value, "__module__", None) != module.__name__:
                continue
            targets = [(name, value)]
            if inspect.isclass(value):
                targets = [(f"{name}.__init__", value.__init__)] + [
                    (f"{name}.{attr}", member)
                    for attr, member in vars(value).items()
                    if inspect.isfunction(member)
                ]
            for label, target in targets:
                if not callable(target):
                    continue
                try:
                    parameters = inspect.signature(target).parameters
                except (TypeError, ValueError):
                    continue
                if "policy" in parameters:
                    found[f"{module.__name__}.{label}"] = parameters["policy"]
    return found


def test_every_policy_parameter_defaults_to_the_spec() -> None:
    """What makes the committed notebook outputs a proof: every function that reads a
    constant defaults to `Policy()` (the Agent to its runtime's, which is `Policy()`), and
    nbval re-runs the notebooks against those defaults."""
    found = _functions_with_policy()
    required = {
        "histtrim.estimate.text_tokens", "histtrim.estimate.plain_cost",
        "histtrim.estimate.message_cost", "histtrim.estimate.message_costs",
        "histtrim.estimate.estimate_history_tokens", "histtrim.estimate.estimate_image_tokens",
        "histtrim.estimate.estimate_tool_schemas", "histtrim.estimate.estimate_hooks",
        "histtrim.trim.trim_to_recent_turns", "histtrim.agent.ledger.TokenLedger.__init__",
        "histtrim.route.resolve_runtime", "histtrim.route.select_route",
        "histtrim.config.RuntimeProfile.max_turns",
        "histtrim.config.RuntimeProfile.tool_result_cap",
        "histtrim.safety.cap_tool_result", "histtrim.safety.ChannelSenderCache.__init__",
        "histtrim.agent.providers.ScriptedProvider.__init__",
        "histtrim.agent.runtime.Agent.__init__",
        "histtrim.adapters.trim_records", "histtrim.adapters.openai.trim_openai",
        "histtrim.turn_sizes.turn_stats",
    }
    assert required <= set(found), sorted(required - set(found))
    for name, parameter in found.items():
        if name == "histtrim.agent.runtime.Agent.__init__" or name.startswith(
            "histtrim.integrations."
        ):
            assert parameter.default is None  # the runtime's policy (with none: the spec's)
        elif name.startswith("histtrim.review.") and parameter.default is inspect.Parameter.empty:
            continue  # a review compares policies: there the policy is a required argument
        else:
            assert parameter.default == Policy(), name
    assert resolve_runtime(RuntimeProfile(), None, None).policy == Policy()


def test_constants_are_read_from_the_policy_only() -> None:
    """No module but policy.py spells a spec number or the reactive arithmetic."""
    spelled = re.compile(r"\b(1_?600|32_?000|50_?000)\b|\*\s*2\s*//\s*3")
    offenders = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted((ROOT / "histtrim").rglob("*.py"))
        if path.name != "policy.py"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if spelled.search(line.split("#", 1)[0]) and '"""' not in line
    ]
    assert offenders == []


# -- each constant changes what the real code paths do -----------------------------------


def test_bytes_and_frame_tokens_est_1() -> None:
    row = ChatMessage.user("abcdefgh")  # 8 bytes
    assert estimate_history_tokens([row]) == 2 + 4
    assert estimate_history_tokens([row], policy=Policy(bytes_per_token=2)) == 4 + 4
    assert estimate_history_tokens([row], policy=Policy(frame_tokens=0)) == 2
    schema = {"name": "abcd", "description": "", "parameters": {}}  # "abcd{}": 6 bytes
    assert estimate_tool_schemas([schema], policy=Policy(bytes_per_token=1)) == 6 + 4


def test_image_price_est_2() -> None:
    row = ChatMessage.user("look " + image_marker("/tmp/a.png"))
    assert estimate_history_tokens([row]) == 2 + 1600 + 4
    assert estimate_history_tokens([row], policy=Policy(image_tokens=100)) == 2 + 100 + 4


def test_ledger_and_trim_price_with_the_policy() -> None:
    cheap = Policy(image_tokens=10, bytes_per_token=1)
    history = [
        ChatMessage.system("sys"),
        *(
            row
            for n in range(4)
            for row in (
                ChatMessage.user(f"q{n} " + image_marker(f"/tmp/{n}.png")),
                ChatMessage.assistant("a" * 40),
            )
        ),
    ]
    ledger = TokenLedger(history, policy=cheap)
    assert ledger.total == estimate_history_tokens(history, policy=cheap)
    assert ledger.total != estimate_history_tokens(history)
    result = trim_to_recent_turns(history, 150, policy=cheap)
    assert result.tokens_before == ledger.total
    assert result.tokens_after <= 150 < result.tokens_before
    assert trim_to_recent_turns(history, 150).tokens_before == estimate_history_tokens(history)


def test_fallback_budget_budget_1() -> None:
    policy = Policy(fallback_context_tokens=9000)
    runtime = resolve_runtime(RuntimeProfile(), None, None, policy=policy)
    assert runtime.effective_context_budget() == 9000
    assert runtime.context_window == 9000
    assert resolve_runtime(RuntimeProfile(), None, None).effective_context_budget() == 32_000


def _agent(policy: Policy | None, *, profile: RuntimeProfile | None = None, tools=()) -> Agent:
    runtime = resolve_runtime(
        profile or RuntimeProfile(), ProviderProfile(model="m", context_window=100_000), None
    )
    return Agent(ScriptedProvider(), runtime, tools=tools, policy=policy)


def _reactive_budget(policy: Policy | None) -> tuple[int, int]:
    agent = _agent(policy)
    for n in range(3):
        agent.provider = ScriptedProvider([ProviderReply(text="x" * 400)])
        agent.turn(f"question {n} " + "y" * 400)
    agent.provider = ScriptedProvider([Overflow(), ProviderReply(text="ok")])
    agent.turn("one more")
    [event] = agent.events
    return event.tokens_before, event.budget


def test_reactive_target_run_2() -> None:
    before, budget = _reactive_budget(None)
    assert budget == before * 2 // 3
    before, budget = _reactive_budget(Policy(reactive_target="1/2"))
    assert budget == before // 2


def test_reactive_target_always_drops_a_turn_run_2() -> None:
    """RUN-2 (issue 20 item 8): a tiny ratio makes a target of at least 1 token, never 0
    (which means "no trim": nothing was dropped and every retry overflowed again)."""
    before, budget = _reactive_budget(Policy(reactive_target="1/1000000"))
    assert before < 1_000_000 and budget == 1
    assert Policy(reactive_target="1/1000000").reactive_tokens(10) == 1
    assert SPEC.reactive_tokens(300) == 200


@pytest.mark.parametrize(
    "text",
    ["1e-5000", "1e-30000000", "1e-999999999", "1/18446744073709551616", "1" * 65],
)
def test_ratio_text_is_read_with_bounded_work(text: str) -> None:
    """Issue 20 item 3: a ratio's text is checked before it is turned into a fraction (a huge
    exponent made `Fraction` build a power of ten of that many digits: 43 s for 1e-30000000,
    no end for 1e-999999999; 1e-5000 passed and crashed `review`)."""
    with pytest.raises(ValidationError, match="expected a fraction like '2/3'") as error:
        Policy.loads(f'reactive_target = "{text}"', format="toml")
    assert error.value.errors()[0]["loc"] == ("reactive_target",)


def test_default_turn_limit_limit_2() -> None:
    agent = _agent(Policy(default_max_history_turns=2))
    for n in range(3):
        agent.provider = ScriptedProvider([ProviderReply(text="ok")])
        agent.turn(f"question {n}")
    assert [e.reason for e in agent.events] == ["turn_limit"]
    assert agent.events[0].kept_turns == 2
    explicit = _agent(
        Policy(default_max_history_turns=2), profile=RuntimeProfile(max_history_messages=5)
    )
    for n in range(3):
        explicit.provider = ScriptedProvider([ProviderReply(text="ok")])
        explicit.turn(f"question {n}")
    assert explicit.events == []  # an explicit value is authoritative


def test_tool_result_cap_and_split_pair_3() -> None:
    text = "a" * 100 + "b" * 100  # long enough that the marker shortens it (see PAIR-3)
    half = cap_tool_result(text, 80, policy=Policy(tool_result_head="1/2"))
    assert half.startswith("a" * 40 + "\n")
    assert cap_tool_result(text, 81).startswith("a" * 54 + "\n")  # 2/3 of 81
    assert cap_tool_result(text, policy=Policy(max_tool_result_chars=60)).endswith("\n" + "b" * 20)

    def dump() -> str:
        """Prints a long log."""
        return "z" * 100

    from histtrim import ToolCall

    call = ToolCall(id="c1", name="dump")
    for profile, expected in ((None, 30), (RuntimeProfile(max_tool_result_chars=60), 60)):
        agent = _agent(Policy(max_tool_result_chars=30), profile=profile, tools=[dump])
        agent.provider = ScriptedProvider(
            [ProviderReply(tool_calls=(call,)), ProviderReply(text="done")]
        )
        agent.turn("run it")
        result = agent.history[2].results[0].content  # type: ignore[union-attr]
        assert result.count("z") == expected


def test_channel_cache_default_limit_3() -> None:
    assert ChannelSenderCache().capacity == 50
    assert ChannelSenderCache(policy=Policy(channel_cache_rows=3)).capacity == 3
    assert ChannelSenderCache(7, policy=Policy(channel_cache_rows=3)).capacity == 7


def test_agent_runtime_must_share_its_policy() -> None:
    agent = _agent(Policy(image_tokens=5))
    assert agent.runtime.policy == Policy(image_tokens=5)
    agent.runtime = resolve_runtime(RuntimeProfile(), None, None)
    with pytest.raises(ValueError, match=r"runtime\.policy"):
        agent.turn("hi")


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('reactive_target = 0.5', "reactive_target"),
        ('reactive_target = "3/2"', "reactive_target"),
        ('reactive_target = "1/0"', "reactive_target"),
        ('tool_result_head = "5/4"', "tool_result_head"),
        ("image_tokens = -1", "image_tokens"),
        ('image_tokens = "400"', "image_tokens"),
        ("bytes_per_token = 0", "bytes_per_token"),
        ("channel_cache_rows = true", "channel_cache_rows"),
        ("image_price = 400", "image_price"),
    ],
)
def test_bad_policy_names_the_field(text: str, field: str) -> None:
    with pytest.raises(ValidationError) as error:
        Policy.loads(text, format="toml")
    assert error.value.errors()[0]["loc"] == (field,)


def test_policy_file_suffix(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("image_tokens: 1\n")
    with pytest.raises(ValueError, match="path"):
        Policy.load(path)
    json_path = tmp_path / "p.json"
    json_path.write_text('{"image_tokens": 400, "reactive_target": "1/2"}')
    assert Policy.load(json_path).changes() == {
        "image_tokens": "1600 -> 400",
        "reactive_target": "2/3 -> 1/2",
    }


@pytest.mark.parametrize("name", ["reactive-half", "cheap-images", "turns-20"])
def test_example_policies_change_one_constant(name: str) -> None:
    policy = Policy.load(ROOT / "examples" / "policies" / f"{name}.toml")
    assert len(policy.changes()) == 1
