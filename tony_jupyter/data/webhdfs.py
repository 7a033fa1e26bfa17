"""fsspec's WebHDFS over an HA pair of NameNodes: a filesystem object that outlives a failover.

fsspec's WebHDFS speaks to the one NameNode it was made with. A filesystem opened before the
active NameNode is killed (a session's cell keeps it for the next cells, a long job's reader
keeps it for every epoch) would then fail every call. This one asks the NameNode that answered
last, and moves to the other one of the pair on a refused connection or a standby's answer, for
a bounded time, as Hadoop's own clients do (and as the launcher's staging client does)."""

from __future__ import annotations

import time
from urllib.parse import urlparse

import requests
from fsspec.implementations.webhdfs import WebHDFS

from ..core.tokens import TOKEN_AT_STANDBY

# As the launcher's RM client (launcher/yarn/rm.py): how long a call looks for the active
# NameNode while a failover is under way (the old one down, the new one not yet active).
FAILOVER_WAIT_S = 20.0
# A standby NameNode's RemoteException message, which fsspec's WebHDFS raises as RuntimeError
# without the exception's class ("Operation category READ is not supported in state standby");
# asked with a delegation token, as PermissionError (its SecurityException: tokens.py).
_STANDBY = "in state standby"


class NoActiveNameNode(ConnectionError):
    """Neither NameNode of the pair answered as active within FAILOVER_WAIT_S."""


class FailoverWebHDFS(WebHDFS):
    """WebHDFS to whichever of ``namenodes`` (web URLs, the active one first) is active."""

    def __init__(self, namenodes: tuple[str, ...], **kwargs):
        first = urlparse(namenodes[0])
        https = first.scheme == "https"
        port = first.port or (9871 if https else 9870)
        super().__init__(first.hostname, port=port, use_https=https, **kwargs)
        self.namenodes = tuple(
            f"{p.scheme}://{p.hostname}:{p.port or port}/webhdfs/v1"
            for p in map(urlparse, namenodes)
        )
        self.url = self.namenodes[0]

    def _call(self, op, method="get", path=None, data=None, redirect=True, **kwargs):
        deadline = time.monotonic() + FAILOVER_WAIT_S
        pause = 0.25
        while True:
            tried = []
            for url in (self.url, *(u for u in self.namenodes if u != self.url)):
                self.url = url  # the next call asks the one that answered first
                try:
                    return super()._call(op, method, path, data, redirect, **kwargs)
                except requests.exceptions.SSLError:
                    raise  # a certificate that does not verify: the same on the other one
                except requests.ConnectionError as e:  # not reached: down, or not up yet
                    tried.append(f"{url}: {type(e).__name__}")
                except (RuntimeError, PermissionError) as e:
                    if _STANDBY not in str(e) and TOKEN_AT_STANDBY not in str(e):
                        raise
                    tried.append(f"{url}: standby")
            if time.monotonic() >= deadline:
                raise NoActiveNameNode(
                    f"WebHDFS {op} {path}: no active NameNode within {FAILOVER_WAIT_S:g} s; "
                    f"tried {'; '.join(tried)}. Is a failover under way?"
                )
            time.sleep(pause)
            pause = min(2.0, pause * 2)
