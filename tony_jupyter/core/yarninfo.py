"""YarnInfo: a YARN job's record of its application (``yarn.json``), typed as ``AmInfo`` is.

Where the job's ResourceManager, WebHDFS and staging directory are, as which user (and login,
on a secure cluster), and its AM's address once it serves. The launcher makes it in one place
(``launcher/yarn/secure.py``'s ``Cluster.job_info``) as it submits, hands over or adopts a
job; every client of the job reads it through :meth:`YarnInfo.read` (``JobRecord.yarn``).
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .records import Sparse


@dataclass(frozen=True)
class YarnInfo(Sparse):
    app_id: str
    rm_url: str  # the RM's address as HADOOP_CONF_DIR gave it (an HA pair: both, ';')
    webhdfs_url: str = ""
    default_fs: str = ""
    user: str = ""  # the Hadoop user the job was submitted as
    secure: bool = False
    login: dict[str, Any] | None = None  # kerberos.Login's JSON: how to log in again
    staging: str = ""  # the job's staging directory on HDFS
    submitted: float | None = None  # time.time() at submission
    am_url: str | None = None  # the AM's API once it served (its start, or a warm hand-over)
    am_up: float | None = None
    warm: bool | None = None  # handed to a warm AM (launcher/yarn/warmkeeper.py)
    adopted: bool | None = None  # made here from the cluster, not submitted from here
    pack_env: dict[str, Any] | None = None  # the packed environment's staging figures
    src: dict[str, Any] | None = None  # the shipped directory's staging figures

    def am_started(self, url: str) -> YarnInfo:
        """This record with the AM's address, found now."""
        return dataclasses.replace(self, am_url=url, am_up=time.time())

    @classmethod
    def read(cls, path: Path) -> YarnInfo | None:
        """The record at ``path``; None when there is none; a ValueError naming what is
        wrong when the file is not one."""
        try:
            text = path.read_text()
        except FileNotFoundError:
            return None
        return cls.checked(json.loads(text))
