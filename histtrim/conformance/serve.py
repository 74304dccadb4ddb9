"""`histtrim conformance serve`: histtrim itself behind the JSON Lines protocol (one request
per line on stdin, one response per line on stdout, in order)."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any, TextIO

from histtrim.conformance.codec import JsonObject, ProtocolError, canonical
from histtrim.conformance.reference import FUNCTIONS


def answer(request: Any) -> JsonObject:
    """The response to one decoded request line."""
    if not isinstance(request, Mapping):
        return {"id": None, "error": {"kind": "invalid_request", "message": "not an object"}}
    ident = request.get("id")
    function = FUNCTIONS.get(str(request.get("function")))
    if function is None:
        return {"id": ident, "error": {"kind": "not_implemented",
                                       "message": f"no function {request.get('function')!r}"}}
    arguments = request.get("arguments")
    if not isinstance(arguments, Mapping):
        return {"id": ident, "error": {"kind": "invalid_request",
                                       "message": "arguments: expected an object"}}
    try:
        return {"id": ident, "result": function(request.get("history"), arguments)}
    except ProtocolError as error:
        return {"id": ident, "error": {"kind": error.kind, "message": str(error)}}
    except Exception as error:  # never die on one request: report it and go on
        return {"id": ident, "error": {"kind": "internal_error",
                                       "message": f"{type(error).__name__}: {error}"}}


def serve(stdin: TextIO, stdout: TextIO) -> int:
    """Answer requests until stdin closes."""
    for line in stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except ValueError as error:
            response: JsonObject = {"id": None, "error": {"kind": "invalid_request",
                                                          "message": str(error)}}
        else:
            response = answer(request)
        stdout.write(canonical(response) + "\n")
        stdout.flush()
    return 0


def main() -> int:
    return serve(sys.stdin, sys.stdout)
