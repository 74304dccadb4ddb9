"""`histtrim review`: replay recorded sessions through the agent loop once per policy and
print what each policy changes (trims, context lost, tokens sent, retries, refusals)."""

from __future__ import annotations

import argparse
import functools
import glob
import importlib
import math
import os
import re
from collections.abc import Sequence
from itertools import accumulate
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from histtrim.adapters.agent_sessions import SNIFF_BYTES, detect
from histtrim.adapters.anthropic_items import anthropic_items
from histtrim.adapters.tokenizers import INSTALL_HINT, tokenizers_available
from histtrim.cli.agentfiles import (
    AgentFile,
    checked_body,
    main_part,
    read_agent,
)
from histtrim.cli.argtypes import count, file_path, positive
from histtrim.cli.configs import load_config
from histtrim.cli.errors import EXIT_OK, InputError
from histtrim.cli.jsontext import display_name, read_bytes
from histtrim.cli.output import say
from histtrim.cli.rowfiles import read_rows, sniff
from histtrim.cli.sessions import read_session
from histtrim.cli.tokenizer import add_tokenizer_arg, token_counter
from histtrim.config import AgentConfig, ProviderProfile, RuntimeProfile
from histtrim.estimate import message_costs
from histtrim.messages import ChatMessage, ConversationMessage
from histtrim.policy import SPEC, Policy
from histtrim.review.cache import PROVIDERS, CacheModel, cache_model
from histtrim.review.compare import SessionLoadError, review_lines, run_review, settings_lines
from histtrim.review.recorded import fit_usage, model_window
from histtrim.review.replay import ReplaySettings
from histtrim.review.sessions import ReviewSession, recorded_times, session_from_items
from histtrim.route import select_route

SESSION_SUFFIXES = (".json", ".jsonl")
DEFAULT_WINDOW = 16_000
PROGRESS_FROM = 200
"""Show a progress bar from this many sessions on."""


def session_paths(inputs: Sequence[str]) -> list[str]:
    """Files named, files under directories (recursively), or glob matches; sorted, once each.
    A named or matched file that is not `.json` or `.jsonl` (a script beside the sessions) is
    skipped with a one-line note on stderr."""
    found: dict[str, None] = {}
    for given in inputs:
        path = Path(given)
        if path.is_dir():
            files = [p for p in path.rglob("*") if p.is_file() and p.suffix in SESSION_SUFFIXES]
            outputs = [p for p in files if _tool_output(p)]
            if outputs:
                say(f"histtrim: skipped {_files(len(outputs))} Claude Code keeps beside its "
                    f"transcripts in {given} (tool-results/, subagents/*.meta.json): not "
                    "sessions", err=True)
            cached = sum(map(_event_cache, files))
            if cached:
                say(f"histtrim: skipped {_files(cached)} OpenHands keeps as a cache of "
                    f"its events in {given} (event_cache/): not sessions", err=True)
            kept = [p for p in files if not (_tool_output(p) or _event_cache(p))]
            events = {p.parent for p in kept if _event_file(p)}
            kept = [p for p in kept if not _event_file(p)]
            kept, others = _beside_agent_sessions(kept, sessions=bool(events))
            if others:
                names = ", ".join(str(p.relative_to(path)) for p in others[:3])
                names += ", ..." if others[3:] else ""
                say(f"histtrim: skipped {_files(len(others))} in {given} that no agent's "
                    f"reader takes for a session ({names}): the folder holds an agent's "
                    "sessions; name a plain history file to review it", err=True)
            matches = sorted([str(p) for p in kept] + [str(folder) for folder in events])
        else:
            named = [given] if path.exists() else sorted(glob.glob(given, recursive=True))
            matches = [m for m in named if Path(m).suffix in SESSION_SUFFIXES]
            for skipped in (m for m in named if Path(m).suffix not in SESSION_SUFFIXES):
                say(f"histtrim: skipped {skipped}: not a session file (.json or .jsonl)", err=True)
            if named and not matches:
                continue
        if not matches:
            raise InputError(given, "no session files here (expected .json or .jsonl files)")
        found.update(dict.fromkeys(matches))
    if not found:
        raise InputError(inputs[0], "no session files here (expected .json or .jsonl files)")
    return list(found)


_EVENT_NAME = re.compile(r"\d{1,19}\.json")
EVENTS_FOLDER = "events"
"""OpenHands keeps a conversation as one file per event, `sessions/<id>/events/<n>.json`."""


def _event_file(path: Path) -> bool:
    return path.parent.name == EVENTS_FOLDER and _EVENT_NAME.fullmatch(path.name) is not None


def _event_cache(path: Path) -> bool:
    """OpenHands' pages of the events it already keeps one per file (`event_cache/`)."""
    return path.parent.name == "event_cache" and (path.parent.parent / EVENTS_FOLDER).is_dir()


def session_source(path: str) -> tuple[str, bytes]:
    """A session's name and bytes: a file's stem and bytes, or for an OpenHands events
    folder its conversation's id and its events in id order, one per line (a garbled
    event is one garbled line, counted by the reader)."""
    folder = Path(path)
    if not folder.is_dir():
        return folder.stem, read_bytes(path)
    numbered = sorted((int(p.name[:-5]), p) for p in folder.iterdir()
                      if _EVENT_NAME.fullmatch(p.name) and p.is_file())
    lines = [read_bytes(str(p)).replace(b"\r", b" ").replace(b"\n", b" ")
             for _, p in numbered]
    return folder.parent.name, b"\n".join(lines) + b"\n"


def _files(count: int) -> str:
    return "1 file" if count == 1 else f"{count} files"


def _beside_agent_sessions(
    files: Sequence[Path], *, sessions: bool
) -> tuple[list[Path], list[Path]]:
    """The files of a folder kept for review, and, when it holds an agent's own sessions
    (`sessions`: found by other means), the ones no reader takes for one, sorted: what the
    agent keeps beside them (Codex's and Claude Code's prompt history, settings,
    credentials, todo lists, OpenHands' conversation metadata), not conversations. Each
    file's first `SNIFF_BYTES` decide, one file at a time."""
    agent = [detect(_head(path)) is not None for path in files]
    if not sessions and not any(agent):
        return list(files), []
    return ([p for p, known in zip(files, agent, strict=True) if known],
            sorted(p for p, known in zip(files, agent, strict=True) if not known))


def _head(path: Path) -> bytes:
    try:
        with open(path, "rb") as file:
            return file.read(SNIFF_BYTES)
    except OSError as error:
        raise InputError(str(path), f"cannot read: {error.strerror or error}") from None


def _tool_output(path: Path) -> bool:
    """A file Claude Code keeps beside a `<session>.jsonl` transcript that is no session: a
    large tool result it moved to `<session>/tool-results/<id>.<ext>` (the transcript keeps
    the preview the model saw), or a side agent's description,
    `<session>/subagents/agent-<id>.meta.json` (its transcript is the `.jsonl` beside it)."""
    folder = path.parent
    if folder.name == "tool-results":
        return folder.parent.with_suffix(".jsonl").is_file()
    return (folder.name == "subagents" and path.name.endswith(".meta.json")
            and folder.parent.with_suffix(".jsonl").is_file())


def _flag(path: str, wrapper: dict[str, Any], key: str, kind: type) -> Any:
    value = wrapper.get(key)
    if value is not None and type(value) is not kind:
        raise InputError(path, f"expected {kind.__name__}, got {value!r}", field=key)
    return value


def _true_window(args: argparse.Namespace, window: int | None) -> int | None:
    """`--true-window`, else three quarters of the declared window (the model's real
    tokenizer counts more than the estimate: overflows happen)."""
    if args.true_window is not None:
        return int(args.true_window)
    return max(1, window * 3 // 4) if window else None


def _budget(args: argparse.Namespace) -> int:
    """`--budget`, else half the declared window: below the true window (3/4 of it by
    default), so proactive trims (RUN-1) do the work and overflows stay the exception."""
    return int(args.budget) if args.budget is not None else max(1, args.window // 2)


def seconds(text: str) -> float:
    """A number of seconds on the command line: finite, 0 to a year."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or not 0 <= value <= 31_536_000:
        raise argparse.ArgumentTypeError(f"expected 0 to 31536000 seconds, got {text!r}")
    return value


def load_session(path: str) -> ReviewSession:
    """A session file as a replay. An object file may say `"crumb_present": true` (the row
    after the system rows is the breadcrumb) and `"restored_turns": N` (the first N turns
    were restored, not replayed)."""
    name, data = session_source(path)
    recorded = agent_session(path, data, name)
    if recorded is not None:
        return recorded
    if sniff(data) == "anthropic":
        items, wrapper = _anthropic_session(path, data)
    else:
        session = read_session(path, data=data)
        items, wrapper = session.items, session.wrapper or {}
    crumb = bool(_flag(path, wrapper, "crumb_present", bool))
    restored = _flag(path, wrapper, "restored_turns", int) or 0
    try:
        return session_from_items(
            name, items, crumb_present=crumb, restored_turns=restored
        )
    except ValueError as error:
        raise InputError(path, str(error).split("\n", 1)[0]) from None


def _anthropic_session(path: str, data: bytes) -> tuple[list[ConversationMessage], dict[str, Any]]:
    """An Anthropic request body (or its messages as JSON Lines) as structured items, each
    tool result with its own images; bad input names its line and field."""
    source = display_name(path)
    history = read_rows(source, data, "anthropic")
    assert history is not None  # an Anthropic file is read here or refused with its error
    messages = [history.record(i) for i in range(history.records)]
    body = {k: v for k, v in (history.body or {}).items() if k != "messages"}
    items = anthropic_items({**body, "messages": messages} if history.body else messages)
    return items, body


@functools.lru_cache(maxsize=4)
def _times(path: str) -> dict[str, list[float | None]]:
    """A call-times file, read once per process (every worker loads its own sessions)."""
    try:
        return recorded_times(path)
    except OSError as error:
        raise InputError(path, f"cannot read: {error.strerror or error}") from None
    except ValueError as error:
        raise InputError(path, str(error).removeprefix(f"{path}: ")) from None


def load_timed_session(times: str, path: str) -> ReviewSession:
    """`load_session` with the session's recorded call times from the file `times`."""
    session = load_session(path)
    found = _times(times).get(session.name)
    return session if found is None else session.with_times(found)
def agent_session(path: str, data: bytes, name: str | None = None) -> ReviewSession | None:
    """An agent's own session file (its longest context) as a replay whose provider counts
    requests as the recorded usage says (`histtrim.review.recorded`); None for other files.
    `name`: the session's (default: the file's stem)."""
    name = Path(path).stem if name is None else name
    found = read_agent(data, name)
    if found is None:
        return None
    part = main_part(found[1], longest=True)
    if part is None:  # a summary-only file, as a project folder holds: nothing to replay
        return ReviewSession(name=name, turns=())
    agent = AgentFile(*found, part, checked_body(display_name(path), part))
    if agent.format == "anthropic":
        items, _ = _anthropic_session(path, agent.body)
    else:
        items = read_session(path, "openai", data=agent.body).items
    history = read_rows(display_name(path), agent.body, agent.format)  # type: ignore[arg-type]
    rows = [item for item in items if isinstance(item, ChatMessage)]
    costs = list(history.costs) if history is not None else message_costs(rows)
    sums = list(accumulate(costs, initial=0))
    shift = 1 if agent.part.system else 0
    calls = [(c.input_tokens, sums[min(c.record + shift, len(costs))])
             for c in agent.part.calls]
    model = next((c.model for c in reversed(agent.part.calls) if c.model), None)
    try:
        session = session_from_items(name, items)
    except ValueError as error:
        raise InputError(path, str(error).split("\n", 1)[0]) from None
    return session.model_copy(update={"recorded": fit_usage(calls, model)})


def recorded_window(paths: Sequence[str]) -> tuple[int, str] | None:
    """The window of the first recorded model the route table knows, read from the session
    files in order (an agent's file names its model; a plain history file ends the search)."""
    for path in paths:
        name, data = session_source(path)
        found = read_agent(data, name)
        if found is None:
            return None
        for part in found[1].parts:  # a file with no conversation names no model: the next
            for call in part.calls:
                window = model_window(call.model)
                if window is not None and call.model is not None:
                    return window, call.model
    return None


def load_sessions(inputs: Sequence[str]) -> list[ReviewSession]:
    """Every session file under `inputs` (files, directories or globs), as replays."""
    return [load_session(path) for path in session_paths(inputs)]


def load_policy(path: str) -> Policy:
    """A policy file; a bad value is reported with its file and field."""
    return load_config(path, Policy)


def policies_from(paths: Sequence[str]) -> list[tuple[str, Policy]]:
    """The spec first (the baseline), then each policy file labelled by its name."""
    pairs: list[tuple[str, Policy]] = [("spec", SPEC)]
    for path in paths:
        label = Path(path).stem
        if label in dict(pairs):
            raise InputError(path, f"two policies are named {label!r}")
        pairs.append((label, load_policy(path)))
    return pairs


def cache_from(args: argparse.Namespace) -> CacheModel | None:
    """`--cache` (a provider's name or a file of the user's numbers) with `--input-price`."""
    given, price = args.cache, args.input_price
    if given is None:
        if price is not None:
            raise InputError("--input-price", "needs --cache")
        return None
    try:
        model = cache_model(given)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise InputError(given, first["msg"], field=field or None) from None
    except (OSError, ValueError) as error:
        names = ", ".join(PROVIDERS)
        raise InputError(given, f"{error} (or a provider: {names})") from None
    if price is None:
        return model
    try:
        return CacheModel.model_validate({**model.model_dump(), "input_price_per_mtok": price})
    except ValidationError as error:
        raise InputError("--input-price", error.errors()[0]["msg"]) from None


def _needs_extra(args: argparse.Namespace, option: str, module: str, what: str) -> None:
    """A one-line error before any replay when `--option` needs a package of the `review`
    extra that is not installed."""
    if getattr(args, option, None) is None:
        return
    try:
        importlib.import_module(module)
    except ImportError:
        raise InputError(f"--{option}", f"{what} (pip install 'histtrim[review]')") from None


def settings_from(args: argparse.Namespace) -> ReplaySettings:
    """The route to replay on: `--budget` on a declared `--window`, or a configured agent."""
    true_policy = load_policy(args.true_policy) if args.true_policy else SPEC
    token_counter(args)  # a missing extra is a one-line error before any replay
    if getattr(args, "provider_usage", None) and not tokenizers_available():
        raise InputError("--provider-usage", f"needs the optional extra: {INSTALL_HINT}")
    _needs_extra(args, "html", "matplotlib", "the report's figures need matplotlib")
    _needs_extra(args, "dask", "distributed", "a Dask cluster needs the 'distributed' package")
    tokenizer = getattr(args, "tokenizer", None)
    if args.config is not None:
        config = load_config(args.config, AgentConfig)
        try:
            runtime = select_route(config, args.agent)
        except ValueError as error:
            raise InputError(args.config, str(error).split("\n", 1)[0]) from None
        provider = runtime.provider or ProviderProfile()
        window = provider.context_window or None
        return ReplaySettings(
            profile=runtime.profile,
            provider=provider,
            selected_model=runtime.model,
            true_window=_true_window(args, window),
            true_policy=true_policy,
            tokenizer=tokenizer,
            provider_usage=getattr(args, "provider_usage", None),
        )
    given = args.max_tool_iterations
    profile = RuntimeProfile(max_context_tokens=_budget(args))
    if given is not None:
        profile = profile.model_copy(update={"max_tool_iterations": given})
    return ReplaySettings(
        profile=profile,
        provider=ProviderProfile(model="replay-model", context_window=args.window),
        true_window=_true_window(args, args.window),
        true_policy=true_policy,
        tokenizer=tokenizer,
        provider_usage=getattr(args, "provider_usage", None),
        recorded_tool_rounds=given is None,  # every recorded call replayed unless limited
    )


def clock_from(args: argparse.Namespace) -> dict[str, Any]:
    """The replay clock's settings (CACHE-1..3 and the cache's lifetime): on with `--times`,
    `--think-seconds` or `--idle-seconds`; off (no times, the cache always warm) otherwise."""
    if args.times is None and args.think_seconds is None and args.idle_seconds is None:
        return {}
    return {
        "think_seconds": 5.0 if args.think_seconds is None else args.think_seconds,
        "idle_seconds": args.idle_seconds or 0.0,
        "recorded_times": args.times is not None,
    }


def cmd_review(args: argparse.Namespace) -> int:
    if args.config is not None and args.budget is not None:
        raise InputError("--config", "cannot be combined with --budget")
    if (args.config is None) != (args.agent is None):
        raise InputError("--config", "--config and --agent go together")
    paths = session_paths(args.sessions)
    notes: list[str] = []
    if args.window is None:
        found = recorded_window(paths) if args.config is None else None
        args.window = DEFAULT_WINDOW if found is None else found[0]
        if found is not None:
            notes.append(f"window: {found[0]} tokens, {found[1]}'s (the recorded model)")
            if args.true_window is None:  # the recorded usage is the provider's own count
                args.true_window = found[0]
    policies = policies_from(args.policy)
    cache = cache_from(args)
    settings = settings_from(args).model_copy(update={"measure_loss": True, **clock_from(args)})
    loader = load_session
    if args.times is not None:
        _times(args.times)  # a bad file is one error before any replay
        loader = functools.partial(load_timed_session, args.times)
    if cache is not None:
        settings = settings.model_copy(update={"record_prompts": True})
    progress = args.progress if args.progress is not None else len(paths) >= PROGRESS_FROM
    try:
        review = run_review(
            paths, policies, settings, loader=loader, workers=args.workers,
            dask=args.dask, progress=progress,
        )
    except SessionLoadError as error:
        raise InputError(error.path, error.problem.removeprefix(f"{error.path}: ")) from None
    except ValueError as error:
        if args.dask is None or not str(error).startswith("dask: "):
            raise
        raise InputError("--dask", str(error).removeprefix("dask: ")) from None
    say(*notes, *settings_lines(settings, policies[0][1], cache),
        *review_lines(review, cache=cache))
    if args.html:
        from histtrim.review.report import write_report

        try:
            write_report(args.html, review, settings, cache)
        except OSError as error:
            raise InputError(args.html, f"cannot write: {error.strerror or error}") from None
        say(f"report: {args.html}")
    return EXIT_OK


def add_review_command(commands: Any) -> None:
    """Register `histtrim review` on the `histtrim` subcommands."""
    review = commands.add_parser(
        "review",
        help="replay sessions through the agent loop once per policy and compare",
        description="Replays each session through the agent loop with a scripted provider "
        "whose real window (--true-window) is hidden from the runtime, once with the spec's "
        "policy and once per --policy file, and prints a side-by-side table.",
    )
    review.add_argument("sessions", nargs="+", help="session files, directories or globs")
    review.add_argument("--policy", action="append", default=[], help="a policy .toml/.json")
    review.add_argument(
        "--budget", type=count,
        help="max_context_tokens (default: half the declared window; 0: proactive off)",
    )
    review.add_argument("--config", help="agent config (.toml or .json) instead of --budget")
    review.add_argument("--agent", help="agent name in the config")
    review.add_argument(
        "--window", type=positive, default=None,
        help="the model's declared context_window (default: the recorded model's when an "
        f"agent's session file names one the route table knows, else {DEFAULT_WINDOW})",
    )
    review.add_argument(
        "--true-window", type=positive,
        help="the provider's real window, hidden from the runtime (default: 3/4 of the "
        "declared window)",
    )
    review.add_argument("--true-policy", help="how the provider really prices (default: spec)")
    review.add_argument("--max-tool-iterations", type=positive, default=None,
                        help="tool rounds the replayed agent may run per turn; a turn it "
                        "ends before the recording's last call is a failed turn (default: "
                        "10, or as many as a session's turn recorded)")
    review.add_argument(
        "--html", type=file_path, help="write a self-contained HTML report here"
    )
    review.add_argument(
        "--cache", metavar="PROVIDER|FILE",
        help=f"price each policy's requests with a prompt cache: {', '.join(PROVIDERS)}, or a "
        ".toml/.json file with min_prefix, granularity, read, write and source",
    )
    review.add_argument(
        "--input-price", metavar="PER_MTOK",
        help="normal input price per million tokens (text: '3' or '2.5'), for costs in money",
    )
    review.add_argument(
        "--times", metavar="FILE",
        help="the sessions' recorded call times (tools/call_times.py's JSON): each replayed "
        "request is made at its recorded time, for the cache's lifetime and a cold-cache "
        "policy (CACHE-1..3)",
    )
    review.add_argument(
        "--think-seconds", type=seconds, default=None,
        help="the replay clock: seconds between a reply and the next request (default 5 "
        "once the clock is on)",
    )
    review.add_argument(
        "--idle-seconds", type=seconds, default=None,
        help="the replay clock: seconds the user takes before each turn (default 0)",
    )
    add_tokenizer_arg(review)
    review.add_argument(
        "--provider-usage", choices=("o200k_base", "cl100k_base"),
        help="the replayed provider reports each request's input counted with this "
        "vocabulary, and the agent trims on the report (USAGE-1..6; needs the extra "
        "histtrim[tokenizers])",
    )
    review.add_argument(
        "--workers", type=positive, help=f"processes (default: every core, {os.cpu_count()})"
    )
    review.add_argument(
        "--dask", metavar="ADDRESS",
        help="run on this Dask scheduler; it must be a cluster you trust (results come back "
        "pickled, and unpickling runs whatever the scheduler sends)",
    )
    review.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=None,
        help=f"progress bar on stderr (default: from {PROGRESS_FROM} sessions on)",
    )
    review.set_defaults(run=cmd_review)
