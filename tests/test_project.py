"""Project-level checks: environment.yml vs pyproject.toml, the rules copy, rule citations."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from hypothesis import settings

from livingspec.specindex import BEYOND_THE_SPEC, rule_coverage, rules, spec_rules

ROOT = Path(__file__).resolve().parent.parent
SHARED_RULES = ROOT.parent / "shared" / "spec" / "RULES.md"
RULES = ROOT / "notebooks" / "spec" / "RULES.md"
RULE_ID = re.compile(
    r"\b(?:TURN|KEEP|BUDGET|CAP|ROUTE|EST|RUN|LIMIT|SEEN|PAIR|USAGE|CTX|CACHE)-\d+\b"
)
EXPECTED_RULE_COUNT = 44
"""The rules cut from the Spanish spec; sections marked beyond it add the reference's."""


def _norm(name: str) -> str:
    """PEP 503 normalization of a distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _req_name(spec: str) -> str:
    """The distribution name of a requirement or conda spec ('nbval==0.11.*' -> 'nbval')."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", spec)
    assert match, f"unparsable requirement: {spec!r}"
    return _norm(match.group(1))


def _parse_environment_yml(text: str) -> tuple[str | None, list[str], list[str]]:
    """Hand-parse environment.yml: (name, conda dependencies, pip dependencies)."""
    name: str | None = None
    conda: list[str] = []
    pip: list[str] = []
    section: str | None = None
    in_pip = False
    pip_indent = -1
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip())
        stripped = line.strip()
        if indent == 0:
            key, _, value = stripped.partition(":")
            section = key
            in_pip = False
            if key == "name":
                name = value.strip()
            continue
        if section != "dependencies" or not stripped.startswith("- "):
            continue
        item = stripped[2:].strip()
        if in_pip and indent > pip_indent:
            pip.append(item)
            continue
        in_pip = False
        if item == "pip:":
            in_pip = True
            pip_indent = indent
            continue
        conda.append(item)
    return name, conda, pip


def test_environment_yml_matches_pyproject() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    project = pyproject["project"]
    extras = project["optional-dependencies"]
    # Every extra: the optional packages (langchain-core, bpe-openai, ...) are listed too.
    declared = {
        _req_name(r)
        for r in [*project["dependencies"], *(dep for deps in extras.values() for dep in deps)]
    } - {"histtrim"}  # an extra may name others ("histtrim[plotting]")

    name, conda, pip = _parse_environment_yml(
        (ROOT / "environment.yml").read_text(encoding="utf-8")
    )
    assert name == "histtrim"
    conda_names = [_req_name(dep) for dep in conda]
    assert "python" in conda_names
    assert "pip" in conda_names
    assert len(conda_names) == len(set(conda_names)), "duplicate conda dependency"
    assert pip[0] == "-e .", "the pip section installs the project first"
    assert "-e ./livingspec" in pip, "the living spec's machinery, not in the wheel"
    pip_names = [_req_name(dep) for dep in pip[1:] if not dep.startswith("-e ")]  # PyPI only
    assert not set(pip_names) & set(conda_names), "a package listed for both conda and pip"
    assert (set(conda_names) - {"python", "pip"}) | set(pip_names) == declared


def test_python_versions_agree() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["requires-python"] == ">=3.11"
    _, conda, _ = _parse_environment_yml((ROOT / "environment.yml").read_text(encoding="utf-8"))
    assert "python=3.11" in conda


def test_nbval_pinned_in_both() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "nbval==0.11.*" in pyproject["project"]["optional-dependencies"]["dev"]
    _, conda, _ = _parse_environment_yml((ROOT / "environment.yml").read_text(encoding="utf-8"))
    assert "nbval=0.11" in conda


def test_rules_copy_is_verbatim() -> None:
    """The shared rules verbatim, then only sections marked beyond the Spanish spec."""
    text = RULES.read_text(encoding="utf-8")
    if SHARED_RULES.exists():
        shared = SHARED_RULES.read_text(encoding="utf-8")
        assert text.startswith(shared)
        added = re.findall(r"^## (.+)$", text[len(shared) :], flags=re.MULTILINE)
        assert all(BEYOND_THE_SPEC in section for section in added), added
    assert (RULES.parent / "history-management.es.txt").is_file()
    ids = RULE_ID.findall(text)
    # Each rule is one bullet starting with its ID; 44 distinct rules come from the spec.
    bullets = re.findall(r"^- (\S+) ", text, flags=re.MULTILINE)
    assert len(bullets) == len(set(bullets)) == len(rules(RULES))
    assert len(spec_rules(RULES)) == EXPECTED_RULE_COUNT
    assert set(bullets) <= set(ids)
    assert len(set(ids)) == len(bullets)


def _rule_ids() -> list[str]:
    return sorted(set(RULE_ID.findall(RULES.read_text(encoding="utf-8"))))


def test_every_rule_is_cited() -> None:
    """Every rule ID is cited verbatim in a notebook heading and in a test file."""
    demonstrated = {
        entry.rule_id for entry in rule_coverage(ROOT / "notebooks") if not entry.missing
    }
    tests = [
        p.read_text(encoding="utf-8")
        for p in sorted((ROOT / "tests").rglob("*.py"))
        if p.name != "test_project.py"
    ]
    missing: dict[str, list[str]] = {}
    for rule in _rule_ids():
        pattern = re.compile(rf"\b{re.escape(rule)}\b")
        where = []
        if rule not in demonstrated:
            where.append("notebook heading")
        if not any(pattern.search(src) for src in tests):
            where.append("test")
        if where:
            missing[rule] = where
    assert not missing, f"rule IDs not cited: {missing}"


def test_ci_runs_make_test() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert script.startswith("#!")
    assert "set -euo pipefail" in script
    assert re.search(r"^make test$", script, flags=re.MULTILINE)


def test_sanitize_cfg_format() -> None:
    lines = (ROOT / "notebooks" / "sanitize.cfg").read_text(encoding="utf-8").splitlines()
    pairs = [
        (line, lines[i + 1])
        for i, line in enumerate(lines)
        if line.startswith("regex:") and i + 1 < len(lines)
    ]
    assert pairs, "no regex/replace pairs"
    for regex_line, replace_line in pairs:
        assert regex_line.startswith("regex: ") and not regex_line.startswith("regex:  ")
        assert replace_line.startswith("replace: ")
        re.compile(regex_line.removeprefix("regex: "))
    regexes = {r.removeprefix("regex: ") for r, _ in pairs}
    assert "0x[0-9a-fA-F]+" in regexes
    assert r"https://errors\.pydantic\.dev/[0-9.]+/" in regexes


def test_plain_pytest_uses_the_ci_hypothesis_settings(pytestconfig: pytest.Config) -> None:
    """Without `--hypothesis-profile`, pytest runs what `make test` runs: 500+ derandomized
    examples and no example database (nothing written into the source tree)."""
    chosen = pytestconfig.getoption("hypothesis_profile", None)
    if chosen not in (None, "ci"):
        pytest.skip(f"--hypothesis-profile={chosen} was asked for")
    assert settings.default.max_examples >= 500
    assert settings.default.derandomize is True
    assert settings.default.database is None
