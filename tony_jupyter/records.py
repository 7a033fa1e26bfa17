"""Record: a frozen dataclass with one JSON form (enums as their values, nested records as
objects), the base of every record in :mod:`.protocol`."""

from __future__ import annotations

import sys
import types
import typing
from collections.abc import Mapping
from dataclasses import fields
from enum import Enum
from typing import Any, TypeVar

R = TypeVar("R", bound="Record")


class Record:
    """A frozen dataclass with one JSON form: enums as their values, nested records as
    objects; unknown keys are ignored and missing ones take their defaults when read, so
    records written by an older version still load."""

    def to_json(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_json(cls: type[R], data: Mapping[str, Any]) -> R:
        hints = _hints(cls)
        kw = {}
        for f in fields(cls):  # type: ignore[arg-type]
            if f.name in data:
                kw[f.name] = _typed(hints[f.name], data[f.name])
        return cls(**kw)


_HINTS: dict[Any, dict[str, Any]] = {}  # a record class's field types: snapshots are read often


def _hints(cls: Any) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
    return _HINTS[cls]


def _plain(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_json()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _typed(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return _typed(inner[0], value) if len(inner) == 1 else value
    if origin is tuple and args:
        return tuple(_typed(args[0], v) for v in value)
    if isinstance(hint, type) and issubclass(hint, Record):
        return hint.from_json(value)
    if isinstance(hint, type) and issubclass(hint, Enum):
        try:
            return hint(value)
        except ValueError:
            return value  # a state a newer AM knows: shown as it is
    return value
