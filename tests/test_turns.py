"""The turn-boundary rule and the turn index (TURN-1..3, TURN-5, the breadcrumb slot)."""

from __future__ import annotations

import pytest

from histtrim import (
    BREADCRUMB,
    AssistantToolCalls,
    ChatMessage,
    ToolCall,
    ToolResultMessage,
    ToolResults,
    conversation_rows,
    index_turns,
    leading_system_count,
    opens_turn,
    to_chat_messages,
)
from histtrim.carriers import tool_results_carrier
from histtrim.trim import breadcrumb_message

SYSTEM = ChatMessage.system("You are a careful coding assistant.")
SEARCH = ToolCall(id="call_1", name="search_files", arguments={"pattern": "TODO", "path": "src/"})


def file_search_history() -> list[ChatMessage]:
    """Three turns: a native tool call, a prompt-mode carrier, a plain question."""
    return [
        SYSTEM,
        ChatMessage.user("Find every TODO in src/"),  # 1: turn 0
        ChatMessage.assistant_tool_calls("Searching.", [SEARCH]),
        ChatMessage.tool_result("call_1", "src/app.py:12\nsrc/db.py:40"),
        ChatMessage.assistant("Two TODOs: app.py:12 and db.py:40."),
        ChatMessage.user("Take a screenshot of the failing page"),  # 5: turn 1
        ChatMessage.assistant('<tool_call>{"name": "screenshot"}</tool_call>'),
        tool_results_carrier([("screenshot", "saved")], attachments=["/tmp/shot.png"]),
        ChatMessage.assistant("The page shows a 500 error."),
        ChatMessage.user("¿Puedes leer el archivo de configuración?"),  # 9: turn 2
        ChatMessage.assistant("El puerto es 8080."),
    ]


def test_turn_1_two_representations_index_alike() -> None:
    """TURN-1: the structured history and its provider-facing rows have the same turns."""
    structured = [
        SYSTEM,
        ChatMessage.user("Find every TODO in src/"),
        AssistantToolCalls(text="Searching.", tool_calls=(SEARCH,)),
        ToolResults(
            results=(
                ToolResultMessage(tool_call_id="call_1", content="src/app.py:12", tool_name="grep"),
            )
        ),
        ChatMessage.assistant("One TODO in app.py."),
        ChatMessage.user("Thanks!"),
    ]
    rows = to_chat_messages(structured)
    assert [r.role for r in rows] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert rows[2] == ChatMessage.assistant_tool_calls("Searching.", [SEARCH])
    assert rows[3] == ChatMessage.tool_result("call_1", "src/app.py:12")
    assert index_turns(structured).starts == (1, 5)
    assert index_turns(rows).starts == (1, 5)


def test_turn_1_structured_items_validate_from_dicts() -> None:
    """TURN-1: a `{"role", "content"}` dict is a chat row; `kind` selects the other items."""
    items = conversation_rows(
        [
            {"role": "user", "content": "hola"},
            {"kind": "assistant_tool_calls", "text": None, "tool_calls": [SEARCH.model_dump()]},
            {"kind": "tool_results", "results": [{"tool_call_id": "call_1", "content": "ok"}]},
        ]
    )
    assert items[0] == ChatMessage.user("hola")
    assert items[1] == AssistantToolCalls(tool_calls=(SEARCH,))
    assert items[2] == ToolResults(
        results=(ToolResultMessage(tool_call_id="call_1", content="ok"),)
    )


def test_turn_2_a_turn_runs_from_a_real_user_row_to_the_next() -> None:
    """TURN-2: a turn is a real user row plus the reply, tool calls and results until the next."""
    index = index_turns(file_search_history())
    assert index.prefix_len == 1
    assert index.crumb is None
    assert index.body_start == 1
    assert index.starts == (1, 5, 9)
    assert index.turn_count == 3
    assert [(index.turn_start(k), index.turn_end(k)) for k in range(3)] == [(1, 5), (5, 9), (9, 11)]
    assert index.turn_of() == [-1, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2]


def test_turn_2_rows_before_the_first_user_row_go_with_the_first_turn() -> None:
    """TURN-2: rows before the first real user row belong to no turn; turn 0 takes them."""
    history = [
        SYSTEM,
        ChatMessage.assistant("Hi! How can I help?"),
        ChatMessage.user("Search for TODOs"),
        ChatMessage.user("and FIXMEs"),
    ]
    index = index_turns(history)
    assert index.starts == (2, 3)
    assert index.turn_start(0) == 1  # the preamble row is kept/dropped with turn 0
    assert index.turn_of() == [-1, 0, 0, 1]


def test_turn_2_no_user_row_no_turn() -> None:
    """TURN-2: without a real user row there is no turn at all."""
    index = index_turns([SYSTEM, ChatMessage.assistant("Ready.")])
    assert index.turn_count == 0
    assert index.turn_of() == [-1, -1]
    assert index_turns([]).turn_count == 0


def test_turn_3_tool_results_carrier_continues_the_previous_turn() -> None:
    """TURN-3: a user row beginning with `[Tool results]` is part of the previous turn."""
    history = file_search_history()
    carrier = history[7]
    assert carrier.role == "user"
    assert carrier.content.startswith("[Tool results]")
    assert not opens_turn(carrier)
    assert index_turns(history).turn_of()[7] == 1
    plain = ChatMessage.user("[Tool results]\nno header, still a carrier")
    assert not opens_turn(plain)


@pytest.mark.parametrize(
    "text",
    [
        "[tool results] lower case",  # case-sensitive
        " [Tool results] after a space",  # position 0 only
        "[Tool results",  # no closing bracket
        "Here are the [Tool results] you asked for",
    ],
)
def test_turn_3_only_the_exact_prefix_at_position_0_continues(text: str) -> None:
    """TURN-3: the test is `startswith("[Tool results]")`, case-sensitive, at position 0."""
    assert opens_turn(ChatMessage.user(text))
    history = [ChatMessage.user("first"), ChatMessage.user(text)]
    assert index_turns(history).starts == (0, 1)


@pytest.mark.parametrize("role", ["system", "assistant", "tool"])
def test_turn_2_only_user_rows_open_turns(role: str) -> None:
    """TURN-2: assistant, tool and system rows never open a turn."""
    assert not opens_turn(ChatMessage(role=role, content="Find every TODO"))


def test_turn_2_structured_tool_items_never_open_turns() -> None:
    """TURN-2: structured tool-call and tool-result items stay inside their turn."""
    assert not opens_turn(AssistantToolCalls(tool_calls=(SEARCH,)))
    assert not opens_turn(ToolResults(results=(ToolResultMessage(tool_call_id="c", content=""),)))


def test_turn_5_leading_system_block() -> None:
    """TURN-5: the leading system block is counted once; a later system row is body."""
    history = [
        SYSTEM,
        ChatMessage.system("Reply in Spanish."),
        ChatMessage.user("hola"),
        ChatMessage.system("Late instruction"),
        ChatMessage.user("adiós"),
    ]
    assert leading_system_count(history) == 2
    index = index_turns(history)
    assert index.prefix_len == 2
    assert index.starts == (2, 4)
    assert index.turn_of() == [-1, -1, 0, 0, 1]
    assert leading_system_count([ChatMessage.user("x"), SYSTEM]) == 0


def test_breadcrumb_text_from_a_user_is_an_ordinary_turn() -> None:
    """TURN-2: a real user message equal to the breadcrumb text opens a turn (no flag)."""
    history = [SYSTEM, ChatMessage.user(BREADCRUMB), ChatMessage.user("next")]
    index = index_turns(history)
    assert index.crumb is None
    assert index.starts == (1, 2)


def test_breadcrumb_flag_names_the_slot_after_the_system_rows() -> None:
    """TURN-2: with the owner's flag the row after the prefix is the crumb, not a turn."""
    history = [SYSTEM, breadcrumb_message(), ChatMessage.user(BREADCRUMB), ChatMessage.user("x")]
    index = index_turns(history, crumb_present=True)
    assert index.crumb == 1
    assert index.body_start == 2
    assert index.starts == (2, 3)  # the second, user-written copy is still a turn
    assert index.turn_of() == [-1, -1, 0, 1]


@pytest.mark.parametrize(
    "history",
    [
        [],
        [SYSTEM],
        [SYSTEM, ChatMessage.assistant("hola"), breadcrumb_message()],  # the slot is row 1
        [ChatMessage.tool_result("c1", "ok")],
    ],
)
def test_breadcrumb_flag_without_a_breadcrumb_slot_is_an_error(
    history: list[ChatMessage],
) -> None:
    """The flag must name a user row right after the leading system rows (any text)."""
    with pytest.raises(ValueError, match="crumb_present"):
        index_turns(history, crumb_present=True)


def test_breadcrumb_flag_on_an_assistant_row_is_an_error() -> None:
    """Regression: the breadcrumb is a user row; an assistant row with its text is not it."""
    with pytest.raises(ValueError, match="crumb_present"):
        index_turns([SYSTEM, ChatMessage.assistant(BREADCRUMB)], crumb_present=True)
