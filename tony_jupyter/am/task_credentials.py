"""Each task's credentials, made by the AM and never derived from the job's token.

An executor starts with a one-time *registration secret* (``TONY_TOKEN``, made for its task and
attempt at launch) and trades it, in ``executor/register``, for its task's own token, which
travels only in that answer. What a launch leaves where other processes can read it (a local
process's ``/proc/<pid>/environ``, a YARN container's ``launch_container.sh``) is then spent. A
secret presented a second time means another process took it: the token it bought is revoked,
so neither claimant acts for the task (its heartbeats stop, and the AM fails it as usual).
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass

from ..core.protocol import token_verifier


def matches(given: bytes, verifier_hex: str) -> bool:
    """Whether ``given`` is the job's token, whose SHA-256 (protocol.token_verifier) the AM has."""
    return hmac.compare_digest(token_verifier(given).encode(), verifier_hex.encode())


class SecretReused(Exception):
    """A registration secret came a second time: its task's token is revoked."""


@dataclass(frozen=True)
class Registration:
    task: str
    attempt: int


class TaskCredentials:
    def __init__(self) -> None:
        self._pending: dict[bytes, Registration] = {}
        self._spent: dict[bytes, Registration] = {}
        self._tokens: dict[bytes, Registration] = {}
        self._minted: dict[Registration, bytes] = {}

    def issue(self, task: str, attempt: int) -> str:
        """A new registration secret for ``task``'s ``attempt`` (one per launch)."""
        secret = secrets.token_urlsafe(32)
        self._pending[secret.encode()] = Registration(task, attempt)
        return secret

    def registration(self, secret: bytes) -> Registration | None:
        """The launch this secret was made for, unspent; :class:`SecretReused` if spent."""
        spent = self._spent.get(secret)
        if spent is not None:
            self.revoke(spent)
            raise SecretReused(
                f"the registration secret of {spent.task} attempt {spent.attempt} was "
                "presented twice (another process took it): that task's token is revoked"
            )
        return self._pending.get(secret)

    def redeem(self, secret: bytes) -> str:
        """Spend the secret; the task's own token, for that launch's executor only."""
        reg = self._pending.pop(secret, None)
        if reg is None:  # spent meanwhile, by a request that came in beside this one
            self.registration(secret)
            raise SecretReused("the registration secret was spent meanwhile")
        self._spent[secret] = reg
        token = secrets.token_urlsafe(32)
        self._tokens[token.encode()] = reg
        self._minted[reg] = token.encode()
        return token

    def revoke(self, reg: Registration) -> None:
        token = self._minted.pop(reg, None)
        if token is not None:
            self._tokens.pop(token, None)

    def task_for(self, token: bytes) -> str | None:
        """The task whose own token this is, or None."""
        reg = self._tokens.get(token)
        return None if reg is None else reg.task
