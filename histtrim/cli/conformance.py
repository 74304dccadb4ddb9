"""`histtrim conformance`: run another implementation against the vectors, or serve histtrim
itself behind the protocol. (Exporting the vectors is the living spec's job:
`python -m livingspec.vectors export`.)"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from histtrim.cli.argtypes import answer_bytes, positive, timeout_seconds
from histtrim.cli.errors import EXIT_OK, InputError
from histtrim.cli.output import say
from histtrim.conformance.runner import MAX_ANSWER_BYTES

EXIT_FAILED = 1
DEFAULT_VECTORS = Path("conformance") / "vectors"


def cmd_run(args: argparse.Namespace) -> int:
    from histtrim.conformance.report import junit, tally, text_report
    from histtrim.conformance.runner import CannotStart, run
    from histtrim.conformance.vectors import function_names, load, patterns, select

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise InputError("run", "no implementation command: histtrim conformance run -- CMD ARGS")
    folder = Path(args.vectors)
    try:
        vectors, rule_texts = load(folder)
    except (OSError, ValueError) as error:
        raise InputError(str(folder), str(error)) from None
    try:
        scope = patterns(args.rules)
        functions = function_names(args.functions, vectors)
    except ValueError as error:
        raise InputError("run", str(error)) from None
    in_scope = select(vectors, scope)
    chosen = select(in_scope, ("*",), functions)
    if not chosen:
        raise InputError("run", f"no vector checks a rule matching {args.rules!r} with "
                         f"the functions {args.functions!r}")
    try:
        result = run(chosen, command, timeout=args.timeout, window=args.window,
                     max_answer_bytes=args.max_answer_bytes)
    except CannotStart as error:
        raise InputError("run", str(error)) from None
    outcomes = result.outcomes
    rows = tally(outcomes, list(rule_texts), scope, in_scope if functions else ())
    say(*text_report(rows, result).split("\n"))
    passed = sum(o.status == "passed" for o in outcomes)
    uncovered = sum(not r.covered for r in rows)
    say("", f"{passed}/{len(outcomes)} vectors passed; "
        f"{sum(r.covered and not r.ok for r in rows)} of {len(rows) - uncovered} rules "
        "not passing" + (f"; {uncovered} rules not covered" if uncovered else ""))
    if args.junit:
        try:
            junit(outcomes, Path(args.junit))
        except OSError as error:
            raise InputError(args.junit, f"cannot write: {error.strerror or error}") from None
    return EXIT_OK if passed == len(outcomes) else EXIT_FAILED


def cmd_serve(args: argparse.Namespace) -> int:
    from histtrim.conformance.serve import serve

    return serve(sys.stdin.buffer, sys.stdout.buffer)


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
    run.add_argument("--functions", help="comma-separated protocol functions the "
                     "implementation offers; rules only other functions check are reported "
                     "as not covered")
    run.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report")
    run.add_argument("--window", type=positive, default=4,
                     help="requests outstanding at once (default 4; 1 pins a crash on its "
                     "vector even for an implementation that answers out of order)")
    run.add_argument("--max-answer-bytes", type=answer_bytes, default=MAX_ANSWER_BYTES,
                     help=f"the longest answer line read (default {MAX_ANSWER_BYTES}); a "
                     "longer one, or one over 8 times the largest expected answer + 1 MiB, "
                     "fails its vector")
    run.add_argument("--timeout", type=timeout_seconds, default=10.0,
                     help="seconds per vector (default 10)")
    run.add_argument("command", nargs=argparse.REMAINDER, help="-- the implementation's command")
    run.set_defaults(run=cmd_run)

    serve = sub.add_parser("serve", help="histtrim behind the JSON Lines protocol (stdin/stdout)")
    serve.set_defaults(run=cmd_serve)
