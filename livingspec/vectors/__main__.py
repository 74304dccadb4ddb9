"""`python -m livingspec.vectors export FOLDER`: rebuild the conformance vectors from the
chapters and the test strategies; `python -m livingspec.vectors serve --broken NAME`:
histtrim behind the protocol with one rule deliberately changed (chapter 12, the tests)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from histtrim.conformance.serve import serve
from livingspec.vectors.broken import BROKEN, broken
from livingspec.vectors.export import MissingRules, NotOurs, export

ROOT = Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m livingspec.vectors", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    to = sub.add_parser("export", help="write the vectors, JSON Schema and README to FOLDER")
    to.add_argument("folder", type=Path)
    bad = sub.add_parser("serve", help="histtrim behind the protocol, one rule changed")
    bad.add_argument("--broken", choices=sorted(BROKEN), required=True)
    args = parser.parse_args(argv)
    if args.command == "serve":
        with broken(args.broken):
            return serve(sys.stdin.buffer, sys.stdout.buffer)
    try:
        found = export(ROOT, args.folder)
    except (MissingRules, NotOurs) as error:
        print(f"livingspec: error: {error}", file=sys.stderr)
        return 1
    groups = ", ".join(f"{g} {len(v)}" for g, v in found.by_group().items())
    print(f"{len(found.vectors)} vectors written to {args.folder} ({groups})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
