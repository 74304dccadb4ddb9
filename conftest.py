"""Root pytest configuration: hypothesis profiles and nbval's sanitize file.

Loaded for every run under this repository, whatever the current folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent
SANITIZE_CFG = ROOT / "notebooks" / "sanitize.cfg"

settings.register_profile(
    "ci",
    max_examples=500,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=100, database=None)
# Plain `pytest` runs what `make test` runs (500 derandomized examples, no example database
# in the source tree); `--hypothesis-profile=dev` is the quicker opt-in while developing.
settings.load_profile("ci")


def _absolute(value: str) -> str:
    """A sanitize path relative to the invocation folder if it exists there, else to the root."""
    path = Path(value)
    if path.is_absolute():
        return value
    candidate = Path.cwd() / path
    return str((candidate if candidate.exists() else ROOT / path).resolve())


def pytest_configure(config: pytest.Config) -> None:
    """Give nbval an absolute sanitize path, so pytest works from any folder.

    nbval 0.11 stores ``--nbval-sanitize-with`` as ``nbval_sanitize_with`` and opens it
    relative to the current folder; ``--sanitize-with`` is its deprecated alias
    (``sanitize_with``), which nbval copies over in its own ``pytest_configure``.
    """
    option = config.option
    if not (getattr(option, "nbval", False) or getattr(option, "nbval_lax", False)):
        return
    deprecated = getattr(option, "sanitize_with", None)
    current = getattr(option, "nbval_sanitize_with", None)
    if deprecated:
        option.sanitize_with = _absolute(deprecated)
    if current:
        option.nbval_sanitize_with = _absolute(current)
    elif not deprecated:
        option.nbval_sanitize_with = str(SANITIZE_CFG)
