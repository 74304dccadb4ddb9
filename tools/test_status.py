"""Record the outcome of `make test`'s pytest run for the spec site's landing page.

Reads pytest's JUnit report and writes build/test-status.json: the commit tested, whether
the tree had uncommitted changes, pass/fail/skip counts, how many notebooks nbval checked,
the date and pytest's exit code. tools/build_site.py shows it on the landing page.

Usage: python tools/test_status.py build/pytest-junit.xml RETURNCODE
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    return done.stdout.strip()


def status(junit: Path, returncode: int) -> dict[str, object]:
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    notebooks: set[str] = set()
    if junit.exists():
        for case in ET.parse(junit).getroot().iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                counts["failed"] += 1
            elif case.find("skipped") is not None:
                counts["skipped"] += 1
            else:
                counts["passed"] += 1
            source = case.get("file") or case.get("classname", "")
            if ".ipynb" in source:
                notebooks.add(source.split(".ipynb")[0].rsplit("/", 1)[-1].rsplit(".", 1)[-1])
    return {
        "commit": _git("rev-parse", "HEAD"),
        "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
        **counts,
        "notebooks": len(notebooks),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "returncode": returncode,
    }


def main(argv: list[str]) -> int:
    junit, returncode = Path(argv[0]), int(argv[1])
    out = ROOT / "build" / "test-status.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(status(junit, returncode), indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
