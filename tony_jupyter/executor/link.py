"""The executor's link to its AM: every call carries the job token and this task's attempt;
the AM answers 410 when the attempt is over, which surfaces here as :class:`Stale`."""

from __future__ import annotations

import requests


class Stale(Exception):
    """The AM says this attempt is over."""


class AMLink:
    def __init__(self, url: str, token: str, task: str, attempt: int):
        self.url, self.task, self.attempt = url.rstrip("/"), task, attempt
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"

    def call(self, method: str, path: str, timeout: float = 10, **kw) -> dict:
        r = self.session.request(method, f"{self.url}/api/v1/{path}", timeout=timeout, **kw)
        if r.status_code == 410:
            raise Stale(r.json().get("error", "attempt over"))
        r.raise_for_status()
        return r.json()

    def post(self, path: str, **body) -> dict:
        return self.call("POST", path, json={"task": self.task, "attempt": self.attempt, **body})
