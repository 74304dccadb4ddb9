"""`histtrim conformance run`: drive another implementation over the protocol, one request
per vector, with a time-out per vector; a crash or a malformed answer is a failure, never a
hang (the process is restarted for the next vector)."""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, Any, Literal

from histtrim.conformance.codec import canonical
from histtrim.conformance.vectors import Vector

Status = Literal["passed", "failed", "not_implemented"]


@dataclass(frozen=True)
class Outcome:
    vector: Vector
    status: Status
    actual: Any
    """The response as received (or None), for the diff."""
    reason: str


def same(expected: Any, actual: Any) -> bool:
    """JSON equality: object key order is free, a boolean is not a number, 1 == 1.0."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return expected == actual
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(
            same(expected[k], actual[k]) for k in expected
        )
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(map(same, expected, actual))
    return type(expected) is type(actual) and expected == actual


def judge(vector: Vector, response: Any) -> Outcome:
    """Compare one response with the vector's expected outcome."""
    if not isinstance(response, dict) or response.get("id") != vector.id:
        return Outcome(vector, "failed", response, "malformed response (not an object with "
                       "this vector's id)")
    error = response.get("error")
    if isinstance(error, dict) and error.get("kind") == "not_implemented":
        return Outcome(vector, "not_implemented", response, "not implemented")
    expected = vector.expected
    if "error" in expected:
        kind = error.get("kind") if isinstance(error, dict) else None
        if kind == expected["error"]["kind"]:
            return Outcome(vector, "passed", response, "")
        return Outcome(vector, "failed", response, f"expected error {expected['error']['kind']}")
    if "result" not in response:
        return Outcome(vector, "failed", response, "expected a result, got an error")
    if same(expected["result"], response["result"]):
        return Outcome(vector, "passed", response, "")
    return Outcome(vector, "failed", response, "result differs")


class Implementation:
    """The implementation's process: requests written and responses read by threads, so a
    child that stops reading or answering costs one time-out, not a hang."""

    def __init__(self, command: Sequence[str]) -> None:
        self.command = list(command)
        self.process: subprocess.Popen[str] | None = None
        self.lines: queue.Queue[str | None] = queue.Queue()

    def start(self) -> None:
        self.process = subprocess.Popen(
            self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True, encoding="utf-8", bufsize=1,
        )
        self.lines = queue.Queue()
        threading.Thread(target=self._read, args=(self.process.stdout, self.lines),
                         daemon=True).start()

    @staticmethod
    def _read(stream: IO[str] | None, lines: queue.Queue[str | None]) -> None:
        assert stream is not None
        try:
            for line in stream:
                lines.put(line)
        except (OSError, ValueError):
            pass
        lines.put(None)  # end of output: the process exited or closed stdout

    def _write(self, text: str) -> None:
        process = self.process
        assert process is not None and process.stdin is not None
        try:
            process.stdin.write(text)
            process.stdin.flush()
        except (OSError, ValueError):
            pass  # it died: the reader reports the end of output

    def ask(self, request: dict[str, Any], timeout: float) -> tuple[Any, str]:
        """(decoded response, "") or (None, why not)."""
        if self.process is None or self.process.poll() is not None:
            self.stop()
            self.start()
        threading.Thread(target=self._write, args=(canonical(request) + "\n",),
                         daemon=True).start()
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            self.stop()
            return None, f"no response within {timeout:g} s (the process was restarted)"
        if line is None:
            code = self.stop()
            return None, f"the implementation exited (code {code}) without answering"
        try:
            return json.loads(line), ""
        except ValueError:
            return None, f"malformed response line: {line[:200]!r}"

    def stop(self) -> int | None:
        process, self.process = self.process, None
        if process is None:
            return None
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        try:
            return process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            process.kill()
            return process.wait()


def run(vectors: Sequence[Vector], command: Sequence[str], *, timeout: float) -> list[Outcome]:
    """Every vector through one implementation process (restarted after a crash)."""
    implementation = Implementation(command)
    outcomes: list[Outcome] = []
    try:
        for vector in vectors:
            response, problem = implementation.ask(vector.request(), timeout)
            if problem:
                outcomes.append(Outcome(vector, "failed", None, problem))
            else:
                outcomes.append(judge(vector, response))
    finally:
        implementation.stop()
    return outcomes
