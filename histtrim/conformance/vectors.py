"""Reading an exported folder (bounded, and a file that is not a vector file is one clear
error), and choosing the vectors in scope (`--rules KEEP-*,EST-*`,
`--functions trim_to_recent_turns,...`)."""

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


MAX_FILE_BYTES = 1 << 30
"""A vector file larger than this is refused (the exported ones are a few MB)."""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _read(path: Path) -> dict[str, Any]:
    """One group file's JSON object, or a ValueError naming the file."""
    with path.open("rb") as file:
        data = file.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"{path}: larger than {MAX_FILE_BYTES} bytes")
    try:
        value = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except RecursionError:
        raise ValueError(f"{path}: JSON nested too deeply") from None
    except ValueError as error:
        raise ValueError(f"{path}: not JSON ({error})") from None
    if not isinstance(value, dict) or value.get("format") != FORMAT:
        raise ValueError(f"{path}: not a vector file (expected an object with format {FORMAT})")
    return value


def _vector(path: Path, n: int, v: Any) -> Vector:
    if not (isinstance(v, dict) and isinstance(v.get("id"), str)
            and isinstance(v.get("function"), str) and isinstance(v.get("source"), str)
            and isinstance(v.get("rules"), list) and v["rules"]
            and all(isinstance(r, str) for r in v["rules"])
            and isinstance(v.get("arguments"), dict) and isinstance(v.get("expected"), dict)
            and ("result" in v["expected"] or isinstance(v["expected"].get("error"), dict))):
        raise ValueError(f"{path}: vector {n}: expected an object with id, rules, function, "
                         "source, history, arguments and expected (see vectors.schema.json)")
    expected = v["expected"]
    if ("result" in expected) == ("error" in expected) or (
            "error" in expected and not isinstance(expected["error"].get("kind"), str)):
        raise ValueError(f"{path}: vector {n}: expected must hold either result or "
                         'error {"kind": "..."} (see vectors.schema.json)')
    return Vector(v["id"], tuple(v["rules"]), v["function"], v["source"], v.get("history"),
                  v["arguments"], v["expected"])


def load(folder: Path) -> tuple[list[Vector], dict[str, str]]:
    """Every vector of the folder's group files, and every rule's text (RULES.md order)."""
    files = sorted(p for p in folder.glob("*.json") if p.name != "vectors.schema.json")
    if not files:
        raise ValueError(f"vectors: no vector files in {folder}")
    vectors: list[Vector] = []
    groups: list[tuple[int, dict[str, str]]] = []
    for path in files:
        data = _read(path)
        index, texts, found = data.get("index"), data.get("rules"), data.get("vectors")
        if not (isinstance(index, int) and isinstance(texts, dict) and isinstance(found, list)):
            raise ValueError(f"{path}: expected index, rules and vectors (see "
                             "vectors.schema.json)")
        groups.append((index, {str(k): str(v) for k, v in texts.items()}))
        vectors.extend(_vector(path, n, v) for n, v in enumerate(found))
    seen: set[str] = set()
    for vector in vectors:
        if vector.id in seen:
            raise ValueError(f"vectors: id {vector.id!r} appears twice")
        seen.add(vector.id)
    rule_texts = {k: v for _, texts in sorted(groups, key=lambda g: g[0]) for k, v in texts.items()}
    return vectors, rule_texts


def patterns(text: str | None) -> tuple[str, ...]:
    """`"KEEP-*, EST-1"` -> `("KEEP-*", "EST-1")`; None or empty means every rule."""
    if not text:
        return ("*",)
    found = tuple(p.strip() for p in text.split(",") if p.strip())
    if not found:
        raise ValueError("rules: expected comma-separated rule IDs or patterns")
    return found


def in_scope(rule_id: str, scope: tuple[str, ...]) -> bool:
    return any(fnmatchcase(rule_id, pattern) for pattern in scope)


def select(vectors: list[Vector], scope: tuple[str, ...],
           functions: frozenset[str] | None = None) -> list[Vector]:
    """The vectors checking at least one rule in scope (in file order), and, when
    `functions` is given, calling one of them."""
    return [v for v in vectors if any(in_scope(r, scope) for r in v.rules)
            and (functions is None or v.function in functions)]


def function_names(text: str | None, vectors: list[Vector]) -> frozenset[str] | None:
    """`"estimate_history_tokens,sweep_orphans"` -> those names (each must have vectors);
    None or empty means every function."""
    if not text:
        return None
    names = frozenset(p.strip() for p in text.split(",") if p.strip())
    known = {v.function for v in vectors}
    unknown = sorted(names - known)
    if unknown or not names:
        raise ValueError(f"functions: no vectors call {', '.join(unknown) or 'nothing'} "
                         f"(known: {', '.join(sorted(known))})")
    return names
