"""The token estimate (EST-1..4) against the formula of the site's Decisions chapter
("The byte estimate"), computed by hand here.

A row costs `ceil(utf8_bytes / 4) + 4`; a dispatched image adds 1600 and its marker or
attachment block is not priced as text.
"""

from __future__ import annotations

from math import ceil

import pytest
from hypothesis import given

from histtrim import (
    BREADCRUMB,
    IMAGE_TOKENS,
    Attachment,
    ChatMessage,
    ToolCall,
    estimate_history_tokens,
    index_turns,
    is_loadable_target,
    message_cost,
    message_costs,
    text_tokens,
)
from histtrim.carriers import tool_results_carrier
from histtrim.estimate import (
    ToolSchema,
    estimate_hooks,
    estimate_image_tokens,
    estimate_tool_schemas,
)
from histtrim.messages import FRAME_TOKENS
from livingspec.strategies import GeneratedHistory, chat_histories


def plain(text: str) -> int:
    """Decisions, "The byte estimate": `ceil(utf8_bytes / 4) + 4`."""
    return ceil(len(text.encode("utf-8")) / 4) + 4


def test_constants() -> None:
    assert FRAME_TOKENS == 4
    assert IMAGE_TOKENS == 1600


@pytest.mark.parametrize(
    ("text", "utf8_bytes", "tokens"),
    [
        ("", 0, 0 + 4),
        ("hello", 5, 2 + 4),
        ("abcd", 4, 1 + 4),
        ("abcde", 5, 2 + 4),
        ("ñ", 2, 1 + 4),
        ("niño", 5, 2 + 4),  # 4 code points would give 1 + 4
        ("ñññ", 6, 2 + 4),
        ("😀😀", 8, 2 + 4),  # an emoji is 4 bytes
        ("¿Dónde está?", 15, 4 + 4),  # 12 characters, three of them 2 bytes
        ("日本語", 9, 3 + 4),
    ],
)
def test_est_1_bytes_over_four_plus_four_framing(text: str, utf8_bytes: int, tokens: int) -> None:
    """EST-1: ceil(UTF-8 bytes / 4) + 4 framing tokens per message; bytes, not code points."""
    assert len(text.encode("utf-8")) == utf8_bytes
    for message in (ChatMessage.user(text), ChatMessage.assistant(text), ChatMessage.system(text)):
        assert estimate_history_tokens([message]) == tokens
    assert text_tokens(text) == tokens - 4


def test_est_1_sums_over_messages_with_framing_each() -> None:
    """EST-1: four framing tokens per message, so N empty messages cost 4N."""
    assert estimate_history_tokens([]) == 0
    assert estimate_history_tokens([ChatMessage.assistant("")] * 5) == 20
    history = [
        ChatMessage.system("You are terse."),  # 14 bytes -> 4 + 4
        ChatMessage.user("Find every TODO in src/"),  # 23 bytes -> 6 + 4
        ChatMessage.assistant("Two TODOs."),  # 10 bytes -> 3 + 4
    ]
    assert estimate_history_tokens(history) == 8 + 10 + 7
    assert message_costs(history) == [8, 10, 7]


def test_est_1_accepts_dicts() -> None:
    """EST-1: the estimate validates dict rows like the trims do."""
    assert estimate_history_tokens([{"role": "user", "content": "año"}]) == 1 + 4  # 4 bytes


@pytest.mark.parametrize(
    "target",
    [
        "/tmp/shot.png",
        "http://intranet/a.gif",
        "https://example.com/cat.jpg",
        "data:image/png;base64,iVBORw0KGgo=",
        "C:\\Users\\ana\\foto.png",
        "c:/reports/chart.png",
        "\\\\fileserver\\share\\scan.png",
        "  /padded.png  ",
    ],
)
def test_est_2_loadable_targets(target: str) -> None:
    """EST-2: a loadable target starts (trimmed) with /, http(s)://, data:, a drive, or \\\\."""
    assert is_loadable_target(target)


@pytest.mark.parametrize(
    "target", ["photo.png", "", "   ", "ftp://x/a.png", "relative/x.png", "C:file.png", "~/a.png"]
)
def test_est_2_non_loadable_targets(target: str) -> None:
    assert not is_loadable_target(target)


def test_est_2_user_image_costs_1600_and_its_marker_is_not_text() -> None:
    """EST-2: a loadable marker in a user row costs 1600; the text outside it is priced."""
    message = ChatMessage.user("Look at [IMAGE:/tmp/shot.png] please")
    # Outside the marker: "Look at " (8) + " please" (7) = 15 bytes -> 4 tokens.
    assert estimate_history_tokens([message]) == 4 + 1600 + 4


def test_est_2_non_loadable_marker_is_text() -> None:
    """EST-2: a marker whose target cannot be loaded is plain text, no image price."""
    message = ChatMessage.user("a[IMAGE:/x.png][IMAGE:photo.png]")
    # Text: "a" + "[IMAGE:photo.png]" = 1 + 17 = 18 bytes -> 5 tokens; one image.
    assert len("a[IMAGE:photo.png]") == 18
    assert estimate_history_tokens([message]) == 5 + 1600 + 4
    only_text = ChatMessage.user("see [IMAGE:photo.png]")
    assert estimate_history_tokens([only_text]) == plain("see [IMAGE:photo.png]")


def test_est_2_every_user_row_prices_its_images_not_only_the_current_one() -> None:
    """EST-2: images in user turns are dispatched wherever the user row sits."""
    old = ChatMessage.user("[IMAGE:https://example.com/a.png][IMAGE:data:image/png;base64,AA]")
    history = [old, ChatMessage.assistant("Two cats."), ChatMessage.user("¿Y ahora?")]
    # old: no text outside markers -> 0 + 2*1600 + 4; "Two cats." 9 bytes -> 3 + 4;
    # "¿Y ahora?" 10 bytes -> 3 + 4.
    assert message_costs(history) == [3204, 7, 7]
    assert estimate_history_tokens(history) == 3204 + 7 + 7


@pytest.mark.parametrize("role", ["system", "assistant"])
def test_est_2_system_and_assistant_markers_are_text(role: str) -> None:
    """EST-2/EST-4: system and assistant rows are priced as text, markers included."""
    text = "[IMAGE:/tmp/shot.png]"  # 21 bytes -> 6 tokens
    assert len(text) == 21
    history = [ChatMessage(role=role, content=text), ChatMessage.user("ok")]
    assert message_costs(history)[0] == 6 + 4


def test_est_2_current_turn_tool_result_declared_attachments() -> None:
    """EST-2: a current-turn tool result's declared images cost 1600 each; its text is the
    envelope's `content`, not the JSON around it."""
    result = ChatMessage.tool_result("call_1", "Saved screenshot", attachments=["/tmp/shot.png"])
    history = [
        ChatMessage.user("Take a screenshot"),
        ChatMessage.assistant_tool_calls(None, [ToolCall(id="call_1", name="screenshot")]),
        result,
    ]
    # "Saved screenshot" = 16 bytes -> 4 tokens, + 1 image + framing.
    assert message_costs(history)[2] == 4 + 1600 + 4
    assert message_cost(result, current_turn=True) == 1608


def test_est_2_older_tool_result_is_priced_by_its_message_bytes() -> None:
    """EST-2/EST-4: once a newer real user row exists, the same result is plain bytes."""
    result = ChatMessage.tool_result("call_1", "Saved screenshot", attachments=["/tmp/shot.png"])
    envelope = (
        '{"tool_call_id":"call_1","content":"Saved screenshot",'
        '"attachments":[{"kind":"image","target":"/tmp/shot.png"}]}'
    )
    assert result.content == envelope
    assert len(envelope) == 112  # -> 28 tokens
    history = [ChatMessage.user("Take a screenshot"), result, ChatMessage.user("Thanks")]
    assert message_costs(history)[1] == 28 + 4
    assert message_cost(result, current_turn=False) == 32


def test_est_2_current_turn_means_after_the_last_real_user_row() -> None:
    """EST-2: a `[Tool results]` carrier is not a real user row, so results after it are
    still current; a user row equal to the breadcrumb text is a real user row."""
    result = ChatMessage.tool_result("c1", "ok", attachments=["/a.png"])  # "ok": 1 token
    carrier = tool_results_carrier([("grep", "none")])
    assert message_costs([ChatMessage.user("go"), carrier, result])[2] == 1 + 1600 + 4
    after_crumb_text = [ChatMessage.user("go"), ChatMessage.user(BREADCRUMB), result]
    assert message_costs(after_crumb_text)[2] == 1 + 1600 + 4
    before_real_user = [ChatMessage.user("go"), result, ChatMessage.user(BREADCRUMB)]
    assert message_costs(before_real_user)[1] == plain(result.content)


def test_est_2_tool_result_without_any_user_row_is_current() -> None:
    """EST-2 (issue 9 item 5): with no real user row every tool result is current, as in
    the reference: its declared image is priced (the old expectation, plain bytes, was wrong)."""
    result = ChatMessage.tool_result("c1", "ok", attachments=["/a.png"])
    assert estimate_history_tokens([ChatMessage.system("sys"), result]) == 5 + (1 + 1600 + 4)
    assert estimate_image_tokens([ChatMessage.system("sys"), result]) == 1600


def test_est_2_carrier_declared_attachments_in_the_current_turn() -> None:
    """EST-2: a current `[Tool results]` carrier prices its declared images at 1600 and its
    text without the attachments block; an older one is plain bytes."""
    carrier = tool_results_carrier([("screenshot", "saved")], attachments=["/tmp/shot.png"])
    assert carrier.content == (
        "[Tool results]\n[Tool attachments: 1]\n[IMAGE:/tmp/shot.png]\n"
        '<tool_result name="screenshot">\nsaved\n</tool_result>'
    )
    text = '[Tool results]\n<tool_result name="screenshot">\nsaved\n</tool_result>'
    assert len(text) == 67  # -> ceil(67 / 4) = 17 tokens
    user = ChatMessage.user("Take a screenshot")
    assert message_costs([user, carrier])[1] == 17 + 1600 + 4
    assert message_costs([user, carrier, ChatMessage.user("next")])[1] == plain(carrier.content)


def test_est_2_carrier_declaring_a_non_loadable_marker_keeps_it_as_text() -> None:
    """EST-2: a declared marker that cannot be loaded is not dispatched; it stays text
    (the header line goes with the attachments block)."""
    carrier = tool_results_carrier([("grep", "x")], attachments=["photo.png", "/tmp/a.png"])
    text = '[Tool results]\n[IMAGE:photo.png]\n<tool_result name="grep">\nx\n</tool_result>'
    user = ChatMessage.user("go")
    assert message_costs([user, carrier])[1] == ceil(len(text) / 4) + 1600 + 4


def test_est_2_malformed_carrier_header_is_plain_text() -> None:
    """EST-2: a header that promises more markers than follow is not a declaration."""
    content = "[Tool results]\n[Tool attachments: 2]\n[IMAGE:/a.png]\n<tool_result>x</tool_result>"
    carrier = ChatMessage.user(content)
    assert message_costs([ChatMessage.user("go"), carrier])[1] == plain(content)


def test_est_3_marker_text_in_tool_output_is_text() -> None:
    """EST-3: a tool result's images are its declared attachments, not markers in its output."""
    output = "see [IMAGE:/tmp/out.png]"  # 4 + 20 = 24 bytes -> 6 tokens
    assert len(output) == 24
    user = ChatMessage.user("run it")
    undeclared = ChatMessage.tool_result("c1", output)
    assert message_costs([user, undeclared])[1] == plain(undeclared.content)
    declared_none = ChatMessage.tool_result("c1", output, attachments=[])
    assert message_costs([user, declared_none])[1] == 6 + 4
    declared_two = ChatMessage.tool_result(
        "c1", output, attachments=["/tmp/a.png", "https://example.com/b.png"]
    )
    assert message_costs([user, declared_two])[1] == 6 + 2 * 1600 + 4


def test_est_3_only_loadable_image_attachments_count() -> None:
    """EST-3: a declared attachment counts only if it is an image with a loadable target."""
    attachments = [
        Attachment(target="/tmp/a.png"),
        Attachment(target="photo.png"),
        Attachment(kind="file", target="/tmp/report.pdf"),
    ]
    result = ChatMessage.tool_result("c1", "done", attachments=attachments)  # 4 bytes
    assert message_costs([ChatMessage.user("go"), result])[1] == 1 + 1600 + 4


@pytest.mark.parametrize(
    "content",
    [
        "plain output, no envelope [IMAGE:/tmp/a.png]",
        '{"tool_call_id": 7, "content": "x", "attachments": []}',
        '{"tool_call_id": "c1", "content": "x", "attachments": "nope"}',
        '{"tool_call_id": "c1", "content": "x", "attachments": [{"kind": "image"}]}',
        '{"tool_call_id": "c1", "content": "x", "attachments": [{"target": "/a.png"}]',
        '["tool_call_id", "attachments"]',
    ],
)
def test_est_4_malformed_envelope_is_priced_as_plain_text(content: str) -> None:
    """EST-4: a tool row whose envelope does not parse is plain text, even in the current
    turn and even if its text looks like an image marker or attachments."""
    history = [ChatMessage.user("go"), ChatMessage(role="tool", content=content)]
    assert message_costs(history)[1] == plain(content)


def test_est_4_older_tool_results_system_and_assistant_text() -> None:
    """EST-4: older tool results cost their message bytes; system and assistant are text."""
    call = ChatMessage.assistant_tool_calls(
        "Buscando…", [ToolCall(id="call_1", name="grep", arguments={"q": "TODO"})]
    )
    result = ChatMessage.tool_result("call_1", "src/app.py:12", attachments=["/tmp/a.png"])
    history = [
        ChatMessage.system("Sé breve."),
        ChatMessage.user("Busca TODO"),
        call,
        result,
        ChatMessage.assistant("Uno en app.py"),
        ChatMessage.user("Gracias"),
    ]
    expected = [plain(m.content) for m in history]
    assert message_costs(history) == expected
    assert len(call.content.encode()) == len(call.content) + 2  # "…" is 3 bytes
    assert estimate_history_tokens(history) == sum(expected)


def test_tool_schemas_and_hooks() -> None:
    """Tool schemas: ceil(bytes(name + description + compact JSON params) / 4) + 4 each;
    hooks are text without framing."""
    schema = {"name": "grep", "description": "Search", "parameters": {"type": "object"}}
    # "grep" 4 + "Search" 6 + '{"type":"object"}' 17 = 27 bytes -> 7 tokens + 4.
    assert estimate_tool_schemas([schema]) == 11
    wrapped = {"type": "function", "function": schema}
    # "ls" + "" + "{}" = 4 bytes -> 1 token + 4.
    assert estimate_tool_schemas([wrapped, ToolSchema(name="ls")]) == 11 + 5
    assert estimate_tool_schemas([]) == 0
    assert estimate_hooks(["abcde", "ñ"]) == 2 + 1


# ------------------------------------------------------------------ the cached hot path


@given(chat_histories(free_text=True))
def test_est_1_cached_row_prices_equal_pricing_each_row(g: GeneratedHistory[ChatMessage]) -> None:
    """EST-1..4: `message_costs` reads one cached integer per row (and looks only at the rows
    that can carry images); it equals pricing every row on its own, crumb slot included."""
    rows = list(g.rows)
    index = index_turns(rows, crumb_present=g.crumb)
    current = index.current_turn_after
    expected = [message_cost(row, current_turn=i > current) for i, row in enumerate(rows)]
    assert message_costs(rows, index) == expected
    assert [row.facts.plain_tokens for row in rows] == [plain(row.content) for row in rows]


def test_est_2_image_markers_in_the_crumb_slot_are_priced() -> None:
    """EST-2: a crumb slot (named by the flag) with an image marker is still a user row."""
    crumb = ChatMessage.user(BREADCRUMB)
    rows = [ChatMessage.system("s"), crumb, ChatMessage.user("a [IMAGE:/tmp/x.png]")]
    index = index_turns(rows, crumb_present=True)
    assert message_costs(rows, index) == [plain("s"), plain(BREADCRUMB), 1 + IMAGE_TOKENS + 4]
