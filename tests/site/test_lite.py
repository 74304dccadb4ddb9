"""The in-browser spec (`make lite`, build/spec/lite/): its Pyodide lock names exactly the wheels
shipped, the site links every chapter that runs there, and in headless Chromium, with every
request off this machine refused, chapter 14 (its explorer included) and chapter 01 run top to
bottom in the Pyodide kernel and print what their committed outputs print."""

from __future__ import annotations

import configparser
import functools
import hashlib
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from livingspec.plotting import NO_FIGURE

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
CHAPTERS = json.loads((ROOT / "lite" / "chapters.json").read_text(encoding="utf-8"))
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
# Pyodide's first start (wasm compile, packages) and chapter 14's replays, on a loaded machine.
KERNEL_SECONDS = 300
RUN_SECONDS = 420
WIDGET = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def lite(site: Path) -> Path:
    """build/spec/lite: `make spec` builds it after the site; built here when missing."""
    if not (site / "lite" / "index.html").exists():
        done = subprocess.run([sys.executable, str(ROOT / "tools" / "build_lite.py")],
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
    return site / "lite"


def test_every_chapter_says_whether_it_runs_in_the_browser() -> None:
    stems = {p.stem for p in NOTEBOOKS.glob("[0-9]*.ipynb")}
    runs, not_run = set(CHAPTERS["runs"]), set(CHAPTERS["does not run"])
    assert not runs & not_run
    assert runs | not_run == stems
    assert "14_design_review" in runs


def test_lock_names_exactly_the_wheels_shipped(lite: Path) -> None:
    pyodide = lite / "static" / "pyodide"
    lock = json.loads((pyodide / "pyodide-lock.json").read_text(encoding="utf-8"))
    wheels = {p.name for p in pyodide.glob("*.whl")}
    assert {e["file_name"] for e in lock["packages"].values()} == wheels
    for name, entry in lock["packages"].items():
        data = (pyodide / entry["file_name"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], name
        assert set(entry["depends"]) <= set(lock["packages"]), name
    assert {"histtrim", "histtrim-livingspec", "histtrim-examples", "histtrim-bench", "pydantic",
            "pydantic-core"} <= set(lock["packages"])


def test_folders_the_chapters_read_are_shipped_and_loaded_at_start(lite: Path) -> None:
    """examples/ and bench/ (chapters 09 and 11 read its scripts and results) have no import
    name, so the kernel loads their wheels at start, into site-packages next to histtrim."""
    import zipfile

    pyodide = lite / "static" / "pyodide"
    lock = json.loads((pyodide / "pyodide-lock.json").read_text(encoding="utf-8"))
    config = json.loads((lite / "jupyter-lite.json").read_text(encoding="utf-8"))
    preload = config["jupyter-config-data"]["litePluginSettings"][
        "@jupyterlite/pyodide-kernel-extension:kernel"]["loadPyodideOptions"]["packages"]
    for name, folder in (("histtrim-examples", "examples"), ("histtrim-bench", "bench")):
        assert name in preload
        with zipfile.ZipFile(pyodide / lock["packages"][name]["file_name"]) as wheel:
            shipped = {n for n in wheel.namelist() if n.startswith(f"{folder}/")}
        wanted = {p.relative_to(ROOT).as_posix() for p in (ROOT / folder).rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts}
        if folder == "bench":
            wanted = {n for n in wanted if n.startswith("bench/results/")} | {
                "bench/histories.py", "bench/compare.py"}
        assert shipped == wanted, name


def test_kernel_never_reaches_for_a_cdn_or_pypi(lite: Path) -> None:
    config = json.loads((lite / "jupyter-lite.json").read_text(encoding="utf-8"))
    kernel = config["jupyter-config-data"]["litePluginSettings"][
        "@jupyterlite/pyodide-kernel-extension:kernel"]
    assert kernel["pyodideUrl"] == "./static/pyodide/pyodide.mjs"
    assert kernel["disablePyPIFallback"] is True
    assert all(not url.startswith(("http:", "https:")) for url in kernel["pipliteUrls"])


def test_site_links_the_chapters_that_run_in_the_browser(site: Path, lite: Path) -> None:
    listed = json.loads((lite / "api" / "contents" / "all.json").read_text(encoding="utf-8"))
    assert sorted(c["name"] for c in listed["content"]) == sorted(
        f"{stem}.ipynb" for stem in CHAPTERS["runs"])
    for stem in [*CHAPTERS["runs"], *CHAPTERS["does not run"]]:
        page = (site / f"{stem}.html").read_text(encoding="utf-8")
        link = f'href="lite/notebooks/index.html?path={stem}.ipynb"'
        assert (link in page) == (stem in CHAPTERS["runs"]), stem


def _chromium() -> str:
    found = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which(
        "chromium-browser")
    if found:
        return found
    message = "no Chromium found: `apt-get install -y chromium` (`.ci/run` does) or set CHROMIUM"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def served(site: Path, lite: Path) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _run_in_browser(base: str, stem: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The chapter's cells after "run all" in the Pyodide kernel, and every request that
    tried to leave this machine (refused)."""
    from playwright.sync_api import sync_playwright

    outside: list[str] = []

    def local_only(route: Any) -> None:
        url = route.request.url
        if url.startswith((base, "data:", "blob:")):
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    app = "window.jupyterapp.shell.currentWidget"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=_chromium(), args=FLAGS)
        context = browser.new_context(service_workers="block")
        context.route("**/*", local_only)
        page = context.new_page()
        page.goto(f"{base}/lite/notebooks/index.html?path={stem}.ipynb")
        page.wait_for_function(
            f"() => {{ try {{ return {app}.sessionContext.session.kernel.status === 'idle' }}"
            " catch (e) { return false } }", timeout=KERNEL_SECONDS * 1000, polling=1000)
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        deadline = time.monotonic() + RUN_SECONDS
        while True:
            pending, errors, status = page.evaluate(f"""() => {{
                const w = {app}; const cells = w.content.model.cells; let p = 0, e = 0;
                for (let i = 0; i < cells.length; i++) {{
                    const c = cells.get(i); if (c.type !== 'code') continue;
                    if (c.executionCount === null) p++;
                    for (let j = 0; j < c.outputs.length; j++)
                        if (c.outputs.get(j).type === 'error') e++;
                }}
                return [p, e, w.sessionContext.session.kernel.status]; }}""")
            if status == "idle" and (pending == 0 or errors):
                break
            assert time.monotonic() < deadline, f"{stem}: {pending} cells still to run"
            time.sleep(2)
        cells = page.evaluate(f"() => {app}.content.model.toJSON().cells")
        browser.close()
    return cells, outside


def _sanitize(text: str) -> str:
    config = configparser.ConfigParser()
    config.read(NOTEBOOKS / "sanitize.cfg")
    for section in config.sections():
        text = re.sub(config[section]["regex"], config[section]["replace"], text)
    return text


def _text(outputs: list[dict[str, Any]]) -> str:
    """What a cell printed: streams and the text of displays, no images, widgets or the
    browser's no-figure line."""
    parts = []
    for output in outputs:
        if output["output_type"] == "stream":
            parts.append("".join(output["text"]))
        else:
            data = output.get("data", {})
            if not any(k.startswith("image/") for k in data) and WIDGET not in data:
                parts.append("".join(data.get("text/plain", "")))
    return _sanitize("".join(parts).replace(NO_FIGURE + "\n", ""))


@pytest.mark.parametrize("stem", ["14_design_review", "01_turns"])
def test_chapter_runs_in_the_browser_as_committed(served: str, stem: str) -> None:
    cells, outside = _run_in_browser(served, stem)
    assert not outside, outside
    ran = {c.get("id"): c for c in cells if c["cell_type"] == "code"}
    errors = [o for c in ran.values() for o in c["outputs"] if o["output_type"] == "error"]
    assert not errors, [(e["ename"], e["evalue"]) for e in errors]
    committed = json.loads((NOTEBOOKS / f"{stem}.ipynb").read_text(encoding="utf-8"))
    figures = 0
    for cell in committed["cells"]:
        if cell["cell_type"] != "code":
            continue
        browser = ran[cell["id"]]["outputs"]
        assert _text(browser) == _text(cell["outputs"]), (stem, cell["id"])
        if any(k.startswith("image/") for o in cell["outputs"] for k in o.get("data", {})):
            figures += 1
            assert any(NO_FIGURE in "".join(o.get("text", "")) for o in browser), cell["id"]
    if stem == "14_design_review":
        assert figures == 6  # Review 6 added the cached-share figure, Review 7 the lifetimes'
        widgets = [o for c in ran.values() for o in c["outputs"] if WIDGET in o.get("data", {})]
        assert len(widgets) == 1, "the explorer shows its controls in the browser"
