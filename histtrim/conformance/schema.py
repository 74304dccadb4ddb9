"""The protocol, written down: the JSON Schema of a vector file (exported beside the vectors
as `vectors.schema.json`), with one schema per function for its `arguments` and its
`result` (a sentence per field), every argument's value when a caller leaves it out, the
error kinds, and the comparison rules the runner applies."""

from __future__ import annotations

from typing import Any

FORMAT = "histtrim-conformance/1"

BREADCRUMB_TEXT = "[earlier turns omitted to fit the context window]"

ERROR_KINDS: dict[str, str] = {
    "invalid_input": "the request cannot be answered as given: a request line that is not a "
    "JSON object, an argument missing that has no default, an argument of the wrong JSON "
    "type or not one the function takes, or a value the function refuses (a negative "
    "budget, an unknown role, a crumb flag naming no user row); any message, only the kind "
    "is compared",
    "not_implemented": "the implementation does not offer this function: reported apart, "
    "and under `--functions` the rules only such vectors check are \"not covered\"",
    "internal_error": "the implementation failed on a request it should have answered (an "
    "unexpected exception: a bug); no vector expects it, so it always fails",
    "capacity_exceeded": "the request does not fit the window operand; nothing was "
    "dispatched (check_request, agent_turn)",
    "context_overflow_unrecoverable": "the provider overflowed and only one turn is left "
    "(agent_turn)",
    "context_overflow": "the provider overflowed on the last tool iteration (agent_turn)",
    "script_exhausted": "the scripted provider was called more often than its script allows "
    "(agent_turn, legacy_run)",
}
"""Error kind -> what it means. The runner itself reports, without any kind, an
implementation that exits, times out or writes a line that is not an answer."""

OPTIONAL_RESULT_FIELDS: dict[str, tuple[str, ...]] = {"sweep_orphans": ("removed",)}
"""Diagnostics only histtrim produces: compared when an answer has them, never required."""

JSON_TEXT_FIELDS = ("content",)
"""A text field compared as a JSON value when both sides parse as JSON objects."""

# Building blocks ---------------------------------------------------------------------------

INT = {"type": "integer", "minimum": 0}
BOOL = {"type": "boolean"}
ROW = {"$ref": "#/$defs/row"}
ROWS = {"type": "array", "items": ROW}
OBJECT = {"type": "object"}


def _field(schema: dict[str, Any], text: str) -> dict[str, Any]:
    return {**schema, "description": text}


def _object(fields: dict[str, dict[str, Any]], optional: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "required": [name for name in fields if name not in optional],
        "additionalProperties": False,
        "properties": fields,
    }


CRUMB_PRESENT = _field(BOOL, "The owner's flag: the row right after the leading system rows "
                       "is the breadcrumb (a user chat row); it is never inferred from text.")
HAS_LEADING_BREADCRUMB = _field(BOOL, "The same flag as crumb_present, under the name the "
                                "turn-count trims use.")
HISTORY_OUT = _field(ROWS, "The kept history, in input order: leading system rows (and the "
                     "breadcrumb) first, then the newest whole turns.")
TRIM_FIELDS = {
    "history": HISTORY_OUT,
    "dropped": _field(ROWS, "The rows removed, in input order."),
    "dropped_messages": _field(INT, "How many rows were dropped."),
    "dropped_turns": _field(INT, "How many whole turns were dropped (0: nothing was trimmed)."),
    "kept_turns": _field(INT, "How many turns the kept history holds."),
    "trimmed": _field(BOOL, "True when at least one turn was dropped."),
}
PROFILE = _field(OBJECT, "The runtime profile: max_context_tokens, context_compact_ratio, "
                 "history_pruning {enabled, max_tokens}, max_history_messages, "
                 "max_tool_iterations, max_tool_result_chars (a field left out is unset).")
PROVIDER = _field({"type": ["object", "null"]}, "The selected provider's profile {model, "
                  "context_window}, or null for none.")
RUNTIME = _field(_object({
    "profile": PROFILE,
    "provider": PROVIDER,
    "selected_model": _field({"type": ["string", "null"]}, "The model the route selected; "
                             "null: the provider's configured model."),
}, optional=("profile", "provider", "selected_model")),
    "The route to resolve (ROUTE-1): a runtime profile, a provider profile, a model.")
FIGURES = {
    "capacity": _field({"type": ["integer", "null"]}, "The selected model's known context "
                       "window, or null when unknown (ROUTE-3)."),
    "context_window": _field(INT, "The window operand used for safety: the capacity, or the "
                             "32,000 fallback (ROUTE-4)."),
    "effective_context_budget": _field(INT, "The proactive trimming target (BUDGET-1..9); 0 "
                                       "disables proactive trimming."),
    "model_context_window": _field({"type": ["integer", "null"]}, "What a protocol client "
                                   "is told: the capacity, or null when unknown (ROUTE-4)."),
}
REPORT = {
    "messages": _field(INT, "The messages' estimate without their images (system rows "
                       "included)."),
    "images": _field(INT, "The dispatched images' price: a fixed price per image (EST-2)."),
    "hooks": _field(INT, "The hook texts' estimate."),
    "tool_schemas": _field(INT, "The tool schemas' estimate."),
    "total": _field(INT, "messages + images + hooks + tool_schemas."),
    "window": _field(INT, "The window operand: the known capacity, or the fallback (ROUTE-4)."),
    "system": _field(INT, "The system rows' share of messages."),
    "budget": _field(INT, "The proactive target, reported only: it never decides the check "
                     "(CAP-3)."),
    "capacity_known": _field(BOOL, "True when the selected model's capacity is known."),
    "fits": _field(BOOL, "total <= window (CAP-2)."),
}
REQUEST_ARGUMENTS = {
    "runtime": RUNTIME,
    "tool_schemas": _field({"type": "array", "items": OBJECT}, "The tool schemas sent with "
                           "the request ({name, description, parameters})."),
    "hooks": _field({"type": "array", "items": {"type": "string"}}, "Hook texts added to the "
                    "request."),
}
REQUESTS = _field({"type": "array", "items": _object({
    "messages": _field(ROWS, "The provider-facing rows sent."),
    "tool_schemas": _field({"type": "array", "items": OBJECT}, "The tool schemas sent."),
    "outcome": _field({"type": "string"}, "reply, tool_calls or overflow."),
})}, "Every request the scripted provider received, in order.")
SCRIPT_ARGUMENTS = {
    "runtime": RUNTIME,
    "tools": _field({"type": "array", "items": OBJECT}, "The tools offered: {name, "
                    "description, parameters}."),
    "tool_outputs": _field({"type": "array", "items": {"type": "string"}}, "The texts the "
                           "tools return, in call order (before max_tool_result_chars applies)."),
    "script": _field({"type": "array", "items": OBJECT}, "The provider's replies in order: "
                     "{text, tool_calls} or {overflow: message}."),
    "hidden_window": _field({"type": ["integer", "null"]}, "When set, a request whose "
                            "estimate exceeds it overflows without using a script step."),
    "text": _field({"type": "string"}, "The user's message that starts the turn."),
}
EVENT = _field(OBJECT, "A HistoryTrimmed event's wire form: type, reason (token_budget, "
               "turn_limit, ...), dropped_messages, kept_turns, tokens_before, tokens_after, "
               "budget, description.")


def _function(history: str, arguments: dict[str, dict[str, Any]], result: dict[str, Any],
              defaults: dict[str, Any], text: str) -> dict[str, Any]:
    """A function's schemas; `arguments` requires exactly the arguments with no default."""
    unknown = set(defaults) - set(arguments)
    if unknown:
        raise ValueError(f"defaults for arguments the function does not take: {unknown}")
    return {"description": text, "history": history,
            "arguments": _object(arguments, optional=tuple(defaults)),
            "result": result, "defaults": defaults}


REPORTED_ARGUMENTS = {
    "budget_tokens": _field(INT, "The token budget, in the provider's units; 0 disables."),
    "reported_input_tokens": _field(INT, "The input tokens the provider reported for the "
                                    "request it answered."),
    "reported_population_estimated": _field(INT, "The estimate of that request (tool schemas "
                                            "included), not of the history after the reply."),
    "tool_schema_tokens": _field(INT, "The estimate of the tool schemas sent with it."),
    "crumb_present": CRUMB_PRESENT,
    "token_target": _field({"type": "string"}, "The low-water mark, an exact ratio in (0, 1] "
                           "such as \"7/10\"."),
}
REPORTED_DEFAULTS = {"tool_schema_tokens": 0, "crumb_present": False, "token_target": "1"}

FUNCTIONS: dict[str, dict[str, Any]] = {
    "estimate_history_tokens": _function(
        "provider-facing rows", {},
        _object({"tokens": _field(INT, "The history's estimate (EST-1..4).")}), {},
        "The token estimate of a whole history: a row priced as plain text costs "
        "ceil(UTF-8 bytes / 4) + 4 (EST-1); dispatched images cost a fixed price each "
        "(EST-2..4)."),
    "message_costs": _function(
        "provider-facing rows", {},
        _object({"costs": _field({"type": "array", "items": INT},
                                 "Each row's estimate, in order (EST-1..4).")}), {},
        "The estimate of each row."),
    "index_turns": _function(
        "rows or structured items", {"crumb_present": CRUMB_PRESENT},
        _object({
            "prefix_len": _field(INT, "How many leading system rows there are (TURN-5)."),
            "crumb": _field({"type": ["integer", "null"]}, "The breadcrumb's position, or "
                            "null without crumb_present."),
            "starts": _field({"type": "array", "items": INT}, "The position of each turn's "
                             "first row (a real user message, TURN-2..3)."),
            "turn_count": _field(INT, "How many turns there are."),
        }), {"crumb_present": False},
        "Where turns start (histtrim's own shape; the trims show the same rules)."),
    "trim_to_recent_turns": _function(
        "provider-facing rows",
        {"budget_tokens": _field(INT, "The token budget; 0 disables the trim."),
         "crumb_present": CRUMB_PRESENT},
        _object({**TRIM_FIELDS,
                 "tokens_before": _field(INT, "The estimate of the input history."),
                 "tokens_after": _field(INT, "The estimate of the kept history.")}),
        {"crumb_present": False},
        "Drop the oldest whole turns until the history fits the budget; the newest turn "
        "stays (KEEP-1, CAP-1). Inserts no breadcrumb."),
    "trim_to_recent_turn_count": _function(
        "provider-facing rows",
        {"max_turns": _field(INT, "Keep at most max(max_turns, 1) turns."),
         "has_leading_breadcrumb": HAS_LEADING_BREADCRUMB},
        _object(TRIM_FIELDS), {"has_leading_breadcrumb": False},
        "Keep the newest max(max_turns, 1) whole turns; the leading system rows and the "
        "breadcrumb stay in place (KEEP-2..3). Inserts no breadcrumb."),
    "trim_conversation_to_recent_turns": _function(
        "structured items",
        {"max_turns": _field(INT, "Keep at most max(max_turns, 1) turns."),
         "has_leading_breadcrumb": HAS_LEADING_BREADCRUMB},
        _object({**TRIM_FIELDS,
                 "dropped": _field(ROWS, "The items removed, in input order; when it trims, "
                                   "the breadcrumb is among them (its owner re-inserts it)."),
                 "dropped_messages": _field(INT, "How many items were dropped, the "
                                            "breadcrumb not counted.")}),
        {"has_leading_breadcrumb": False},
        "The structured history's turn limit: when it trims, every system row moves to the "
        "front in order and the breadcrumb is removed (KEEP-2..3, TURN-1)."),
    "drop_oldest_whole_turn": _function(
        "rows or structured items", {"crumb_present": CRUMB_PRESENT},
        _object({"history": HISTORY_OUT,
                 "dropped_messages": _field(INT, "How many rows were dropped (0 when only "
                                            "one turn is left).")}),
        {"crumb_present": False},
        "Drop the oldest turn (and any rows before it that belong to no turn) when another "
        "turn remains (TURN-4)."),
    "insert_breadcrumb": _function(
        "rows or structured items", {"crumb_present": CRUMB_PRESENT},
        _object({"history": _field(ROWS, "The history with the breadcrumb, the user row "
                                   f"{BREADCRUMB_TEXT!r}, right after the leading system "
                                   "rows; unchanged when crumb_present.")}),
        {"crumb_present": False},
        "Insert the breadcrumb once (SEEN-1)."),
    "to_chat_messages": _function(
        "structured items", {},
        _object({"history": _field(ROWS, "The provider-facing rows: a tool-call item becomes "
                                   "an assistant row and a tool-result item tool rows whose "
                                   "content is a JSON envelope (TURN-1).")}), {},
        "The provider-facing form of a structured history."),
    "resolve_runtime": _function(
        "null",
        {"profile": PROFILE, "provider": PROVIDER,
         "selected_model": _field({"type": ["string", "null"]}, "The model the route "
                                  "selected; null: the provider's configured model.")},
        _object(FIGURES), {"profile": {}, "provider": None, "selected_model": None},
        "Capacity and budget of one route (BUDGET-1..9, ROUTE-1, ROUTE-3..4)."),
    "select_route": _function(
        "null",
        {"config": _field(OBJECT, "An agent config: providers, runtimes, agents, routes."),
         "agent": _field({"type": "string"}, "The agent's name in the config."),
         "hint": _field({"type": ["string", "null"]}, "A classifier hint naming a route, or "
                        "null."),
         "session_model": _field({"type": ["string", "object", "null"]}, "An explicit "
                                 "session switch: a model on the agent's provider, a route "
                                 "{provider, model}, or null.")},
        _object({"provider": _field({"type": "string"}, "The selected provider alias."),
                 "model": _field({"type": "string"}, "The selected model."), **FIGURES}),
        {"hint": None, "session_model": None},
        "The route a hint or session switch selects, and its figures (ROUTE-2)."),
    "capacity_report": _function(
        "the request's provider-facing rows", REQUEST_ARGUMENTS, _object(REPORT),
        {"tool_schemas": [], "hooks": []},
        "The request's token figures against the window operand (CAP-2..4)."),
    "check_request": _function(
        "the request's provider-facing rows", REQUEST_ARGUMENTS, _object(REPORT),
        {"tool_schemas": [], "hooks": []},
        "The capacity check: the report when the request fits, else the error "
        "capacity_exceeded (CAP-2..4)."),
    "sweep_orphans": _function(
        "rows or structured items", {"crumb_present": CRUMB_PRESENT},
        _object({
            "history": _field(ROWS, "The history without orphans: a tool call without its "
                              "result, a result without its call (PAIR-2); a rewritten "
                              "envelope's content is compared as a JSON value."),
            "removed": _field({"type": "array", "items": _object({
                "kind": _field({"enum": ["call", "result"]}, "What was removed: a call "
                               "without its result, or a result without its call."),
                "tool_call_id": _field({"type": ["string", "null"]}, "The orphan's tool "
                                       "call id; null for a tool row with no readable call "
                                       "id, or a call with no string id."),
                "position": _field(INT, "The index of the row or item in the input history."),
            })}, "histtrim's diagnostics: optional in an answer, compared when present."),
        }, optional=("removed",)),
        {"crumb_present": False},
        "The orphan sweep, the final safety net (PAIR-2)."),
    "cap_tool_result": _function(
        "null",
        {"content": _field({"type": "string"}, "A tool's output text."),
         "max_chars": _field(INT, "max_tool_result_chars.")},
        _object({"content": _field({"type": "string"}, "The text as recorded (PAIR-3).")}),
        {}, "Bound one tool result when it is recorded (PAIR-3)."),
    "channel_sender_cache": _function(
        "null",
        {"max_rows": _field(INT, "Rows kept per sender; 0 means the default, 50."),
         "appends": _field({"type": "array", "items": OBJECT}, "{sender, row} in order.")},
        _object({"dropped": _field({"type": "array", "items": INT}, "Rows each append "
                                   "dropped, in order."),
                 "rows": _field({"type": "object", "additionalProperties": ROWS},
                                "Each sender's rows after the last append.")}),
        {}, "A channel's per-sender row cache (LIMIT-3)."),
    "agent_turn": _function(
        "the agent's structured history",
        {**SCRIPT_ARGUMENTS,
         "system_prompt": _field({"type": ["string", "null"]}, "The agent's system prompt."),
         "crumb_present": CRUMB_PRESENT,
         "turn_id": _field(INT, "The agent's turn counter before the turn.")},
        _object({
            "reply": _field({"type": ["string", "null"]}, "The turn's final reply."),
            "hit_iteration_limit": _field(BOOL, "True when max_tool_iterations ended the "
                                          "tool loop."),
            "requests": REQUESTS,
            "calls": _field({"type": "array", "items": OBJECT}, "Each provider call: "
                            "iteration, kind, outcome, history_tokens, tokens, budget, "
                            "window, trims (events before it)."),
            "client_events": _field({"type": "array", "items": EVENT}, "The events the "
                                    "client transport received (SEEN-2..3)."),
            "observed": _field({"type": "array", "items": OBJECT}, "What observers "
                               "received: {turn_id, channel, reason}."),
            "history": _field(ROWS, "The structured history after the turn; after a trim "
                              f"the breadcrumb {BREADCRUMB_TEXT!r} precedes the first kept "
                              "turn (SEEN-1)."),
            "crumb_present": _field(BOOL, "The breadcrumb flag after the turn."),
        }),
        {"runtime": {}, "system_prompt": None, "crumb_present": False, "tools": [],
         "tool_outputs": [], "script": [], "hidden_window": None, "turn_id": 0},
        "One user turn of a structured agent (RUN-*, SEEN-1..3, CAP-*, LIMIT-1..2, PAIR-*)."),
    "legacy_run": _function(
        "provider-facing rows", SCRIPT_ARGUMENTS,
        _object({
            "history": _field(ROWS, "The rows after the turn (no breadcrumb on this path)."),
            "reply": _field({"type": ["string", "null"]}, "The final reply."),
            "provider_calls": _field(INT, "How many provider calls were made."),
            "dropped_messages": _field(INT, "Rows the count-based trim dropped."),
            "trim_logged": _field(BOOL, "True when the trim was reported in the logs (SEEN-4)."),
            "requests": REQUESTS,
        }),
        {"runtime": {}, "tools": [], "tool_outputs": [], "script": [], "hidden_window": None},
        "One turn of the legacy agent::run path (SEEN-4, LIMIT-1..2)."),
    "collapse_tool_context": _function(
        "provider-facing rows",
        {"keep_turns": _field(INT, "keep_tool_context_turns: completed turns before the "
                              "running one that keep their tool rows."),
         "crumb_present": CRUMB_PRESENT},
        _object({
            "rows": _field(ROWS, "The rows sent: every turn older than the newest "
                           "keep_turns + 1 is its prompt, one \"[Tool exchange: N tool "
                           "call(s) — results collapsed]\" assistant row and its closing "
                           "reply (CTX-1..4)."),
            "source_rows": _field({"type": "array", "items": INT}, "For each row sent, the "
                                  "input row it stands for (a summary: the row it replaces)."),
            "dropped_messages": _field(INT, "Tool-call and tool-result rows left out."),
            "collapsed_turns": _field(INT, "Turns that lost rows."),
        }),
        {"crumb_present": False},
        "The reference's tool context retention, a request-time edit (CTX-1..5)."),
    "clear_tool_results": _function(
        "provider-facing rows",
        {"tool_context": _field(OBJECT, "The clearing settings: keep, keep_unit (\"results\" "
                                "or \"turns\"), trigger_tokens, hold, clear_to (a ratio as "
                                "text), clear_at_least, exclude_tools, clear_inputs, "
                                "clear_text, drop_cleared, min_chars, placeholder, "
                                "preview_chars; mode "
                                "\"clear\"."),
         "crumb_present": CRUMB_PRESENT,
         "budget_tokens": _field(INT, "The budget the whole-turn trim applied; a request "
                                 "still over it clears down to its low-water mark (CTX-10). "
                                 "0: none."),
         "token_trim_target": _field({"type": "string"}, "That low-water mark, an exact ratio "
                                     "in (0, 1] such as \"7/10\".")},
        _object({
            "rows": _field(ROWS, "The rows sent: as many as given, each cleared result's "
                           "output replaced by the placeholder, its call id kept (CTX-6..8)."),
            "cleared": _field({"type": "array", "items": INT}, "The positions of the "
                              "cleared results, in order."),
            "cleared_inputs": _field(INT, "Calls whose arguments became {} (clear_inputs)."),
            "tokens": _field(INT, "The estimate of the rows sent (EST-1..4)."),
        }),
        {"tool_context": {}, "crumb_present": False, "budget_tokens": 0,
         "token_trim_target": "1"},
        "Placeholder clearing of old tool results, calls kept (CTX-6..8), fitted to a "
        "budget its trigger does not reach (CTX-10)."),
    "tool_context_requests": _function(
        "provider-facing rows",
        {"tool_context": _field(OBJECT, "The ToolContext settings (mode \"off\", "
                                "\"collapse\" or \"clear\"), as for clear_tool_results."),
         "budget_tokens": _field(INT, "The budget the whole-turn trim applied: a clear fits a "
                                 "request still over it (CTX-10); 0: none (no cold clear)."),
         "times": _field({"type": "array", "items": {"type": ["number", "null"]}},
                         "As held_cut's (CACHE-1)."),
         "cold_cache": _field(OBJECT, "As held_cut's: a cold request over trigger_tokens x "
                              "cut_from clears now, in one batch (CACHE-2).")},
        _object({
            "requests": _field({"type": "array", "items": _object({
                "end": _field(INT, "The request is the history's rows before this position "
                              "(as held_cut's)."),
                "rows": _field(INT, "Rows sent."),
                "tokens": _field(INT, "The estimate of the rows sent (EST-1..4)."),
                "cold": _field(BOOL, "True when the request found the prompt cache cold "
                               "(CACHE-1)."),
            })}, "Each request the history records, through the tool context edit."),
            "prefix_breaks": _field(INT, "How many requests do not start with the whole "
                                    "previous request, row for row (CTX-9)."),
        }),
        {"tool_context": {}, "budget_tokens": 0, "times": [], "cold_cache": {}},
        "Every recorded request through the tool context edit: with hold, the prefix "
        "stays stable between clears (CTX-9); a cold request clears now (CACHE-2)."),
    "held_cut": _function(
        "provider-facing rows",
        {"budget_tokens": _field(INT, "The token budget; 0 disables the token trim."),
         "max_turns": _field({"type": ["integer", "null"], "minimum": 0},
                             "The turn limit (max(max_turns, 1) turns), or null for none."),
         "token_target": _field({"type": "string"}, "The token low-water mark, an exact "
                                "ratio in (0, 1] such as \"7/10\"."),
         "turn_target": _field({"type": "string"}, "The turn low-water mark, as token_target."),
         "times": _field({"type": "array", "items": {"type": ["number", "null"]}},
                         "When each request the history records was made, in seconds (null: "
                         "unknown), one per request; [] for none known (CACHE-1)."),
         "cold_cache": _field(OBJECT, "The cold-cache settings {lifetime (seconds; 0: off), "
                              "cut_from, target (ratios as text such as \"9/10\"; target "
                              "null: token_target)}; {}: off (CACHE-1..3).")},
        _object({
            "requests": _field({"type": "array", "items": _object({
                "end": _field(INT, "The request is the history's rows before this position "
                              "(each assistant row after a non-assistant row ends one, and "
                              "the whole history is the last)."),
                "cut": _field(INT, "The first row of that request kept after the leading "
                              "system rows (the system row count when nothing is dropped)."),
                "breadcrumb": _field(BOOL, "True when the breadcrumb is sent after the "
                                     "system rows (something was dropped)."),
                "tokens": _field(INT, "The estimate of the rows sent (EST-1..4)."),
                "cold": _field(BOOL, "True when the request found the prompt cache cold: "
                               "more than lifetime seconds after the request before it, "
                               "both times known (CACHE-1)."),
            })}, "Each request the history records, trimmed as a caller passing the whole "
                "history of that request would trim it."),
            "cut_moves": _field(INT, "How many requests do not start with the whole previous "
                                "request, row for row."),
            "events": _field({"type": "array", "items": OBJECT}, "The last request's "
                             "HistoryTrimmed events (their dumps: type, reason, "
                             "dropped_messages, kept_turns, tokens_before, tokens_after, "
                             "budget, and target and cold_cache only when set): none when "
                             "nothing is dropped; with the spec's targets and no cold request "
                             "the turn limit's and then the budget's (CACHE-3)."),
        }),
        {"max_turns": None, "token_target": "1", "turn_target": "1", "times": [],
         "cold_cache": {}},
        "A caller that passes the whole history on every request keeps the cut the agent "
        "holds: the cut stays while the rows from it fit, and moves to the low-water mark "
        "(budget x token_target, or ceil(max_turns x turn_target) turns) only when a limit is "
        "exceeded; the breadcrumb counts (RUN-1, LIMIT-1..2, SEEN-1). Not in the spec: with "
        "targets 1 each request is trimmed just to fit; with cold_cache on, a request that "
        "finds the prompt cache cold cuts to the cold low-water mark now (CACHE-1..3)."),
    "trim_to_reported_budget": _function(
        "provider-facing rows", REPORTED_ARGUMENTS,
        _object({**TRIM_FIELDS,
                 "tokens_before": _field(INT, "The reported input tokens."),
                 "tokens_after": _field(INT, "The kept estimate plus the tool schema tokens, "
                                        "times reported / estimated, rounded half away from "
                                        "zero in exact integers (USAGE-3); the report when "
                                        "nothing is due.")}),
        REPORTED_DEFAULTS,
        "The reference runtime's reported-usage trim (USAGE-1..4, beyond the Spanish spec): "
        "when the report exceeds a positive budget and the estimate is positive, keep the "
        "newest whole turns within max(1, floor(budget x token_target x estimated / "
        "reported) - tool_schema_tokens) estimate tokens (the first factor at least 1). "
        "Inserts no breadcrumb."),
    "trim_to_reported_budget_with_crumb": _function(
        "provider-facing rows", REPORTED_ARGUMENTS,
        _object({
            "history": _field(ROWS, "The kept rows; after a trim the breadcrumb "
                              f"{BREADCRUMB_TEXT!r} follows the leading system rows, once "
                              "(none is added when crumb_present)."),
            "crumb_present": _field(BOOL, "The breadcrumb flag after the call."),
            "event": _field({"type": ["object", "null"]}, "null when nothing was dropped; "
                            "else the HistoryTrimmed event: reason token_budget, "
                            "dropped_messages, kept_turns, tokens_before (the report), "
                            "tokens_after (the kept rows with the breadcrumb, plus the tool "
                            "schemas, in provider units), budget (budget x token_target), "
                            "counter \"reported_usage\", target (only when not 1)."),
        }),
        REPORTED_DEFAULTS,
        "The reported-usage trim made visible (USAGE-6, SEEN-1..2)."),
    "reported_input_tokens": _function(
        "null",
        {"usage": _field({"type": ["object", "null"]}, "A provider's usage report: OpenAI "
                         "{prompt_tokens}, Anthropic {input_tokens, cache_read_input_tokens, "
                         "cache_creation_input_tokens}, Gemini {prompt_token_count}."),
         "model": _field({"type": ["string", "null"]}, "The model the report is for."),
         "expected_model": _field({"type": ["string", "null"]}, "The model the history is "
                                  "sent to.")},
        _object({"tokens": _field({"type": ["integer", "null"]}, "The reported input tokens "
                                  "(Anthropic's three summed), or null: absent, not an "
                                  "integer, negative, a total of 0, or another model's.")}),
        {"usage": None, "model": None, "expected_model": None},
        "What a provider's usage report counts as the request's input (USAGE-5)."),
    "refused_report": _function(
        "null",
        {"reported_input_tokens": REPORTED_ARGUMENTS["reported_input_tokens"],
         "reported_population_estimated": REPORTED_ARGUMENTS["reported_population_estimated"],
         "tool_schema_tokens": REPORTED_ARGUMENTS["tool_schema_tokens"]},
        _object({"refused": _field({"type": "boolean"}, "Whether the report is above 8 times "
                                   "the estimate (schemas included) plus 131,072 tokens.")}),
        {"tool_schema_tokens": 0},
        "Whether a usage report is refused as far above its request's estimate (USAGE-7)."),
    "fit_hidden_prefix": _function(
        "null",
        {"pairs": _field({"type": "array", "items": {"type": "array", "items": INT,
                                                     "minItems": 2, "maxItems": 2}},
                         "The session's (rows estimate, reported input tokens) pairs, oldest "
                         "first."),
         "tool_schema_tokens": _field(INT, "The estimate of the tool schemas sent with them "
                                      "(a lower bound of the prefix).")},
        _object({"prefix": _field({"type": ["integer", "null"]}, "The provider tokens the "
                                  "rows do not show, or null: no usable pair."),
                 "ratio": _field({"type": ["string", "null"]}, "Provider tokens per estimated "
                                 "token of the rows, an exact ratio such as \"7/5\"."),
                 "margin": _field({"type": ["integer", "null"]}, "The most the fit "
                                  "undercounts one of its reports by, at most 1/8 of the "
                                  "smallest but never less than its undercount of the "
                                  "newest; kept free below the budget.")}),
        {"tool_schema_tokens": 0},
        "The hidden prefix and the rows' ratio fitted on a session's reports (USAGE-8)."),
}
"""Protocol function -> its history, arguments and result schemas, and the value of each
argument a request may leave out (its default; every exported vector still carries every
argument)."""

ARGUMENT_DEFAULTS: dict[str, dict[str, Any]] = {
    name: spec["defaults"] for name, spec in FUNCTIONS.items()
}

_CALL = {"type": "object", "required": ["id", "name", "arguments"],
         "properties": {"id": {"type": "string"}, "name": {"type": "string"},
                        "arguments": {"type": "string",
                                      "description": "The call's arguments as JSON text."}}}
_RESULT = {"type": "object", "required": ["tool_call_id", "content"],
           "properties": {"tool_call_id": {"type": "string"}, "content": {"type": "string"},
                          "tool_name": {"type": ["string", "null"], "description":
                                        "The tool's name. An answer carries it only when it "
                                        "is a string: a result sent without it, or with "
                                        "null, is answered without it."},
                          "attachments": {"type": "array", "items": {
                              "type": "object", "required": ["kind", "target"]}}}}
ROW_SCHEMA: dict[str, Any] = {
    "description": "A provider-facing row {role, content}, or a structured item with `kind`.",
    "oneOf": [
        {"type": "object", "required": ["role", "content"], "additionalProperties": False,
         "properties": {"role": {"enum": ["system", "user", "assistant", "tool"]},
                        "content": {"type": "string"}}},
        {"type": "object", "required": ["kind", "tool_calls"], "additionalProperties": False,
         "properties": {"kind": {"const": "assistant_tool_calls"},
                        "text": {"type": ["string", "null"]},
                        "tool_calls": {"type": "array", "minItems": 1, "items": _CALL}}},
        {"type": "object", "required": ["kind", "results"], "additionalProperties": False,
         "properties": {"kind": {"const": "tool_results"},
                        "results": {"type": "array", "minItems": 1, "items": _RESULT}}},
    ],
}


def _per_function(name: str) -> dict[str, Any]:
    """A vector of `name`: every argument present; a result vector's arguments and result
    follow the function's schemas (an error vector's arguments may be anything)."""
    spec = FUNCTIONS[name]
    return {
        "if": {"properties": {"function": {"const": name}}, "required": ["function"]},
        "then": {
            "properties": {"arguments": {"required": list(spec["defaults"])}},
            "if": {"properties": {"expected": {"required": ["result"]}}},
            "then": {"properties": {
                "arguments": {"$ref": f"#/$defs/functions/{name}/arguments"},
                "expected": {"properties": {
                    "result": {"$ref": f"#/$defs/functions/{name}/result"}}},
            }},
        },
    }


VECTOR_FILE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://histtrim.invalid/conformance/vectors.schema.json",
    "title": "histtrim conformance vectors (one file per rule group)",
    "type": "object",
    "required": ["format", "group", "index", "rules", "vectors"],
    "additionalProperties": False,
    "$defs": {
        "row": ROW_SCHEMA,
        "error_kind": {"enum": list(ERROR_KINDS), "description": "; ".join(
            f"{kind}: {text}" for kind, text in ERROR_KINDS.items())},
        "functions": {
            name: {"description": spec["description"],
                   "history": {"description": "The request's history: " + spec["history"]},
                   "arguments": spec["arguments"], "result": spec["result"]}
            for name, spec in FUNCTIONS.items()
        },
    },
    "properties": {
        "format": {"const": FORMAT},
        "group": {"type": "string", "pattern": "^[A-Z]+$"},
        "index": {"type": "integer", "minimum": 0,
                  "description": "The group's position in RULES.md (report order)."},
        "rules": {
            "type": "object",
            "description": "Rule ID -> its text in RULES.md, for every rule of the group.",
            "additionalProperties": {"type": "string"},
        },
        "vectors": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "rules", "function", "source", "history", "arguments",
                             "expected"],
                "additionalProperties": False,
                "allOf": [_per_function(name) for name in FUNCTIONS],
                "properties": {
                    "id": {"type": "string", "pattern": "^[a-z_]+-[0-9a-f]{12}$"},
                    "rules": {
                        "type": "array", "minItems": 1, "uniqueItems": True,
                        "items": {"type": "string", "pattern": "^[A-Z]+-[0-9]+$"},
                    },
                    "function": {"enum": list(FUNCTIONS)},
                    "source": {
                        "type": "string",
                        "description": "notebook:<file>#cell-<n>, generated:<family>#<n>, "
                        "shrunk:<property>, hostile:<case> or port:<case>",
                    },
                    "history": {"oneOf": [{"type": "null"}, {"type": "array", "items": {}}],
                                "description": "The input history (see the function's "
                                "`history`); hostile vectors hold rows that are not valid."},
                    "arguments": {"type": "object", "description": "Every argument the "
                                  "function takes (see the function's `arguments`)."},
                    "expected": {
                        "oneOf": [
                            {"type": "object", "required": ["result"],
                             "properties": {"result": {"type": "object"}},
                             "additionalProperties": False},
                            {"type": "object", "required": ["error"],
                             "properties": {"error": {
                                 "type": "object", "required": ["kind"],
                                 "properties": {"kind": {"$ref": "#/$defs/error_kind"}},
                                 "additionalProperties": False}},
                             "additionalProperties": False},
                        ]
                    },
                },
            },
        },
    },
}
