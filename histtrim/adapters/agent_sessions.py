"""Agents' own session files (Claude Code, Codex CLI, Gemini CLI, Pi, OpenHands): what every
reader yields, and which reader a file's content calls for.

A reader turns one file into conversations written as provider records (Anthropic messages
or OpenAI chat messages, the formats `adapters.formats` already reads), each provider call
it records as one normalized `RecordedCall`, and a count of what it skipped. It never raises
on a row it does not know or cannot parse: it counts it."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

AgentFormat = Literal["claude-code", "codex", "gemini-cli", "pi", "openhands"]
"""The session formats read, each by the module `adapters.<format with _ for ->`."""

PartKind = Literal[
    "session", "after-clear", "after-compaction", "after-rewind", "side-agent"
]


class RecordedCall(BaseModel):
    """One provider call as the agent recorded it, duplicates removed, in tokens the
    provider counted. `input_tokens` is the whole input, cache included, whatever the
    format's convention (Anthropic's `input + cache_read + cache_creation`, OpenAI's
    `prompt_tokens`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    record: int = Field(ge=0)
    """Index, in the part's `records`, of the assistant record this call answered with."""
    input_tokens: int = Field(ge=0)
    cache_read_tokens: int = Field(ge=0)
    cache_write_tokens: int = Field(ge=0)
    cache_write_5m_tokens: int | None = Field(default=None, ge=0)
    cache_write_1h_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int = Field(ge=0)
    model: str | None = None
    timestamp: float | None = None
    """Seconds since the Unix epoch (UTC) when the file records it, else None."""


class SessionPart(BaseModel):
    """One context of a session file: the whole session, what follows a `/clear` or a
    compaction, or a side agent's transcript."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    kind: PartKind
    provider_format: Literal["anthropic", "openai"]
    records: tuple[dict[str, object], ...]
    calls: tuple[RecordedCall, ...]
    system: str | None = None
    """The system prompt when the file records it (most agents leave it out)."""


class SessionRead(BaseModel):
    """What a reader made of one file."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent: AgentFormat
    parts: tuple[SessionPart, ...]
    skipped: dict[str, int] = Field(default_factory=dict)
    """Rows left out, by kind: a row type the reader does not know, a garbled or truncated
    line (`garbled`), a row that is not part of the request (`meta`, `command`...)."""
    unpaired: int = 0
    """Tool calls with no result, or results with no call, the reader had to report."""


Reader = Callable[[bytes, str], SessionRead]
"""`read(data, name)`: one file's bytes and the name its parts are named after."""


def reader(agent: AgentFormat) -> Reader:
    """The reader of one format (imported when first asked for)."""
    module = import_module(f"histtrim.adapters.{agent.replace('-', '_')}")
    read: Reader = module.read_session
    return read


AGENTS: tuple[AgentFormat, ...] = ("claude-code", "codex", "gemini-cli", "pi", "openhands")

SNIFF_BYTES = 1 << 16
"""How much of a file's start `detect` reads: a format is told from its first records."""


def detect(data: bytes) -> AgentFormat | None:
    """The agent format a file's first `SNIFF_BYTES` show, or None (a plain history file).
    Each format's module answers with `sniff(head: bytes) -> bool`, bounded by its input."""
    head = data[:SNIFF_BYTES]
    for agent in AGENTS:
        module = import_module(f"histtrim.adapters.{agent.replace('-', '_')}")
        if module.sniff(head):
            return agent
    return None
