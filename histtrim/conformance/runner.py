"""`histtrim conformance run`: drive another implementation over the protocol and judge
every answer. Answers are matched to requests by `id`, so a stray line or an answer out of
order shifts nothing; a crash, a time-out or a malformed answer fails one vector (with the
tail of the implementation's stderr), never the rest of the run, and never hangs it. Every
read is bounded: the answer line (`max_answer_bytes`, and a small multiple of the largest
expected answer), its nesting, the stderr kept; a line is parsed by the reader thread, so a
time-out fires whatever it holds, and only the lines a failure's report shows are kept."""

from __future__ import annotations

import contextlib
import difflib
import json
import queue
import subprocess
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from histtrim.conformance.compare import differences, judge_result, nesting_depth
from histtrim.conformance.vectors import Vector

Status = Literal["passed", "failed", "not_implemented"]

MAX_ANSWER_BYTES = 64 * 1024 * 1024
"""The longest answer line read (the CLI's `--max-answer-bytes`); a longer one fails its vector."""
ANSWER_BYTES_CEILING = 2**40
"""The largest `max_answer_bytes` taken (1 TiB): a line buffer's size must fit the platform."""
ANSWER_SLACK = 8
"""An answer line may be this many times the largest expected answer of the run, plus
`ANSWER_SLACK_BYTES` (free spacing, escapes): past it the line is refused unparsed, so parsing
costs a bounded multiple of what a correct answer costs."""
ANSWER_SLACK_BYTES = 1024 * 1024
DIFF_LINES = 40
"""Lines of differences a failing vector keeps for its report."""
DIFF_WIDTH = 2000
"""Characters of one unified-diff line kept."""
EVENTS_QUEUED = 4
"""Parsed lines waiting for the main thread: with the line bound, what a flood of output
can hold in memory at once."""
MAX_ANSWER_DEPTH = 64
"""Arrays and objects nested deeper than this are not an answer (no expected result is)."""
STDERR_KEPT = 4096
"""Bytes of the implementation's stderr kept (its tail), shown when a vector fails badly."""
STDERR_LINES = 6
STRAY_KEPT = 5
"""Stray output lines quoted in the report (all are counted)."""


@dataclass(frozen=True)
class Outcome:
    vector: Vector
    status: Status
    reason: str
    stderr: str = ""
    """The tail of the implementation's stderr, for a crash, a time-out or a malformed answer."""
    differences: tuple[str, ...] = ()
    """What differs from the expected answer (at most `DIFF_LINES` lines): all a report
    needs, so the answer itself is not kept."""


@dataclass
class RunResult:
    outcomes: list[Outcome]
    stray: list[str] = field(default_factory=list)
    """Output lines with no request of that id (quoted, at most `STRAY_KEPT`)."""
    stray_count: int = 0
    late_count: int = 0
    """Answers that arrived after their vector had already failed (a time-out)."""
    reordered: int = 0
    """Answers that arrived before the answer to an older request (matched by id)."""


class CannotStart(Exception):
    """The implementation cannot run at all: not found, or it exits twice before answering
    any request (a crash later in the run fails one vector and the process restarts)."""


def printable(text: str) -> str:
    """Text an implementation wrote, safe to print: control characters (but newline and
    tab) and lone surrogates escaped."""
    return "".join(
        c if c in "\n\t" or (c.isprintable() and not 0xD800 <= ord(c) <= 0xDFFF)
        else ascii(c)[1:-1]
        for c in text
    )


def _parse_answer(line: bytes) -> tuple[Any, str]:
    """(decoded object, "") or (None, why it is not an answer)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        return None, f"malformed answer line: not UTF-8 ({error.reason} at byte {error.start})"
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        return None, "malformed answer line: JSON nested too deeply"
    except ValueError as error:
        return None, f"malformed answer line ({error}): {printable(repr(text[:200]))}"
    depth = nesting_depth(value, MAX_ANSWER_DEPTH)
    if depth > MAX_ANSWER_DEPTH:
        return None, f"malformed answer line: JSON nested more than {MAX_ANSWER_DEPTH} levels"
    if not isinstance(value, dict):
        return None, f"malformed answer line: a JSON {type(value).__name__}, not an object"
    return value, ""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _line_event(line: bytes) -> tuple[str, Any]:
    """An output line as the reader thread hands it over: ("answer", object) or
    ("malformed", why), with a stray line's first bytes kept for the report."""
    answer, problem = _parse_answer(line)
    if answer is None:
        return "malformed", problem
    return "answer", (answer, printable(line[:200].decode("utf-8", "replace").rstrip("\n")))


def _what(response: dict[str, Any]) -> str:
    """What an answer holds, for a failure's reason."""
    error = response.get("error")
    if "result" in response:
        return "a result"
    if isinstance(error, dict) and isinstance(error.get("kind"), str):
        return f"error {printable(error['kind'][:80])}"
    return "neither a result nor an error with a kind"


def judge(vector: Vector, response: Any) -> Outcome:
    """Compare one answer (already matched to the vector by id) with its expected outcome;
    a failure keeps the lines that show the difference, not the answer."""
    if not isinstance(response, dict):
        return Outcome(vector, "failed", "malformed answer (not a JSON object)")
    error = response.get("error")
    if isinstance(error, dict) and error.get("kind") == "not_implemented":
        return Outcome(vector, "not_implemented", "not implemented")
    expected = vector.expected
    if "error" in expected:
        kind = error.get("kind") if isinstance(error, dict) else None
        if kind == expected["error"]["kind"] and "result" not in response:
            return Outcome(vector, "passed", "")
        return Outcome(vector, "failed",
                       f"expected error {expected['error']['kind']}, got {_what(response)}",
                       differences=tuple(unified(vector.expected, _compared(response))))
    if "result" not in response:
        return Outcome(vector, "failed", f"expected a result, got {_what(response)}",
                       differences=tuple(unified(vector.expected, _compared(response))))
    if judge_result(vector.function, expected["result"], response["result"]):
        return Outcome(vector, "passed", "")
    return Outcome(vector, "failed", "result differs", differences=tuple(differences(
        vector.function, expected["result"], response["result"], DIFF_LINES)))


def _compared(response: dict[str, Any]) -> dict[str, Any]:
    """The parts of an answer that are compared: its result, its error's kind."""
    shown = {k: v for k, v in response.items() if k in ("result", "error")}
    if isinstance(shown.get("error"), dict):
        shown["error"] = {"kind": shown["error"].get("kind")}
    return shown


def unified(expected: Any, actual: Any, max_lines: int = DIFF_LINES) -> list[str]:
    """A unified diff of two JSON values, pretty-printed, cut at `max_lines`."""
    lines = list(difflib.unified_diff(
        _pretty(expected), _pretty(actual), "expected", "actual", lineterm="", n=2))
    if len(lines) > max_lines:
        lines = [*lines[:max_lines], f"... ({len(lines) - max_lines} more diff lines)"]
    return [line if len(line) <= DIFF_WIDTH else line[: DIFF_WIDTH - 3] + "..."
            for line in lines]


def _pretty(value: Any) -> list[str]:
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=True).splitlines()


def answer_limit(vectors: Sequence[Vector], max_answer_bytes: int) -> int:
    """The longest answer line a run reads: `max_answer_bytes`, or less when even a
    generously spaced answer to the largest expected outcome is shorter."""
    largest = max((len(json.dumps(v.expected, ensure_ascii=True)) for v in vectors), default=0)
    return min(max_answer_bytes, ANSWER_SLACK * largest + ANSWER_SLACK_BYTES)


class _Process:
    """One start of the implementation: its stdout read line by line (bounded) and its
    stderr tail kept, by threads, so a child that stops reading or answering costs one
    time-out, not a hang."""

    def __init__(self, command: Sequence[str], max_answer_bytes: int) -> None:
        try:
            self.popen = subprocess.Popen(
                list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except OSError as error:
            reason = error.strerror or type(error).__name__
            raise CannotStart(f"cannot start {command[0]!r}: {reason}") from None
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=EVENTS_QUEUED)
        self.stopped = threading.Event()
        self.answers = 0
        self._stderr = bytearray()
        self._stderr_lock = threading.Lock()
        self._writes: queue.Queue[bytes | None] = queue.Queue()
        self._threads = [threading.Thread(target=target, args=(max_answer_bytes,), daemon=True)
                         for target in (self._read_stdout, self._read_stderr, self._write)]
        for thread in self._threads:
            thread.start()

    def _put(self, event: tuple[str, Any]) -> bool:
        while not self.stopped.is_set():
            with contextlib.suppress(queue.Full):
                self.events.put(event, timeout=0.2)
                return True
        return False

    def _read_stdout(self, limit: int) -> None:
        stream = self.popen.stdout
        assert stream is not None
        try:
            while True:
                line = stream.readline(limit + 1)
                if not line:
                    break
                if len(line) > limit and not line.endswith(b"\n"):
                    self._put(("too_long", len(line)))
                    return  # the process is restarted: the rest of the line is never read
                if line.strip() and not self._put(_line_event(line)):
                    return
        except (OSError, ValueError):
            pass
        self._put(("eof", None))

    def _read_stderr(self, _: int) -> None:
        stream = self.popen.stderr
        assert stream is not None
        with contextlib.suppress(OSError, ValueError):
            while chunk := stream.read1(65536):  # type: ignore[attr-defined]
                with self._stderr_lock:
                    self._stderr += chunk
                    del self._stderr[:-STDERR_KEPT]

    def _write(self, _: int) -> None:
        stream = self.popen.stdin
        assert stream is not None
        while (data := self._writes.get()) is not None:
            try:
                stream.write(data)
                stream.flush()
            except (OSError, ValueError):
                return  # it died or closed stdin: the reader reports the end of output

    def send(self, request: dict[str, Any]) -> None:
        text = json.dumps(request, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
        self._writes.put(text.encode("ascii") + b"\n")

    def stderr_tail(self) -> str:
        """The last lines of stderr (escaped for printing); once the process has exited, what
        it wrote last has arrived."""
        if self.popen.poll() is not None:
            self._threads[1].join(timeout=1)
        with self._stderr_lock:
            text = bytes(self._stderr).decode("utf-8", "replace")
        lines = [line for line in text.splitlines() if line.strip()]
        return printable("\n".join(lines[-STDERR_LINES:]))

    def stop(self, *, kill: bool = False) -> int | None:
        """End the process: close its stdin and let it exit (2 s), or kill it at once (a
        process that hangs or floods gets no grace)."""
        self.stopped.set()
        self._writes.put(None)
        popen = self.popen
        if kill:
            popen.kill()
        if popen.stdin is not None:
            with contextlib.suppress(OSError):
                popen.stdin.close()
        try:
            return popen.wait(timeout=2)
        except subprocess.TimeoutExpired:
            popen.kill()
            return popen.wait()


class Implementation:
    """The implementation behind the protocol, restarted after a crash or a time-out. Up to
    `window` requests are outstanding at once; the oldest unanswered one is blamed for a
    crash or a malformed line, and its time-out starts when it becomes the oldest."""

    def __init__(self, command: Sequence[str], *, timeout: float, window: int = 4,
                 max_answer_bytes: int = MAX_ANSWER_BYTES) -> None:
        if not command:
            raise CannotStart("no implementation command")
        self.command = list(command)
        self.timeout = timeout
        self.window = max(1, window)
        if not 1 <= max_answer_bytes <= ANSWER_BYTES_CEILING:
            raise ValueError(f"max_answer_bytes: expected 1 to {ANSWER_BYTES_CEILING}, got "
                             f"{max_answer_bytes}")
        self.max_answer_bytes = self.limit = max_answer_bytes
        self.process: _Process | None = None
        self.silent_exits = 0
        """Starts that exited without answering anything, before any answer arrived."""
        self.answered = False

    def _start(self) -> _Process:
        if self.process is None:
            self.process = _Process(self.command, self.limit)
        return self.process

    def _stop(self, *, kill: bool = False) -> int | None:
        process, self.process = self.process, None
        return None if process is None else process.stop(kill=kill)

    def run(self, vectors: Sequence[Vector]) -> RunResult:
        """Every vector once; raises `CannotStart` when the command cannot run at all."""
        state = _Run(vectors)
        self.limit = answer_limit(vectors, self.max_answer_bytes)
        try:
            while state.pending or state.outstanding:
                process = self._start()
                state.send_more(process, self.window)
                wait = state.oldest_since + self.timeout - time.monotonic()
                try:
                    kind, payload = process.events.get(timeout=max(wait, 0))
                except queue.Empty:
                    tail = process.stderr_tail()
                    self._stop(kill=True)
                    state.fail_oldest(f"no answer within {self.timeout:g} s (the process was "
                                      "restarted)", tail)
                    continue
                if kind == "answer":
                    answer, quoted = payload
                    if state.take_answer(answer, quoted, process):
                        self.answered = True
                    continue
                if kind == "malformed":
                    state.fail_malformed(payload, process)
                    continue
                if kind == "too_long":
                    tail = process.stderr_tail()
                    self._stop(kill=True)
                    reason = (f"answer line longer than {self.limit} bytes (--max-answer-bytes, "
                              f"or {ANSWER_SLACK} times the largest expected answer + 1 MiB; "
                              "the process was restarted)")
                else:
                    code = self._stop()
                    tail = process.stderr_tail()
                    self._check_started(process, code, tail)
                    reason = f"the implementation exited (code {code}) without answering"
                state.fail_oldest(reason, tail)
        finally:
            self._stop()
        return state.result()

    def _check_started(self, process: _Process, code: int | None, tail: str) -> None:
        """Two starts that exit before any answer of the run: the command cannot run."""
        if process.answers or self.answered:
            return
        self.silent_exits += 1
        if self.silent_exits >= 2:
            last = tail.splitlines()[-1] if tail else "no stderr"
            raise CannotStart(f"{self.command[0]!r} exited (code {code}) twice without "
                              f"answering a request; its stderr ends: {last}")


class _Run:
    """The bookkeeping of one run: vectors not sent yet, sent and unanswered (oldest
    first, with the time it became the oldest), and finished."""

    def __init__(self, vectors: Sequence[Vector]) -> None:
        self.vectors = list(vectors)
        self.known = {v.id for v in vectors}
        if len(self.known) != len(self.vectors):
            raise ValueError("vectors: every id must be unique (answers are matched by id)")
        self.pending: deque[Vector] = deque(vectors)
        self.outstanding: OrderedDict[str, Vector] = OrderedDict()
        self.oldest_since = time.monotonic()
        self.finished: dict[str, Outcome] = {}
        self.summary = RunResult([])

    def send_more(self, process: _Process, window: int) -> None:
        while self.pending and len(self.outstanding) < window:
            vector = self.pending.popleft()
            if not self.outstanding:
                self.oldest_since = time.monotonic()
            self.outstanding[vector.id] = vector
            process.send(vector.request())

    def _oldest(self) -> Vector:
        return next(iter(self.outstanding.values()))

    def _finish(self, vector: Vector, outcome: Outcome) -> None:
        oldest = self._oldest()
        del self.outstanding[vector.id]
        self.finished[vector.id] = outcome
        if vector is oldest:
            self.oldest_since = time.monotonic()  # the next one's clock starts now

    def fail_malformed(self, problem: str, process: _Process) -> None:
        """A line that is not an answer: the oldest outstanding vector fails."""
        if self.outstanding:
            oldest = self._oldest()
            self._finish(oldest, Outcome(oldest, "failed", problem, process.stderr_tail()))
        else:
            self.summary.stray_count += 1

    def take_answer(self, answer: dict[str, Any], quoted: str, process: _Process) -> bool:
        """One parsed answer: matched by id (True), or a late answer or a stray line
        (counted and skipped)."""
        ident = answer.get("id")
        if isinstance(ident, str) and ident in self.outstanding:
            self.summary.reordered += ident != self._oldest().id
            process.answers += 1
            self._finish(self.outstanding[ident], judge(self.outstanding[ident], answer))
            return True
        if isinstance(ident, str) and ident in self.known:
            self.summary.late_count += 1
        else:
            self.summary.stray_count += 1
            if len(self.summary.stray) < STRAY_KEPT:
                self.summary.stray.append(quoted)
        return False

    def fail_oldest(self, reason: str, tail: str) -> None:
        """The process is gone: fail the oldest outstanding vector, send the others again."""
        oldest = self._oldest()
        self._finish(oldest, Outcome(oldest, "failed", reason, tail))
        self.pending.extendleft(reversed(self.outstanding.values()))
        self.outstanding.clear()

    def result(self) -> RunResult:
        self.summary.outcomes = [self.finished[v.id] for v in self.vectors]
        return self.summary


def run(vectors: Sequence[Vector], command: Sequence[str], *, timeout: float,
        window: int = 4, max_answer_bytes: int = MAX_ANSWER_BYTES) -> RunResult:
    """Every vector through one implementation process (restarted after a crash); raises
    `CannotStart` when it cannot run at all."""
    return Implementation(command, timeout=timeout, window=window,
                          max_answer_bytes=max_answer_bytes).run(vectors)
