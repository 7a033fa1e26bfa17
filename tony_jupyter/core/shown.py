"""Text tony-jupyter did not write, made safe to print or keep: a URL's credentials redacted
(:func:`redacted`), a terminal's control characters replaced (:func:`terminal_safe`).

A tracking URI such as ``http://alice:PASSWORD@host/`` is the user's secret: whatever prints or
keeps one (a task's log, ``doctor``'s report, an error) passes it through :func:`redacted`.
What a task, a server or a job's name puts in front of the user's terminal (an OSC 52
clipboard write, a screen clear, a title) passes through :func:`terminal_safe`; the notebook's
HTML views escape such text themselves."""

from __future__ import annotations

import re

REDACTED = "[redacted]"
# scheme://userinfo@ : the password of user:password, or all of a userinfo without a colon (a
# token: https://TOKEN@host/). Userinfo never holds "/", "@" or whitespace.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/\s@:]*)(:[^/\s@]*)?@")
# C0 and C1 control characters and DEL, but newline and tab.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def redacted(text: str) -> str:
    """``text`` with every URL's credentials replaced: ``http://alice:[redacted]@host/``,
    ``https://[redacted]@host/``."""
    if "@" not in text:
        return text
    return _USERINFO.sub(_redact, text)


def _redact(m: re.Match) -> str:
    scheme, user, password = m.group(1), m.group(2), m.group(3)
    if password is None:
        return f"{scheme}{REDACTED}@"
    return f"{scheme}{user}:{REDACTED}@"


def terminal_safe(text: str) -> str:
    """``text`` for a terminal: control characters other than newline and tab shown as
    ``\\x1b`` (a carriage return as a newline: nothing printed is overwritten), with URLs'
    credentials redacted."""
    text = redacted(text).replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
