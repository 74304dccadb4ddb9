"""`histtrim conformance`: run another implementation against the vectors, or serve histtrim
itself behind the protocol. (Exporting the vectors is the living spec's job:
`python -m livingspec.vectors export`.)"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from histtrim.cli.argtypes import timeout_seconds
from histtrim.cli.errors import EXIT_OK, InputError

EXIT_FAILED = 1
DEFAULT_VECTORS = Path("conformance") / "vectors"


def cmd_run(args: argparse.Namespace) -> int:
    from histtrim.conformance.report import junit, tally, text_report
    from histtrim.conformance.runner import run
    from histtrim.conformance.vectors import load, patterns, select

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
    from histtrim.conformance.serve import serve

    sys.stdin.reconfigure(encoding="utf-8")  # type: ignore[union-attr]
    sys.stdout.reconfigure(encoding="utf-8")  # type: ignore[union-attr]
    return serve(sys.stdin, sys.stdout)


def register(commands: argparse._SubParsersAction[Any]) -> None:
    """Add `conformance run|serve` to the `histtrim` command."""
    parser = commands.add_parser(
        "conformance",
        help="conformance vectors: run another implementation, serve histtrim",
        description="`run` checks another implementation of the spec against the exported "
        "vectors (it speaks the JSON Lines protocol on stdin/stdout); `serve` puts histtrim "
        "behind that protocol.",
    )
    sub = parser.add_subparsers(dest="conformance", required=True, parser_class=type(parser))
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
    serve.set_defaults(run=cmd_serve)
