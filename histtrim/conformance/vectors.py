"""Reading an exported folder, and choosing the vectors in scope (`--rules KEEP-*,EST-*`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from histtrim.conformance.schema import FORMAT


@dataclass(frozen=True)
class Vector:
    id: str
    rules: tuple[str, ...]
    function: str
    source: str
    history: Any
    arguments: dict[str, Any]
    expected: dict[str, Any]

    def request(self) -> dict[str, Any]:
        return {"id": self.id, "function": self.function, "history": self.history,
                "arguments": self.arguments}


def load(folder: Path) -> tuple[list[Vector], dict[str, str]]:
    """Every vector of the folder's group files, and every rule's text (RULES.md order)."""
    files = sorted(p for p in folder.glob("*.json") if p.name != "vectors.schema.json")
    if not files:
        raise ValueError(f"vectors: no vector files in {folder}")
    vectors: list[Vector] = []
    groups: list[tuple[int, dict[str, str]]] = []
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != FORMAT:
            raise ValueError(f"{path}: format is not {FORMAT}")
        groups.append((data["index"], data["rules"]))
        vectors.extend(
            Vector(v["id"], tuple(v["rules"]), v["function"], v["source"], v["history"],
                   v["arguments"], v["expected"])
            for v in data["vectors"]
        )
    rule_texts = {k: v for _, texts in sorted(groups, key=lambda g: g[0]) for k, v in texts.items()}
    return vectors, rule_texts


def patterns(text: str | None) -> tuple[str, ...]:
    """`"KEEP-*, EST-1"` -> ("KEEP-*", "EST-1"); None or empty means every rule."""
    if not text:
        return ("*",)
    found = tuple(p.strip() for p in text.split(",") if p.strip())
    if not found:
        raise ValueError("rules: expected comma-separated rule IDs or patterns")
    return found


def in_scope(rule_id: str, scope: tuple[str, ...]) -> bool:
    return any(fnmatchcase(rule_id, pattern) for pattern in scope)


def select(vectors: list[Vector], scope: tuple[str, ...]) -> list[Vector]:
    """The vectors checking at least one rule in scope (in file order)."""
    return [v for v in vectors if any(in_scope(r, scope) for r in v.rules)]
