"""Opening a notebook in JupyterLab does not mark it modified: the committed metadata is what
the kernel reports (Lab writes the kernel's `language_info` on connect, version included),
and every notebook names the kernel `make notebooks` runs."""

from __future__ import annotations

import json
from pathlib import Path

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import start_new_kernel

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def test_committed_language_info_is_what_the_kernel_reports() -> None:
    manager, client = start_new_kernel(kernel_name="python3")
    try:
        reply = client.kernel_info(reply=True, timeout=60)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    reported = reply["content"]["language_info"]
    for notebook in NOTEBOOKS:
        metadata = json.loads(notebook.read_text(encoding="utf-8"))["metadata"]
        assert metadata["language_info"] == reported, notebook.name
        assert metadata["kernelspec"]["name"] == "python3", notebook.name


def test_committed_kernelspec_is_the_kernel_lab_starts() -> None:
    """JupyterLab rewrites `kernelspec` from the kernel it starts (display name included:
    "Python 3 (ipykernel)", not "Python 3"), which marked every notebook modified on open."""
    spec = KernelSpecManager().get_kernel_spec("python3")
    expected = {"display_name": spec.display_name, "language": spec.language, "name": "python3"}
    for notebook in NOTEBOOKS:
        metadata = json.loads(notebook.read_text(encoding="utf-8"))["metadata"]
        assert metadata["kernelspec"] == expected, notebook.name


def test_every_figure_has_a_caption_and_alt_text() -> None:
    """A figure on the site is described for readers who cannot see it (cell metadata
    `mystnb.image.alt`) and named in the figure list (`mystnb.figure.caption`)."""
    missing = []
    for notebook in NOTEBOOKS:
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        for n, cell in enumerate(cells):
            outputs = cell.get("outputs", [])
            if not any("image/png" in output.get("data", {}) for output in outputs):
                continue
            mystnb = cell["metadata"].get("mystnb", {})
            alt = mystnb.get("image", {}).get("alt", "")
            caption = mystnb.get("figure", {}).get("caption", "")
            if len(alt) < 40 or not caption:
                missing.append(f"{notebook.name} cell {n}")
    assert not missing, f"figures without alt text or caption: {missing}"
