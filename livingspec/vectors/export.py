"""Build the vector set from its sources and write it: one JSON file per rule group, the
JSON Schema and the implementers' README. The same checkout always gives the same bytes."""

from __future__ import annotations

import hashlib
import sys
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from histtrim.conformance.codec import atomic_write, canonical
from histtrim.conformance.reference import FUNCTION_RULES, evaluate
from histtrim.conformance.schema import ARGUMENT_DEFAULTS, FORMAT, VECTOR_FILE_SCHEMA
from livingspec.specindex import Rule, rules
from livingspec.vectors.cases import Case
from livingspec.vectors.readme import readme
from livingspec.vectors.record import record_notebooks
from livingspec.vectors.recorder import RecordedCall
from livingspec.vectors.tags import narrow
from livingspec.vectors.vectorset import VectorSet

INTEGER_ARGUMENTS = ("budget_tokens", "max_turns")
"""A sweep over one of these (same history, same answer) keeps only its two ends."""


class MissingRules(Exception):
    """Some rule of RULES.md has no vector: the build fails."""


def recorded_case(call: RecordedCall) -> Case:
    """The rules a notebook call checks: those its heading cites that the function can
    show, else the function's own rule."""
    allowed = FUNCTION_RULES[call.function]
    cited = tuple(r for r in call.heading_rules if r in allowed)
    return Case(
        f"notebook:{call.notebook}#cell-{call.cell}",
        cited or allowed[:1],
        call.function,
        call.history,
        call.arguments,
    )


def all_cases(root: Path) -> list[Case]:
    from livingspec.vectors.generate import generated_cases_isolated
    from livingspec.vectors.hostile import hostile_cases
    from livingspec.vectors.loops import legacy_cases, loop_cases
    from livingspec.vectors.port import port_cases
    from livingspec.vectors.real import real_cases
    from livingspec.vectors.reference_tests import reference_test_cases
    from livingspec.vectors.settings import settings_cases

    # The reference's own tests first: a same call elsewhere then keeps their source.
    return [
        *reference_test_cases(),
        *map(recorded_case, record_notebooks(root / "notebooks")),
        *generated_cases_isolated(),
        *settings_cases(),
        *loop_cases(),
        *legacy_cases(),
        *hostile_cases(),
        *port_cases(),
        *real_cases(),
    ]


def _key(case: Case, keys: dict[int, str]) -> str:
    """What identifies a case: its function, history and arguments (as canonical JSON)."""
    return "\n".join((case.function, _history_key(case, keys), canonical(case.arguments)))


def _history_key(case: Case, keys: dict[int, str]) -> str:
    """The canonical text of a case's history, computed once per history list."""
    key = keys.get(id(case.history))
    if key is None:
        key = keys[id(case.history)] = canonical(case.history)
    return key


def _ends_of_sweeps(
    cases: list[tuple[Case, dict[str, Any]]], keys: dict[int, str]
) -> list[tuple[Case, dict[str, Any]]]:
    """Within calls that differ only by one integer argument and give the same answer, keep
    the smallest and largest value: the edges where the answer changes."""
    groups: dict[str, list[tuple[Case, dict[str, Any]]]] = defaultdict(list)
    for case, expected in cases:
        swept = next((a for a in INTEGER_ARGUMENTS if isinstance(
            case.arguments.get(a), int) and not isinstance(case.arguments.get(a), bool)), None)
        rest = {k: v for k, v in case.arguments.items() if k != swept}
        groups[_history_key(case, keys) + canonical([case.function, rest, swept, expected])].append(
            (case, expected)
        )
    kept: list[tuple[Case, dict[str, Any]]] = []
    for members in groups.values():
        swept = next((a for a in INTEGER_ARGUMENTS if a in members[0][0].arguments), None)
        if swept is None or len(members) <= 2:
            kept.extend(members)
            continue
        ordered = sorted(members, key=lambda m: m[0].arguments[swept])
        rules = _union(rule for case, _ in members for rule in case.rules)
        for case, expected in (ordered[0], ordered[-1]):
            kept.append((Case(case.source, rules, case.function, case.history, case.arguments),
                         expected))
    return kept


def explicit(case: Case) -> Case:
    """The case with every argument its function takes: one left out gets the value the
    function uses for it, so an implementation never has to guess a default."""
    defaults = ARGUMENT_DEFAULTS[case.function]
    missing = {k: v for k, v in defaults.items() if k not in case.arguments}
    if not missing:
        return case
    return Case(case.source, case.rules, case.function, case.history,
                {**case.arguments, **missing})


def _union(rule_ids: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(rule_ids))


def build(root: Path) -> VectorSet:
    """Every case evaluated by the reference, merged and named; raises `MissingRules`."""
    listed = rules(root / "notebooks" / "spec" / "RULES.md")
    order = {rule.rule_id: n for n, rule in enumerate(listed)}
    merged: dict[str, Case] = {}
    keys: dict[int, str] = {}
    for case in map(explicit, all_cases(root)):
        key = _key(case, keys)
        if key in merged:
            first = merged[key]
            case = Case(first.source, _union((*first.rules, *case.rules)), case.function,
                        case.history, case.arguments)
        merged[key] = case
    evaluated: list[tuple[Case, dict[str, Any]]] = []
    crashed: list[tuple[str, str, str]] = []
    limit = sys.getrecursionlimit()
    for case in merged.values():
        try:
            evaluated.append((case, evaluate(case.function, case.history, case.arguments)))
        except Exception as error:  # the reference itself fails: no answer to check against
            crashed.append((case.source, case.function, type(error).__name__))
        finally:
            sys.setrecursionlimit(limit)
    vectors: list[dict[str, Any]] = []
    combined: list[tuple[str, str]] = []
    for case, expected in _ends_of_sweeps(evaluated, keys):
        key = _key(case, keys)
        checks = narrow(case.rules, case.function, case.history, case.arguments, expected)
        if checks is None:
            combined.append((case.source, case.function))
            continue
        vectors.append({
            "id": f"{case.function}-{hashlib.sha256(key.encode()).hexdigest()[:12]}",
            "rules": sorted(set(checks), key=order.__getitem__),
            "function": case.function,
            "source": case.source,
            "history": case.history,
            "arguments": case.arguments,
            "expected": expected,
        })
    vectors.sort(key=lambda v: (order[v["rules"][0]], v["id"]))
    found = VectorSet(listed, vectors, sorted(crashed), sorted(set(combined)))
    check_coverage(found)
    return found


def check_coverage(found: VectorSet) -> None:
    """Every rule of RULES.md has at least one vector, or `MissingRules` naming the others."""
    missing = [rule_id for rule_id, count in found.rule_counts().items() if count == 0]
    if missing:
        raise MissingRules(f"no conformance vector checks {', '.join(missing)}")


def vector_file(
    group: str, index: int, rule_list: list[Rule], vectors: list[dict[str, Any]]
) -> str:
    """One group's file: a header, then one vector per line (readable diffs, exact bytes)."""
    header = canonical({"format": FORMAT, "group": group, "index": index, "rules": {
        r.rule_id: r.text for r in rule_list if r.rule_id.startswith(group + "-")}})
    lines = ",\n".join(canonical(vector) for vector in vectors)
    return header[:-1] + ',"vectors":[\n' + lines + "\n]}\n"


def render(found: VectorSet) -> dict[str, str]:
    """File name -> text of the whole exported folder."""
    files = {
        f"{group}.json": vector_file(group, n, found.rules, vectors)
        for n, (group, vectors) in enumerate(found.by_group().items())
    }
    files["vectors.schema.json"] = canonical(VECTOR_FILE_SCHEMA) + "\n"
    files["README.md"] = readme(found)
    return files


class NotOurs(Exception):
    """The folder holds entries the exporter did not write: nothing is written or removed."""


_SIGNATURES = {
    "README.md": "Generated by `python -m livingspec.vectors export`",
    "vectors.schema.json": canonical(VECTOR_FILE_SCHEMA["title"]),
}
_GROUP_FILE = '{"format":"histtrim-conformance/'
_PEEK = 4096


def _written_by_export(path: Path) -> bool:
    """A regular file whose first or last bytes carry what the exporter writes there."""
    if path.is_symlink() or not path.is_file():
        return False
    with path.open("rb") as handle:
        head = handle.read(_PEEK).decode("utf-8", "replace")
        size = handle.seek(0, 2)
        handle.seek(max(size - _PEEK, 0))
        tail = handle.read(_PEEK).decode("utf-8", "replace")
    signature = _SIGNATURES.get(path.name)
    if signature is not None:
        return signature in head or signature in tail
    return path.suffix == ".json" and head.startswith(_GROUP_FILE) and '"group":' in head


def exported_entries(folder: Path) -> list[Path]:
    """The entries of an earlier export in `folder` (none when it is new or empty);
    `NotOurs` when it holds anything else (a port's `package.json`, its own README)."""
    if folder.exists() and not folder.is_dir():
        raise NotOurs(f"{folder} is not a folder")
    entries = sorted(folder.iterdir()) if folder.exists() else []
    foreign = [entry.name for entry in entries if not _written_by_export(entry)]
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5
                                          else "")
        raise NotOurs(f"{folder} holds files the exporter did not write ({shown}); export into "
                      "a new or empty folder")
    return entries


def write(folder: Path, files: dict[str, str]) -> None:
    """Write every file atomically (temp file, fsync, replace); stale group files go.
    Only a new or empty folder, or an earlier export, is written to (`exported_entries`)."""
    entries = exported_entries(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for stale in entries:
        if stale.name not in files:
            stale.unlink()
    for name, text in sorted(files.items()):
        atomic_write(folder / name, text)


def export(root: Path, folder: Path) -> VectorSet:
    exported_entries(folder)  # refuse a foreign folder before the long build
    found = build(root)
    write(folder, render(found))
    return found
