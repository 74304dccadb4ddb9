"""The implementers' README written into the exported folder (counts included)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from histtrim.conformance.codec import canonical
from histtrim.conformance.compare import SHOWN_CHARS
from histtrim.conformance.runner import ANSWER_SLACK, MAX_ANSWER_BYTES, MAX_ANSWER_DEPTH
from histtrim.conformance.schema import (
    BREADCRUMB_TEXT,
    ERROR_KINDS,
    FUNCTIONS,
    JSON_TEXT_FIELDS,
    OPTIONAL_RESULT_FIELDS,
)
from livingspec.vectors.contract import contract
from livingspec.vectors.deviations import deviation_lines, deviations

if TYPE_CHECKING:
    from livingspec.vectors.vectorset import VectorSet

EXAMPLE_REQUEST = (
    '{"id":"trim_to_recent_turns-0123456789ab","function":"trim_to_recent_turns",'
    '"history":[{"role":"user","content":"aaaaaaaa"},{"role":"assistant","content":"b"},'
    '{"role":"user","content":"c"}],"arguments":{"budget_tokens":10,"crumb_present":false}}'
)
EXAMPLE_RESPONSE = (
    '{"id":"trim_to_recent_turns-0123456789ab","result":{"history":[{"role":"user",'
    '"content":"c"}],"dropped":[{"role":"user","content":"aaaaaaaa"},{"role":"assistant",'
    '"content":"b"}],"dropped_messages":2,"dropped_turns":1,"kept_turns":1,"trimmed":true,'
    '"tokens_before":16,"tokens_after":5}}'
)


PROTOCOL = [
    "## Connecting your implementation",
    "",
    "You write a shim: a program that reads requests on stdin and writes answers on stdout,",
    "calling your implementation in between. `conformance/example/` holds one (a Python",
    "module written from RULES.md and this README alone) and the steps, as a guide.",
    "",
    "```",
    "histtrim conformance run --vectors DIR -- YOUR-COMMAND ARGS...",
    "histtrim conformance run --functions trim_to_recent_turns,estimate_history_tokens "
    "-- YOUR-COMMAND",
    "histtrim conformance run --rules 'KEEP-*,EST-*' --junit report.xml -- YOUR-COMMAND",
    "```",
    "",
    "- **Lines.** The runner starts your command once and writes one request per line (UTF-8",
    "  JSON, ASCII-escaped) on its stdin; you write one answer per line on stdout and flush.",
    "  Write logs and debugging output to **stderr**: its last lines are shown when a vector",
    "  crashes, times out or gets a malformed answer. Blank lines are ignored.",
    "- **Ids.** Each request has an `id`; your answer carries it back. Answers are matched",
    "  by id, so their order is free: up to `--window` requests (4 by default) are sent",
    "  before the first answer is awaited. A line whose id names no request (a stray debug",
    "  line) is reported once and skipped; it never shifts the other answers.",
    "- **Answers.** `{\"id\": ..., \"result\": {...}}`, or `{\"id\": ..., \"error\":",
    "  {\"kind\": \"...\", \"message\": \"...\"}}` (only `kind` is compared). A function",
    "  you do not offer is answered with the kind `not_implemented`.",
    "- **Failures.** Per vector: a wrong result or error kind; no answer within `--timeout`",
    "  seconds (10 by default, counted from when the vector is the oldest unanswered one;",
    "  the process is restarted); your process exiting (restarted for the next vector; the",
    "  oldest unanswered vector is the one failed); a line that is not a JSON object, not",
    f"  UTF-8, nested more than {MAX_ANSWER_DEPTH} levels or longer than `--max-answer-bytes` "
    f"({MAX_ANSWER_BYTES >> 20} MiB",
    f"  by default) or than {ANSWER_SLACK} times the run's largest expected answer plus 1 MiB",
    "  (such a line is not parsed). A command that is not found, or exits twice before",
    "  answering anything, stops the run at once with one line saying why.",
    "- **Scope.** `--functions` runs only the vectors of the functions you offer; a rule",
    "  checked only by other functions is reported \"not covered\", not failed. `--rules`",
    "  selects vectors by the rules they check. The exit code is 0 only when every vector",
    "  run passes.",
    "- **The report** lists every failing vector, grouped by function and rules with",
    "  counts: for a result, the fields that differ first (for a list of rows, the positions",
    "  that differ and the first differing row on both sides, each value whole up to",
    f"  {SHOWN_CHARS:,} characters, else around its first difference); for a crash, your",
    "  stderr.",
    "  `--junit FILE` writes one test case per vector, its rules and source as properties.",
    "",
    "Request and answer (one line each):",
    "",
    "```",
    EXAMPLE_REQUEST,
    EXAMPLE_RESPONSE,
    "```",
    "",
    "## What is compared",
    "",
    "- A `result` must equal `expected.result` as a JSON value: object key order is free,",
    "  `1` equals `1.0`, `true` is not `1`, and no field may be missing or added.",
    "- A text field named " + ", ".join(f"`{f}`" for f in JSON_TEXT_FIELDS) + " whose texts "
    "both parse as JSON objects is",
    "  compared as those objects (a rewritten tool envelope may be serialised with any key",
    "  order and spacing); any other text must be equal character for character.",
    "- Fields only histtrim produces as diagnostics are optional: compared when your answer",
    "  has them, never required: " + "; ".join(
        f"`{name}`: " + ", ".join(f"`{f}`" for f in fields)
        for name, fields in OPTIONAL_RESULT_FIELDS.items()) + ".",
    "- An expected `error` matches any answer with the same `kind`; the message is free.",
    "",
    "Error kinds:",
    "",
    *(f"- `{kind}`: {text}." for kind, text in ERROR_KINDS.items()),
    "",
    "## Rows, turns and the breadcrumb",
    "",
    "- Rows are `{\"role\", \"content\"}` (provider-facing; role `system`, `user`,",
    "  `assistant` or `tool`). Structured items (the agent's own history, TURN-1) are chat",
    "  rows or items with `kind`: `assistant_tool_calls` (`text`, `tool_calls`: `{id, name,",
    "  arguments}`, arguments as JSON text) or `tool_results` (`results`: `{tool_call_id,",
    "  content, tool_name?, attachments?}`, an attachment `{kind, target}`; a result without",
    "  `attachments` declared none; an answer carries `tool_name` only when it is a string).",
    "- Leading system rows are the system rows before any other row (TURN-5). A turn starts",
    "  at a real user row: a `user` row whose content does not begin with `[Tool results]`",
    "  (TURN-2, TURN-3). Rows after the leading system rows (and the breadcrumb) but before",
    "  the first turn belong to no turn: a trim drops them with the first turn it drops.",
    "- The breadcrumb is the user row " + f"`{BREADCRUMB_TEXT}`" + ". `crumb_present`",
    "  (`has_leading_breadcrumb` for the turn-count trims) is the owner's flag that the row",
    "  right after the leading system rows is the breadcrumb; it is never inferred from the",
    "  text, and it is `invalid_input` when that row is not a user row. Only",
    "  `insert_breadcrumb` and `agent_turn` insert it; the stateless trims never do.",
    "- In `agent_turn` and `legacy_run` the provider is a script: each step is a reply",
    "  (`text`, `tool_calls`) or `{\"overflow\": message}`; with `hidden_window` any request",
    "  whose estimate exceeds it overflows without using a step. Tools answer the",
    "  `tool_outputs` texts in call order (before `max_tool_result_chars` applies).",
    "",
]


def _names(schema: dict[str, Any]) -> str:
    return ", ".join(schema["properties"]) or "-"


def _function_reference() -> list[str]:
    """The table of functions, then each function's fields, one sentence each (the same
    text as the schemas in `vectors.schema.json`)."""
    lines = [
        "## Functions",
        "",
        "Every vector carries every argument its function takes. A request may leave out an",
        "argument marked (optional) below: it takes the default shown. A request missing any",
        "other argument, or holding one the function does not take, is answered",
        "`invalid_input`. A JSON Schema per function for `arguments` (its `required` lists",
        "the arguments with no default) and `result` is in `vectors.schema.json`",
        "(`$defs/functions`).",
        "",
        "| function | history | arguments | result |",
        "|---|---|---|---|",
        *(f"| `{name}` | {spec['history']} | {_names(spec['arguments'])} | "
          f"{_names(spec['result'])} |" for name, spec in FUNCTIONS.items()),
        "",
    ]
    for name, spec in FUNCTIONS.items():
        lines += [f"### `{name}`", "", spec["description"], ""]
        for part in ("arguments", "result"):
            properties = spec[part]["properties"]
            optional = [f for f in properties if f not in spec[part]["required"]]
            for field, schema in properties.items():
                note = " (optional)" if field in optional else ""
                default = spec["defaults"].get(field, ...) if part == "arguments" else ...
                shown = "" if default is ... else f" Default: `{canonical(default)}`."
                lines.append(f"- {part[:-1] if part == 'arguments' else 'result'} "
                             f"`{field}`{note}: {schema['description']}{shown}")
        lines.append("")
    return lines


def readme(found: VectorSet) -> str:
    groups = found.by_group()
    counts = found.rule_counts()
    sources = Counter(v["source"].split(":")[0] for v in found.vectors)
    functions = Counter(v["function"] for v in found.vectors)
    lines = [
        "# histtrim conformance vectors",
        "",
        "Language-neutral test vectors for the history-management spec (`RULES.md`, "
        f"{len(found.rules)} rules).",
        "An implementation proves it follows the spec by answering every vector exactly as the",
        "reference (histtrim) does. This folder is all an implementer needs: the protocol, the",
        "comparison rules, every function's fields and every rule the vectors rely on where",
        "RULES.md leaves a number open are below, and in `vectors.schema.json`.",
        "Generated by `python -m livingspec.vectors export` (`make vectors`); do not edit.",
        "",
        "## Files",
        "",
        "- `<GROUP>.json`: one file per rule group (a vector lives in the group of its first",
        "  rule); validated by `vectors.schema.json` (JSON Schema 2020-12).",
        "- Each vector: `id`, `rules` (the rule IDs it checks), `function`, `source` (where it",
        "  comes from), `history` (the input history, or null), `arguments`, `expected`",
        "  (`{\"result\": ...}` or `{\"error\": {\"kind\": ...}}`). The request for a vector",
        "  is its `id`, `function`, `history` and `arguments`.",
        "",
        *PROTOCOL,
        *_function_reference(),
        *contract(),
        *deviation_lines(deviations(found.vectors)),
        "## Where the vectors come from",
        "",
        "- `notebook:`: every call a chapter of the living spec makes to a library function,",
        "  recorded by running the chapter with the functions wrapped (rules: those its",
        "  heading cites). Sweeps over a budget or turn limit keep the two ends of each answer.",
        "- `generated:` / `shrunk:`: the test suite's hypothesis strategies, seeded and small,",
        "  and seeded grids of settings.",
        "- `hostile:`: deep JSON, escaped lone surrogates, whitespace around envelopes,",
        "  non-finite numbers, foreign call shapes, odd image targets, localized breadcrumbs.",
        "- `port:`: histories built around one TURN rule, through the trims, so that a port",
        "  without `index_turns` or `to_chat_messages` can still show every TURN rule.",
        "- `reference:`: the reference runtime's own unit tests for the collapse (CTX) and",
        "  the reported-usage trim (USAGE), one vector each, named `reference: FILE::TEST`;",
        "  their inputs are written as rows, and histtrim's answer holds what each asserts.",
        "- Every expected answer is histtrim's own, computed when the folder is exported.",
        "- A vector's `rules` are the rules its source names, narrowed to the one that decides",
        "  the answer first: a carrier history checks TURN-3, an exact budget fit KEEP-1, a",
        "  turn-count trim the limit rules, an agent turn that met an overflow RUN-2/PAIR-4.",
        "",
        "| source | vectors |",
        "|---|---|",
        *(f"| {name} | {count} |" for name, count in sorted(sources.items())),
        "",
        "## Counts",
        "",
        f"{len(found.vectors)} vectors.",
        "",
        "| group | vectors (file) | rules: vectors checking each |",
        "|---|---|---|",
        *(
            f"| {group} | {len(vectors)} | "
            + ", ".join(f"{r} {c}" for r, c in counts.items() if r.split("-")[0] == group)
            + " |"
            for group, vectors in groups.items()
        ),
        "",
        "| function | vectors |",
        "|---|---|",
        *(f"| `{name}` | {functions[name]} |" for name in FUNCTIONS if functions[name]),
        "",
    ]
    if found.combined:
        lines += [
            "## Left out: answers two rules decide at once",
            "",
            "A `[Tool results]` carrier history trimmed by a turn count or at an exact budget fit",
            "depends on TURN-3 and on KEEP-1/KEEP-2 together; such cases are not exported, so a",
            "failing vector always names the one rule that was broken. "
            f"{len(found.combined)} cases (source, function):",
            "",
            *(f"- `{source}` `{function}`" for source, function in found.combined),
            "",
        ]
    if found.crashed:
        lines += [
            "## Left out: the reference itself fails",
            "",
            "These cases have no vector because histtrim raised an unexpected error on them;",
            "they come back by themselves once the reference answers them.",
            "",
            *(f"- `{source}` `{function}`: {error}" for source, function, error in found.crashed),
            "",
        ]
    return "\n".join(lines)
