"""Kerberos from the notebook host, over HTTP only: SPNEGO for the RM's REST API and WebHDFS.

The credentials come from the user's ticket cache (after ``kinit``) or from a keytab
(``--principal``/``--keytab``, or ``TONY_KERBEROS_PRINCIPAL``/``TONY_KERBEROS_KEYTAB``); with a
keytab, MIT's GSSAPI library logs in again by itself once the ticket expires. No JVM and no
Hadoop install: Python's ``gssapi`` bindings over the system's MIT Kerberos library.

Every failure becomes a :class:`~tony_jupyter.core.errors.BackendError` that names the fix ("run
kinit, or pass --keytab"), raised by :meth:`Login.check` before anything is submitted.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from .errors import BackendError

ENV_PRINCIPAL, ENV_KEYTAB = "TONY_KERBEROS_PRINCIPAL", "TONY_KERBEROS_KEYTAB"
INSTALL_HINT = (
    "pip install 'tony-jupyter[kerberos]' (requests-gssapi; the gssapi package builds against "
    "MIT Kerberos: apt-get install libkrb5-dev, or dnf install krb5-devel)"
)


def short_name(principal: str) -> str:
    """``alice@REALM`` and ``alice/host@REALM`` → ``alice`` (Hadoop's default auth_to_local)."""
    return principal.split("@", 1)[0].split("/", 1)[0]


def service_principal(pattern: str, host: str) -> str:
    """A Hadoop principal setting (``rm/_HOST@REALM``) for the daemon on ``host``."""
    return pattern.replace("_HOST", host.lower())


def _gssapi() -> Any:
    try:
        import gssapi
        import requests_gssapi  # noqa: F401 - checked here, used by auth()
    except ImportError as e:
        raise BackendError(
            "this cluster uses Kerberos (hadoop.security.authentication=kerberos), and "
            f"SPNEGO needs Python's GSSAPI bindings, which are missing here ({e}). Install "
            f"them: {INSTALL_HINT}"
        ) from None
    return gssapi


@dataclass(frozen=True)
class Login:
    """Who the notebook acts as on a secure cluster: a keytab's principal, or the ticket
    cache's (``principal``/``keytab`` None)."""

    principal: str | None = None
    keytab: str | None = None

    @classmethod
    def from_env(cls, principal: str | None = None, keytab: str | None = None) -> Login:
        principal = principal or os.environ.get(ENV_PRINCIPAL) or None
        keytab = keytab or os.environ.get(ENV_KEYTAB) or None
        return cls(principal, os.path.expanduser(keytab) if keytab else None)

    def to_json(self) -> dict:
        return {"principal": self.principal, "keytab": self.keytab}

    def credentials(self) -> Any:
        """GSSAPI initiator credentials; a BackendError naming the fix when there are none."""
        gssapi = _gssapi()
        if self.keytab and not self.principal:
            raise BackendError(
                f"--keytab {self.keytab} needs --principal too (the principal whose key it "
                "holds, e.g. --principal alice@EXAMPLE.COM; klist -kt KEYTAB lists them)"
            )
        if self.keytab and not os.path.isfile(self.keytab):
            raise BackendError(
                f"--keytab {self.keytab}: no such file. Give the path of {self.principal}'s "
                "keytab, or leave --keytab out and run kinit"
            )
        name = (
            gssapi.Name(self.principal, gssapi.NameType.kerberos_principal)
            if self.principal
            else None
        )
        try:
            if self.keytab:
                # A private in-memory cache: the user's own ccache is left as it is.
                store = {
                    b"client_keytab": self.keytab.encode(),
                    b"ccache": f"MEMORY:tony-jupyter-{os.getpid()}-{id(self)}".encode(),
                }
                creds = gssapi.Credentials(name=name, usage="initiate", store=store)
            else:
                creds = gssapi.Credentials(name=name, usage="initiate")
            lifetime = creds.lifetime
        except gssapi.exceptions.GSSError as e:
            raise self._explain(e) from None
        if lifetime is not None and lifetime <= 0 and not self.keytab:
            raise self._expired()
        return creds

    def user(self) -> str:
        """The Hadoop user these credentials act as (the principal's short name)."""
        return short_name(str(self.credentials().name))

    def auth(self) -> Any:
        """A requests auth object doing SPNEGO with these credentials."""
        from requests_gssapi import OPTIONAL, HTTPSPNEGOAuth

        # OPTIONAL mutual authentication: WebHDFS's DataNodes answer without a Negotiate
        # header (the NameNode's redirect carries a delegation token instead).
        return HTTPSPNEGOAuth(creds=self.credentials(), mutual_authentication=OPTIONAL)

    def check(self, service_host: str) -> None:
        """Ask the KDC for a ticket to ``HTTP/<service_host>`` now: a missing, expired or
        wrong credential fails here, before anything is created, with the fix named."""
        gssapi = _gssapi()
        creds = self.credentials()
        target = gssapi.Name(f"HTTP@{service_host}", gssapi.NameType.hostbased_service)
        try:
            gssapi.SecurityContext(name=target, creds=creds, usage="initiate").step()
        except gssapi.exceptions.GSSError as e:
            raise self._explain(e, service_host) from None

    # --- messages ---------------------------------------------------------------------------

    def _who(self) -> str:
        return self.principal or "your Kerberos principal"

    def _expired(self) -> BackendError:
        return BackendError(
            f"the Kerberos ticket of {self._who()} has expired: run kinit again, or pass "
            "--principal and --keytab so that tony-jupyter logs in by itself"
        )

    def _explain(self, e: Exception, host: str | None = None) -> BackendError:
        text = str(e)
        low = text.lower()
        if self.keytab and any(
            w in low for w in ("keytab", "key table", "not found", "no credentials")
        ):
            # The keytab exists (checked before): it lacks this principal's key.
            return BackendError(
                f"the keytab {self.keytab} holds no key for {self.principal} ({_first(text)}). "
                f"Check the principal against `klist -kt {self.keytab}`"
            )
        if "expired" in low:
            return self._expired()
        if "no credentials" in low or "no kerberos credentials" in low or "not found" in low:
            if host and "server" in low:
                return BackendError(
                    f"the KDC knows no service principal HTTP/{host} ({_first(text)}): the "
                    "cluster's address must be the host name its principals use (not an IP "
                    "address), as in its *-site.xml"
                )
            return BackendError(
                "no Kerberos ticket: this cluster uses Kerberos "
                "(hadoop.security.authentication=kerberos). Run kinit (e.g. `kinit "
                "alice@EXAMPLE.COM`), or pass --principal and --keytab. "
                f"({_first(text)})"
            )
        return BackendError(f"Kerberos login as {self._who()} failed: {_first(text)}")


def _first(text: str) -> str:
    return " ".join(text.split())[:300]
