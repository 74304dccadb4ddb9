"""Bad input for the `histtrim` command: one line naming the file, the line and the field,
and exit code 2."""

from __future__ import annotations

EXIT_OK = 0
EXIT_BAD_INPUT = 2


class InputError(Exception):
    """Bad input, reported as `SOURCE: line N: field 'F': problem` and exit code 2."""

    def __init__(
        self, source: str, problem: str, *, line: int | None = None, field: str | None = None
    ) -> None:
        where = [source]
        if line is not None:
            where.append(f"line {line}")
        if field:
            where.append(f"field '{field}'")
        super().__init__(": ".join([*where, problem]))
