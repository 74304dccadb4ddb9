"""The calibration corpus: SAMPLES_PER_CLASS texts per content class, and whole sessions.

Everything is generated from fixed string seeds (`random.Random(str)` is the same on every
platform and run), so the saved measurements can be re-computed and compared exactly."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

from histtrim.adapters.openai import from_openai
from histtrim.carriers import to_chat_messages
from histtrim.messages import ChatMessage
from livingspec.calibration import machine, prose
from livingspec.examples import (
    agent_session,
    session_ending_with_oversized_turn,
    session_with_late_system,
    structured_session,
)

SEED = "histtrim-calibration-1"
SAMPLES_PER_CLASS = 120
GENERATED_SESSIONS = 120

CLASSES: dict[str, Callable[[random.Random], str]] = {
    "English prose": prose.english,
    "Spanish prose": prose.spanish,
    "source code": machine.source_code,
    "JSON tool results": machine.json_result,
    "shell/log output": machine.shell_output,
    "CJK text": prose.cjk,
    "emoji-heavy chat": prose.emoji_chat,
    "base64 blobs": machine.base64_blob,
}
"""Content class -> generator of one sample. The order is the order of every table."""

EXAMPLE_SESSION_FILES = ("examples/coding_session.json",)
"""Session files of the repository measured as they are (paths from the project root)."""


def samples(content_class: str) -> list[str]:
    """The class's samples, the same on every run."""
    make = CLASSES[content_class]
    rng = random.Random(f"{SEED}:{content_class}")
    return [make(rng) for _ in range(SAMPLES_PER_CLASS)]


_PROFILES: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    # (name, what the user writes, what the tools return)
    ("coding", ("English prose",), ("source code", "shell/log output", "JSON tool results")),
    ("data", ("English prose", "Spanish prose"), ("JSON tool results",)),
    ("multilingual", ("Spanish prose", "CJK text", "emoji-heavy chat"), ("JSON tool results",)),
    ("attachments", ("English prose",), ("base64 blobs", "JSON tool results")),
)


def generated_session(number: int) -> tuple[str, list[ChatMessage]]:
    """An agent session of 2..12 turns mixing the classes by a profile: a user message, tool
    calls with JSON arguments, their results, and an answer with prose and sometimes code."""
    name, user_classes, tool_classes = _PROFILES[number % len(_PROFILES)]
    rng = random.Random(f"{SEED}:session:{number}")
    rows = [ChatMessage.system(
        "You are a coding agent for a small web shop. Use the tools, then answer briefly."
    )]
    for turn in range(rng.randint(2, 12)):
        rows.append(ChatMessage.user(CLASSES[rng.choice(user_classes)](rng)))
        for round_ in range(rng.randint(0, 3)):
            call_id = f"call_{number}_{turn}_{round_}"
            tool = rng.choice(("run", "read_file", "search", "http_get"))
            arguments = {"path": rng.choice(machine.FILES)}
            rows.append(ChatMessage.assistant_tool_calls(
                None, [{"id": call_id, "name": tool, "arguments": arguments}]
            ))
            rows.append(ChatMessage.tool_result(call_id, CLASSES[rng.choice(tool_classes)](rng)))
        answer = prose.english(rng) if "English prose" in user_classes else prose.spanish(rng)
        if rng.random() < 0.4:
            answer += "\n\n```python\n" + machine.source_code(rng) + "\n```"
        rows.append(ChatMessage.assistant(answer))
    return f"generated {number:03d} ({name})", rows


def sessions(root: Path | str = ".") -> list[tuple[str, list[ChatMessage]]]:
    """Whole sessions: the repository's example files, the library's example sessions, and
    GENERATED_SESSIONS generated ones. `root` is the project root (for the files)."""
    out: list[tuple[str, list[ChatMessage]]] = []
    for relative in EXAMPLE_SESSION_FILES:
        records = json.loads((Path(root) / relative).read_text(encoding="utf-8"))
        out.append((relative, from_openai(records)))
    out += [
        ("livingspec.examples.agent_session", agent_session()),
        ("livingspec.examples.session_with_late_system", session_with_late_system()),
        ("livingspec.examples.structured_session", to_chat_messages(structured_session())),
        (
            "livingspec.examples.session_ending_with_oversized_turn",
            session_ending_with_oversized_turn(),
        ),
    ]
    out += [generated_session(number) for number in range(GENERATED_SESSIONS)]
    return out
