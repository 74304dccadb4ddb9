"""Rebuild the review corpus `examples/sessions/` (deterministic): `python tools/build_sessions.py`.

Each kind is written in a format the CLI reads: histtrim provider-facing rows (JSON Lines:
the coding agent, the first research agent), an Anthropic request body (the second research
agent), histtrim structured items (JSON array: the support chat) and an OpenAI object whose
`crumb_present` / `restored_turns` describe a restored session, and a coding agent of 300 short
turns (histtrim rows) for the prompt-cache review. The research agents' browser
tool declares screenshots, which chat-completions messages cannot carry."""

from __future__ import annotations

import json
from pathlib import Path

from histtrim import to_chat_messages
from histtrim.adapters.anthropic import to_anthropic
from histtrim.adapters.openai import to_openai
from livingspec.synth import generate, generate_long

HERE = Path(__file__).resolve().parent.parent / "examples" / "sessions"


def _write(name: str, document: object) -> None:
    text = (
        "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in document)
        if name.endswith(".jsonl")
        else json.dumps(document, indent=1, ensure_ascii=False) + "\n"
    )
    (HERE / name).write_text(text, encoding="utf-8")


def main() -> None:
    for seed in (1, 2):
        coding = to_chat_messages(generate("coding", seed, 24 + 4 * seed))
        _write(f"coding-agent-{seed}.jsonl", [row.model_dump(mode="json") for row in coding])
        # Tool images have no chat-completions form: histtrim rows, then an Anthropic body.
        research = to_chat_messages(generate("research", seed, 18 + 4 * seed))
        if seed == 1:
            _write("research-agent-1.jsonl", [row.model_dump(mode="json") for row in research])
        else:
            _write("research-agent-2.json", to_anthropic(research))
        support = generate("support", seed, 32 + 4 * seed)
        _write(f"support-chat-{seed}.json", [item.model_dump(mode="json") for item in support])
        restored = to_chat_messages(generate("restored", seed, 20 + 2 * seed))
        _write(
            f"restored-session-{seed}.json",
            {"crumb_present": True, "restored_turns": 8, "messages": to_openai(restored)},
        )
    # Hundreds of short turns: meets a budget early, then trims on nearly every call (the
    # prompt-cache review). Named to sort last, after the eight sessions above.
    long = to_chat_messages(generate_long(1, 300))
    _write("very-long-coding-agent.jsonl", [row.model_dump(mode="json") for row in long])


if __name__ == "__main__":
    main()
