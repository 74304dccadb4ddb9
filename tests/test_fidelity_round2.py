"""Issue 19: reference fidelity, round two: the cases the issue states, one test each (the
vectors of the reference's answer file are in `test_reference_answers.py`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from histtrim import (
    BREADCRUMB,
    ChatMessage,
    PairingProblem,
    estimate_history_tokens,
    is_loadable_target,
    sweep_orphans,
    trim_to_recent_turns,
    validate_tool_pairing,
)
from histtrim.carriers import image_target, tool_results_carrier
from histtrim.cli import main
from histtrim.display.views import trim_result_html
from histtrim.estimate import estimate_image_tokens, message_costs
from histtrim.pairing import sweep_stages


def call(*ids: str, text: str | None = None) -> ChatMessage:
    return ChatMessage.assistant_tool_calls(text, [{"id": i, "name": "n"} for i in ids])


def result(call_id: str) -> ChatMessage:
    return ChatMessage.tool_result(call_id, "ok")


GO = ChatMessage.user("go")

# ---------------------------------------------------------------- 1. the sweep (PAIR-2)


def test_pass_1_is_judged_on_the_stripped_rows() -> None:
    """`[A(c0,c1 never answered), A(c2), T(c2)]`: the strip turns A(c0,c1) into its text
    first, so A(c2), T(c2) is no back-to-back dispatch and stays (vector 7f276135bead)."""
    rows = [GO, call("c0", "c1", text="Found it."), call("c2"), result("c2")]
    swept = sweep_orphans(rows)
    assert swept.history == [GO, ChatMessage.assistant("Found it."), rows[2], rows[3]]
    assert [(r.kind, r.tool_call_id, r.position) for r in swept.removed] == [
        ("call", "c0", 1), ("call", "c1", 1),
    ]


@pytest.mark.parametrize(
    "before",
    [
        [ChatMessage.user("u")],
        [ChatMessage.user("u"), ChatMessage.assistant("a\x00b\x1cc")],
        [ChatMessage.user("u"), call("c1", text="Reading.")],  # stripped: no later answer
        [],
    ],
    ids=["after a user row", "after a plain assistant row", "after a stripped row", "first"],
)
def test_a_tool_row_with_no_readable_id_goes_unless_right_after_a_dispatch(
    before: list[ChatMessage],
) -> None:
    unreadable = ChatMessage(role="tool", content="\x00")
    swept = sweep_orphans([*before, unreadable])
    assert unreadable not in swept.history
    assert swept.removed[-1].kind == "result" and swept.removed[-1].tool_call_id is None


def test_a_lone_empty_envelope_tool_row_leaves_an_empty_history() -> None:
    assert sweep_orphans([ChatMessage(role="tool", content="{}")]).history == []


def test_a_tool_row_with_no_readable_id_stays_right_after_a_dispatch() -> None:
    rows = [GO, call("c1"), result("c1"), ChatMessage(role="tool", content="plain")]
    assert sweep_orphans(rows).history == rows
    assert validate_tool_pairing(rows) == [PairingProblem("legacy_result", 3, None)]


def test_histtrim_strips_a_call_whose_result_pass_2_removed() -> None:
    """The deliberate addition (vector 680a009a011f): the reference stops after pass 2 and
    leaves A(c1) unanswered; histtrim strips it (no text: the row goes)."""
    rows = [GO, call("c1"), ChatMessage.assistant("Hmm."), result("c1")]
    stages = {step.stage: step for step in sweep_stages(rows)}
    assert stages["pass 2"].history == rows[:3]  # the reference's answer
    assert [p.kind for p in validate_tool_pairing(stages["pass 2"].history)] == [
        "unanswered_call"
    ]
    assert sweep_orphans(rows).history == [GO, rows[2]]
    assert stages["histtrim"].history == [GO, rows[2]]


def test_the_strip_drops_call_elements_without_an_id() -> None:
    """A `tool_calls` element with no string id is never answered: the strip removes it."""
    row = ChatMessage.assistant(json.dumps(
        {"content": None, "tool_calls": [{"id": "c1", "name": "n"}, {"name": "m"}]}
    ))
    swept = sweep_orphans([GO, row, result("c1")])
    assert json.loads(swept.history[1].content)["tool_calls"] == [{"id": "c1", "name": "n"}]
    assert [(r.kind, r.tool_call_id) for r in swept.removed] == [("call", None)]


def test_salvaged_text_is_trimmed_as_the_reference_trims() -> None:
    """Unicode White_Space is trimmed (U+3000 too), U+001C..U+001F are not."""
    assert sweep_orphans([GO, call("c1", text="\u3000ok\n")]).history[1].content == "ok"
    assert sweep_orphans([GO, call("c1", text="\x1cok")]).history[1].content == "\x1cok"


def test_an_escaped_key_is_read_by_the_passes_but_skipped_by_the_strip() -> None:
    """The reference's strip only looks at rows whose text contains `tool_calls`; its passes
    parse the JSON. histtrim's addition then strips what is left unanswered."""
    escaped = ChatMessage.assistant('{"content":"x","\\u0074ool_calls":[{"id":"c1"}]}')
    stages = {step.stage: step for step in sweep_stages([GO, escaped])}
    assert stages["pass 2"].history == [GO, escaped]
    assert stages["histtrim"].history == [GO, ChatMessage.assistant("x")]


def test_the_validator_calls_a_stray_unreadable_tool_row_an_error() -> None:
    rows = [GO, ChatMessage(role="tool", content="plain"), call("c1"), result("c1")]
    (problem,) = validate_tool_pairing(rows)
    assert problem == PairingProblem("orphan_result", 1, None) and problem.is_error
    after_plain = [GO, ChatMessage.assistant("a"), ChatMessage(role="tool", content="x")]
    assert [p.is_error for p in validate_tool_pairing(after_plain)] == [True]
    carrier = [GO, call("c1"), tool_results_carrier([("n", "ok")])]
    assert [p.kind for p in validate_tool_pairing(carrier)] == ["unanswered_call"]


# ---------------------------------------------------------------- 2. image targets (EST-2/3)


@pytest.mark.parametrize(
    ("target", "loadable"),
    [
        ("\\\\r/e", True),
        ("\\\\srv\\x", True),
        ("\\\\srv\\\\x", True),
        ("\\\\srv/share/a.png", True),
        ("\\\\.x\\y", False),
        ("\\\\?\\C:\\a", False),
        ("\\\\srv", False),
        ("\\\\srv\\", False),
        ("\\\\srv/", False),
        ("\\\\/x", False),
    ],
)
def test_unc_targets_as_the_issue_states(target: str, loadable: bool) -> None:
    assert is_loadable_target(target) is loadable
    cost = estimate_history_tokens([ChatMessage.user(f"[IMAGE:{target}]")])
    assert (cost == 1604) is loadable


@pytest.mark.parametrize("wrap", ["\n  ", "\r", "\r\n\t", "\n"])
def test_a_wrapped_marker_is_rejoined_at_cr_and_lf(wrap: str) -> None:
    row = ChatMessage.user(f"[IMAGE:ht{wrap}tp://x/a.png]")
    assert estimate_image_tokens([row]) == 1600
    assert image_target(f"ht{wrap}tp://x/a.png") == "http://x/a.png"


@pytest.mark.parametrize("wrap", ["\n  ", "\r  "])
def test_a_declared_attachment_target_is_rejoined_too(wrap: str) -> None:
    """Vector a249048ef143: a current tool result declaring a wrapped target has an image."""
    declared = ChatMessage.tool_result("c1", "shot", attachments=[f"ht{wrap}tp://x/a.png"])
    rows = [ChatMessage.user("new question"), call("c1"), declared]
    assert message_costs(rows)[-1] == 1 + 1600 + 4
    assert estimate_image_tokens(rows) == 1600


# ---------------------------------------------------------------- 3. the CLI's summary


def test_the_cli_blames_the_breadcrumb_not_the_newest_turn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """KEEP-3, SEEN-1: 3 rows of 5 tokens, budget 14: the newest turn (5) fits, the
    breadcrumb (17) tips it over, 22 tokens: more than the 15 given."""
    rows = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
            {"role": "user", "content": "c"}]
    for name, text in (("s.json", json.dumps(rows)),
                       ("s.jsonl", "".join(json.dumps(r) + "\n" for r in rows))):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        assert main(["trim", str(path), "--budget", "14", "-o", str(tmp_path / "o")]) == 0
        err = capsys.readouterr().err
        assert '"tokens_after":22' in err and '"tokens_before":15' in err
        assert "newest turn alone" not in err
        assert "the kept rows without the breadcrumb (5 tokens) fit the budget of 14 tokens" in err
        assert "the breadcrumb sent with them (17 tokens) tips them over" in err
        assert "more than the 15 tokens given (KEEP-3, SEEN-1)" in err


def test_the_cli_still_says_when_the_newest_turn_alone_is_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
            {"role": "user", "content": "c" * 200}]
    path = tmp_path / "s.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    assert main(["trim", str(path), "--budget", "14", "-o", str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err
    assert "the newest turn alone is over the budget of 14 tokens" in err and "CAP-1" in err


def test_the_html_trim_view_blames_the_breadcrumb_too() -> None:
    """The trim view's summary: the kept crumb (17 tokens) tips the newest turn (5) over."""
    rows = [ChatMessage.user(BREADCRUMB), ChatMessage.user("a"), ChatMessage.assistant("b"),
            ChatMessage.user("c")]
    result = trim_to_recent_turns(rows, 21, crumb_present=True)
    assert result.tokens_after == 22 and result.history == [rows[0], rows[3]]
    page = trim_result_html(result)
    assert "newest turn alone" not in page
    assert "the breadcrumb (17 tokens) tips them over (KEEP-3, SEEN-1)" in page
    over = trim_to_recent_turns([*rows[:3], ChatMessage.user("c" * 200)], 21, crumb_present=True)
    assert "the newest turn alone is over the budget and stays (CAP-1)" in trim_result_html(over)
