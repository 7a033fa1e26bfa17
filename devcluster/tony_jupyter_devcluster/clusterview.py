"""The devcluster as the modules that start its daemons and run its hosts read it (daemons.py,
hostrun.py, nodes.py): a read-only Protocol that :class:`~.cluster.DevCluster` satisfies, so
that they import nothing of it."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import requests

from .config import Layout
from .hosts import Hosts


class ClusterView(Protocol):
    @property
    def dir(self) -> Path: ...
    @property
    def layout(self) -> Layout: ...
    @property
    def hosts(self) -> Hosts | None: ...
    @property
    def user(self) -> str: ...
    @property
    def java_home(self) -> Path: ...
    @property
    def jvm_flags(self) -> list[str]: ...
    @property
    def rm_url(self) -> str: ...
    @property
    def http(self) -> requests.Session: ...

    def env(self, user: str | None = None) -> dict[str, str]: ...
