"""histtrim inside agent frameworks: one object puts the spec's whole-turn trimming (turn limit,
token budget, breadcrumb, `HistoryTrimmed`, the reactive 2/3 retry) into an agent.

- `histtrim.integrations.langchain`: `HisttrimMiddleware` for `create_agent(middleware=[...])`
  (extra `langchain`).
- `histtrim.integrations.pydantic_ai`: `HisttrimCapability` for `Agent(capabilities=[...])`
  (extra `pydantic-ai`).
- `histtrim.integrations.openai_agents`: `HisttrimInputFilter`, `HisttrimSession` and
  `run_with_histtrim` for the OpenAI Agents SDK (extra `openai-agents`).

Each module imports its framework; importing `histtrim` or this package imports none."""
