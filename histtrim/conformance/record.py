"""Collect the worked examples of the notebooks: run each notebook's code cells in order with
histtrim's public functions wrapped, so every call a chapter makes is recorded as a protocol
call, under the rule IDs its nearest heading cites (nothing is copied by hand)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import histtrim
from histtrim import runtime as runtime_module

from ..providers import ScriptedProvider
from ..route import ResolvedRuntime
from ..runtime import Agent, Tool
from ..safety import DEFAULT_MAX_TOOL_RESULT_CHARS
from ..specindex import RULE_ID
from .codec import is_json_value, row_json, rows_json
from .scenario import step_json

SKIPPED_NOTEBOOKS = {
    "00_index.ipynb": "the chapter index: it calls no history function",
    "09_performance.ipynb": "timings on generated histories of thousands of rows, not examples",
    "10_using_histtrim.ipynb": "drives the command line and the OpenAI adapter",
    "12_conformance.ipynb": "runs the kit itself: the calls it shows are the vectors' own",
    "13_formats.ipynb": "drives the LangChain and Anthropic adapters (formats, not rules)",
    "14_design_review.ipynb": "replays whole sessions under other policies: what-if runs, not "
    "the spec's examples",
}
"""Notebooks whose code is not run for vectors, and why; every other chapter is."""


@dataclass(frozen=True)
class RecordedCall:
    """One call a notebook made: where, under which rule IDs, and its protocol form."""

    notebook: str
    cell: int
    heading_rules: tuple[str, ...]
    function: str
    history: list[Any] | None
    arguments: dict[str, Any]


_ROW_JSON: dict[int, tuple[Any, dict[str, Any]]] = {}
"""id(row) -> (row, its JSON): rows are frozen, and a chapter passes the same rows again and
again (a budget sweep), so each is converted once per export (the row is kept alive)."""


def _rows(history: Any) -> list[Any]:
    found = []
    for row in history:
        cached = _ROW_JSON.get(id(row))
        if cached is None or cached[0] is not row:
            cached = _ROW_JSON[id(row)] = (row, row_json(row))
        found.append(cached[1])
    return found


def _runtime(resolved: ResolvedRuntime) -> dict[str, Any]:
    return {
        "profile": resolved.profile.model_dump(mode="json"),
        "provider": None if resolved.provider is None else resolved.provider.model_dump(),
        "selected_model": resolved.model,
    }


def _flag(name: str) -> Callable[..., tuple[Any, dict[str, Any]]]:
    def convert(history: Any, *, _: Any = None, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        return _rows(history), {name: bool(kwargs.get(name, False))}

    return convert


def _limit(name: str, flag: str) -> Callable[..., tuple[Any, dict[str, Any]]]:
    def convert(history: Any, value: Any, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        return _rows(history), {name: value, flag: bool(kwargs.get(flag, False))}

    return convert


def _capacity(messages: Any, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
    return _rows(messages), {
        "runtime": _runtime(kwargs["runtime"]),
        "tool_schemas": [
            s.model_dump() if hasattr(s, "model_dump") else dict(s)
            for s in kwargs.get("tool_schemas", ())
        ],
        "hooks": list(kwargs.get("hooks", ())),
    }


def _resolve(profile: Any, provider: Any, selected_model: Any, **_: Any) -> tuple[Any, Any]:
    return None, {
        "profile": profile.model_dump(mode="json"),
        "provider": None if provider is None else provider.model_dump(),
        "selected_model": selected_model,
    }


def _select(config: Any, agent: str, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
    session = kwargs.get("session_model")
    return None, {
        "config": config.model_dump(mode="json"),
        "agent": agent,
        "hint": kwargs.get("hint"),
        "session_model": session if session is None or isinstance(session, str)
        else session.model_dump(),
    }


CONVERTERS: dict[str, Callable[..., tuple[Any, dict[str, Any]]]] = {
    "estimate_history_tokens": lambda history: (_rows(history), {}),
    "message_costs": lambda history, index=None: (_rows(history), {}),
    "index_turns": _flag("crumb_present"),
    "trim_to_recent_turns": _limit("budget_tokens", "crumb_present"),
    "trim_to_recent_turn_count": _limit("max_turns", "has_leading_breadcrumb"),
    "trim_conversation_to_recent_turns": _limit("max_turns", "has_leading_breadcrumb"),
    "drop_oldest_whole_turn": _flag("crumb_present"),
    "insert_breadcrumb": _flag("crumb_present"),
    "to_chat_messages": lambda history: (_rows(history), {}),
    "resolve_runtime": _resolve,
    "select_route": _select,
    "capacity_report": _capacity,
    "check_request": _capacity,
    "sweep_orphans": _flag("crumb_present"),
    "cap_tool_result": lambda content, max_chars=DEFAULT_MAX_TOOL_RESULT_CHARS: (None, {
        "content": content, "max_chars": max_chars,
    }),
}
"""How a Python call of each public function becomes (history, arguments)."""


class _Session:
    """The recorder of one notebook run: the current cell and heading, and the calls made."""

    def __init__(self, notebook: str) -> None:
        self.notebook = notebook
        self.cell = 0
        self.headings: dict[int, str] = {}
        self.calls: list[RecordedCall] = []
        self.depth = 0

    def heading_rules(self) -> tuple[str, ...]:
        """The rule IDs of the deepest current heading that cites any."""
        for level in sorted(self.headings, reverse=True):
            found = tuple(dict.fromkeys(RULE_ID.findall(self.headings[level])))
            if found:
                return found
        return ()

    def add(self, function: str, history: Any, arguments: dict[str, Any]) -> None:
        if is_json_value(arguments):  # rows always are (their content is checked UTF-8 text)
            self.calls.append(
                RecordedCall(
                    self.notebook, self.cell, self.heading_rules(), function, history, arguments
                )
            )

    @contextlib.contextmanager
    def outermost(self) -> Iterator[bool]:
        """True only for a call made by the notebook itself, not by a wrapped function."""
        self.depth += 1
        try:
            yield self.depth == 1
        finally:
            self.depth -= 1


def _wrap(session: _Session, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    convert = CONVERTERS[name]

    def recorded(*args: Any, **kwargs: Any) -> Any:
        with session.outermost() as outermost:
            if outermost:
                try:
                    history, arguments = convert(*args, **kwargs)
                except (TypeError, KeyError, ValueError, AttributeError):
                    pass  # a call the protocol cannot express (e.g. a generator argument)
                else:
                    session.add(name, history, arguments)
            return original(*args, **kwargs)

    return recorded


class _ToolOutputs:
    """Wraps an agent's tools so the texts they return are recorded in call order."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def wrap(self, tool: Tool) -> Tool:
        def run(**kwargs: Any) -> str:
            try:
                output = tool.fn(**kwargs)
            except Exception as error:
                self.texts.append(f"error: {type(error).__name__}: {error}")
                raise
            text = output if isinstance(output, str) else json.dumps(output, default=str)
            self.texts.append(text)
            return text

        return Tool(run, tool.name, tool.description, tool.parameters)


def _tool_specs(tools: Mapping[str, Tool]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "parameters": dict(t.parameters)}
        for t in tools.values()
    ]


def _script(provider: Any) -> dict[str, Any] | None:
    if not isinstance(provider, ScriptedProvider):
        return None
    return {
        "script": [step_json(step) for step in provider._script],
        "hidden_window": provider.hidden_window,
    }


def _record_turn(session: _Session, original: Callable[..., Any]) -> Callable[..., Any]:
    def turn(agent: Agent, text: str) -> Any:
        script = _script(agent.provider)
        if script is None or session.depth:
            return original(agent, text)
        outputs = _ToolOutputs()
        tools = agent.toolbox.tools
        history = rows_json(agent.history)
        state = {
            "runtime": _runtime(agent.runtime),
            "system_prompt": agent.system_prompt,
            "crumb_present": agent.crumb_present,
            "tools": _tool_specs(tools),
            "turn_id": agent.turn_id,
            "text": text,
            **script,
        }
        agent.toolbox.tools = {name: outputs.wrap(tool) for name, tool in tools.items()}
        try:
            with session.outermost():
                return original(agent, text)
        finally:
            agent.toolbox.tools = tools
            session.add("agent_turn", history, {**state, "tool_outputs": outputs.texts})

    return turn


def _record_legacy(session: _Session, original: Callable[..., Any]) -> Callable[..., Any]:
    def run(provider: Any, history: Any, text: str, **kwargs: Any) -> Any:
        script = _script(provider)
        history = list(history)
        if script is None or session.depth:
            return original(provider, history, text, **kwargs)
        outputs = _ToolOutputs()
        tools = {t.name: t for t in map(Tool.of, kwargs.get("tools", ()))}
        arguments = {
            "runtime": _runtime(kwargs["runtime"]),
            "tools": _tool_specs(tools),
            "text": text,
            **script,
        }
        kwargs["tools"] = [outputs.wrap(tool) for tool in tools.values()]
        try:
            with session.outermost():
                return original(provider, history, text, **kwargs)
        finally:
            recorded = {**arguments, "tool_outputs": outputs.texts}
            session.add("legacy_run", rows_json(history), recorded)

    return run


@contextlib.contextmanager
def _patched(session: _Session) -> Iterator[None]:
    saved: list[tuple[Any, str, Any]] = []

    def patch(owner: Any, name: str, value: Any) -> None:
        saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    for name in CONVERTERS:
        patch(histtrim, name, _wrap(session, name, getattr(histtrim, name)))
    patch(Agent, "turn", _record_turn(session, Agent.turn))
    legacy = _record_legacy(session, runtime_module.legacy_run)
    patch(histtrim, "legacy_run", legacy)
    try:
        yield
    finally:
        for owner, name, value in reversed(saved):
            setattr(owner, name, value)


def _cells(path: Path) -> list[dict[str, Any]]:
    cells: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return cells


def record_notebook(path: Path) -> list[RecordedCall]:
    """Run one notebook's code cells in a fresh namespace (from its folder, stdout discarded);
    a cell that raises is expected only when tagged `raises-exception`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    path = path.resolve()
    session = _Session(path.name)
    namespace: dict[str, Any] = {"__name__": "__main__", "display": lambda *a, **k: None}
    cwd = Path.cwd()
    os.chdir(path.parent)
    sys.path.insert(0, str(path.parent))
    layout = Figure.tight_layout
    Figure.tight_layout = lambda self, *a, **k: None  # type: ignore[method-assign]  # no drawing
    try:
        with _patched(session), contextlib.redirect_stdout(io.StringIO()):
            for number, cell in enumerate(_cells(path)):
                source = "".join(cell["source"])
                session.cell = number
                if cell["cell_type"] == "markdown":
                    for line in source.splitlines():
                        stripped = line.lstrip()
                        if stripped.startswith("#"):
                            level = len(stripped) - len(stripped.lstrip("#"))
                            session.headings = {
                                k: v for k, v in session.headings.items() if k < level
                            }
                            session.headings[level] = stripped.lstrip("#").strip()
                    continue
                if cell["cell_type"] != "code":
                    continue
                source = _without_magics(source)
                try:
                    exec(compile(source, f"{path.name}[{number}]", "exec"), namespace)
                except Exception:
                    if "raises-exception" not in cell.get("metadata", {}).get("tags", []):
                        raise
                plt.close("all")
    finally:
        Figure.tight_layout = layout  # type: ignore[method-assign]
        _ROW_JSON.clear()
        os.chdir(cwd)
        sys.path.remove(str(path.parent))
    return session.calls


def record_notebooks(folder: Path) -> list[RecordedCall]:
    """Every recorded call of every chapter not in `SKIPPED_NOTEBOOKS`, in name order."""
    calls: list[RecordedCall] = []
    for path in sorted(folder.glob("*.ipynb")):
        if path.name not in SKIPPED_NOTEBOOKS:
            calls.extend(record_notebook(path))
    return calls


def _without_magics(source: str) -> str:
    """A code cell as plain Python: IPython line magics (`%xmode Minimal`) only set how the
    kernel shows things, so their lines are left out (kept blank: line numbers stay)."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                      for line in source.split("\n"))
