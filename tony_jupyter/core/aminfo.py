"""AmInfo: where a job's AM serves, the discovery record it writes to ``am.json`` once it
serves and removes at its exit (as TensorBoard's ``TensorBoardInfo``). The launcher waits for
it; a client of a local job reads it to find the AM (and that its process is alive)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .records import Record


class AmInfoError(ValueError):
    """``am.json`` is there but is not an AM's address record."""

    def __init__(self, path: Path, why: str):
        self.path, self.why = path, why
        super().__init__(f"{path} {why}; it is what the job's AM writes when it serves")


@dataclass(frozen=True)
class AmInfo(Record):
    url: str  # the AM's API: http://host:port
    pid: int
    port: int
    started: float  # when it began to serve (time.time())
    job_id: str
    backend: str = "local"

    @classmethod
    def read(cls, path: Path) -> AmInfo | None:
        """The record at ``path``; None when there is none (the AM does not serve, or has
        exited); :class:`AmInfoError` naming what is wrong when the file is not one."""
        try:
            text = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as e:
            raise AmInfoError(path, f"cannot be read ({e.strerror or e})") from None
        try:
            data = json.loads(text)
        except ValueError:  # not UTF-8, not JSON, or cut short
            why = "is empty" if not text.strip() else "is not whole JSON (cut short, or garbage)"
            raise AmInfoError(path, why) from None
        try:
            return cls.checked(data)
        except ValueError as e:
            raise AmInfoError(path, f"is {e}") from None
