"""Optional fields left out while unset, of every dump and of the repr, so that a model
reads exactly as it did before the field existed (a row without extras, a result without
attachments, a figure priced by the spec's estimate rather than a named counter)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, Field


def _is_none(value: object) -> bool:
    return value is None


def unset_by_default(**kwargs: Any) -> Any:
    """A field that defaults to None and is left out of dumps while None."""
    return Field(default=None, exclude_if=_is_none, **kwargs)


class HidesUnset(BaseModel):
    """A model whose repr leaves out the `unset_by_default` fields that are unset, as its
    dumps do."""

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        fields = type(self).model_fields
        for name, value in super().__repr_args__():
            field = fields.get(name) if name is not None else None
            if value is None and field is not None and field.exclude_if is _is_none:
                continue
            yield name, value
