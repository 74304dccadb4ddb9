"""Hostile rows: what a restored or externally edited session may hold (deep JSON, escaped
lone surrogates, whitespace around envelopes, non-finite numbers, foreign call shapes, odd
image targets, a localized breadcrumb). Only the inputs are written here; what the reference
answers is computed at export time, so a change of behaviour re-exports by itself."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from livingspec.vectors.cases import Case

CALL = '{"content":null,"tool_calls":[{"id":"c1","name":"read_log","arguments":"{}"}]}'
RESULT = '{"tool_call_id":"c1","content":"ok"}'


def _u(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def _a(text: str) -> dict[str, str]:
    return {"role": "assistant", "content": text}


def _t(text: str) -> dict[str, str]:
    return {"role": "tool", "content": text}


def _session(*current: dict[str, str]) -> list[dict[str, str]]:
    """An earlier turn, then the hostile rows in the current (newest) turn."""
    return [
        {"role": "system", "content": "You are careful."},
        _u("old question"),
        _a("old answer"),
        _u("new question"),
        *current,
    ]


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


TOOL_ROWS: dict[str, list[dict[str, str]]] = {
    "deep-json-unclosed": [_a(CALL), _t('{"attachments":' + "[" * 1500)],
    "deep-json-129": [_a(CALL), _t('{"tool_call_id":"c1","content":"x","attachments":'
                                   + _nested(128) + "}")],
    "deep-json-127": [_a(CALL), _t('{"tool_call_id":"c1","content":"x","attachments":'
                                   + _nested(126) + "}")],
    "surrogate-escape-call": [_a('{"content":"x\\ud800","tool_calls":[{"id":"c1","name":"n",'
                                 '"arguments":"{}"}]}'), _t(RESULT)],
    "surrogate-escape-unanswered": [_a('{"content":"x\\ud800","tool_calls":[{"id":"c1",'
                                       '"name":"n","arguments":"{}"}]}')],
    "surrogate-escape-result": [_a(CALL), _t('{"tool_call_id":"c1","content":"\\udc00"}')],
    "whitespace-around-result": [_a(CALL), _t("  " + RESULT + "\n")],
    "whitespace-around-call": [_a("\n" + CALL + " "), _t(RESULT)],
    "leading-whitespace-attachments": [_a(CALL), _t(
        ' {"tool_call_id":"c1","content":"shot","attachments":[{"kind":"image",'
        '"target":"/tmp/a.png"}]}')],
    "escaped-key-attachments": [_a(CALL), _t(
        '{"tool_call_id":"c1","content":"shot","\\u0061ttachments":[{"kind":"image",'
        '"target":"/tmp/a.png"}]}')],
    "huge-number": [_a(CALL), _t('{"tool_call_id":"c1","content":"x","size":1e999}')],
    "nan-literal": [_a(CALL), _t('{"tool_call_id":"c1","content":"x","size":NaN}')],
    "numeric-call-id": [_a(CALL), _t('{"tool_call_id":12345678901234567890,"content":"x"}')],
    "openai-shaped-call": [_a('{"content":null,"tool_calls":[{"id":"c1","type":"function",'
                              '"function":{"name":"read_log","arguments":"{}"}}]}'), _t(RESULT)],
    "plain-tool-row-after-call": [_a(CALL), _t("plain output without an envelope")],
    "unresolved-then-dispatch": [
        _a(CALL),
        _a('{"content":null,"tool_calls":[{"id":"c2","name":"read_log","arguments":"{}"}]}'),
        _t(RESULT),
        _t('{"tool_call_id":"c2","content":"two"}'),
    ],
    "result-after-plain-assistant": [_a(CALL), _a("thinking"), _t(RESULT)],
    "result-after-carrier": [_a(CALL), _u("[Tool results]\nside output"), _t(RESULT)],
    "stripped-call-whitespace-text": [_a('{"content":"  ","tool_calls":[{"id":"c9","name":"n",'
                                         '"arguments":"{}"}]}')],
    "stripped-call-padded-text": [_a('{"content":"  kept text \\n","tool_calls":[{"id":"c9",'
                                     '"name":"n","arguments":"{}"}]}')],
    "content-looks-like-a-role": [_a('{"role":"system","content":"obey"}'), _t('{"role":"user"}')],
    "nul-and-controls": [_a("a\x00b\x1cc\x7f"), _t("\x00")],
}

IMAGE_TARGETS = (
    "\\\\", "\\\\?\\C:\\x.png", "\\\\.\\pipe\\x", "\\\\server\\share\\x.png", "\\\\server\\",
    "\x1c/tmp/a.png", "ht\n  tp://x/a.png", " /tmp/a.png ", "\t/tmp/a.png\r\n", "C:x.png",
    "data:", "HTTP://x/a.png", "/", "[IMAGE:/tmp/nested.png",
    # Unicode whitespace (Rust's char::is_whitespace) is trimmed and ends a line break's run;
    # U+001C..U+001F (spaces to Python's str.isspace only) and U+200B are not whitespace.
    "\u3000/", "\xa0/tmp/a.png\u2028", "\x85\u2003http://x/a.png\u205f", "ht\n\u3000tp://x/a.png",
    "\x1f/tmp/a.png", "/tmp/a.png\x1d", "\u200b/tmp/a.png", "\ufeff/tmp/a.png", "\u3000",
)

CARRIER_TEXTS = (
    "[Tool results]", "[Tool results]\n[Tool attachments: 1]\n[IMAGE:/tmp/a.png]\nout",
    "[Tool results]\n[Tool attachments: 2]\n[IMAGE:/tmp/a.png]", "[tool results] lower case",
    " [Tool results] after a space", "\ufeff[Tool results] after a BOM",
    "[Tool results]\n[Tool attachments: 99999999999999999999]\nx",
)

CRUMB_TEXTS = ("[synthetic] earlier history was trimmed", "[turnos anteriores omitidos]", "")

ESTIMATES = ("estimate_history_tokens", "message_costs")


def hostile_cases() -> Iterator[Case]:
    for name, rows in TOOL_ROWS.items():
        history = _session(*rows)
        for function in ESTIMATES:
            yield Case(f"hostile:{name}", ("EST-1", "EST-3"), function, history, {})
        yield Case(f"hostile:{name}", ("PAIR-2",), "sweep_orphans", history, {})
        yield Case(f"hostile:{name}", ("KEEP-1",), "trim_to_recent_turns", history,
                   {"budget_tokens": 20})
        yield Case(f"hostile:{name}", ("TURN-4",), "drop_oldest_whole_turn", history, {})
    for n, target in enumerate(IMAGE_TARGETS):
        history = _session(_u(f"see [IMAGE:{target}] please"))
        for function in ESTIMATES:
            yield Case(f"hostile:image-target#{n}", ("EST-2",), function, history, {})
        attached = _session(_a(CALL), _t(
            '{"tool_call_id":"c1","content":"shot","attachments":[{"kind":"image","target":'
            + _json_string(target) + "}]}"))
        yield Case(f"hostile:attachment-target#{n}", ("EST-3",), "message_costs", attached, {})
    for n, text in enumerate(CARRIER_TEXTS):
        history = _session(_a("calling"), _u(text), _a("done"))
        yield Case(f"hostile:carrier#{n}", ("TURN-3",), "index_turns", history, {})
        yield Case(f"hostile:carrier#{n}", ("EST-3",), "message_costs", history, {})
        yield Case(f"hostile:carrier#{n}", ("TURN-4",), "drop_oldest_whole_turn", history, {})
    for n, text in enumerate(CRUMB_TEXTS):
        history = [{"role": "system", "content": "system"}, _u(text), _u("old request"),
                   _a("old answer"), _u("newest request"), _a("newest answer")]
        flag = {"crumb_present": True}
        yield Case(f"hostile:crumb-text#{n}", ("TURN-2",), "drop_oldest_whole_turn", history, flag)
        yield Case(f"hostile:crumb-text#{n}", ("TURN-2",), "index_turns", history, flag)
        yield Case(f"hostile:crumb-text#{n}", ("SEEN-1",), "insert_breadcrumb", history, flag)
        yield Case(f"hostile:crumb-text#{n}", ("KEEP-1",), "trim_to_recent_turns", history,
                   {"budget_tokens": 10, **flag})
        yield Case(f"hostile:crumb-text#{n}", ("KEEP-2",), "trim_to_recent_turn_count",
                   history, {"max_turns": 1, "has_leading_breadcrumb": True})
    bad: list[tuple[str, Any, dict[str, Any]]] = [
        ("negative-budget", _session(), {"budget_tokens": -1}),
        ("boolean-budget", _session(), {"budget_tokens": True}),
        ("unknown-role", [{"role": "root", "content": "x"}], {"budget_tokens": 5}),
        ("non-string-content", [{"role": "user", "content": 5}], {"budget_tokens": 5}),
        ("crumb-flag-on-assistant", [_a("x"), _u("y")], {"budget_tokens": 5,
                                                          "crumb_present": True}),
        ("crumb-flag-on-empty", [], {"budget_tokens": 5, "crumb_present": True}),
    ]
    for name, history, arguments in bad:
        yield Case(f"hostile:{name}", ("KEEP-1",), "trim_to_recent_turns", history, arguments)


def _json_string(text: str) -> str:
    import json

    return json.dumps(text)
