"""The `histtrim` command: trim a session file by whole turns, show its estimate per turn,
and explain how a configuration resolves the budget and capacity of a route.

Bad input (a missing file, invalid JSON, a malformed message, an unknown agent) is
reported on one line naming the file, the line and the field, with exit code 2."""


from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib import metadata
from typing import NoReturn

from histtrim.cli.argtypes import count, file_path, instant
from histtrim.cli.conformance import register as register_conformance
from histtrim.cli.errors import EXIT_BAD_INPUT, EXIT_OK, InputError
from histtrim.cli.estimate import cmd_estimate
from histtrim.cli.explain import cmd_explain
from histtrim.cli.output import say
from histtrim.cli.review import add_review_command
from histtrim.cli.tokenizer import add_tokenizer_arg
from histtrim.cli.trim import cmd_trim

__all__ = [
    "build_parser",
    "main",
]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="histtrim",
        description="Trim chat histories by whole turns and explain context budgets.",
    )
    parser.add_argument("--version", action="version", version=f"histtrim {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def session_args(command: argparse.ArgumentParser) -> None:
        command.add_argument(
            "session",
            help="a JSON array, a request body (an object with 'messages'), or JSON Lines",
        )
        command.add_argument(
            "--format",
            choices=("histtrim", "openai", "anthropic"),
            help="skip auto-detection (histtrim rows, OpenAI messages, Anthropic request body)",
        )
        command.add_argument(
            "--crumb-present",
            action="store_true",
            help="the message after the leading system messages is the breadcrumb",
        )

    def route_args(command: argparse.ArgumentParser, required: bool) -> None:
        command.add_argument("--config", required=required, help="agent config (.toml or .json)")
        command.add_argument("--agent", required=required, help="agent name in the config")
        command.add_argument("--model", help="an explicit session switch to this model")
        command.add_argument("--hint", help="a classifier hint naming a configured route")

    trim = commands.add_parser(
        "trim",
        help="drop the oldest whole turns; writes the history, reports on stderr",
        description="Writes the trimmed history in the input's format (stdout or -o); prints "
        "each HistoryTrimmed event as JSON and a summary line on stderr.",
    )
    session_args(trim)
    limit = trim.add_mutually_exclusive_group()
    limit.add_argument("--budget", type=count, help="token budget (0 disables the trim)")
    limit.add_argument("--max-turns", type=count, help="keep at most this many turns")
    route_args(trim, required=False)
    trim.add_argument("-o", "--output", type=file_path, help="write here instead of stdout")
    trim.add_argument(
        "--policy",
        help="a policy .toml/.json: its constants price the rows, and a low-water target below "
        "1 keeps the cut the Agent would hold over the requests the history records",
    )
    trim.add_argument("--token-target", metavar="RATIO",
                      help="the policy's token_trim_target, e.g. 7/10 (default: 1, the spec)")
    trim.add_argument("--turn-target", metavar="RATIO",
                      help="the policy's turn_trim_target, e.g. 1/2 (default: 1, the spec)")
    trim.add_argument(
        "--ignore-usage", action="store_true",
        help="do not read the provider's recorded usage (the last reply's `usage`: OpenAI "
        "prompt_tokens, Anthropic input plus cache tokens); by default, when it reports more "
        "input than the budget, the budget is scaled by estimate / reported (USAGE-1..5)",
    )
    trim.add_argument(
        "--now", type=instant, metavar="TIME",
        help="an agent's session file: when the next request is made (ISO 8601, e.g. "
        "2026-12-07T18:30:00Z), for a --policy with a cold_cache (CACHE-1..3); default: the "
        "last recorded call's time (a warm cache); the file's own times say which recorded "
        "requests were cold",
    )
    add_tokenizer_arg(trim)
    trim.set_defaults(run=cmd_trim, command_parser=trim)

    estimate = commands.add_parser(
        "estimate",
        help="per-turn messages, tokens and images",
        description="Prints one line per turn (its first line in the file, messages, tokens, "
        "images, and the tokens kept if the trim keeps that turn and every newer one), then "
        "the totals. Nothing is written.",
    )
    session_args(estimate)
    add_tokenizer_arg(estimate)
    estimate.set_defaults(run=cmd_estimate)

    explain = commands.add_parser(
        "explain",
        help="how the budget and capacity of a route are resolved, rule by rule",
        description="Resolves the agent's route in the config (an explicit --model switch, "
        "else a --hint, else the default) and prints each step of its budget and capacity "
        "with the rule that decides it.",
    )
    route_args(explain, required=True)
    explain.set_defaults(run=cmd_explain)
    register_conformance(commands)
    add_review_command(commands)
    return parser


def _check_trim_args(args: argparse.Namespace) -> None:
    """The limits `trim` needs; a mistake shows `trim`'s usage, not the top-level one."""
    if args.command != "trim":
        return
    parser: argparse.ArgumentParser = args.command_parser
    chosen = [name for name in ("budget", "max_turns") if getattr(args, name) is not None]
    if args.config is not None and chosen:
        parser.error(f"--config cannot be combined with --{chosen[0].replace('_', '-')}")
    if args.config is None and not chosen:
        parser.error("one of --budget, --max-turns or --config is required")
    if (args.config is None) != (args.agent is None):
        parser.error("--config and --agent go together")
    if args.config is None and (args.model is not None or args.hint is not None):
        parser.error("--model and --hint need --config")


def _version() -> str:
    """The installed distribution's version (the source tree's when not installed)."""
    try:
        return metadata.version("histtrim")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit code (0, or 2 for bad input or arguments)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        _check_trim_args(args)
    except SystemExit as exit:
        return exit.code if isinstance(exit.code, int) else EXIT_BAD_INPUT
    try:
        code: int = args.run(args)
    except InputError as error:
        say(f"histtrim: error: {error}", err=True)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # The reader went away (`histtrim ... | head`): not an error of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    return code
