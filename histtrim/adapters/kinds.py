"""How the adapters' format errors name what they got instead: JSON's kinds ("a string",
"an object", "null"...), else the Python type. One wording for every adapter."""

from __future__ import annotations


def json_kind(value: object) -> str:
    """How an error names what it got: JSON's kinds, else the Python type."""
    if value is None:
        return "null"
    if value == "":
        return "an empty string"
    names = {str: "a string", bool: "a boolean", int: "a number", float: "a number",
             list: "a list", dict: "an object"}
    return names.get(type(value), type(value).__name__)
