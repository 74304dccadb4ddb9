"""`histtrim conformance serve`: histtrim itself behind the JSON Lines protocol (one request
per line on stdin, one answer per line on stdout, in order). A line that is not a request
(not UTF-8, not JSON, nested too deeply, a non-finite number, longer than
`MAX_REQUEST_BYTES`) gets an `invalid_input` answer and the server keeps serving; answers
are ASCII JSON, so a lone surrogate travels escaped."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from typing import Any, BinaryIO

from histtrim.conformance.codec import INVALID_INPUT, JsonObject, ProtocolError
from histtrim.conformance.reference import FUNCTIONS

MAX_REQUEST_BYTES = 64 * 1024 * 1024
"""The longest request line read; a longer one is answered `invalid_input` and skipped."""


def _error(ident: Any, kind: str, message: str) -> JsonObject:
    return {"id": ident, "error": {"kind": kind, "message": message}}


def _ident(request: Mapping[str, Any]) -> Any:
    """The request's id when an answer can carry it (a string or a finite number), else None."""
    ident = request.get("id")
    if isinstance(ident, str | int) and not isinstance(ident, bool):
        return ident
    if isinstance(ident, float) and math.isfinite(ident):
        return ident
    return None


def answer(request: Any) -> JsonObject:
    """The answer to one decoded request line."""
    if not isinstance(request, Mapping):
        return _error(None, INVALID_INPUT, "a request is a JSON object")
    ident = _ident(request)
    function = FUNCTIONS.get(str(request.get("function")))
    if function is None:
        return _error(ident, "not_implemented", f"no function {request.get('function')!r}")
    arguments = request.get("arguments")
    if not isinstance(arguments, Mapping):
        return _error(ident, INVALID_INPUT, "arguments: expected an object")
    try:
        return {"id": ident, "result": function(request.get("history"), arguments)}
    except ProtocolError as error:
        return _error(ident, error.kind, str(error))
    except RecursionError:
        return _error(ident, INVALID_INPUT, "input nested too deeply")
    except Exception as error:  # never die on one request: report it and go on
        return _error(ident, "internal_error", f"{type(error).__name__}: {error}")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} is beyond a double")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def decode(line: bytes) -> Any:
    """One request line as JSON, or `ProtocolError(invalid_input)` saying why not."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ProtocolError(INVALID_INPUT, f"request line: not UTF-8 ({error.reason} at "
                            f"byte {error.start})") from None
    try:
        return json.loads(text, parse_float=_finite, parse_constant=_no_constant)
    except RecursionError:
        raise ProtocolError(INVALID_INPUT, "request line: JSON nested too deeply") from None
    except ValueError as error:
        raise ProtocolError(INVALID_INPUT, f"request line: {error}") from None


def _encode(response: JsonObject) -> bytes:
    try:
        text = json.dumps(response, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                          allow_nan=False)
    except (ValueError, TypeError, RecursionError) as error:
        text = json.dumps(_error(response.get("id"), "internal_error",
                                 f"answer not encodable as JSON: {error}"), ensure_ascii=True)
    return text.encode("ascii") + b"\n"


def serve(stdin: BinaryIO, stdout: BinaryIO, *, max_line: int = MAX_REQUEST_BYTES) -> int:
    """Answer requests until stdin closes."""
    while line := stdin.readline(max_line + 1):
        if len(line) > max_line and not line.endswith(b"\n"):
            while (rest := stdin.readline(1 << 20)) and not rest.endswith(b"\n"):
                pass  # the rest of an over-long line is skipped, never held
            response = _error(None, INVALID_INPUT, f"request line longer than {max_line} bytes")
        elif not line.strip():
            continue
        else:
            try:
                response = answer(decode(line))
            except ProtocolError as error:
                response = _error(None, error.kind, str(error))
        stdout.write(_encode(response))
        stdout.flush()
    return 0


def main() -> int:
    return serve(sys.stdin.buffer, sys.stdout.buffer)
