"""History files in the three formats: detection, the column reader against the library's
rows, trims equal to the adapters' trims, writes back in the input's own format and layout,
and bad input named by line and field (never a RecursionError)."""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from histtrim import ChatMessage, estimate_history_tokens, index_turns, message_costs
from histtrim.adapters import trim_records
from histtrim.adapters.anthropic import from_anthropic, trim_anthropic
from histtrim.adapters.formats import detect_format, read_history, sniff_format
from histtrim.adapters.openai import openai_breadcrumb, to_openai
from histtrim.adapters.records import FormatError
from histtrim.adapters.rewrite import trim_history, turn_table, write_history
from histtrim.turn_sizes import turn_stats
from livingspec.strategies import GeneratedHistory, chat_histories

LAYOUTS = st.sampled_from(["jsonl", "array", "body"])


def encode(records: list[Any], layout: str, *, bom: bool = False) -> bytes:
    if layout == "jsonl":
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    elif layout == "array":
        text = json.dumps(records, indent=2, ensure_ascii=False)
    else:
        text = json.dumps({"model": "m", "messages": records}, ensure_ascii=False)
    return (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8")


def decode(data: bytes, layout: str) -> list[Any]:
    text = data.decode("utf-8-sig")
    if layout == "jsonl":
        return [json.loads(line) for line in text.split("\n") if line.strip()]
    document = json.loads(text)
    return document["messages"] if layout == "body" else document


def openai_records(g: GeneratedHistory[ChatMessage]) -> list[dict[str, Any]] | None:
    try:
        return to_openai(g.rows)
    except ValueError:
        return None  # tool attachments and malformed tool rows have no OpenAI form


# ------------------------------------------------------------------ reading = the library


@given(chat_histories(free_text=True), LAYOUTS, st.booleans())
def test_est_1_columns_equal_the_library_rows_histtrim(
    g: GeneratedHistory[ChatMessage], layout: str, bom: bool
) -> None:
    """EST-1..4, TURN-2..5: a histtrim-rows file prices and indexes exactly as its rows."""
    rows = list(g.rows)
    records = [{"kind": "chat", **row.model_dump(exclude={"kind"})} for row in rows]
    hf = read_history(encode(records, layout, bom=bom))
    assert hf.format == ("histtrim" if rows else "openai")  # nothing to tell them apart
    assert hf.costs == message_costs(rows)
    index = index_turns(rows)
    assert hf.starts() == list(index.starts) and hf.prefix_len == index.prefix_len
    assert turn_table(hf, g.crumb) == turn_stats(rows, crumb_present=g.crumb)
    assert write_history(hf) == encode(records, layout, bom=bom)  # untouched: same bytes


@given(chat_histories(free_text=True, malformed=False), LAYOUTS)
def test_est_1_columns_equal_the_openai_adapter(
    g: GeneratedHistory[ChatMessage], layout: str
) -> None:
    """The fast paths make the very rows `from_openai` makes (a text per record)."""
    records = openai_records(g)
    if records is None:
        return
    hf = read_history(encode(records, layout), "openai")
    from histtrim.adapters.openai import from_openai

    rows = from_openai(records)
    assert [hf.row(i) for i in range(len(hf))] == rows
    assert hf.costs == message_costs(rows)


@settings(max_examples=150)
@given(chat_histories(free_text=True, malformed=False), LAYOUTS, st.integers(0, 4),
       st.integers(0, 3000), st.sampled_from(["turns", "budget", "both"]))
def test_keep_1_file_trims_equal_the_adapter_trims(
    g: GeneratedHistory[ChatMessage], layout: str, max_turns: int, budget: int, which: str
) -> None:
    """KEEP-1..3, SEEN-1..2: the turn limit then the budget, on the columns, keep the
    records and report the events `trim_records` does; the output is the same format."""
    records = openai_records(g)
    if records is None:
        return
    data = encode(records, layout)
    hf = read_history(data, "openai")
    limits = {"turns": (max_turns, None), "budget": (None, budget), "both": (max_turns, budget)}
    turns, tokens = limits[which]
    got = trim_history(hf, max_turns=turns, budget_tokens=tokens, crumb_present=g.crumb)

    from histtrim.adapters.openai import from_openai

    expected, rows, crumb, events = records, from_openai(records), g.crumb, []
    for step in ({"max_turns": turns}, {"budget_tokens": tokens}):
        if next(iter(step.values())) is None:
            continue
        result = trim_records(expected, rows, crumb_present=crumb,
                              breadcrumb_record=openai_breadcrumb(),
                              budget_in_force=tokens or 0, **step)  # type: ignore[arg-type]
        expected, rows, crumb = result.records, result.rows, result.crumb_present
        if result.event is not None:
            events.append(result.event)
    assert got.events == events
    assert got.crumb_present == crumb
    out = write_history(hf, got)
    assert decode(out, layout) == expected
    if not events:
        assert out == data
    assert read_history(out).format in ("openai", "histtrim")
    if got.trimmed:
        assert got.tokens_after == estimate_history_tokens(rows)


def test_anthropic_body_reads_trims_and_writes_back() -> None:
    """An Anthropic body: detected, its system is row 0, the trim equals `trim_anthropic`."""
    body = {"model": "claude", "system": "be brief", "messages": [
        {"role": "user", "content": "a" * 300},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n",
                                           "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                                      "content": "r" * 300}]},
        {"role": "user", "content": "now"},
    ]}
    hf = read_history(json.dumps(body).encode())
    assert (hf.format, hf.layout, hf.system_rows) == ("anthropic", "body", 1)
    assert hf.costs == message_costs(from_anthropic(body).rows)
    trimmed = trim_history(hf, budget_tokens=40)
    expected, result = trim_anthropic(body, budget_tokens=40)
    assert json.loads(write_history(hf, trimmed)) == expected
    assert trimmed.events == [result.event]


# ------------------------------------------------------------------ detection


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ([{"role": "user", "content": "hi"}], "openai"),
        ([{"kind": "chat", "role": "user", "content": "hi"}], "histtrim"),
        ([{"role": "tool", "tool_call_id": "c", "content": "x"}], "openai"),
        ([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}],
         "openai"),
        ([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]}],
         "anthropic"),
        ({"system": "s", "messages": []}, "anthropic"),
        ({"model": "m", "messages": [{"role": "developer", "content": "x"}]}, "openai"),
    ],
)
def test_detect_format(document: Any, expected: str) -> None:
    assert detect_format(document) == expected
    data = json.dumps(document).encode()
    assert read_history(data).format == expected


def test_format_overrides_detection_and_pretty_bodies_read() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    hf = read_history(json.dumps(body, indent=2).encode(), "anthropic")
    assert (hf.format, hf.layout, len(hf)) == ("anthropic", "body", 1)


def test_jsonl_splits_on_newline_only_and_keeps_bytes() -> None:
    """U+2028 inside a string is not a line break; kept lines come back byte for byte."""
    lines = ['{"role":"user","content":"a\u2028b"}', '{"role": "assistant",  "content":"x"}',
             '{"role":"user","content":"' + "q" * 400 + '"}', '{"role":"user","content":"z"}']
    data = ("\n".join(lines) + "\n").encode()
    hf = read_history(data)
    assert len(hf) == 4
    out = write_history(hf, trim_history(hf, max_turns=1, breadcrumb=False))
    assert out == (lines[3] + "\n").encode()


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"role":"user","content":"a"}\n' + b"[" * 100_000 + b"\n", "line 2: invalid JSON"),
        (b'{"role":"user","content":"a"}\n{"role":"user","content":' + b"9" * 5000 + b"}\n",
         "line 2: invalid JSON"),
        (b'{"role":"user","content":"a"}\n\n{"role":"user","content":"\\ud800"}\n',
         "line 3: invalid JSON: a \\u escape that is not a character (lone surrogate?)"),
        (b'{"role":"user","content":"a"}\n{"role":"robot","content":"a"}\n',
         "line 2 field role"),
        (b'{"role":"user","content":"a"}\n{"role":"user","content":7}\n',
         "line 2 field content"),
        (b"[" * 100_000, "line 1: invalid JSON: recursion limit exceeded"),
        (b'{"role":"user","content":"a"}\n{"role":"user", "content": "b"\n', "line 2"),
        (b'{"messages": 3}', "field messages"),
    ],
)
def test_bad_input_names_the_line_and_field(data: bytes, message: str) -> None:
    with pytest.raises(FormatError) as raised:
        read_history(data)
    assert str(raised.value).startswith(message)


def test_bad_anthropic_block_names_the_record_field() -> None:
    body = {"system": "s", "messages": [{"role": "user", "content": [{"type": "text"}]}]}
    with pytest.raises(FormatError, match=r"^record 0 field content\[0\]\.text: "):
        read_history(json.dumps(body).encode())


def test_structured_items_are_named() -> None:
    item = {"kind": "tool_results", "results": [{"tool_call_id": "c", "content": "x"}]}
    with pytest.raises(FormatError, match=r"^line 1 field kind: a structured tool_results"):
        read_history(json.dumps(item).encode())


def test_detection_looks_at_every_record_not_text() -> None:
    """`kind` on any record makes a histtrim file; the same word in a message's text does not;
    an Anthropic block late in a JSON Lines file is found."""
    rows = [{"role": "system", "content": "s"}, {"role": "user", "content": "a"},
            {"kind": "chat", "role": "assistant", "content": "b"}]
    text = [{"role": "user", "content": '"kind": "chat" and "tool_use"'}]
    late = [*text, {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t", "name": "n", "input": {}}]}]
    for layout in ("jsonl", "array"):
        assert read_history(encode(rows, layout)).format == "histtrim"
        assert read_history(encode(text, layout)).format == "openai"
        assert read_history(encode(late, layout)).format == "anthropic"


def _escaped(data: bytes) -> bytes:
    """Every key and block type that tells a format apart, written with a JSON `\\u` escape
    (the same document to any JSON reader)."""
    for word in (b"kind", b"tool_use", b"tool_result", b"image"):
        data = data.replace(b'"' + word + b'"', b'"' + word[:-1] + b"\\u%04x" % word[-1] + b'"')
    return data


@pytest.mark.parametrize("layout", ["jsonl", "array", "body", "lines"])
def test_an_escaped_key_or_block_type_is_decoded_not_grepped(layout: str) -> None:
    """Issue 38 item 13: `"tool_\\u0075se"` is `"tool_use"` to JSON, but detection searched
    the bytes: a valid Anthropic file was read as OpenAI and refused (exit 2). Records
    that may spell a needle with an escape are decoded, in every layout."""
    anthropic = [{"role": "user", "content": "go"},
                 {"role": "assistant", "content": [
                     {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]},
                 {"role": "user", "content": [
                     {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}]
    histtrim_rows = [{"role": "user", "content": "a"},
                     {"kind": "chat", "role": "assistant", "content": "b"}]
    plain_escapes = [{"role": "user", "content": "caf\u00e9 <b> \u2028"},
                     {"role": "assistant", "content": "\\u0075 is not an escape here"}]
    for records, expected in ((anthropic, "anthropic"), (histtrim_rows, "histtrim"),
                              (plain_escapes, "openai")):
        if layout == "lines":  # an array of one record a line
            data = b"[\n" + b",\n".join(json.dumps(r).encode() for r in records) + b"\n]\n"
        else:
            data = encode(records, layout)
        hidden = _escaped(data)
        assert decode(hidden, "array" if layout == "lines" else layout) == records
        assert hidden != data or expected == "openai"
        assert sniff_format(hidden) == expected, (layout, expected)
        assert read_history(hidden).format == expected, (layout, expected)


def test_an_array_file_is_read_and_written_in_memory_near_its_size() -> None:
    """Issue 20: an array-layout file took ~23x its size in memory (every record held as
    objects); it is now scanned one record at a time, like JSON Lines: the traced peak of
    reading, trimming and writing it back stays under 4x the file."""
    rows = [{"role": "system", "content": "You are careful."}]
    for n in range(10_000):
        rows.append({"role": "user", "content": f"question {n} about the build"})
        rows.append({"role": "assistant", "content": f"answer {n}: the config lacks a key"})
    data = json.dumps(rows, indent=1).encode()
    tracemalloc.start()
    try:
        history = read_history(data)
        result = trim_history(history, budget_tokens=sum(history.costs) // 2)
        out = write_history(history, result)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert history.layout == "array" and result.trimmed
    assert json.loads(out)[1]["content"] == "[earlier turns omitted to fit the context window]"
    assert peak < 4 * len(data)


ARRAY_STYLES = {
    "one object per line": lambda records: "[\n" + ",\n".join(map(json.dumps, records)) + "\n]\n",
    "indented by 2": lambda records: json.dumps(records, indent=2) + "\n",
    "indented by 4, CRLF": lambda records: json.dumps(records, indent=4).replace("\n", "\r\n"),
    "on one line": json.dumps,
}


@pytest.mark.parametrize("style", ARRAY_STYLES)
def test_an_array_is_written_back_in_its_own_layout(style: str) -> None:
    """Issue 23: a one-object-per-line array came back re-indented by 2. The kept records
    keep their bytes and the array its opening, separators and closing; the breadcrumb is
    written as the records are."""
    write = ARRAY_STYLES[style]
    records = [{"role": "system", "content": "Be brief."}]
    for n in range(3):
        records += [{"role": "user", "content": f"question {n} é"},
                    {"role": "assistant", "content": f"answer {n}"}]
    history = read_history(write(records).encode())
    result = trim_history(history, max_turns=1)
    assert history.layout == "array" and result.crumb_inserted
    kept = [records[0], openai_breadcrumb(), *records[-2:]]
    assert write_history(history, result).decode() == write(kept)


ENVELOPE_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                max_size=3),
    max_leaves=8,
)


@settings(max_examples=300)
@given(st.dictionaries(st.sampled_from(["tool_call_id", "content", "tool_calls", "x"]),
                       ENVELOPE_VALUES | st.lists(st.dictionaries(
                           st.sampled_from(["id", "name", "arguments"]), ENVELOPE_VALUES))),
       st.sampled_from(["", " ", "\n\t"]))
def test_issue_32_an_envelopes_link_is_the_one_the_envelope_parser_reads(
    envelope: dict[str, Any], space: str
) -> None:
    """Issue 32: a row's pairing link, read in Rust when its envelope holds only strings,
    is the one `carriers.json_object` reads (numbers, constants, nesting included)."""
    from histtrim.adapters.records import text_link
    from histtrim.carriers import answered_id, dispatched_ids

    for text in (space + json.dumps(envelope) + space, json.dumps(envelope, indent=1)):
        assert text_link("tool", text) == answered_id(text)
        assert text_link("assistant", text) == dispatched_ids(text)


@pytest.mark.parametrize("text", [
    '{"tool_call_id": "a\\ud800", "tool_calls": [{"id": "a\\udc00"}]}',
    '{"tool_call_id": "a", "tool_calls": [{"id": "b"}], "n": NaN}',
    '{"tool_call_id": "a", "tool_calls": [{"id": "b"}], "n": 1e400}',
    '{"tool_call_id": "a", "tool_calls": [{"id": "b"}], "n": ' + "[" * 130 + "]" * 130 + "}",
    '{"tool_call_id": "a", "tool_call_id": 5, "tool_calls": [{"id": "b"}, {"id": "b"}]}',
    '{"tool_call_id": "a", "tool_calls": [{"id": "b"}]} x',
    '\ufeff{"tool_call_id": "a", "tool_calls": [{"id": "b"}]}',
])
def test_issue_32_a_hostile_envelope_is_read_by_the_envelope_parser(text: str) -> None:
    from histtrim.adapters.records import text_link
    from histtrim.carriers import answered_id, dispatched_ids

    assert text_link("tool", text) == answered_id(text)
    assert text_link("assistant", text) == dispatched_ids(text)
