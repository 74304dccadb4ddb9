"""The built spec site (build/spec): built once by `make spec` (or here, when missing)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "build" / "spec"


@pytest.fixture(scope="session")
def site() -> Path:
    """The site folder; `make test` builds it (with -W) just before these tests run."""
    if not (SITE / "index.html").exists():
        builder = ROOT / "tools" / "build_site.py"
        spec = importlib.util.spec_from_file_location("build_site", builder)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        assert module.main([]) == 0, "the site build failed (warnings are errors)"
    return SITE
