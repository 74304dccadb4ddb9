"""What the three framework integrations share (`histtrim.integrations._trimmer`): the limits
resolved as the spec resolves them, the events delivered in isolation (SEEN-3), and the
frameworks imported only by their own module."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from histtrim import (
    ChatMessage,
    HistoryTrimmed,
    ProviderProfile,
    RuntimeProfile,
    resolve_runtime,
)
from histtrim.integrations._trimmer import ToolPairingError, Trimmer

ROOT = Path(__file__).resolve().parent.parent
FRAMEWORKS = ("langchain", "langchain_core", "langgraph", "pydantic_ai", "agents", "openai")


def test_importing_the_package_imports_no_framework() -> None:
    code = ("import sys, histtrim, histtrim.integrations, histtrim.integrations._trimmer; "
            f"print([m for m in sys.modules if m.split('.')[0] in {FRAMEWORKS!r}])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=ROOT)
    assert done.stdout.strip() == "[]"


def test_limit_2_budget_1_no_arguments_mean_the_spec_defaults() -> None:
    """BUDGET-1, LIMIT-2: an empty runtime profile: 32,000 tokens and 50 turns."""
    trimmer = Trimmer()
    assert (trimmer.budget_tokens, trimmer.max_turns) == (32_000, 50)


def test_the_runtime_gives_budget_and_turn_limit() -> None:
    runtime = resolve_runtime(RuntimeProfile(max_context_tokens=9_000, max_history_messages=7),
                              ProviderProfile(model="m", context_window=8_000), None)
    trimmer = Trimmer(runtime)
    assert (trimmer.budget_tokens, trimmer.max_turns) == (8_000, 7)  # BUDGET-7: capped
    assert Trimmer(runtime, max_turns=3).max_turns == 3


def history(turns: int) -> list[ChatMessage]:
    rows = [ChatMessage.system("s")]
    for i in range(turns):
        rows += [ChatMessage.user(f"q{i} " + "x" * 200), ChatMessage.assistant(f"a{i}")]
    return rows


def test_seen_3_a_failing_callback_is_logged_and_the_trim_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(event: HistoryTrimmed) -> None:
        raise RuntimeError("dashboard down")

    rows = history(5)
    with caplog.at_level(logging.ERROR, logger="histtrim.integrations"):
        trimmer = Trimmer(budget_tokens=100, on_trim=broken)
        done = trimmer.trim(rows, [trimmer.cache.priced(row) for row in rows],
                            crumb=ChatMessage.user("crumb"), crumb_present=False)
    assert done.trimmed and len(done.units) < len(rows)
    assert "on_trim failed" in caplog.text


def test_the_pairing_guard_names_the_problem() -> None:
    rows = [ChatMessage.user("hi"), ChatMessage.tool_result("ghost", "x")]
    with pytest.raises(ToolPairingError, match="ghost"):
        Trimmer.check_pairing(rows)


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"budget_tokens": -1}, "budget_tokens"),
    ({"budget_tokens": True}, "budget_tokens"),
    ({"max_turns": 1.5}, "max_turns"),
    ({"token_counter": 3}, "token_counter"),
    ({"on_trim": "print"}, "on_trim"),
    ({"runtime": RuntimeProfile()}, "runtime"),
])
def test_bad_arguments_name_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        Trimmer(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("module", "framework", "extra"),
    [("langchain", "langchain", "langchain"), ("pydantic_ai", "pydantic_ai", "pydantic-ai"),
     ("openai_agents", "agents", "openai-agents")],
)
def test_a_missing_framework_names_the_extra_to_install(
    module: str, framework: str, extra: str
) -> None:
    """Issue 31 §6: importing an integration without its framework said only `No module
    named 'agents'`; it names the `pip install` that fixes it, as the other extras do."""
    code = (f"import sys; sys.modules[{framework!r}] = None\n"
            f"import histtrim.integrations.{module}")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT)
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 1
    assert last.startswith("ModuleNotFoundError:") and f"pip install 'histtrim[{extra}]'" in last


def test_the_package_has_its_version() -> None:
    """Issue 31 §6: `histtrim.__version__` is the installed distribution's version."""
    from importlib.metadata import version

    import histtrim

    assert histtrim.__version__ == version("histtrim") != ""


def test_the_readme_names_the_framework_versions_the_tests_use() -> None:
    """Issue 31 §6: README's "tested with" column is what `constraints.txt` pins."""
    pins = dict(
        line.split("==", 1) for line in (ROOT / "constraints.txt").read_text().splitlines()
        if "==" in line and not line.startswith("#")
    )
    readme = (ROOT / "README.md").read_text()
    rows = [line for line in readme.splitlines() if "histtrim.integrations." in line]
    assert len(rows) == 3
    named = [pair.strip().split(" ") for row in rows for pair in row.split("|")[2].split(",")]
    assert len(named) == 5
    for package, version in named:
        assert pins[package] == version, package
