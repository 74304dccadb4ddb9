"""Opening a notebook in JupyterLab does not mark it modified: the committed metadata is what
the kernel reports (Lab writes the kernel's `language_info` on connect, version included),
and every notebook names the kernel `make notebooks` runs."""

from __future__ import annotations

import json
from pathlib import Path

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
