"""CPU seconds taken by each kind of process a side starts, sampled every 0.5 s while it runs:
on a 2-core machine training with 2 workers, any process beside the workers takes CPU from
them. Only processes started after ``begin`` whose environment carries this bench's
``TONY_JUPYTER_HOME`` are counted (other people's jobs share the machine)."""

from __future__ import annotations

import os
import threading
import time

import psutil


def _role(cmdline: list[str], ppid_cmd: str) -> str:
    cmd = " ".join(cmdline)
    if "tensorboard" in cmd:
        return "tensorboard"
    if "tony_jupyter.am" in cmd:
        return "am"
    if "tony_jupyter.executor" in cmd:
        # The heartbeat sidecar is forked from the executor, so it has the same command line.
        return "heartbeat_sidecar" if "tony_jupyter.executor" in ppid_cmd else "executor"
    if "workload.py" in cmd:
        return "executor"  # by hand: the worker itself
    return "other"


class CpuByRole:
    def __init__(self) -> None:
        self.home = os.environ.get("TONY_JUPYTER_HOME", "")
        self.begin = time.time() - 5  # psutil's create_time can run a second behind time()
        self.cpu: dict[int, tuple[str, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> CpuByRole:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        me = os.getpid()
        while not self._stop.is_set():
            for p in psutil.process_iter(["pid", "create_time", "cmdline", "ppid"]):
                i = p.info
                if i["pid"] == me or (i["create_time"] or 0) < self.begin:
                    continue
                try:
                    if i["pid"] not in self.cpu:
                        if p.environ().get("TONY_JUPYTER_HOME") != self.home:
                            continue
                    ct = p.cpu_times()
                    try:
                        parent = " ".join(psutil.Process(i["ppid"]).cmdline())
                    except psutil.Error:
                        parent = ""
                    role = _role(i["cmdline"] or [], parent)
                    known = self.cpu.get(i["pid"], ("other", 0.0))[0]
                    if known != "other":  # an exited process (a zombie) has no command line
                        role = known
                    self.cpu[i["pid"]] = (role, ct.user + ct.system)
                except psutil.Error:
                    continue
            self._stop.wait(0.5)

    def seconds(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for role, s in self.cpu.values():
            out[role] = round(out.get(role, 0.0) + s, 2)
        return out
