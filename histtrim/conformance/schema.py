"""The JSON Schema of a vector file (written beside the vectors as `vectors.schema.json`)."""

from __future__ import annotations

from typing import Any

FORMAT = "histtrim-conformance/1"

_ROW = {
    "type": "object",
    "description": "A provider-facing row {role, content}, or a structured item with `kind`.",
    "oneOf": [
        {
            "properties": {
                "role": {"enum": ["system", "user", "assistant", "tool"]},
                "content": {"type": "string"},
            },
            "required": ["role", "content"],
            "additionalProperties": False,
        },
        {
            "properties": {
                "kind": {"const": "assistant_tool_calls"},
                "text": {"type": ["string", "null"]},
                "tool_calls": {"type": "array", "minItems": 1},
            },
            "required": ["kind", "tool_calls"],
            "additionalProperties": False,
        },
        {
            "properties": {
                "kind": {"const": "tool_results"},
                "results": {"type": "array", "minItems": 1},
            },
            "required": ["kind", "results"],
            "additionalProperties": False,
        },
    ],
}

VECTOR_FILE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://histtrim.invalid/conformance/vectors.schema.json",
    "title": "histtrim conformance vectors (one file per rule group)",
    "type": "object",
    "required": ["format", "group", "index", "rules", "vectors"],
    "additionalProperties": False,
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
                "properties": {
                    "id": {"type": "string", "pattern": "^[a-z_]+-[0-9a-f]{12}$"},
                    "rules": {
                        "type": "array", "minItems": 1, "uniqueItems": True,
                        "items": {"type": "string", "pattern": "^[A-Z]+-[0-9]+$"},
                    },
                    "function": {"type": "string"},
                    "source": {
                        "type": "string",
                        "description": "notebook:<file>#cell-<n>, generated:<family>#<n>, "
                        "shrunk:<property> or hostile:<case>",
                    },
                    "history": {"oneOf": [{"type": "null"}, {"type": "array", "items": {}}],
                                "description": "The input history; rows are usually " + str(
                                    _ROW["description"])},
                    "arguments": {"type": "object"},
                    "expected": {
                        "oneOf": [
                            {"type": "object", "required": ["result"],
                             "properties": {"result": {"type": "object"}},
                             "additionalProperties": False},
                            {"type": "object", "required": ["error"],
                             "properties": {"error": {
                                 "type": "object", "required": ["kind"],
                                 "properties": {"kind": {"type": "string"}},
                                 "additionalProperties": False}},
                             "additionalProperties": False},
                        ]
                    },
                },
            },
        },
    },
}
