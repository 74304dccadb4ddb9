"""The README's normative rules: every rule the vectors rely on where RULES.md leaves a
number or a corner open, so the folder alone is the contract. docs/decisions.md gives the
reasons and the worked examples, and links here."""

from __future__ import annotations

from histtrim.carriers import RUST_WHITESPACE
from histtrim.messages import MAX_JSON_DEPTH
from histtrim.policy import SPEC


def _code_points(chars: str) -> str:
    """`U+0009..U+000D, U+0020, ...`: runs of consecutive code points joined."""
    points = sorted(map(ord, chars))
    runs: list[list[int]] = []
    for point in points:
        if runs and point == runs[-1][1] + 1:
            runs[-1][1] = point
        else:
            runs.append([point, point])
    return ", ".join(f"U+{a:04X}" if a == b else f"U+{a:04X}..U+{b:04X}" for a, b in runs)


def contract() -> list[str]:
    image = SPEC.image_tokens
    return [
        "## The rules the vectors rely on",
        "",
        "RULES.md leaves some numbers and corners open; histtrim's choices are below, and",
        "every vector follows them. `docs/decisions.md` in the histtrim repository gives the",
        "reasons and worked examples. Text lengths are in Unicode code points unless bytes",
        "are named; bytes are UTF-8.",
        "",
        "### Prices (EST-1..4)",
        "",
        f"- A row priced as text costs `ceil(bytes of content / {SPEC.bytes_per_token})"
        f" + {SPEC.frame_tokens}` (an empty row",
        f"  costs {SPEC.frame_tokens}); a history costs the sum of its rows.",
        f"- A dispatched image costs a fixed {image:,} tokens, whatever its size.",
        "- An image marker runs from `[IMAGE:` to the first `]` after it (its target may hold",
        "  `[`); the next marker is looked for after that `]`, and an opener with no `]` after",
        "  it is text. A marker whose target is loadable (below) is an image.",
        "- A real user row (any position) costs `ceil(bytes of its text outside its loadable",
        f"  markers / 4) + {image:,} x loadable markers + 4`. In every other row",
        "  (system, assistant, tool, a `[Tool results]` carrier) a marker is text.",
        "- A target is loadable when, (1) if it holds a `\\n` or `\\r`, each `\\n` or `\\r` and",
        "  the run of whitespace right after it are removed (a wrapped target is re-joined),",
        "  then (2) whitespace is trimmed from both ends, it starts with `/`, `http://`,",
        "  `https://` or `data:` (case-sensitive), or with a drive: an ASCII letter, `:` and",
        "  `\\` or `/` (`C:\\`, `C:/`), or is a UNC path: `\\\\` then a rest that does not start",
        "  with `?` or `.` and splits at its first `\\` or `/` into a non-empty server and a",
        "  non-empty share (everything after that separator). `\\\\srv\\x` and `\\\\r/e` load;",
        "  `\\\\srv`, `\\\\srv\\`, `\\\\.x\\y`, `\\\\?\\C:\\a`, `C:x.png` and `HTTP://x` do not.",
        "- Whitespace there is Unicode White_Space (Rust's `char::is_whitespace`):",
        f"  {_code_points(RUST_WHITESPACE)}.",
        "  U+001C..U+001F (spaces to Python's `str.isspace`), U+200B and U+FEFF are not:",
        f"  `[IMAGE:\\u3000/]` alone in a user row costs {image + 4:,};",
        "  `[IMAGE:\\u001c/tmp/a.png]` costs 9 (19 bytes of text).",
        "- Tool results of the current turn: the rows after the last real user row (every row",
        "  when there is none). A current `tool` row whose envelope (below) declares an",
        "  `attachments` array costs `ceil(bytes of the envelope's content text / 4) +",
        f"  {image:,} x image attachments with a loadable target + 4`. An attachment is an",
        "  object `{\"kind\", \"target\"}` (`kind` a string, `\"image\"` when left out; `target`",
        "  a non-empty string; no other key); an `attachments` value that is not null or an",
        "  array of such objects makes the row's declaration unreadable, and the row costs its",
        "  whole content as text. Only `kind` `\"image\"` can be an image; its target is",
        "  tested as a marker's is.",
        "- A current `[Tool results]` carrier (a user row) declares attachments when its first",
        "  line is exactly `[Tool results]` and its second `[Tool attachments: N]` (N decimal",
        "  digits), followed by N lines that are each exactly",
        "  one marker; it costs `ceil(bytes of its text without the loadable marker lines",
        f"  and the header line / 4) + {image:,} x loadable markers + 4` (a declared marker that",
        "  is not loadable stays as text). A header whose N is larger than the lines that",
        "  follow, or a declared line that is not one whole marker, declares nothing.",
        "- Every other row (an older tool result, one without an `attachments` array, a",
        "  carrier without the header) costs its whole content as text (EST-4).",
        "",
        "### Envelopes: native tool calls and results (TURN-1, PAIR-2, EST-3)",
        "",
        "- A row's content is always a string. Content is read as JSON after trimming space,",
        "  tab, CR and LF around it; it is an envelope only when it is a JSON object. Invalid",
        f"  JSON, JSON nested {MAX_JSON_DEPTH} levels or deeper,",
        "  `NaN`/`Infinity`, a number out of a double's range and an escaped lone surrogate",
        "  (`\"\\ud800\"`) are not JSON: the row is text, priced and swept as text, never an",
        "  error. Escaped keys are read as their text; any other key is allowed.",
        "- A native tool call row: an `assistant` row whose envelope has a `tool_calls` array",
        "  `{\"content\": text or null, \"tool_calls\": [...]}`. Its calls are the elements",
        "  that are objects with a string `id` (the OpenAI shape `{\"id\", \"type\":",
        "  \"function\", \"function\": {...}}` included); a row with none is no dispatch.",
        "- A native tool result row: a `tool` row whose envelope has a string `tool_call_id`",
        "  and a string `content`, and optionally `attachments` (an array, or null for none).",
        "  A `tool` row without a string `tool_call_id` has no readable id (a legacy row).",
        "- `to_chat_messages` writes a call item as `{\"content\":text,\"tool_calls\":[{\"id\",",
        "  \"name\",\"arguments\"}]}` and each result as `{\"tool_call_id\",\"content\"}` plus",
        "  `\"attachments\"` when the result declared any (compact JSON, keys in this order;",
        "  compared as JSON values).",
        "",
        "### The orphan sweep (PAIR-2)",
        "",
        "In this order:",
        "",
        "1. **strip**: walking from the end, a call stays only when a later `tool` row answers",
        "   its id; a row left with no call becomes its `content` text trimmed of the",
        "   whitespace above, or goes when that is null, empty or whitespace only. A row that",
        "   keeps some calls is rewritten with only those (compared as JSON).",
        "2. **pass 1**, on the stripped rows: a dispatch row directly after another dispatch",
        "   row goes, with the `tool` rows right after it that answer its ids or have no",
        "   readable id.",
        "3. **pass 2**: a `tool` row stays only when the nearest assistant row of the",
        "   contiguous assistant/tool run before it is a dispatch and issued the row's",
        "   `tool_call_id`, or the row has no readable id (then it stays only right after a",
        "   dispatch).",
        "4. **histtrim's extra step** (the reference runtime stops after pass 2): strip every",
        "   call that no `tool` row right after its row answers, as step 1 strips, then run",
        "   passes 1 and 2 again, until nothing changes. After it every dispatch row is",
        "   followed directly by `tool` rows answering exactly its ids.",
        "",
        "`[Tool results]` carriers are user rows and the sweep leaves them alone.",
        "",
        "### Recording a tool result (PAIR-3)",
        "",
        f"- `max_tool_result_chars` (default {SPEC.max_tool_result_chars:,}; 0: off): a"
        " longer result keeps a",
        "  head and a tail with `\\n\\n[... N characters truncated ...]\\n\\n` between (N: the",
        "  characters left out). With K = max_chars: if K + the marker's length is more than",
        "  the result's length, K becomes the result's length minus the marker's (repeat while",
        "  the marker's digits change); head = floor(K x 2 / 3), tail = K - head. When K would",
        "  fall below 1, the result is cut to its first max_chars characters, without marker.",
        "",
        "### Budget and capacity (BUDGET-1..9, ROUTE-3..4, RUN-2)",
        "",
        "- Capacity is known only when the provider profile has a positive `context_window`",
        "  and the selected model equals the profile's model (both trimmed of whitespace; an",
        "  empty side matches).",
        "- All in integers, in order: (1) the window operand is the known capacity, else a",
        "  positive `max_context_tokens`, else 32,000; (2) `max_context_tokens` 0 gives budget 0",
        "  (off); (3) a ratio is valid when finite and 0 < r <= 1: budget `max(1, floor(window",
        "  x r))` (a double multiply, truncated), capped by `max_context_tokens` when set; no",
        "  valid ratio: `max_context_tokens`, or 32,000; (4) `history_pruning.enabled` with",
        "  `max_tokens` > 0: the smaller of the two; (5) capped by the window operand.",
        "- On a provider overflow the target is `estimate x 2 // 3`; the history is trimmed to",
        "  it and the call retried while tool iterations remain; with one turn left the turn",
        "  fails with `context_overflow_unrecoverable`.",
        "",
    ]
