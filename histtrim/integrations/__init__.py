"""histtrim inside agent frameworks: one object puts the spec's whole-turn trimming (turn limit,
token budget, breadcrumb, `HistoryTrimmed`, the reactive 2/3 retry) into an agent.

- `histtrim.integrations.langchain`: `HisttrimMiddleware` for `create_agent(middleware=[...])`
  (extra `langchain`).
- `histtrim.integrations.pydantic_ai`: `HisttrimCapability` for `Agent(capabilities=[...])`
  (extra `pydantic-ai`).
- `histtrim.integrations.openai_agents`: `HisttrimInputFilter`, `HisttrimSession` and
  `run_with_histtrim` for the OpenAI Agents SDK (extra `openai-agents`).

Each module imports its framework; importing `histtrim` or this package imports none."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def framework_imports(extra: str) -> Iterator[None]:
    """Around an integration's imports of its framework: a missing module is reported with
    the extra that installs it, as histtrim's other optional features report theirs."""
    try:
        yield
    except ModuleNotFoundError as error:
        raise ModuleNotFoundError(
            f"histtrim's {extra} integration needs {error.name or 'its framework'}, which is "
            f"not installed: pip install 'histtrim[{extra}]'",
            name=error.name,
        ) from None
