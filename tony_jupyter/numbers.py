"""Numbers a user writes (flags, TonY keys, conf files): ASCII digits only, and within bounds
every process that reads them can hold, so a bad one is a :class:`SpecError` naming it before
anything is submitted, never an ``OverflowError`` in the AM or a task.

``int()`` and ``float()`` take any Unicode digit ("１２", "١٢") and ``float()`` takes "nan" and
"inf"; YARN's resources are Java ints; ``threading``'s and asyncio's waits refuse seconds past
about 292 years.
"""

from __future__ import annotations

import math
import re

from .errors import SpecError

JAVA_INT_MAX = (1 << 31) - 1  # YARN's Resource and counts
MAX_SECONDS = 366 * 24 * 3600.0  # any timeout: a year, far under what a wait can take
_WHOLE = re.compile(r"^[+-]?[0-9]{1,30}$")  # ASCII digits; 30 of them is past every bound
_DECIMAL = re.compile(
    r"^[+]?(?:[0-9]{1,30}(?:\.[0-9]{0,30})?|\.[0-9]{1,30})(?:[eE][+-]?[0-9]{1,3})?$"
)


def shown(value: object, limit: int = 40) -> str:
    """``repr(value)``, shortened: a 400-digit number is named, not printed whole."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 12]}... ({len(text)} chars)"


def whole(value: str | int, what: str, minimum: int = 0, maximum: int = JAVA_INT_MAX) -> int:
    """A whole number from ``minimum`` to ``maximum``, written in ASCII digits."""
    if isinstance(value, bool):
        raise SpecError(f"{what}: expected a whole number, got {value!r}")
    if isinstance(value, int):
        n = value
    elif isinstance(value, str) and _WHOLE.match(value.strip()):
        n = int(value.strip())
    else:
        raise SpecError(f"{what}: expected a whole number (digits 0-9), got {shown(value)}")
    if n < minimum:
        raise SpecError(f"{what}: must be at least {minimum}, got {shown(n)}")
    if n > maximum:
        raise SpecError(f"{what}: must be at most {maximum}, got {shown(n)}")
    return n


def decimal(value: str | float, what: str) -> float:
    """A finite number written in ASCII (``12``, ``0.5``, ``1e3``): not nan, not inf."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        x = float(value)
    elif isinstance(value, str) and _DECIMAL.match(value.strip()):
        x = float(value.strip())
    else:
        raise SpecError(f"{what}: expected a number (digits 0-9), got {shown(value)}")
    if not math.isfinite(x):
        raise SpecError(f"{what}: expected a finite number, got {shown(value)}")
    return x


def seconds(value: str | float, what: str, maximum: float = MAX_SECONDS) -> float:
    """A positive, finite number of seconds, at most ``maximum`` (a year)."""
    s = decimal(value, what)
    if not 0 < s <= maximum:
        raise SpecError(
            f"{what}: must be a positive number of seconds, at most {maximum:g}, got {shown(value)}"
        )
    return s
