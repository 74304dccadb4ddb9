"""RUN-1, LIMIT-1..2, SEEN-1 for callers that pass the whole history on every request: with a
low-water mark the cut is the one the Agent holds (`histtrim.low_water`), so the prompt prefix
is rewritten only when the Agent would rewrite it; with the spec's targets nothing changes."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from histtrim.adapters import trim_records, trim_records_held
from histtrim.adapters.openai import from_openai, to_openai, trim_openai
from histtrim.counting import Pricing
from histtrim.integrations._trimmer import Trimmer
from histtrim.low_water import holds_cut, request_points
from histtrim.messages import ChatMessage
from histtrim.policy import SPEC, ColdCache, ColdCuts, Policy
from histtrim.review.prefix import (
    agent_prompts,
    cut_moves,
    prefix_cost,
    request_prompts,
    whole_history_requests,
)
from histtrim.trim import breadcrumb_message
from histtrim.turns import index_turns
from histtrim.visible import plan_visible_trim
from livingspec.strategies import chat_histories

ROOT = Path(__file__).resolve().parent.parent
LONG = ROOT / "examples" / "sessions" / "very-long-coding-agent.jsonl"
LOW = Policy(token_trim_target=Fraction(7, 10))


def long_session(rows: int) -> list[ChatMessage]:
    records = [json.loads(line) for line in LONG.read_text(encoding="utf-8").splitlines()]
    out = [ChatMessage.model_validate({k: v for k, v in r.items() if k != "kind"})
           for r in records]
    return out[:rows]


def test_trim_openai_with_the_whole_history_pays_what_the_agent_pays() -> None:
    """The issue's measure: `trim_openai` called with the whole history at every request
    point, `Policy(token_trim_target=7/10)`: the Agent's cut moves (±1) and input cost (10 %)."""
    rows = long_session(500)
    budget = 6_000

    def trim(history: list[ChatMessage]) -> list[ChatMessage]:
        done = trim_openai(to_openai(history), budget_tokens=budget, policy=LOW)
        return from_openai(done.records)

    whole = prefix_cost(request_prompts(whole_history_requests(rows, trim)))
    agent = prefix_cost(agent_prompts("long", rows, budget, LOW))
    assert agent.cut_moves >= 3  # the session is over budget many times
    assert abs(whole.cut_moves - agent.cut_moves) <= 1
    assert whole.anthropic == pytest.approx(agent.anthropic, rel=0.1)
    assert whole.openai == pytest.approx(agent.openai, rel=0.1)


def _reference_cuts(
    rows: list[ChatMessage], budget: int, max_turns: int | None, policy: Policy
) -> list[tuple[int, list[ChatMessage]]]:
    """The Agent's rule run naively, one request at a time: the request is the prefix, the
    breadcrumb once inserted and the rows from the cut; `plan_visible_trim` (the Agent's own
    planner) moves the cut when a limit is exceeded. The cut (a row of `rows`) and the rows
    sent, per request."""
    index = index_turns(rows)
    body, cut, crumb = index.body_start, index.body_start, False
    pricing = Pricing(policy)
    cuts = []
    for end in request_points(rows):
        request = [*rows[:body], *([breadcrumb_message()] if crumb else []), *rows[cut:end]]
        inner = index_turns(request, crumb_present=crumb)
        plan = plan_visible_trim(
            inner, pricing.costs(request, inner), max_turns=max_turns, budget_tokens=budget,
            budget_in_force=budget, crumb_cost=lambda: pricing.plain(breadcrumb_message()),
            turn_target=policy.turn_trim_target, token_target=policy.token_trim_target,
        )
        if plan.trimmed:
            cut += plan.cut - inner.body_start
            crumb = True
            request = plan.kept(request, breadcrumb_message())
        cuts.append((cut, request))
    return cuts


POLICIES = st.builds(
    Policy,
    token_trim_target=st.sampled_from([Fraction(1, 2), Fraction(7, 10), Fraction(9, 10)]),
    turn_trim_target=st.sampled_from([Fraction(1), Fraction(1, 2), Fraction(3, 4)]),
)


@settings(max_examples=150, deadline=None)
@given(
    chat_histories(min_turns=2, max_turns=9, crumb=False, malformed=False),
    st.integers(40, 900),
    st.one_of(st.none(), st.integers(1, 5)),
    POLICIES,
)
def test_the_held_cut_is_the_agents_cut_and_the_prefix_is_stable(
    generated: object, budget: int, max_turns: int | None, policy: Policy
) -> None:
    """At every request point the cut equals the Agent's rule run request by request; between
    two cut moves each request starts with the previous one, byte for byte; as many moves."""
    rows = list(generated.history)  # type: ignore[attr-defined]
    reference = _reference_cuts(rows, budget, max_turns, policy)
    sent = []
    for end, (expected, request) in zip(request_points(rows), reference, strict=True):
        done = trim_records_held(
            rows[:end], rows[:end], budget_tokens=budget, max_turns=max_turns,
            budget_in_force=budget, breadcrumb_record=breadcrumb_message(), policy=policy,
        )
        kept_from = index_turns(rows[:end]).body_start + len(done.result.dropped)
        assert kept_from == expected
        body = index_turns(rows).body_start
        crumb = [breadcrumb_message()] if kept_from > body else []
        assert done.rows == [*rows[:body], *crumb, *rows[kept_from:end]]
        assert done.records == done.rows == request
        sent.append(done.rows)
    prompts = request_prompts(sent)
    assert cut_moves(prompts) == cut_moves(request_prompts(r for _, r in reference))
    cuts = [cut for cut, _ in reference]
    for before, after, c0, c1 in zip(sent, sent[1:], cuts, cuts[1:], strict=False):
        if c0 == c1:
            assert [r.model_dump_json() for r in after[: len(before)]] == [
                r.model_dump_json() for r in before
            ]


@settings(max_examples=100, deadline=None)
@given(chat_histories(min_turns=1, max_turns=8, crumb=False), st.integers(0, 900),
       st.one_of(st.none(), st.integers(0, 5)))
def test_the_spec_policy_trims_just_to_fit_as_before(
    generated: object, budget: int, max_turns: int | None
) -> None:
    """Targets of 1 never replay: the same plan as `plan_visible_trim`, event for event."""
    rows = list(generated.history)  # type: ignore[attr-defined]
    assert not holds_cut(SPEC)
    index = index_turns(rows)
    pricing = Pricing()
    plan = plan_visible_trim(
        index, pricing.costs(rows, index), max_turns=max_turns, budget_tokens=budget,
        budget_in_force=budget, crumb_cost=lambda: pricing.plain(breadcrumb_message()),
    )
    done = trim_records_held(rows, rows, budget_tokens=budget, max_turns=max_turns,
                             budget_in_force=budget, breadcrumb_record=breadcrumb_message())
    assert done.events == plan.events
    assert done.rows == plan.kept(rows, breadcrumb_message())


@settings(max_examples=100, deadline=None)
@given(chat_histories(min_turns=2, max_turns=8, crumb=False, malformed=False),
       st.integers(40, 600), st.data())
def test_an_edited_history_never_leaves_a_stale_cut(
    generated: object, budget: int, data: st.DataObject
) -> None:
    """The cut is derived from the history each time: after the owner removes rows, the
    result is a cut of the edited history (kept plus dropped is it) that fits or keeps one
    turn, whatever was cut before."""
    rows = list(generated.history)  # type: ignore[attr-defined]
    start = data.draw(st.integers(0, len(rows) - 1))
    stop = data.draw(st.integers(start, len(rows) - 1))
    edited = rows[:start] + rows[stop:]
    done = trim_records(edited, edited, budget_tokens=budget, policy=LOW,
                        breadcrumb_record=breadcrumb_message())
    crumb = [breadcrumb_message()] if done.crumb_inserted else []
    body = index_turns(edited).body_start
    assert [*edited[:body], *done.result.dropped, *done.rows[body + len(crumb):]] == edited
    fits = done.result.tokens_after <= budget or done.result.kept_turns <= 1
    assert fits


def test_trimmer_takes_a_policy_and_names_a_bad_one() -> None:
    assert Trimmer(budget_tokens=100, policy=LOW).policy == LOW
    with pytest.raises(ValueError, match=r"^policy: expected a histtrim Policy, got dict$"):
        Trimmer(budget_tokens=100, policy={"token_trim_target": "7/10"})  # type: ignore[arg-type]


def test_cli_trim_takes_the_policy_and_holds_the_agents_cut(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`histtrim trim --policy FILE` (or `--token-target`) cuts a recorded session where the
    Agent holds its cut after the session's requests: the adapters' cut, not just-to-fit."""
    from histtrim.cli import main

    rows = long_session(500)
    source = tmp_path / "s.jsonl"
    source.write_text("".join(r.model_dump_json(exclude={"kind"}) + "\n" for r in rows))
    policy = tmp_path / "low.toml"
    policy.write_text('token_trim_target = "7/10"\n')
    held = trim_records(rows, rows, budget_tokens=6_000, policy=LOW,
                        breadcrumb_record=breadcrumb_message())
    fit = trim_records(rows, rows, budget_tokens=6_000, breadcrumb_record=breadcrumb_message())
    assert held.rows != fit.rows
    for flags in (["--policy", policy], ["--token-target", "7/10"]):
        out = tmp_path / "out.jsonl"
        argv = ["trim", str(source), "--budget", "6000", *map(str, flags), "-o", str(out)]
        assert main(argv) == 0
        written = [ChatMessage.model_validate_json(line) for line in out.read_text().splitlines()]
        assert written == held.rows
        assert "token_trim_target 1 -> 7/10" in capsys.readouterr().err
    assert main(["trim", str(source), "--budget", "6000", "--token-target", "3/2"]) == 2
    assert capsys.readouterr().err.strip() == (
        "histtrim: error: --token-target: field 'token_trim_target': Value error, must be "
        "greater than 0 and at most 1, got 3/2"
    )


def test_cli_trim_holds_the_agents_cut_on_an_anthropic_body(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An Anthropic body under a low-water target (or any policy but the spec's) is cut as
    `trim_anthropic` with that policy cuts it: the session reader cannot read such a body,
    and `trim --token-target` refused every Anthropic body before."""
    from histtrim.adapters.anthropic import to_anthropic, trim_anthropic
    from histtrim.cli import main

    body = to_anthropic(long_session(500))
    source = tmp_path / "body.json"
    source.write_text(json.dumps(body, indent=2, ensure_ascii=False), encoding="utf-8")
    held, _ = trim_anthropic(body, budget_tokens=6_000, policy=LOW)
    fit, _ = trim_anthropic(body, budget_tokens=6_000)
    assert held["messages"] != fit["messages"]
    out = tmp_path / "out.json"
    argv = ["trim", str(source), "--budget", "6000", "--token-target", "7/10", "-o", str(out)]
    assert main(argv) == 0
    assert json.loads(out.read_text(encoding="utf-8")) == held
    assert "warning" not in capsys.readouterr().err


def test_the_kit_checks_the_held_cut_against_the_agent() -> None:
    """The kit's `held_cut` (conformance vectors for another implementation): on a scripted
    session its requests rewrite the prefix exactly as often as the Agent's do."""
    from histtrim.conformance.codec import rows_json
    from histtrim.conformance.reference import evaluate

    rows = long_session(240)
    arguments = {"budget_tokens": 3_000, "max_turns": None, "token_target": "7/10",
                 "turn_target": "1"}
    result = evaluate("held_cut", rows_json(rows), arguments)["result"]
    agent = prefix_cost(agent_prompts("long", rows, 3_000, LOW))
    assert agent.cut_moves >= 3
    assert result["cut_moves"] == agent.cut_moves
    cuts = [r["cut"] for r in result["requests"]]
    assert cuts == sorted(cuts)  # the cut only moves forward
    assert all(r["tokens"] <= 3_000 for r in result["requests"])
    bad = evaluate("held_cut", rows_json(rows), {**arguments, "token_target": "3/2"})
    assert bad == {"error": {"kind": "invalid_input"}}


def test_every_adapter_holds_the_same_cut() -> None:
    """The Anthropic body trim, LangChain's `trim_messages` and the runtime's policy through
    the `Trimmer` cut where `trim_records` does: one mechanism (`plan_held_trim`)."""
    pytest.importorskip("langchain_core")
    from langchain_core.messages import convert_to_messages

    from histtrim.adapters.anthropic import from_anthropic, to_anthropic, trim_anthropic
    from histtrim.adapters.langchain import from_langchain, trim_messages
    from histtrim.config import ProviderProfile, RuntimeProfile
    from histtrim.route import resolve_runtime

    rows = long_session(160)[:-1]  # ends on a tool result: a request is due
    expected = trim_records(rows, rows, budget_tokens=2_500, policy=LOW,
                            breadcrumb_record=breadcrumb_message())
    assert expected.trimmed
    messages = to_openai(rows)
    trimmed, _ = trim_anthropic(to_anthropic(rows), budget_tokens=2_500, policy=LOW)
    anthropic_rows = from_anthropic(trimmed).rows  # results as carriers: compare the turns
    assert [r.content for r in anthropic_rows if r.facts.opens_turn][1:] == [
        r.content for r in expected.rows if r.role == "user" and r.facts.opens_turn][1:]
    assert len(anthropic_rows) == len(expected.rows)
    kept = trim_messages(convert_to_messages(messages), max_tokens=2_500, policy=LOW,
                         breadcrumb=True)
    assert [r.content for r in from_langchain(kept)] == [r.content for r in expected.rows]
    runtime = resolve_runtime(
        RuntimeProfile(max_context_tokens=2_500, max_history_messages=500),
        ProviderProfile(model="m", context_window=100_000), None, policy=LOW,
    )
    trimmer = Trimmer(runtime)
    assert trimmer.policy == LOW
    done = trimmer.trim(list(rows), [trimmer.cache.priced(row) for row in rows],
                        crumb=breadcrumb_message(), crumb_present=False)
    assert done.rows == expected.rows


def _held_cut_per_request(
    rows: list[ChatMessage], arguments: dict[str, object]
) -> dict[str, object]:
    """The kit's `held_cut` by its definition: each request `rows[:end]` trimmed on its own by
    `trim_records_held`, the rows sent compared as JSON (quadratic: the oracle only); with
    `times` and `cold_cache`, the requests the clock finds cold (`ColdCache.is_cold`, CACHE-1)
    given as `cold` (CACHE-2), and the last request's events (CACHE-3)."""
    rule = ColdCache.model_validate(arguments.get("cold_cache", {}))
    policy = Policy(token_trim_target=arguments["token_target"],
                    turn_trim_target=arguments["turn_target"], cold_cache=rule)
    budget, limit = arguments["budget_tokens"], arguments["max_turns"]
    assert isinstance(budget, int) and (limit is None or isinstance(limit, int))
    times = arguments.get("times", [])
    assert isinstance(times, list)
    points = request_points(rows)
    cold_ends = {points[k] for k in range(1, len(times)) if rule.is_cold(times[k], times[k - 1])}
    deep = rule.trim(budget, policy.token_trim_target)
    body = index_turns(rows).body_start
    requests, moves, previous, events = [], 0, None, []
    for end in points:
        ends = frozenset(e for e in cold_ends if e <= end)
        cold = ColdCuts(ends, deep) if ends and deep is not None else None
        done = trim_records_held(rows[:end], rows[:end], budget_tokens=budget, max_turns=limit,
                                 budget_in_force=budget, breadcrumb_record=breadcrumb_message(),
                                 policy=policy, cold=cold)
        sent = [row.model_dump_json() for row in done.rows]
        moves += previous is not None and sent[: len(previous)] != previous
        previous = sent
        assert isinstance(done.result.tokens_after, int)
        requests.append({"end": end, "cut": body + len(done.result.dropped),
                         "breadcrumb": done.crumb_inserted, "tokens": done.result.tokens_after,
                         "cold": end in cold_ends})
        events = [event.model_dump(mode="json") for event in done.events]
    return {"requests": requests, "cut_moves": moves, "events": events}


GAPS = st.lists(st.sampled_from([None, 60.0, 300.0, 301.0, 3600.0]), max_size=12)


@settings(max_examples=150, deadline=None)
@given(chat_histories(max_turns=8, crumb=False), st.integers(0, 400),
       st.sampled_from([None, 0, 1, 2, 3]), st.sampled_from(["1", "7/10", "1/2"]),
       st.sampled_from(["1", "1/2"]), GAPS,
       st.sampled_from([{}, {"lifetime": 300}, {"lifetime": 300, "cut_from": "3/4",
                                                "target": "1/2"}]))
def test_the_kits_one_pass_held_cut_is_each_request_trimmed_on_its_own(
    generated: object, budget: int, limit: int | None, token_target: str, turn_target: str,
    gaps: list[float | None], cold_cache: dict[str, object],
) -> None:
    """Issue 38 item 9: the kit's `held_cut` replays the requests in one pass; its answer is
    the per-request definition's, with a low-water mark and with the spec's targets, and on
    a clock with the cold cache on (CACHE-1..3: the adapters' `trim_records_held(cold=)`)."""
    from histtrim.conformance.codec import rows_json
    from histtrim.conformance.reference import evaluate

    rows = list(generated.history)  # type: ignore[attr-defined]
    count = len(request_points(rows))
    clock: list[float | None] = []
    for k in range(count):  # a gap of None: that request's time is unknown
        gap = gaps[k % len(gaps)] if gaps else 60.0
        known = next((t for t in reversed(clock) if t is not None), 0.0)
        clock.append(None if gap is None else known + gap)
    arguments: dict[str, object] = {"budget_tokens": budget, "max_turns": limit,
                                    "token_target": token_target, "turn_target": turn_target,
                                    "times": clock if gaps else [], "cold_cache": cold_cache}
    got = evaluate("held_cut", rows_json(rows), arguments)
    assert got == {"result": _held_cut_per_request(rows, arguments)}


def test_the_kits_held_cut_cuts_a_cold_request_deep_and_says_so() -> None:
    """CACHE-1..3 in the kit: the same session a minute apart cuts nothing it need not; an
    hour before its last request, that request cuts to the cold mark and its event says
    cold_cache; an unknown time is never cold."""
    from histtrim.conformance.codec import rows_json
    from histtrim.conformance.reference import evaluate

    rows = long_session(60)
    count = len(request_points(rows))
    total = evaluate("estimate_history_tokens", rows_json(rows), {})["result"]["tokens"]
    minutes = [60.0 * k for k in range(count)]
    rule = {"lifetime": 300, "cut_from": "9/10", "target": "1/2"}
    base = {"budget_tokens": total * 21 // 20, "max_turns": None, "token_target": "1",
            "turn_target": "1", "cold_cache": rule}

    def held(times: list[float | None]) -> dict[str, object]:
        result = evaluate("held_cut", rows_json(rows), {**base, "times": times})["result"]
        assert isinstance(result, dict)
        return result

    warm = held(minutes)
    assert warm["events"] == [] and warm["cut_moves"] == 0
    assert not any(r["cold"] for r in warm["requests"])
    cold = held([*minutes[:-1], minutes[-1] + 3600])
    assert [r["cold"] for r in cold["requests"]] == [False] * (count - 1) + [True]
    (event,) = cold["events"]
    assert event["cold_cache"] is True and event["reason"] == "token_budget"
    assert event["target"] == "1/2" and event["tokens_after"] <= total * 21 // 20 // 2
    assert cold["requests"][-1]["cut"] > warm["requests"][-1]["cut"]
    assert held([*minutes[:-2], None, minutes[-1] + 3600]) == warm
    assert evaluate("held_cut", rows_json(rows), {**base, "times": minutes[1:]}) == {
        "error": {"kind": "invalid_input"}}


def test_the_kits_held_cut_prices_each_row_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 38 item 9: `held_cut` was quadratic (every request re-priced its whole prefix:
    4,000 rows took 5 s). It prices the history once, whatever its length."""
    from histtrim import counting
    from histtrim.conformance.codec import rows_json
    from histtrim.conformance.reference import evaluate

    priced: list[int] = []
    real = counting.Pricing.costs

    def counted(self: counting.Pricing, rows: list[ChatMessage], index: object = None) -> list[int]:
        priced.append(len(rows))
        return real(self, rows, index)  # type: ignore[arg-type]

    monkeypatch.setattr(counting.Pricing, "costs", counted)
    rows = long_session(400)
    for targets in (("1", "1"), ("7/10", "1/2")):
        priced.clear()
        arguments = {"budget_tokens": 3_000, "max_turns": 6, "token_target": targets[0],
                     "turn_target": targets[1]}
        assert "result" in evaluate("held_cut", rows_json(rows), arguments)
        assert sum(priced) <= len(rows), (targets, len(priced), sum(priced))


@settings(max_examples=120, deadline=None)
@given(chat_histories(max_turns=8, crumb=False), st.integers(0, 600),
       st.sampled_from([None, 1, 2, 3]), st.sampled_from(["7/10", "1/2", "1"]),
       st.sampled_from(["1/2", "1"]), st.sampled_from(["jsonl", "array"]))
def test_the_held_cut_on_a_files_columns_is_the_held_cut_of_its_rows(
    generated: object, budget: int, limit: int | None, token_target: str, turn_target: str,
    layout: str,
) -> None:
    """Issue 38 item 6: `trim --token-target` left the fast reader (10.7x the file in
    memory, 6x the time) for the session reader. The held cut is planned on the file's
    columns: the same rows, tokens and events as `trim_records_held` on its rows, declared
    attachments (priced apart in the current turn) included."""
    from histtrim.adapters.formats import read_history
    from histtrim.adapters.rewrite import held_trim_history, write_history

    policy = Policy(token_trim_target=token_target, turn_trim_target=turn_target)
    if not holds_cut(policy) or (budget == 0 and limit is None):
        return
    rows = list(generated.history)  # type: ignore[attr-defined]
    records = [{"kind": "chat", "role": r.role, "content": r.content} for r in rows]
    if layout == "jsonl":
        data = "".join(json.dumps(r) + "\n" for r in records).encode()
    else:
        data = ("[\n" + ",\n".join(json.dumps(r) for r in records) + "\n]\n").encode()
    hf = read_history(data)
    got = held_trim_history(hf, max_turns=limit, budget_tokens=budget,
                            turn_target=policy.turn_trim_target,
                            token_target=policy.token_trim_target)
    held = trim_records_held(rows, rows, budget_tokens=budget, max_turns=limit,
                             budget_in_force=budget, breadcrumb_record=breadcrumb_message(),
                             policy=policy)
    written = write_history(hf, got).decode()
    lines = written.splitlines() if layout == "jsonl" else [
        json.dumps(r) for r in json.loads(written)]
    kept = [ChatMessage.model_validate({k: v for k, v in json.loads(line).items() if k != "kind"})
            for line in lines]
    assert kept == held.rows
    assert got.tokens_after == held.result.tokens_after  # type: ignore[union-attr]
    assert got.events == list(held.events)


def test_cli_trim_with_a_low_water_target_stays_on_the_fast_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 38 item 6: the targets do not change a row's price, so a file keeps the fast
    reader (its columns) under `--token-target`, `--turn-target` or a policy that changes
    only targets and defaults; the session reader is never asked."""
    from histtrim.cli import main
    from histtrim.cli import trim as cli_trim

    def refuse(*_: object) -> None:
        raise AssertionError("the session reader read a file the fast reader reads")

    monkeypatch.setattr(cli_trim, "read_session", refuse)
    rows = long_session(300)
    source = tmp_path / "s.jsonl"
    source.write_text("".join(r.model_dump_json() + "\n" for r in rows), encoding="utf-8")
    policy = tmp_path / "p.toml"
    policy.write_text('token_trim_target = "7/10"\ndefault_max_history_turns = 30\n')
    cases = [
        (["--budget", "4000", "--token-target", "7/10"], 4_000, None, LOW),
        (["--max-turns", "5", "--turn-target", "1/2"], None, 5, Policy(turn_trim_target="1/2")),
        (["--budget", "4000", "--policy", str(policy)], 4_000, None, LOW),
    ]
    for flags, budget, limit, chosen in cases:
        out = tmp_path / "out.jsonl"
        assert main(["trim", str(source), *flags, "-o", str(out)]) == 0
        held = trim_records_held(rows, rows, budget_tokens=budget, max_turns=limit,
                                 breadcrumb_record=breadcrumb_message(), policy=chosen)
        assert held.events
        written = [ChatMessage.model_validate_json(line) for line in out.read_text().splitlines()]
        assert written == held.rows
    capsys.readouterr()


@settings(max_examples=60, deadline=None)
@given(chat_histories(max_turns=8, crumb=False), st.integers(0, 400),
       st.sampled_from([None, 0, 1, 2]), st.sampled_from(["1", "7/10", "1/2"]))
def test_the_one_pass_replay_resumes_where_a_full_replay_stands(
    generated: object, budget: int, limit: int | None, token_target: str,
) -> None:
    """RUN-1: the held cut is one replay (`replay_requests`) that also resumes: a history
    extending the last one planned, with that plan's `replay`, gets the plan (and the state
    for its next call) of a replay from the start, and the replay started from a state yields
    exactly the rest of the full replay's requests; a state of another history is ignored."""
    from histtrim.low_water import HeldRequest, Replay, plan_held_trim, replay_requests, two_prices
    from histtrim.turns import TurnIndex
    from histtrim.visible import VisibleTrim

    rows = list(generated.history)  # type: ignore[attr-defined]
    target, pricing = Fraction(token_target), Pricing(LOW)
    Prices = tuple[list[int], list[int]]

    def plan(index: TurnIndex, prices: Prices, points: list[int],
             resume: Replay | None = None) -> VisibleTrim:
        return plan_held_trim(index, prices, points, max_turns=limit, budget_tokens=budget,
                              crumb_cost=9, token_target=target, resume=resume)

    def replay(points: list[int], start: Replay | None = None) -> list[HeldRequest]:
        return list(replay_requests(index, prices, points, max_turns=limit, budget_tokens=budget,
                                    crumb_cost=9, token_target=target, start=start))

    points = request_points(rows)
    index = index_turns(rows)
    prices = two_prices(rows, index, pricing)
    full, previous = replay(points), None
    for k, end in enumerate(points):
        part = index_turns(rows[:end])
        priced = two_prices(rows[:end], part, pricing)
        fresh = plan(part, priced, points[:k + 1])
        assert plan(part, priced, points[:k + 1], previous) == fresh
        state = fresh.replay
        assert isinstance(state, Replay) and state.requests == k
        assert replay(points[k:], state) == full[k:]
        stale = Replay(k, -1, 0, 0, None) if k else None  # its last request ended elsewhere
        assert plan(part, priced, points[:k + 1], stale) == fresh
        previous = state
