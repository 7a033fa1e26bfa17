"""Reading the files a job leaves (its record here, or a history entry copied from HDFS), when
any of them may be damaged: a cluster stopped while it was written, a full disk, a hand edit.
A missing file is no damage (None); a damaged one raises :class:`DamagedRecordError`, which
words what is wrong with which file and what the user can do, and which the readers turn into
an entry shown as damaged, never a traceback."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..core.errors import TonyError


class DamagedRecordError(TonyError, ValueError):
    def __init__(self, path: Path, why: str):
        self.path, self.why = path, why
        super().__init__(
            f"damaged record: {path} {why}; restore it, or remove the job's directory to "
            "forget the job"
        )


def advice(record_dir: Path) -> str:
    """What the user can do about a damaged record."""
    return (
        f"the job's files are in {record_dir}: restore the file, "
        f"or remove that directory to forget the job"
    )


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes; None when there is none."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise DamagedRecordError(path, "is a directory, not a file") from None
    except PermissionError:
        raise DamagedRecordError(path, "cannot be read (permissions)") from None
    except OSError as e:
        raise DamagedRecordError(path, f"cannot be read ({e.strerror or e})") from None


def read_from(path: Path, offset: int) -> bytes:
    """A log's bytes from ``offset`` on; b"" when there is no log (yet)."""
    try:
        with open(path, "rb") as f:
            # Not past the end: a seek to 2**62 is an OSError (the server's logs?offset=).
            if offset >= os.fstat(f.fileno()).st_size:
                return b""
            f.seek(offset)
            return f.read()
    except FileNotFoundError:
        return b""
    except IsADirectoryError:
        raise DamagedRecordError(path, "is a directory, not a file") from None
    except OSError as e:
        raise DamagedRecordError(path, f"cannot be read ({e.strerror or e})") from None


def read_json(path: Path) -> dict[str, Any] | None:
    """The file's JSON object; None when there is no file."""
    data = read_bytes(path)
    if data is None:
        return None
    try:
        got = json.loads(data)
    except ValueError:  # not UTF-8, not JSON, or cut short
        why = "is empty" if not data.strip() else "is not whole JSON (cut short, or garbage)"
        raise DamagedRecordError(path, why) from None
    if not isinstance(got, dict):
        raise DamagedRecordError(path, f"holds a JSON {type(got).__name__}, not an object")
    return got


def read_lines(path: Path) -> list[dict[str, Any]]:
    """A JSON-lines file's objects (events.jsonl): up to the first line that is not one (the
    last line of a file whose writer died mid-write); [] when there is no file."""
    data = read_bytes(path)
    out: list[dict[str, Any]] = []
    for line in (data or b"").splitlines():
        try:
            got = json.loads(line)
        except ValueError:
            break
        if not isinstance(got, dict):
            break
        out.append(got)
    return out
