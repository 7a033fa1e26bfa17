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


_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE | re.ASCII)
_UNIT_MB = {"": 1, "k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}


def parse_memory(value: str | int, what: str = "--memory") -> int:
    """'2g' -> 2048, '512m' -> 512, '1024' -> 1024 (MB, as TonY reads a bare number); at
    most what YARN's Resource holds."""
    if isinstance(value, int):
        mb = value
    else:
        m = _SIZE_RE.match(value)
        if not m:
            raise SpecError(
                f"{what}: malformed size {shown(value)}; write a number with a unit (digits "
                "0-9), e.g. 512m or 2g"
            )
        exact = float(m.group(1)) * _UNIT_MB[m.group(2).lower()]  # inf for 400 digits
        if not exact <= JAVA_INT_MAX:
            raise SpecError(
                f"{what}: {shown(value)} is more memory than YARN can ask for "
                f"(at most {JAVA_INT_MAX} MB); e.g. 512m or 2g"
            )
        mb = int(exact)
        if mb <= 0 < float(m.group(1)):
            raise SpecError(
                f"{what}: {value!r} is less than 1 MB (a number without a unit is megabytes, "
                f"as in TonY); write the unit, e.g. {m.group(1)}g or 512m"
            )
    if mb <= 0:
        raise SpecError(f"{what}: size must be positive, got {shown(value)}; e.g. 512m or 2g")
    if mb > JAVA_INT_MAX:
        raise SpecError(f"{what}: at most {JAVA_INT_MAX} MB, got {shown(value)}")
    return mb
