"""The shared argument checks: an int in range passes through; anything else is a ValueError
that names the argument."""

from __future__ import annotations

import pytest

from histtrim._checks import integer_in, non_negative


@pytest.mark.parametrize("value", [0, 1, 10**12])
def test_non_negative_returns_the_value(value: int) -> None:
    assert non_negative("budget_tokens", value) == value


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-1, "budget_tokens must be >= 0, got -1"),
        (True, "budget_tokens must be an integer, got True"),
        (1.0, "budget_tokens must be an integer, got 1.0"),
        ("3", "budget_tokens must be an integer, got '3'"),
        (None, "budget_tokens must be an integer, got None"),
    ],
)
def test_non_negative_rejects_naming_the_argument(value: object, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        non_negative("budget_tokens", value)
    assert str(raised.value) == message


@pytest.mark.parametrize("value", [2, 3, 5])
def test_integer_in_includes_both_ends(value: int) -> None:
    assert integer_in("stop", value, 2, 5) == value


@pytest.mark.parametrize("value", [1, 6, False, 2.0, "2"])
def test_integer_in_rejects_naming_the_argument_and_range(value: object) -> None:
    with pytest.raises(ValueError) as raised:
        integer_in("stop", value, 2, 5)
    assert str(raised.value) == f"stop must be an integer in 2..5, got {value!r}"
