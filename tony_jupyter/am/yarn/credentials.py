"""The job's delegation tokens on the AM's side of a secure cluster.

The RM starts the AM with the application's credentials (the HDFS and RM delegation tokens the
notebook obtained, plus the AMRMToken); Hadoop's UGI loads them into the AM's JVM. From there
they go on to every executor container (its launch context, so the NodeManager can localize
from HDFS as the user) and, as urlStrings, to the executors' Python (WebHDFS takes them as
``delegation=``). When the notebook sends newer tokens (past the old ones' maximum lifetime),
:meth:`Credentials.update` adds them to the UGI and bumps the version the executors' heartbeats
compare against.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from ...core.tokens import HDFS_KIND, RM_KIND, Token, alias

log = logging.getLogger("tony_jupyter.am.yarn")
AMRM_KIND = "YARN_AM_RM_TOKEN"
# The names the executors know the tokens by.
NAMES = {HDFS_KIND: "hdfs", RM_KIND: "rm"}


class Credentials:
    def __init__(self, J: Any):
        self.J = J
        self.lock = threading.Lock()
        self.version = 1
        self.tokens = self._exported()

    def secure(self) -> bool:
        return bool(self.J.UserGroupInformation.isSecurityEnabled())

    def _exported(self) -> dict[str, str]:
        """{"hdfs": urlString, "rm": urlString} from the UGI's tokens (the default FS's HDFS
        token for "hdfs"; every HDFS token under its service name too)."""
        out: dict[str, str] = {}
        creds = self.J.UserGroupInformation.getCurrentUser().getCredentials()
        for t in creds.getAllTokens():
            kind = str(t.getKind().toString())
            if kind == AMRM_KIND:
                continue
            url = str(t.encodeToUrlString())
            name = NAMES.get(kind)
            if name and name not in out:
                out[name] = url
            out[f"{kind}@{t.getService().toString()}"] = url
        return out

    def container_tokens(self) -> Any:
        """The tokens for an executor's launch context: all but the AMRMToken, which is the
        AM's alone."""
        J = self.J
        out = J.Credentials()
        for t in J.UserGroupInformation.getCurrentUser().getCredentials().getAllTokens():
            kind = str(t.getKind().toString())
            if kind != AMRM_KIND:
                out.addToken(J.Text(str(t.getService().toString()) or kind), t)
        buf = J.DataOutputBuffer()
        out.writeTokenStorageToStream(buf)
        return J.ByteBuffer.wrap(buf.getData(), 0, buf.getLength())

    def snapshot(self) -> dict:
        with self.lock:
            return {"version": self.version, "tokens": dict(self.tokens)}

    def update(self, tokens: dict[str, str]) -> int:
        """New tokens from the notebook: into the UGI (new containers, the AM's own HDFS
        calls) and out to the executors. Returns the new version."""
        J = self.J
        ugi = J.UserGroupInformation.getCurrentUser()
        for name, url in tokens.items():
            tok = Token.decode(url)  # ValueError for garbage: the handler answers 400
            jt = J.Token()
            jt.decodeFromUrlString(tok.encode())
            # Under the alias the submission used (tokens.alias): the old token is replaced,
            # not shadowed, so Hadoop's token selectors cannot pick the expired one; for an
            # HA nameservice's (ha-hdfs:<ns>) Credentials.addToken also replaces the clones
            # that the JVM's HDFS client made of it for each NameNode's address.
            ugi.addToken(J.Text(alias(tok)), jt)
            log.info("new %s token (%s) for %s", name, tok.kind, tok.service or "-")
        with self.lock:
            self.version += 1
            self.tokens = self._exported()
            return self.version
