"""Record: a frozen dataclass with one JSON form (enums as their values, nested records as
objects), the base of every record in :mod:`.protocol`."""

from __future__ import annotations

import json
import math
import os
import sys
import types
import typing
from collections.abc import Mapping
from dataclasses import MISSING, fields
from enum import Enum
from pathlib import Path
from typing import Any, TypeVar

R = TypeVar("R", bound="Record")


class Record:
    """A frozen dataclass with one JSON form: enums as their values, nested records as
    objects; unknown keys are ignored and missing ones take their defaults when read, so
    records written by an older version still load."""

    def to_json(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}  # type: ignore[arg-type]

    def write(self, path: Path) -> None:
        """To ``path`` at once (beside, then renamed): a reader never sees half of it."""
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.to_json()))
        os.replace(tmp, path)

    @classmethod
    def from_json(cls: type[R], data: Mapping[str, Any]) -> R:
        hints = _hints(cls)
        kw = {}
        for f in fields(cls):  # type: ignore[arg-type]
            if f.name in data:
                kw[f.name] = _typed(hints[f.name], data[f.name])
        return cls(**kw)

    @classmethod
    def checked(cls: type[R], data: Any) -> R:
        """:meth:`from_json` for what was read from a file another process wrote: a
        ValueError naming the first value that is not of its field's type (a damaged file,
        or one written by a version whose record differs), instead of a record that breaks
        its readers later."""
        if not isinstance(data, Mapping):
            raise ValueError(f"not a {cls.__name__} record but a JSON {type(data).__name__}")
        try:
            rec = cls.from_json(data)
        except (TypeError, ValueError, AttributeError, KeyError) as e:
            raise ValueError(f"not a {cls.__name__} record: {e}") from None
        _check(rec)
        return rec

    @classmethod
    def encode(cls, base: Record | None = None, **values: Any) -> dict[str, Any]:
        """This record's JSON form from ``base``'s fields (a record of this class) and
        ``values``, which may be in their JSON form already: what ``to_json()`` gives,
        without reading them into records first (a job's snapshot, built straight from the
        AM's task records, am/views.py: ~0.2 ms a task as records)."""
        names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
        unknown = set(values) - set(names)
        if unknown:
            raise TypeError(f"{cls.__name__} has no field {sorted(unknown)[0]!r}")
        given = {n: getattr(base, n) for n in names} if base is not None else {}
        given.update(values)
        missing = [n for n in names if n not in given]
        if missing:
            raise TypeError(f"{cls.__name__} needs {missing[0]!r}")
        return {n: _plain(given[n]) for n in names}

    @classmethod
    def parse(cls: type[R], data: Any) -> R:
        """A message's body (a request to the AM, its answer) as this record: a ValueError
        naming the first field that is missing or not of its type, worded for the sender
        (``'attempt' must be a whole number``, ``body needs 'port'``)."""
        if not isinstance(data, Mapping):
            raise ValueError("body must be a JSON object")
        hints = _hints(cls)
        for f in fields(cls):  # type: ignore[arg-type]
            if f.name in data:
                wrong = _wrong(hints[f.name], data[f.name])
                if wrong:
                    raise ValueError(f"{f.name!r} must be {wrong}")
            elif f.default is MISSING and f.default_factory is MISSING:
                raise ValueError(f"body needs {f.name!r}")
        try:  # every field given is of its type (above): no second walk of them (checked)
            rec = cls.from_json(data)
        except (TypeError, ValueError, AttributeError, KeyError) as e:
            raise ValueError(f"not a {cls.__name__} record: {e}") from None
        rec.bound()
        return rec

    def bound(self) -> None:
        """A message's bounds beyond its fields' types (sizes, ranges), checked by
        :meth:`parse`: a ValueError naming the field that is out of them. None by default."""


class Sparse(Record):
    """A record whose JSON form leaves out the fields that are None: a reader takes a key's
    presence to mean something (a ``value`` sent, a ``command`` to follow)."""

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in super().to_json().items() if v is not None}


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
    if origin is dict and _converts(args[-1]):
        return {k: _typed(args[-1], v) for k, v in value.items()}
    if isinstance(hint, type) and issubclass(hint, Record):
        return hint.from_json(value)
    if isinstance(hint, type) and issubclass(hint, Enum):
        try:
            return hint(value)
        except ValueError:
            return value  # a state a newer AM knows: shown as it is
    return value


def _converts(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, (Record, Enum))


MAX_WHOLE = 1 << 62  # the largest whole number a message may carry (a log offset)
_NAMES = {bool: "true or false", int: "a whole number", float: "a finite number", str: "a string"}


_SHAPES: dict[Any, tuple[Any, tuple]] = {}  # a hint's origin and arguments: every heartbeat asks


def _shape(hint: Any) -> tuple[Any, tuple]:
    got = _SHAPES.get(hint)
    if got is None:
        got = _SHAPES[hint] = (typing.get_origin(hint), typing.get_args(hint))
    return got


def _wrong(hint: Any, value: Any) -> str | None:
    """What ``value`` should have been for ``hint``, in the sender's words; None if it is."""
    if hint in _SCALARS:
        return _wrong_scalar(hint, value)
    origin, args = _shape(hint)
    if hint is Any:
        return None
    if origin in (typing.Union, types.UnionType):
        return _wrong_union(args, value)
    if origin in (tuple, list):
        return _wrong_list(args, value)
    if origin is dict or hint is dict:
        return _wrong_dict(args, value)
    if isinstance(hint, type):
        return _wrong_class(hint, value)
    return None


def _wrong_union(args: tuple, value: Any) -> str | None:
    if value is None and type(None) in args:
        return None
    first = None
    for a in args:
        if a is not type(None):
            wrong = _wrong(a, value)
            if wrong is None:
                return None
            first = first or wrong
    return first


def _wrong_list(args: tuple, value: Any) -> str | None:
    item = args[0] if args else Any
    said = "a list" + ("" if item is Any else f" of {_plural(item)}")
    if not isinstance(value, list):
        return said
    for i, v in enumerate(value):
        why = _wrong(item, v)
        if why:
            return f"{said} (item {i} is not {why})" if _converts(item) else said
    return None


def _wrong_dict(args: tuple, value: Any) -> str | None:
    item = args[-1] if args else Any
    if not isinstance(value, dict) or any(_wrong(item, v) for v in value.values()):
        return "a JSON object" + ("" if item is Any else f" of {_plural(item)}")
    if any(_wrong(str, k) for k in value):
        return "a JSON object whose keys are Unicode text"
    return None


def _wrong_class(hint: type, value: Any) -> str | None:
    """A record (parsed as one) or an enum (one of its values); any other class: None."""
    if issubclass(hint, Record):
        try:
            hint.parse(value)
        except ValueError as e:
            return f"a {hint.__name__} ({e})"
        return None
    if issubclass(hint, Enum):
        known = [m.value for m in hint]
        return None if value in known else "one of " + ", ".join(map(str, known))
    return None


def _wrong_scalar(hint: Any, value: Any) -> str | None:
    if hint is int:
        whole = isinstance(value, int) and not isinstance(value, bool)
        return None if whole and abs(value) <= MAX_WHOLE else _NAMES[int]
    ok = _SCALARS[hint]
    wrong = not isinstance(value, ok) or (hint is not bool and isinstance(value, bool))
    if not wrong and hint is str and not value.isascii():
        try:  # JSON's "\ud800" reads as a lone surrogate, which no file or answer can hold
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "a string of Unicode text (a lone surrogate is not)"
    if not wrong and hint is float:  # JSON has no NaN or Infinity; Python's json reads them
        big = isinstance(value, int) and abs(value) > MAX_WHOLE  # past a float's range too
        wrong = big or (isinstance(value, float) and not math.isfinite(value))
    return _NAMES[hint] if wrong else None


def _plural(hint: Any) -> str:
    names = {str: "strings", int: "whole numbers", float: "finite numbers", bool: "true or false"}
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        said = [names.get(a, "JSON objects") for a in typing.get_args(hint) if a is not type(None)]
        if float in typing.get_args(hint) and "whole numbers" in said:
            said.remove("whole numbers")  # a finite number covers them
        said += ["null"] if type(None) in typing.get_args(hint) else []
        return ", ".join(said[:-1]) + " or " + said[-1] if len(said) > 1 else said[0]
    return names.get(hint, "JSON objects")


_SCALARS = {bool: (bool,), int: (int,), float: (int, float), str: (str,)}


def _check(rec: Record) -> None:
    hints = _hints(type(rec))
    for f in fields(rec):  # type: ignore[arg-type]
        _check_value(f"{type(rec).__name__}.{f.name}", hints[f.name], getattr(rec, f.name))


def _check_value(where: str, hint: Any, value: Any) -> None:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return
        inner = [a for a in args if a is not type(None)]
        for i, a in enumerate(inner):
            try:
                return _check_value(where, a, value)
            except ValueError:
                if i == len(inner) - 1:
                    raise
        return
    if origin in (tuple, list, dict):
        if not isinstance(value, origin):
            raise ValueError(f"{where} is a {type(value).__name__}, not a {origin.__name__}")
        items = value.values() if origin is dict else value
        element = args[-1] if args else Any
        for v in items:
            _check_value(where, element, v)
        return
    if isinstance(hint, type) and issubclass(hint, Record):
        if not isinstance(value, hint):
            raise ValueError(f"{where} is a {type(value).__name__}, not a {hint.__name__}")
        return _check(value)
    if isinstance(hint, type) and issubclass(hint, Enum):
        if not isinstance(value, str):  # a state a newer version knows is still a string
            raise ValueError(f"{where} is a {type(value).__name__}, not a {hint.__name__}")
        return
    ok = _SCALARS.get(hint)
    wrong = ok is not None and not isinstance(value, ok)
    if wrong or (hint is not bool and isinstance(value, bool)):  # True is an int to Python
        raise ValueError(f"{where} is {value!r:.40}, not a {hint.__name__}")
