"""Where histtrim deliberately differs from the reference runtime, vector by vector.

Each difference docs/decisions.md records is applied to histtrim the way the reference does
it, and every vector is answered again: a vector whose answer changes is one a port of the
reference fails, by that decision. The README lists them, so an implementer following the
reference knows which failures are expected and why."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

from histtrim import estimate, pairing, safety
from histtrim.agent import tools
from histtrim.conformance.codec import canonical
from histtrim.conformance.compare import judge_result
from histtrim.conformance.reference import evaluate
from histtrim.messages import ChatMessage
from histtrim.policy import SPEC, Policy


@contextlib.contextmanager
def _sweep_stops_after_pass_2() -> Iterator[None]:
    """The reference's sweep: strip, pass 1, pass 2, and no extra step."""
    with mock.patch.object(pairing, "_strip_unanswered", lambda *_: None):
        yield


@contextlib.contextmanager
def _tool_rows_priced_as_text() -> Iterator[None]:
    """The reference prices a current tool result by its whole row, declared images or not."""
    split = estimate._image_sizes

    def as_text(message: ChatMessage, *, current_turn: bool) -> Any:
        return None if message.role == "tool" else split(message, current_turn=current_turn)

    with mock.patch.object(estimate, "_image_sizes", as_text):
        yield


def _reference_cap(content: str, max_chars: int | None = None, *,
                   policy: Policy = SPEC) -> str:
    """The reference's cap: the whole cap kept (2/3 head, 1/3 tail) and the marker added."""
    limit = policy.max_tool_result_chars if max_chars is None else max_chars
    if limit == 0 or len(content) <= limit:
        return content
    head = limit * 2 // 3
    return (f"{content[:head]}\n\n[... {len(content) - limit} characters truncated ...]\n\n"
            f"{content[len(content) - (limit - head):]}")


@contextlib.contextmanager
def _cap_keeps_the_whole_cap() -> Iterator[None]:
    with mock.patch.object(safety, "cap_tool_result", _reference_cap), \
            mock.patch.object(tools, "cap_tool_result", _reference_cap):
        yield


DEVIATIONS: dict[str, tuple[str, Callable[[], contextlib.AbstractContextManager[None]]]] = {
    "The orphan-sweep pairing": ("histtrim's extra step after pass 2",
                                 _sweep_stops_after_pass_2),
    "Declared attachments of tool results": (
        "a current tool result's declared images priced as images, its text as text",
        _tool_rows_priced_as_text),
    "The tool-result cap": ("a capped result never longer than the result",
                            _cap_keeps_the_whole_cap),
}
"""Decision heading in docs/decisions.md -> (what histtrim does, the reference's way)."""

CRUMB_FLAG = "The breadcrumb owner flag"
_FLAGS = ("crumb_present", "has_leading_breadcrumb")


def _refused_only_for_the_flag(vector: dict[str, Any]) -> bool:
    """An `invalid_input` vector that is answered once its crumb flag is cleared: the
    reference, which does not check the flag, trims there."""
    arguments = vector["arguments"]
    flags = [f for f in _FLAGS if arguments.get(f) is True]
    if vector["expected"] != {"error": {"kind": "invalid_input"}} or not flags:
        return False
    cleared = {**arguments, **dict.fromkeys(flags, False)}
    return "result" in evaluate(vector["function"], vector["history"], cleared)


def _as_sent(value: Any) -> Any:
    """A value as it travels the protocol: JSON (tuples become arrays)."""
    return json.loads(canonical(value))


def _changed(vector: dict[str, Any]) -> bool:
    answer = _as_sent(evaluate(vector["function"], vector["history"], vector["arguments"]))
    expected = _as_sent(vector["expected"])
    if "result" in expected and "result" in answer:
        return not judge_result(vector["function"], expected["result"], answer["result"])
    return bool(answer != expected)


def deviations(vectors: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Decision heading -> the ids of the vectors whose answer it decides."""
    found: dict[str, list[str]] = {}
    for heading, (_, apply) in DEVIATIONS.items():
        with apply():
            found[heading] = sorted(v["id"] for v in vectors if _changed(v))
    found[CRUMB_FLAG] = sorted(v["id"] for v in vectors if _refused_only_for_the_flag(v))
    return found


def deviation_lines(found: dict[str, list[str]]) -> list[str]:
    """The README section listing them."""
    lines = [
        "## Where histtrim differs from the reference runtime",
        "",
        "histtrim follows the reference runtime (zeroclaw) except where docs/decisions.md",
        "records a deliberate difference, with its reason and a worked example. The vectors",
        "each difference decides are below, found by answering every vector again with that",
        "one rule done the reference's way: a port of the reference fails exactly these.",
        "",
    ]
    for heading, ids in found.items():
        what = DEVIATIONS[heading][0] if heading in DEVIATIONS else (
            "a crumb flag naming no user row is invalid_input (the reference trims)")
        lines += [f"- Decision \"{heading}\" ({what}): {len(ids)} vectors"
                  + (":" if ids else "."), *(f"  `{i}`" for i in ids)]
    return [*lines, ""]
