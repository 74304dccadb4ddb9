"""The per-turn figures and the Jupyter HTML of histories and trim results."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from histtrim import (
    BREADCRUMB,
    IMAGE_TOKENS,
    ChatMessage,
    ConversationMessage,
    ToolCall,
    estimate_history_tokens,
    to_chat_messages,
    trim_conversation_to_recent_turns,
    trim_to_recent_turn_count,
    trim_to_recent_turns,
)
from histtrim.adapters.openai import from_openai, trim_openai
from histtrim.display.views import (
    History,
    history_html,
    register_ipython_formatters,
    trim_result_html,
)
from histtrim.trim import breadcrumb_message
from histtrim.turn_sizes import turn_stats
from livingspec.examples import agent_session, session_with_late_system, structured_session
from livingspec.strategies import GeneratedHistory, chat_histories, conversation_histories


class Page(HTMLParser):
    """The facts a reader sees: turn blocks, row anchors, links, the breadcrumb rows."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[tuple[int, str]] = []
        self.ids: list[str] = []
        self.links: list[str] = []
        self.styles: dict[str, str] = {}
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if "data-turn" in attributes:
            self.blocks.append((int(attributes["data-turn"] or 0), attributes["data-state"] or ""))
        if attributes.get("id"):
            self.ids.append(attributes["id"] or "")
            self.styles[attributes["id"] or ""] = attributes.get("style") or ""
        if tag == "a":
            self.links.append((attributes.get("href") or "").removeprefix("#"))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    @property
    def turns(self) -> list[int]:
        return sorted({turn for turn, _ in self.blocks if turn > 0})

    def state(self, turn: int) -> str:
        return next(state for t, state in self.blocks if t == turn)


# ------------------------------------------------------------------ turn_stats


def test_turn_stats_add_up_to_the_estimate() -> None:
    history = agent_session()
    stats = turn_stats(history)
    assert [s.turn for s in stats] == list(range(6))
    assert sum(s.tokens for s in stats) == estimate_history_tokens(history)
    assert sum(s.messages for s in stats) == len(history)
    assert stats[0].cumulative == estimate_history_tokens(history)
    # cumulative from the newest turn: the prefix plus that turn and every newer one
    assert stats[-1].cumulative == stats[0].tokens + stats[-1].tokens
    assert [s.first_row for s in stats] == [0, 1, 5, 11, 13, 17]


def test_turn_stats_count_dispatched_images_only_est_2_est_3() -> None:
    """EST-2: a user image counts anywhere; EST-3: a tool's declared attachment counts in the
    current turn only (the browser screenshot is in the last turn of `agent_session`)."""
    stats = turn_stats(agent_session())
    assert [s.images for s in stats] == [0, 0, 0, 1, 0, 1]
    older = turn_stats([*agent_session(), ChatMessage.user("next"), ChatMessage.assistant("ok")])
    assert [s.images for s in older] == [0, 0, 0, 1, 0, 0, 0]
    assert older[3].tokens >= IMAGE_TOKENS


def test_structured_items_are_priced_as_their_rows() -> None:
    items = structured_session()
    stats = turn_stats(items)
    assert stats[0].cumulative == estimate_history_tokens(to_chat_messages(items))
    assert sum(s.messages for s in stats) == len(items)


def test_the_breadcrumb_is_part_of_the_prefix_not_a_turn() -> None:
    history = [agent_session()[0], breadcrumb_message(), *agent_session()[1:]]
    assert len(turn_stats(history, crumb_present=True)) == 6
    assert turn_stats(history, crumb_present=True)[0].messages == 2
    assert len(turn_stats(history)) == 7  # without the flag the same row is a turn


# ------------------------------------------------------------------ history HTML


def test_history_has_one_block_per_turn_with_tokens() -> None:
    history = agent_session()
    page = Page(history_html(history))
    assert page.turns == [1, 2, 3, 4, 5]
    text = "".join(page.text)
    for stat in turn_stats(history)[1:]:
        assert f"Turn {stat.turn}" in text
        assert f"{stat.tokens:,} tokens" in text


def test_tool_calls_link_to_their_results_and_back() -> None:
    history = agent_session()
    page = Page(history_html(history))
    assert page.links, "no tool links"
    assert set(page.links) <= set(page.ids)
    # every call (4 native calls) links to a result and every result back to its call
    assert len(page.links) == 2 * 4


def test_a_call_without_result_and_a_result_without_call_are_flagged() -> None:
    history = [
        ChatMessage.user("go"),
        ChatMessage.assistant_tool_calls(None, [ToolCall(id="c1", name="grep")]),
        ChatMessage.tool_result("c9", "orphan"),
    ]
    html = history_html(history)
    assert "no result in this history" in html
    assert "no call in this history" in html


def test_content_is_escaped_and_long_text_is_cut() -> None:
    history = [ChatMessage.user("<script>alert('x')</script> & " + "y" * 1000)]
    html = history_html(history)
    assert "<script>" not in html
    assert "&lt;script&gt;" in html
    assert "characters)" in html


def test_html_is_deterministic_and_has_no_memory_addresses() -> None:
    first = history_html(agent_session())
    assert first == history_html(agent_session())
    assert not re.search(r"0x[0-9a-f]{6,}", first)


def test_history_wrapper_reprs() -> None:
    history = History(agent_session())
    assert repr(history) == (
        f"History(5 turns, {len(agent_session())} messages, "
        f"{estimate_history_tokens(agent_session()):,} tokens)"
    )
    assert history._repr_html_() == history_html(agent_session())


def test_late_system_message_is_shown_inside_its_turn() -> None:
    page = Page(history_html(session_with_late_system()))
    assert page.turns == [1, 2, 3]
    assert "The user switched the working directory" in "".join(page.text)


# ------------------------------------------------------------------ trim result HTML


def test_token_trim_greys_out_dropped_turns_and_marks_the_breadcrumb_slot() -> None:
    """SEEN-1 is shown where the breadcrumb goes: before the first kept turn."""
    result = trim_to_recent_turns(agent_session(), 1900)
    assert result.trimmed
    html = trim_result_html(result)
    page = Page(html)
    assert page.turns == [1, 2, 3, 4, 5]
    dropped = [t for t in page.turns if page.state(t) == "dropped"]
    assert len(dropped) == result.dropped_turns
    assert dropped == list(range(1, result.dropped_turns + 1))
    assert "opacity:0.5" in html
    marker = html.index("breadcrumb here")
    first_kept = html.index(f'data-turn="{result.dropped_turns + 1}"')
    last_dropped = html.index(f'data-turn="{result.dropped_turns}"')
    assert last_dropped < marker < first_kept


def test_an_untrimmed_result_has_no_dropped_block() -> None:
    result = trim_to_recent_turns(agent_session(), 0)
    page = Page(trim_result_html(result))
    assert all(state == "kept" for _, state in page.blocks)
    assert "proactive trimming is off" in "".join(page.text)


def test_a_present_breadcrumb_is_marked_and_is_not_a_turn() -> None:
    history = [agent_session()[0], breadcrumb_message(), *agent_session()[1:]]
    result = trim_to_recent_turn_count(history, 2, crumb_present=True)
    html = trim_result_html(result)
    page = Page(html)
    assert page.turns == [1, 2, 3, 4, 5]
    assert "breadcrumb: earlier turns were left out here (SEEN-1)" in html
    assert "inserts the breadcrumb" not in html  # it is already there
    crumb_row = next(i for i in page.ids if i.endswith("-r1"))
    assert "dashed" in page.styles[crumb_row]


def test_a_user_typing_the_breadcrumb_text_is_an_ordinary_turn() -> None:
    history = [agent_session()[0], ChatMessage.user(BREADCRUMB), ChatMessage.assistant("?")]
    history += agent_session()[1:5]
    result = trim_to_recent_turns(history, 10_000)
    html = trim_result_html(result)
    assert "breadcrumb: earlier turns" not in html
    assert Page(html).turns == [1, 2]


def test_structured_trim_shows_the_dropped_breadcrumb() -> None:
    items: list[ConversationMessage] = [
        structured_session()[0],
        breadcrumb_message(),
        *structured_session()[1:],
    ]
    result = trim_conversation_to_recent_turns(items, 1, crumb_present=True)
    html = trim_result_html(result)
    page = Page(html)
    assert page.turns == [1, 2, 3]
    assert [page.state(t) for t in page.turns] == ["dropped", "dropped", "kept"]
    assert "Breadcrumb" in "".join(page.text)
    assert "owner inserts the breadcrumb here" in html


def test_openai_trim_result_says_the_breadcrumb_was_inserted() -> None:
    messages = [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "1"},
        {"role": "user", "content": "two"},
        {"role": "assistant", "content": "2"},
    ]
    out = trim_openai(messages, max_turns=1)
    assert "breadcrumb inserted here" in out._repr_html_()
    assert from_openai(out.records)[0].content == BREADCRUMB


@given(chat_histories(), st.integers(0, 4000))
def test_any_token_trim_renders_every_turn_once(
    generated: GeneratedHistory[ChatMessage], budget: int
) -> None:
    result = trim_to_recent_turns(
        generated.history, budget, crumb_present=generated.crumb
    )
    page = Page(trim_result_html(result))
    assert page.turns == list(range(1, generated.turn_count + 1))
    assert sum(state == "dropped" for t, state in page.blocks if t > 0) == result.dropped_turns
    assert set(page.links) <= set(page.ids)
    assert len(page.ids) == len(set(page.ids)) == len(generated.rows)
    assert len(page.ids) == len(set(page.ids)) == len(generated.rows)  # one anchor per row


@given(conversation_histories(), st.integers(0, 5))
def test_any_structured_trim_renders_every_turn_once(
    generated: GeneratedHistory[ConversationMessage], max_turns: int
) -> None:
    result = trim_conversation_to_recent_turns(
        generated.history, max_turns, crumb_present=generated.crumb
    )
    page = Page(trim_result_html(result))
    assert page.turns == list(range(1, generated.turn_count + 1))
    assert sum(state == "dropped" for t, state in page.blocks if t > 0) == result.dropped_turns
    assert set(page.links) <= set(page.ids)
    assert len(page.ids) == len(set(page.ids)) == len(generated.rows)


def test_jupyter_renders_trim_results_through_the_registered_formatter() -> None:
    """The display depends on the results, not the reverse: IPython's HTML formatter, once
    registered, renders a trim result with `trim_result_html` (the result has no HTML
    method of its own)."""
    from IPython.core.formatters import DisplayFormatter

    formatter = DisplayFormatter()
    result = trim_to_recent_turns(agent_session(), 1900)
    assert not hasattr(result, "_repr_html_")
    assert "text/html" not in formatter.format(result)[0]
    assert register_ipython_formatters(SimpleNamespace(display_formatter=formatter))
    data, _ = formatter.format(result)
    assert data["text/html"] == trim_result_html(result)
    turn_limit = trim_to_recent_turn_count(agent_session(), 1)
    assert formatter.format(turn_limit)[0]["text/html"] == trim_result_html(turn_limit)


def test_a_long_history_shows_its_first_and_last_turns() -> None:
    """Issue 20: `history_html` of a long history renders its first and last turns and says
    how many are hidden (200k rows made 104 MB of HTML); so does one huge turn."""
    rows = [ChatMessage.system("s")]
    for n in range(20_000):
        rows += [ChatMessage.user(f"question {n}"), ChatMessage.assistant(f"answer {n}")]
    html = history_html(rows)
    assert len(html) < 1_000_000
    assert "question 0<" in html and "question 19999<" in html
    assert "question 10000<" not in html
    hidden = re.search(r"… ([\d,]+) turns \(([\d,]+) messages\) not shown …", html)
    assert hidden is not None
    turns, messages = (int(g.replace(",", "")) for g in hidden.groups())
    shown = len(re.findall(r'data-turn="[1-9]\d*"', html))
    assert turns + shown == 20_000 and messages == 2 * turns
    giant = [ChatMessage.user("go"), *[ChatMessage.assistant(f"step {n}") for n in range(5_000)]]
    html = history_html(giant)
    assert len(html) < 1_000_000 and "step 0<" in html and "step 4999<" in html
    assert "4,601 messages of this turn not shown" in html
