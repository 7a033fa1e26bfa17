"""The job's event log as the AM holds it: every event appended to ``events.jsonl`` (what the
history keeps, and what readers read once the AM is gone), and only the last ``TAIL`` in
memory. An older range (a client re-attaching from the start of a day-long session) is read
back from the file. Read like a list of :class:`~tony_jupyter.core.protocol.Event`: ``len``,
``[i]``, ``[since:]``."""

from __future__ import annotations

import itertools
import json
from collections import deque
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import overload

from ..core.protocol import Event

TAIL = 2048


class EventLog(Sequence):
    def __init__(self, path: Path, tail: int = TAIL):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        try:  # a file there already (an AM started again in the same directory): not ours
            with open(path, "rb") as f:
                self._skip = sum(1 for _ in f)
        except FileNotFoundError:
            self._skip = 0
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self._tail: deque[Event] = deque(maxlen=tail)
        self._count = 0

    def append(self, event: Event, flush: bool = True) -> None:
        self._file.write(json.dumps(event.to_json()) + "\n")
        if flush:
            self._file.flush()
        self._tail.append(event)
        self._count += 1

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, i: int) -> Event: ...

    @overload
    def __getitem__(self, i: slice) -> list[Event]: ...

    def __getitem__(self, i):
        start, stop, step = (i if isinstance(i, slice) else slice(i, None)).indices(self._count)
        if not isinstance(i, slice) and not 0 <= start < self._count:
            raise IndexError("event index out of range")
        if isinstance(i, slice) and step != 1:
            return self[start:stop][::step]
        stop = stop if isinstance(i, slice) else start + 1
        first = self._count - len(self._tail)  # the first event still in memory
        if start >= first:
            got = list(itertools.islice(self._tail, start - first, max(start, stop) - first))
        else:
            got = self._from_file(start, min(stop, first)) + list(
                itertools.islice(self._tail, 0, max(0, stop - first))
            )
        return got if isinstance(i, slice) else got[0]

    def _from_file(self, start: int, stop: int) -> list[Event]:
        if not self._file.closed:
            self._file.flush()
        with open(self.path, encoding="utf-8") as f:
            lines = itertools.islice(f, self._skip + start, self._skip + stop)
            return [Event.from_json(json.loads(line)) for line in lines]

    def __iter__(self) -> Iterator[Event]:
        return iter(self[0:])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, (EventLog, list)) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]
