"""The in-browser spec's guard (issue 34), in CPython: Pyodide has no matplotlib or numpy. With
both blocked, every module the browser chapters load still imports, every figure function
returns the same numbers and no figure, and `show_figure` prints one line instead of a figure;
every chapter lite/chapters.json lists as running imports only what `make lite` ships and sends
each of its figures through `show_figure`. The browser test itself runs two chapters only."""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib.abc
import importlib.machinery
import importlib.metadata
import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from histtrim import (
    Agent,
    AssistantToolCalls,
    ChatMessage,
    ProviderProfile,
    ProviderReply,
    RuntimeProfile,
    ToolCall,
    ToolResultMessage,
    ToolResults,
    capacity_report,
    resolve_runtime,
    trim_to_recent_turns,
)
from histtrim.agent.providers import Overflow, ScriptedProvider
from histtrim.pairing import sweep_orphans, sweep_stages
from histtrim.review.cache import ANTHROPIC
from livingspec import examples as ex
from livingspec.calibration.corpus import CLASSES
from livingspec.calibration.measure import load_messages, load_sessions
from livingspec.calibration.recorded import Call, RecordedSession
from livingspec.plotting import NO_FIGURE, show_figure
from livingspec.plotting.budget import budget_heatmap, pruning_effect
from livingspec.plotting.calibration import (
    cached_share_figure,
    ratio_boxes,
    recorded_vs_estimate,
    sessions_estimate_vs_real,
)
from livingspec.plotting.capacity import capacity_breakdown
from livingspec.plotting.cut import budget_cut
from livingspec.plotting.estimate import estimate_vs_bytes
from livingspec.plotting.loop import call_timeline
from livingspec.plotting.measured import PricedRow, budget_checks, measured_trim_times, rows_priced
from livingspec.plotting.rows import row_estimate, sweep_map, sweep_passes
from livingspec.plotting.turns import turn_map

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = json.loads((ROOT / "lite" / "chapters.json").read_text(encoding="utf-8"))
BLOCKED = ("matplotlib", "numpy")
# Standard modules a browser chapter must not use: no processes, terminals or windows there.
NOT_IN_THE_BROWSER = {"subprocess", "multiprocessing", "curses", "readline", "tkinter", "turtle"}


class _Blocker(importlib.abc.MetaPathFinder):
    """Finds nothing for BLOCKED: importing them fails as in Pyodide."""

    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: object = None) -> importlib.machinery.ModuleSpec | None:
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)
        return None


@contextlib.contextmanager
def _without_matplotlib() -> Iterator[None]:
    """matplotlib and numpy unimportable (and out of sys.modules) inside the block."""
    hidden = {n: m for n, m in sys.modules.items() if n.split(".")[0] in BLOCKED}
    for name in hidden:
        del sys.modules[name]
    blocker = _Blocker()
    sys.meta_path.insert(0, blocker)
    try:
        yield
    finally:
        sys.meta_path.remove(blocker)
        sys.modules.update(hidden)


def _runtime(window: int, **settings: Any) -> Any:
    return resolve_runtime(RuntimeProfile(**settings),
                           ProviderProfile(model="m", context_window=window), None)


def _timeline() -> Any:
    agent = Agent(ScriptedProvider([Overflow(), ProviderReply(text="ok")]), _runtime(8_000),
                  system_prompt="s")
    agent.restore([ChatMessage.user("old " * 300), ChatMessage.assistant("a " * 300)])
    agent.turn("now")
    return call_timeline(agent.calls, title="t", provider_window=900)


def _items() -> list[Any]:
    return [ToolResults(results=[ToolResultMessage(tool_call_id="c0", content="stale")]),
            ChatMessage.user("go"),
            AssistantToolCalls(tool_calls=[ToolCall(id="c1", name="run", arguments={})]),
            ChatMessage.assistant("done")]


def _recorded(corpus: str) -> RecordedSession:
    """A session of three recorded calls, for the figures of chapters 11 and 14."""
    calls = (Call(1, 900, 20_000, 0), Call(3, 4_000, 24_500, 19_990),
             Call(5, 9_000, 31_000, 24_400))
    prompts = tuple(tuple((k, 300) for k in range(c.index)) for c in calls)
    return RecordedSession("s", corpus, calls, prompts, ANTHROPIC)


RESULTS = ROOT / "bench" / "results"
SESSION = ex.agent_session()
MEASURED = [{"section": "trim", "shape": "chat", "messages": str(n), "contender": "histtrim",
             "cpu_ms": "1.5", "method": "median", "valid": "ok"} for n in (10_000, 1_000)]
FIGURES: dict[str, Callable[[], Any]] = {
    "turn_map": lambda: turn_map(SESSION, trim_to_recent_turns(SESSION, 2_000), title="t"),
    "budget_cut": lambda: budget_cut(SESSION, 2_000, title="t"),
    "estimate_vs_bytes": lambda: estimate_vs_bytes(ex.sample_texts(), title="t"),
    "row_estimate": lambda: row_estimate(SESSION, title="t"),
    "sweep_map": lambda: sweep_map(_items(), sweep_orphans(_items()), title="t"),
    "sweep_passes": lambda: sweep_passes(_items(), sweep_stages(_items()),
                                         labels=["R", "U", "A", "A"], title="t"),
    "budget_heatmap": lambda: budget_heatmap(
        {"p": (ProviderProfile(model="m", context_window=200_000), None)},
        ratios=[None, 0.5], max_context_tokens=[None, 8_000], title="t"),
    "pruning_effect": lambda: pruning_effect({"a": _runtime(200_000), "b": _runtime(8_192)},
                                             [0, 2_000], title="t"),
    "capacity_breakdown": lambda: capacity_breakdown(
        {"r": capacity_report(SESSION, runtime=_runtime(4_096))}, title="t"),
    "call_timeline": _timeline,
    "measured_trim_times": lambda: measured_trim_times(MEASURED, ["chat"], title="t"),
    "rows_priced": lambda: rows_priced([PricedRow("chat", 20, 20, 210)], title="t"),
    "budget_checks": lambda: budget_checks([20, 42], [20, 22], title="t"),
    "ratio_boxes": lambda: ratio_boxes(load_messages(RESULTS / "calibration_messages.csv"),
                                       CLASSES, title="t"),
    "recorded_vs_estimate": lambda: recorded_vs_estimate(
        [_recorded("claude-code")], [_recorded("mini-swe-agent")], title="t"),
    "cached_share_figure": lambda: cached_share_figure(
        [_recorded("claude-code"), _recorded("mini-swe-agent")],
        {"claude-code": "blue", "mini-swe-agent": "green"}, title="t"),
    "sessions_estimate_vs_real": lambda: sessions_estimate_vs_real(
        {"all": load_sessions(RESULTS / "calibration_sessions.csv")}, {"all": "black"},
        title="t"),
}


def _numbers(plot: Any) -> object:
    """What a figure's cell prints: its rows (or grids, or table); nothing for a bare figure."""
    for name in ("rows", "grids"):
        if hasattr(plot, name):
            return getattr(plot, name)
    return str(plot.table()) if hasattr(plot, "table") else None


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_figure_function_gives_the_same_numbers_and_no_figure_without_matplotlib(
    name: str,
) -> None:
    drawn = FIGURES[name]()
    figure = getattr(drawn, "figure", drawn)
    assert figure is not None
    plt.close(figure)
    with _without_matplotlib():
        bare = FIGURES[name]()
    assert getattr(bare, "figure", bare) is None
    assert _numbers(bare) == _numbers(drawn)


def test_show_figure_without_matplotlib_prints_one_line_and_draws_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def draw() -> Any:
        raise AssertionError("nothing is drawn without matplotlib")

    with _without_matplotlib():
        show_figure()
        show_figure(draw)
    assert capsys.readouterr().out == f"{NO_FIGURE}\n{NO_FIGURE}\n"


def test_show_figure_with_matplotlib_shows_the_figure(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    shown: list[bool] = []
    monkeypatch.setattr(plt, "show", lambda: shown.append(True))
    show_figure()
    assert shown == [True]
    from matplotlib.figure import Figure

    show_figure(lambda: Figure(figsize=(1, 1)))  # as a PNG image, outside pyplot
    assert capsys.readouterr().out == "<IPython.core.display.Image object>\n"


# ------------------------------------------------------------ the chapters that run there


def _code(stem: str) -> list[tuple[str, str, list[dict[str, Any]]]]:
    """(cell id, source without IPython magics, committed outputs) of each code cell."""
    cells = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text(encoding="utf-8"))
    return [(c["id"], "".join(line for line in c["source"] if not line.startswith(("%", "!"))),
             c["outputs"]) for c in cells["cells"] if c["cell_type"] == "code"]


def _imports(source: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


@functools.cache
def _shipped() -> frozenset[str]:
    """Import names of what `make lite` ships: lite/requirements.txt, histtrim, livingspec."""
    lines = (ROOT / "lite" / "requirements.txt").read_text(encoding="utf-8").splitlines()
    wanted = {re.sub(r"[-_.]+", "-", line.split("==")[0]).lower()
              for line in lines if line and not line.startswith("#")}
    return frozenset({name for name, dists in importlib.metadata.packages_distributions().items()
                      if any(re.sub(r"[-_.]+", "-", d).lower() in wanted for d in dists)} | {
        "histtrim", "livingspec"})


@pytest.mark.parametrize("stem", CHAPTERS["runs"])
def test_chapter_listed_as_running_needs_only_what_the_browser_has(stem: str) -> None:
    allowed = (set(sys.stdlib_module_names) - NOT_IN_THE_BROWSER) | _shipped()
    for cell, source, outputs in _code(stem):
        imports = _imports(source)
        assert {m.split(".")[0] for m in imports} <= allowed, (stem, cell, imports)
        assert "plt." not in source, (stem, cell)
        # The browser's working folder is not notebooks/: files are found from histtrim.
        assert "Path.cwd()" not in source, (stem, cell)
        if any(k.startswith("image/") for o in outputs for k in o.get("data", {})):
            assert "show_figure(" in source, (stem, cell, "a figure not through show_figure")


def test_modules_of_the_browser_chapters_import_without_matplotlib() -> None:
    """In a fresh interpreter (a module imports once per process), with matplotlib and numpy
    blocked: every histtrim or livingspec module a listed chapter imports, every plotting one."""
    modules = sorted({m for stem in CHAPTERS["runs"] for _, source, _ in _code(stem)
                      for m in _imports(source) if m.split(".")[0] in ("histtrim", "livingspec")}
                     | {f"livingspec.plotting.{p.stem}"
                        for p in (ROOT / "livingspec" / "plotting").glob("[!_]*.py")})
    script = textwrap.dedent(f"""
        import importlib, importlib.abc, sys

        class Blocker(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in {BLOCKED!r}:
                    raise ModuleNotFoundError(name, name=name)

        sys.meta_path.insert(0, Blocker())
        for module in {modules!r}:
            importlib.import_module(module)
        print(sorted(m for m in sys.modules if m.split(".")[0] in {BLOCKED!r}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == "[]\n"
