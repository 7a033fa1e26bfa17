"""A YARN cluster as the notebook reaches it: plain (``?user.name=``) or Kerberized (SPNEGO),
and on a secure cluster the job's delegation tokens and their renewal.

Secure mode comes from the cluster's own ``core-site.xml`` (``hadoop.security.authentication``),
never from a flag. Before submitting, the notebook obtains an HDFS delegation token for the
default FS (and each of ``tony.other.namenodes``) and an RM delegation token, with the RM as
renewer, and passes them in the application's credentials: the AM and every container act
for the user with those, no keytab on the cluster. The RM renews them until their maximum
lifetime; past it, :class:`TokenKeeper` (a thread in the kernel) obtains new ones, from the
keytab when one was given or from the ticket cache while it is valid, and hands them to the
job's AM, which passes them on to its containers.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import requests

from ...core import jobdir
from ...core.errors import BackendError
from ...core.hadoopconf import NN_HTTP_PORT, Address, HadoopConf
from ...core.jobdir import JobDir
from ...core.kerberos import Login
from ...core.spec import JobSpec
from ...core.tokens import Token, alias
from ...core.yarninfo import YarnInfo
from .rm import TERMINAL_APP_STATES, RMClient
from .staging import Staging

log = logging.getLogger("tony_jupyter.yarn")
# New tokens once this much of the time to their maximum lifetime has gone by.
REFRESH_AT = 0.7
KEEPER_TICK_S = 2.0


@dataclass
class Cluster:
    conf: HadoopConf
    rm: RMClient
    staging: Staging
    login: Login | None = None

    @property
    def secure(self) -> bool:
        return self.login is not None

    def job_info(self, app_id: str, **more: Any) -> YarnInfo:
        """A job's yarn.json on this cluster, the one place it is made: what reaches the
        cluster again as the same user, and ``more`` (yarninfo.YarnInfo's fields)."""
        return YarnInfo(
            app_id=app_id,
            rm_url=self.conf.rm.url,
            webhdfs_url=self.conf.webhdfs.url,
            default_fs=self.conf.default_fs,
            user=self.conf.user,
            secure=self.secure,
            login=self.login.to_json() if self.login else None,
            staging=self.staging.job_dir(app_id),
            **more,
        )


def connect(spec: JobSpec | None = None) -> Cluster:
    """The cluster of ``HADOOP_CONF_DIR``; on a secure one, logged in (the ticket cache, or
    the spec's keytab), each HTTP service's ticket checked before anything is created."""
    conf = HadoopConf.load()
    if not conf.secure:
        return Cluster(
            conf, RMClient(conf.rm, conf.user), Staging(conf.webhdfs, conf.user, conf.default_fs)
        )
    login = Login.from_env(spec.principal if spec else None, spec.keytab if spec else None)
    for address in (conf.rm, conf.webhdfs):
        for url in address.urls:  # each master of an HA pair: either may be the active one
            login.check(urlparse(url).hostname or "localhost")
    auth, user = login.auth(), login.user()
    conf = replace(conf, user=user)
    return Cluster(
        conf,
        RMClient(conf.rm, user, auth=auth),
        Staging(conf.webhdfs, user, conf.default_fs, auth),
        login,
    )


def from_record(info: YarnInfo, timeout: float = 5.0) -> tuple[RMClient, Staging]:
    """RM and staging clients for a job's record (yarn.json), as the user who submitted it."""
    auth = None
    if info.secure:
        auth = Login(**(info.login or {})).auth()
    rm = RMClient(
        Address(info.rm_url, f"the job's record ({jobdir.YARN_INFO})"),
        info.user,
        timeout,
        auth,
    )
    staging = Staging(Address(info.webhdfs_url, jobdir.YARN_INFO), info.user, "", auth)
    return rm, staging


# --- delegation tokens ---------------------------------------------------------------------


@dataclass
class JobTokens:
    tokens: dict[str, str]  # alias -> urlString
    ends: list[float]  # each token's maximum lifetime, epoch seconds
    # alias -> renew it now (returns its new expiry, epoch seconds): for tokens the notebook
    # itself renews (those it hands a running job, which the RM never saw)
    renewers: dict[str, Callable[[], float]] = field(default_factory=dict)

    def renew(self) -> float:
        """Renew every token; when to do it again (half way to the first expiry)."""
        now = time.time()
        expiries = [renew() for renew in self.renewers.values()]
        return now + 0.5 * max(1.0, min(expiries, default=now + 3600) - now)

    def refresh_time(self, now: float | None = None) -> float:
        """When to get new ones: :data:`REFRESH_AT` of the way to the earliest maximum
        lifetime (an hour from now if none is known)."""
        now = time.time() if now is None else now
        if not self.ends:
            return now + 3600
        return now + REFRESH_AT * max(0.0, min(self.ends) - now)


def job_tokens(cluster: Cluster, spec: JobSpec, by_user: bool = False) -> JobTokens:
    """HDFS tokens (default FS, tony.other.namenodes) and an RM token, each renewable by the
    RM (at submission: the RM renews what it was given), or with ``by_user`` by the user
    (tokens for a running job, which the notebook renews). A token that cannot be had is a
    BackendError naming the service, raised before the application exists."""
    conf = cluster.conf
    renewer = conf.user if by_user else conf.rm_principal
    renewers: dict[str, Callable[[], float]] = {}
    out: dict[str, str] = {}
    ends: list[float] = []
    stagings = [cluster.staging]
    for nn in spec.other_namenodes:
        stagings.append(
            Staging(
                Address(_webhdfs_url(nn), f"tony.other.namenodes ({nn})"),
                conf.user,
                "",
                cluster.staging.http.auth,
            )
        )
    for staging in stagings:
        # The default FS's on an HA nameservice as ha-hdfs:<ns> (hadoopconf.hdfs_token_service)
        service = conf.hdfs_token_service if staging is cluster.staging else ""
        url = staging.delegation_token(renewer, service)
        hdfs = Token.decode(url)
        out[alias(hdfs)] = url
        renewers[alias(hdfs)] = functools.partial(staging.renew_token, url)
        end = hdfs.max_date_ms()
        if end:
            ends.append(end / 1000)
    # The RM's REST API leaves the service empty; its renewer connects to the service.
    got = cluster.rm.delegation_token(renewer)
    rm_token = Token.decode(got["token"])
    rm_token = Token(rm_token.identifier, rm_token.password, rm_token.kind, conf.rm_token_service)
    out[alias(rm_token)] = rm_token.encode()
    renewers[alias(rm_token)] = functools.partial(cluster.rm.renew_token, got["token"])
    if got.get("max-validity"):
        ends.append(int(got["max-validity"]) / 1000)
    return JobTokens(out, ends, renewers if by_user else {})


def _webhdfs_url(namenode: str) -> str:
    """``hdfs://nn:8020`` → its WebHDFS address (default port); http(s) URLs as they are."""
    u = urlparse(namenode if "://" in namenode else f"hdfs://{namenode}")
    if u.scheme in ("http", "https"):
        return namenode.rstrip("/")
    if u.scheme != "hdfs" or not u.hostname:
        raise BackendError(
            f"tony.other.namenodes: {namenode!r} is not an hdfs://host:port or http://host:port "
            "URL of a NameNode"
        )
    return f"http://{u.hostname}:{NN_HTTP_PORT}"


def credentials_json(tokens: dict[str, str]) -> dict:
    """The REST submission's ``credentials`` form."""
    return {
        "tokens": {"entry": [{"key": k, "value": v} for k, v in tokens.items()]},
        "secrets": {"entry": []},
    }


def acls_json(user: str) -> dict:
    """The application's ACLs: only its owner (and YARN's admins) may view or modify it."""
    return {"entry": [{"key": k, "value": user} for k in ("VIEW_APP", "MODIFY_APP")]}


# --- renewal past the maximum lifetime ------------------------------------------------------


@dataclass
class _Watched:
    record_dir: Path
    spec: JobSpec
    info: YarnInfo
    due: float  # when to obtain new tokens
    pushed: JobTokens | None = None  # the last ones sent to the AM, renewed by the notebook
    renew_at: float = 0.0


class TokenKeeper:
    """One thread per kernel for its live secure jobs: before the tokens reach their maximum
    lifetime, new ones (renewable by the user) are obtained and sent to the job's AM (``PUT
    /api/v1/credentials``); the notebook then renews those itself, as the RM does the
    submitted ones."""

    _instance: TokenKeeper | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self.jobs: dict[str, _Watched] = {}
        self.renewals: dict[str, int] = {}  # app id -> new tokens sent (for tests)
        self.thread = threading.Thread(target=self._run, name="tony-token-keeper", daemon=True)
        self.thread.start()

    @classmethod
    def get(cls) -> TokenKeeper:
        with cls._lock:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    def watch(self, app_id: str, record_dir: Path, spec: JobSpec, info: YarnInfo, due: float):
        self.jobs[app_id] = _Watched(record_dir, spec, info, due)

    def _run(self) -> None:
        while True:
            time.sleep(KEEPER_TICK_S)
            for app_id, job in list(self.jobs.items()):
                now = time.time()
                if not job.record_dir.is_dir() or JobDir(job.record_dir).status.exists():
                    self.jobs.pop(app_id, None)  # ended (its final status is kept) or removed
                    continue
                try:
                    if now >= job.due:
                        self._replace(app_id, job)
                    elif job.pushed is not None and now >= job.renew_at:
                        job.renew_at = job.pushed.renew()
                except Exception as e:  # noqa: BLE001 - retried at the next tick, logged
                    log.warning("could not renew the tokens of %s: %s", app_id, e)
                    job.due = min(job.due, now + 5 * KEEPER_TICK_S)

    def _replace(self, app_id: str, job: _Watched) -> None:
        rm, _ = from_record(job.info)
        app = rm.app(app_id)
        if app is None or app.get("state") in TERMINAL_APP_STATES:
            self.jobs.pop(app_id, None)
            return
        got = job_tokens(connect(job.spec), job.spec, by_user=True)
        am = _am_url(job.record_dir)
        if not am:
            raise BackendError("the job's AM address is not known yet")
        secret = JobDir(job.record_dir).token.read_text().strip()
        r = requests.put(
            f"{am}/api/v1/credentials",
            json={"tokens": got.tokens},
            headers={"Authorization": f"Bearer {secret}"},
            timeout=10,
        )
        if r.status_code != 200:
            raise BackendError(f"the AM refused the new tokens: {r.status_code} {r.text[:200]}")
        job.pushed, job.due = got, got.refresh_time()
        job.renew_at = got.renew()
        self.renewals[app_id] = self.renewals.get(app_id, 0) + 1
        log.info("new tokens for %s (version %s)", app_id, r.json().get("version"))


def _am_url(record_dir: Path) -> str | None:
    try:
        info = YarnInfo.read(JobDir(record_dir).yarn_info)
    except (OSError, ValueError):
        return None
    return info.am_url if info else None
