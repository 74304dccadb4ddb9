"""The small install: the core needs pydantic alone, the rest are extras, and a command that
needs a missing extra says which one in one line."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SESSIONS = ROOT / "examples" / "sessions"


def test_the_core_depends_on_pydantic_only() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["dependencies"] == ["pydantic>=2"]
    assert {"plotting", "review", "notebooks", "docs", "dev", "tokenizers"} <= set(
        project["optional-dependencies"])


def test_the_wheel_holds_histtrim_only() -> None:
    found = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert found["tool"]["setuptools"]["packages"]["find"]["include"] == ["histtrim*"]


def _without(module: str, *argv: str) -> subprocess.CompletedProcess[str]:
    code = (f"import sys; sys.modules[{module!r}] = None; from histtrim.cli import main; "
            "sys.exit(main(sys.argv[1:]))")
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                          cwd=ROOT, check=False)


def test_review_html_without_matplotlib_names_the_extra(tmp_path: Path) -> None:
    done = _without("matplotlib", "review", str(SESSIONS), "--html", str(tmp_path / "r.html"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "histtrim: error: --html: the report's figures need matplotlib "
        "(pip install 'histtrim[review]')"]
    assert not (tmp_path / "r.html").exists()


def test_review_on_dask_without_distributed_names_the_extra() -> None:
    done = _without("distributed", "review", str(SESSIONS), "--dask", "tcp://127.0.0.1:1")
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert "pip install 'histtrim[review]'" in done.stderr
