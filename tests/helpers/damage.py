"""Damaging a job's record the ways a cluster or a disk does (seeded): a file missing, empty,
truncated at a byte, garbage, a record of another schema version, a directory in its place,
unreadable. The fuzzers (tests/test_damaged_records.py and its YARN twin) apply each to each
file of real jobs' records and check that every reader survives it."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

KINDS = ("missing", "empty", "truncated", "garbage", "schema", "directory", "unreadable")


@dataclass(frozen=True)
class Damage:
    path: str  # relative to the job's record
    kind: str
    seed: int

    def __str__(self) -> str:
        return f"{self.path}: {self.kind} (seed {self.seed})"

    def content(self, original: bytes) -> bytes | None:
        """The damaged bytes; None for the kinds that are not contents (missing, directory,
        unreadable)."""
        rnd = random.Random(self.seed)
        if self.kind == "empty":
            return b""
        if self.kind == "truncated":
            return original[: rnd.randrange(max(1, len(original)))]
        if self.kind == "garbage":
            return bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 300)))
        if self.kind == "schema":
            return json.dumps(wrong_schema(original, rnd)).encode()
        return None


def wrong_schema(original: bytes, rnd: random.Random):
    """The record as another version might write it: valid JSON of the wrong shape."""
    try:
        data = json.loads(original.splitlines()[0] if original.startswith(b'{"seq') else original)
    except (ValueError, IndexError):
        data = None
    choices = [[1, 2, 3], "a string", 42, None, {"schema_version": 999}]
    if isinstance(data, dict) and data:
        # every value of another type, and a version from the future
        flipped = {k: rnd.choice([[], "x", 7, {"k": 1}, None]) for k in data}
        choices += [{**flipped, "schema_version": 999, "history_version": 999}]
    return rnd.choice(choices)


def cases(files: list[str], seed: int, truncations: int = 3) -> list[Damage]:
    """Every kind for every file; ``truncations`` cut points and garbage draws each."""
    rnd = random.Random(seed)
    out = []
    for path in files:
        for kind in KINDS:
            for _ in range(truncations if kind in ("truncated", "garbage", "schema") else 1):
                out.append(Damage(path, kind, rnd.randrange(1 << 30)))
    return out
