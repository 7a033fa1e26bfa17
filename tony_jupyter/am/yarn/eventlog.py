"""The AM's event log in the job's HDFS staging directory, so that a new AM attempt (YARN's
application attempts, ``tony.am.retry-count``) can recover the job: attempt number, endpoints,
the event history, and the tasks' logs (the coordinator's ``log`` records: the log batches
executors ship), so that the logs of an attempt lost with its AM can still be read.

One file per AM attempt, ``<staging>/events/am-<N>.jsonl``, written through Hadoop's own
FileSystem and made visible to readers with ``hflush`` in batches (every ``FLUSH_S``), off the
AM's event loop. A file whose writer was killed stays readable up to its last hflush.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import re
import threading
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("tony_jupyter.am.yarn")

FLUSH_S = 0.2


def am_attempt() -> int:
    """This AM's attempt number, from the container id YARN gives it
    (container_[e<epoch>_]<cluster ts>_<app>_<attempt>_<container>)."""
    m = re.search(r"_(\d+)_\d+$", os.environ.get("CONTAINER_ID", ""))
    return int(m.group(1)) if m else 1


def parse(data: bytes) -> list[dict]:
    """An event log's records, up to the first line that is not one: the last line of a file
    whose writer died mid-batch, or damage (recovery.py checks each record's fields)."""
    events = []
    for line in data.decode("utf-8", errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            break
        if not isinstance(event, dict):
            break
        events.append(event)
    return events


class EventLog:
    def __init__(self, open_fs: Callable[[], Any], J, staging: str, attempt: int):
        """``open_fs``: the staging directory's FileSystem, called on the writer thread: the
        HDFS client's classes load there, beside the AM's registration (issue 43)."""
        self.J, self.attempt = J, attempt
        self.fs: Any = None
        self._open_fs = open_fs
        self._opened = threading.Event()
        self.dir = J.Path(staging.rstrip("/") + "/events")
        self.queue: queue.Queue[str | None] = queue.Queue()
        self.thread = threading.Thread(target=self._run, name="eventlog", daemon=True)
        self.thread.start()

    def _filesystem(self):
        self._opened.wait()
        if self.fs is None:
            raise RuntimeError("the staging directory's FileSystem could not be opened")
        return self.fs

    def previous(self) -> list[dict]:
        """What earlier AM attempts wrote, in order; [] on the first attempt."""
        events: list[dict] = []
        if self.attempt <= 1:
            return events
        fs = self._filesystem()
        if not fs.exists(self.dir):
            return events
        for n in range(1, self.attempt):
            path = self.J.Path(self.dir, f"am-{n}.jsonl")
            if not fs.exists(path):
                continue
            stream = fs.open(path)
            try:
                events += parse(bytes(stream.readAllBytes()))
            finally:
                stream.close()
        return events

    def append(self, event: dict) -> None:
        self.queue.put(json.dumps(event) + "\n")  # ASCII (ensure_ascii): writeBytes is exact

    def _run(self) -> None:
        try:
            self.fs = self._open_fs()
        except Exception as e:  # noqa: BLE001 - the job goes on; only recovery suffers
            log.warning("event log: no FileSystem for %s: %s", self.dir, e)
        finally:
            self._opened.set()
        out = None
        done = False
        while not done:
            batch = [self.queue.get()]
            deadline = time.monotonic() + FLUSH_S
            while batch[-1] is not None and (left := deadline - time.monotonic()) > 0:
                try:
                    batch.append(self.queue.get(timeout=left))
                except queue.Empty:
                    break
            done = batch[-1] is None
            lines = "".join(x for x in batch if x is not None)
            if self.fs is None:
                continue
            try:
                if out is None:
                    out = self.fs.create(self.J.Path(self.dir, f"am-{self.attempt}.jsonl"), True)
                if lines:
                    out.writeBytes(lines)
                    out.hflush()
            except Exception as e:  # noqa: BLE001 - the job goes on; only recovery suffers
                log.warning("event log: %s", e)
        if out is not None:
            try:
                out.close()
            except Exception as e:  # noqa: BLE001
                log.warning("event log close: %s", e)

    def close(self) -> None:
        self.queue.put(None)
        self.thread.join(10)
