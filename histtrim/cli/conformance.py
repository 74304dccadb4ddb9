"""`histtrim conformance`: export the vectors, run another implementation against them, or
serve histtrim itself behind the protocol."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..conformance.broken import BROKEN
from .argtypes import timeout_seconds
from .errors import EXIT_OK, InputError

EXIT_FAILED = 1
DEFAULT_VECTORS = Path("conformance") / "vectors"


def cmd_export(args: argparse.Namespace) -> int:
    from ..conformance.export import MissingRules, export

    root = Path(args.root)
    for needed in (root / "notebooks" / "spec" / "RULES.md", root / "tests" / "strategies.py"):
        if not needed.is_file():
            raise InputError(str(needed), "not found: export runs from a histtrim checkout "
                             "(--root)")
    try:
        found = export(root, Path(args.folder))
    except MissingRules as error:
        print(f"histtrim: error: {error}", file=sys.stderr)
        return EXIT_FAILED
    groups = ", ".join(f"{g} {len(v)}" for g, v in found.by_group().items())
    print(f"{len(found.vectors)} vectors written to {args.folder} ({groups})", file=sys.stderr)
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    from ..conformance.report import junit, tally, text_report
    from ..conformance.runner import run
    from ..conformance.vectors import load, patterns, select

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise InputError("run", "no implementation command: histtrim conformance run -- CMD ARGS")
    folder = Path(args.vectors)
    try:
        vectors, rule_texts = load(folder)
        scope = patterns(args.rules)
    except (OSError, ValueError, KeyError) as error:
        raise InputError(str(folder), str(error)) from None
    chosen = select(vectors, scope)
    if not chosen:
        raise InputError("--rules", f"no vector checks a rule matching {args.rules!r}")
    outcomes = run(chosen, command, timeout=args.timeout)
    rows = tally(outcomes, list(rule_texts), scope)
    print(text_report(rows))
    passed = sum(o.status == "passed" for o in outcomes)
    print(f"\n{passed}/{len(outcomes)} vectors passed; "
          f"{sum(not r.ok for r in rows)} of {len(rows)} rules not passing")
    if args.junit:
        junit(outcomes, rows, Path(args.junit))
    return EXIT_OK if passed == len(outcomes) else EXIT_FAILED


def cmd_serve(args: argparse.Namespace) -> int:
    from ..conformance.serve import serve

    sys.stdin.reconfigure(encoding="utf-8")  # type: ignore[union-attr]
    sys.stdout.reconfigure(encoding="utf-8")  # type: ignore[union-attr]
    return serve(sys.stdin, sys.stdout, broken_name=args.broken)


def register(commands: argparse._SubParsersAction[Any]) -> None:
    """Add `conformance export|run|serve` to the `histtrim` command."""
    parser = commands.add_parser(
        "conformance", help="conformance vectors: export, run another implementation, serve"
    )
    sub = parser.add_subparsers(dest="conformance", required=True, parser_class=type(parser))
    export = sub.add_parser("export", help="write the vectors, JSON Schema and README to FOLDER")
    export.add_argument("folder")
    export.add_argument("--root", default=".", help="the histtrim checkout (default: .)")
    export.set_defaults(run=cmd_export)

    run = sub.add_parser(
        "run", help="run an implementation against the vectors: run [OPTIONS] -- CMD ARGS..."
    )
    run.add_argument("--vectors", default=str(DEFAULT_VECTORS),
                     help=f"the exported folder (default: {DEFAULT_VECTORS})")
    run.add_argument("--rules", help="comma-separated rule IDs or patterns, e.g. 'KEEP-*,EST-*'")
    run.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report")
    run.add_argument("--timeout", type=timeout_seconds, default=10.0,
                     help="seconds per vector (default 10)")
    run.add_argument("command", nargs=argparse.REMAINDER, help="-- the implementation's command")
    run.set_defaults(run=cmd_run)

    serve = sub.add_parser("serve", help="histtrim behind the JSON Lines protocol (stdin/stdout)")
    serve.add_argument("--broken", choices=sorted(BROKEN),
                       help="a deliberately broken variant (one rule changed), for the chapter")
    serve.set_defaults(run=cmd_serve)
