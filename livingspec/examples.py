"""Realistic example histories shared by the notebooks and tests.

Every function returns a fresh list (or message), so a caller may change what it gets
without affecting anyone else. The session is a coding agent helping "Ana" with her shop's
repository: a file search with native tool calls, screenshots, a prompt-mode
`[Tool results]` carrier, a late system message and some Spanish text with emoji."""

from __future__ import annotations

from histtrim._checks import non_negative
from histtrim.carriers import image_marker, tool_results_carrier
from histtrim.messages import (
    BREADCRUMB,
    AssistantToolCalls,
    ChatMessage,
    ConversationMessage,
    ToolCall,
    ToolResultMessage,
    ToolResults,
)

SCREENSHOT_PATH = "/home/ana/shop/screens/error-502.png"
"""The image Ana pastes into her question (a loadable image marker)."""

CHECKOUT_SCREENSHOT = "/tmp/checkout.png"
"""The image the browser tool declares as an attachment of its result."""


def system_prompt() -> ChatMessage:
    """The leading system row of every example session."""
    return ChatMessage.system(
        "You are a coding assistant working in the repository /home/ana/shop. "
        "Use the tools to read files and run commands; answer briefly."
    )


def late_system_message() -> ChatMessage:
    """A system row the runtime adds mid-session (not part of the leading system block)."""
    return ChatMessage.system("The user switched the working directory to /home/ana/shop/api.")


def file_search_turn() -> list[ChatMessage]:
    """A user asks for a file search; the assistant calls `search_files` natively."""
    return [
        ChatMessage.user("Find every file under src/ that still uses the old LegacyPay client."),
        ChatMessage.assistant_tool_calls(
            None,
            [ToolCall(id="call_1", name="search_files", arguments='{"pattern":"LegacyPay"}')],
        ),
        ChatMessage.tool_result(
            "call_1",
            "src/checkout.py:42: client = LegacyPay(api_key)\n"
            "src/refunds.py:17: LegacyPay.refund(order_id)",
        ),
        ChatMessage.assistant(
            "Two files still use LegacyPay: src/checkout.py (line 42) and src/refunds.py (line 17)."
        ),
    ]


def read_and_edit_turn() -> list[ChatMessage]:
    """Two rounds of native tool calls in one turn: read a file, then edit it."""
    return [
        ChatMessage.user("Replace LegacyPay in src/checkout.py with the new PayClient."),
        ChatMessage.assistant_tool_calls(
            "Reading the file first.",
            [ToolCall(id="call_2", name="read_file", arguments='{"path":"src/checkout.py"}')],
        ),
        ChatMessage.tool_result(
            "call_2",
            "40 def pay(order):\n41     api_key = settings.PAY_KEY\n"
            "42     client = LegacyPay(api_key)\n43     return client.charge(order.total)",
        ),
        ChatMessage.assistant_tool_calls(
            None,
            [
                ToolCall(
                    id="call_3",
                    name="edit_file",
                    arguments='{"path":"src/checkout.py","old":"LegacyPay(api_key)","new":"PayClient(api_key)"}',
                )
            ],
        ),
        ChatMessage.tool_result("call_3", "Edited src/checkout.py (1 replacement)."),
        ChatMessage.assistant("Done: src/checkout.py now uses PayClient."),
    ]


def screenshot_question_turn() -> list[ChatMessage]:
    """A user turn that pastes a screenshot: a loadable `[IMAGE:...]` marker in the text."""
    return [
        ChatMessage.user(
            f"Customers see this page at checkout: {image_marker(SCREENSHOT_PATH)} What is wrong?"
        ),
        ChatMessage.assistant(
            "The page is a 502 from the payment gateway: the request times out after 30 s."
        ),
    ]


def browser_screenshot_turn() -> list[ChatMessage]:
    """A tool result that declares an image attachment (the browser's screenshot)."""
    return [
        ChatMessage.user("Open the checkout page and take a screenshot."),
        ChatMessage.assistant_tool_calls(
            None,
            [ToolCall(id="call_4", name="browser_screenshot", arguments='{"url":"/checkout"}')],
        ),
        ChatMessage.tool_result(
            "call_4",
            f"Saved the screenshot to {CHECKOUT_SCREENSHOT}.",
            attachments=[CHECKOUT_SCREENSHOT],
        ),
        ChatMessage.assistant("The checkout page renders correctly now."),
    ]


def prompt_mode_turn() -> list[ChatMessage]:
    """A prompt-mode tool exchange: the results come back as a `[Tool results]` user row."""
    return [
        ChatMessage.user("Run the refund tests."),
        ChatMessage.assistant(
            '<tool_call name="run_tests">{"path": "tests/test_refunds.py"}</tool_call>'
        ),
        tool_results_carrier([("run_tests", "4 passed in 0.31s")]),
        ChatMessage.assistant("All 4 refund tests pass."),
    ]


def spanish_turn() -> list[ChatMessage]:
    """Non-ASCII text: accents and emoji cost more bytes (and tokens) than characters."""
    return [
        ChatMessage.user("¿Puedes resumir la reunión de diseño? 📋"),
        ChatMessage.assistant("Claro: se acordó migrar el módulo de pagos antes del viernes. ✅"),
    ]


def agent_session() -> list[ChatMessage]:
    """The main example: a system row and five turns (native tools, image, carrier)."""
    return [
        system_prompt(),
        *file_search_turn(),
        *read_and_edit_turn(),
        *screenshot_question_turn(),
        *prompt_mode_turn(),
        *browser_screenshot_turn(),
    ]


def session_with_late_system() -> list[ChatMessage]:
    """Three turns and a system row added mid-session: it follows the first turn's answer,
    so by the boundary rule it belongs to the first turn."""
    return [
        system_prompt(),
        *file_search_turn(),
        late_system_message(),
        *prompt_mode_turn(),
        *spanish_turn(),
    ]


def breadcrumb_lookalike_session() -> list[ChatMessage]:
    """A user who literally types the breadcrumb text: an ordinary turn, not a breadcrumb."""
    return [
        system_prompt(),
        ChatMessage.user(BREADCRUMB),
        ChatMessage.assistant("That looks like an internal note; what would you like to do?"),
        *file_search_turn(),
    ]


def big_log_text(lines: int = 400) -> str:
    """A long, deterministic build log (about 60 bytes a line)."""
    return "\n".join(
        f"[{i:04d}] ERROR payment_gateway: upstream timed out after 30000 ms" for i in range(lines)
    )


def oversized_turn() -> list[ChatMessage]:
    """One turn whose tool result (a whole build log) is far larger than a small budget."""
    return [
        ChatMessage.user("Why did last night's build fail? Show me the full log."),
        ChatMessage.assistant_tool_calls(
            None, [ToolCall(id="call_9", name="read_file", arguments='{"path":"build.log"}')]
        ),
        ChatMessage.tool_result("call_9", big_log_text()),
        ChatMessage.assistant("Every request to the payment gateway timed out after 30 s."),
    ]


def session_ending_with_oversized_turn() -> list[ChatMessage]:
    """Two small turns, then one turn far over any small budget."""
    return [system_prompt(), *file_search_turn(), *spanish_turn(), *oversized_turn()]


def many_turns_session(turns: int) -> list[ChatMessage]:
    """A system row and `turns` short question/answer turns (turn k asks about file k)."""
    non_negative("turns", turns)
    rows = [system_prompt()]
    for k in range(1, turns + 1):
        rows.append(ChatMessage.user(f"What does src/module_{k:02d}.py do?"))
        rows.append(ChatMessage.assistant(f"It defines the helpers of feature {k}."))
    return rows


def structured_session() -> list[ConversationMessage]:
    """The structured `Agent.history` of a session: tool calls and results as typed items,
    and a late system row inside the second turn."""
    return [
        system_prompt(),
        ChatMessage.user("Find every file under src/ that still uses the old LegacyPay client."),
        AssistantToolCalls(
            text=None,
            tool_calls=(
                ToolCall(id="call_1", name="search_files", arguments='{"pattern":"LegacyPay"}'),
            ),
        ),
        ToolResults(
            results=(
                ToolResultMessage(
                    tool_call_id="call_1",
                    content="src/checkout.py:42\nsrc/refunds.py:17",
                    tool_name="search_files",
                ),
            )
        ),
        ChatMessage.assistant("Two files still use LegacyPay."),
        ChatMessage.user("Run the refund tests."),
        late_system_message(),
        AssistantToolCalls(
            text="Running them now.",
            tool_calls=(ToolCall(id="call_2", name="run_tests", arguments='{"path":"tests/"}'),),
        ),
        ToolResults(
            results=(
                ToolResultMessage(
                    tool_call_id="call_2", content="4 passed in 0.31s", tool_name="run_tests"
                ),
            )
        ),
        ChatMessage.assistant("All 4 refund tests pass."),
        ChatMessage.user("¿Puedes resumir la reunión de diseño? 📋"),
        ChatMessage.assistant("Claro: se acordó migrar el módulo de pagos antes del viernes. ✅"),
    ]


def sample_texts() -> dict[str, str]:
    """Short texts in three scripts, for estimate-vs-bytes comparisons (EST-1)."""
    return {
        "ASCII": "Find the payment bug",
        "accented": "Añadí más pruebas útiles",
        "emoji": "🚀🔥✅📋🐛",
    }
