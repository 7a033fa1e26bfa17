"""Which names a shipped directory leaves out (srcdir.py): ``.gitignore`` and ``.tonyignore``
files, in git's syntax and with git's precedence, over a few defaults.

Matching is ``pathspec``'s (the gitignore implementation that tools such as black and mypy
use). Rules are read from the shipped directory and every directory under it, and, when it is
inside a git work tree, from the directories above it up to the tree's top (unless those leave
out the shipped directory itself, which the user asked for). A deeper file wins
over a shallower one, ``.tonyignore`` over ``.gitignore`` in the same directory, a later line
over an earlier one; a directory left out is not entered, as in git. A file matched by a ``!``
line of a ``.tonyignore`` is *asked for*: it is shipped even when larger than the per-file
threshold.

``SECRETS`` names files that may hold credentials (package-index passwords, ``.netrc``, ``.env``
files, private keys, Jupyter's server settings, cloud credentials): a shipped directory and a
packed venv (launcher/yarn/packenv.py) both leave them out by default and say which; a ``!``
line of a ``.tonyignore`` brings one back.
"""

from __future__ import annotations

import os
import posixpath
import stat
from dataclasses import dataclass

# Hidden entries (.git, .ipynb_checkpoints, .venv, ...), caches, installed packages.
DEFAULTS = (".*", "__pycache__/", "node_modules/", "site-packages/", "*.pyc", "*.pyo")
# Names that may hold credentials, in git's syntax: left out and named when left out.
SECRETS = (
    ".env",
    ".env.*",
    ".envrc",
    ".netrc",
    "_netrc",
    ".pypirc",
    "pip.conf",
    "pip.ini",
    ".git-credentials",
    ".npmrc",
    ".pgpass",
    ".my.cnf",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keytab",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".ssh/",
    ".aws/",
    ".azure/",
    ".kube/",
    ".docker/",
    ".gnupg/",
    "gcloud/",
    "credentials.json",
    "application_default_credentials.json",
    "service-account*.json",
    "/etc/jupyter/",
)
FILES = (".gitignore", ".tonyignore")  # in this order: the second wins
MAX_RULES_BYTES = 1 << 20  # an ignore file larger than this is not read
MAX_LEVELS_UP = 64


@dataclass(frozen=True)
class _Spec:
    base: str  # the directory its paths are relative to ("" = the shipped directory)
    spec: object  # pathspec.GitIgnoreSpec
    asks: bool  # a .tonyignore: its '!' lines ask for a file
    secret: bool = False  # SECRETS: what it leaves out is named


def _spec(lines: list[str]):
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(lines)


def _read(directory: str, name: str) -> list[str] | None:
    path = os.path.join(directory, name)
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_RULES_BYTES:
            return None
        with open(path, "rb") as f:
            return f.read(MAX_RULES_BYTES).decode("utf-8", "replace").splitlines()
    except OSError:
        return None


@dataclass(frozen=True)
class Decision:
    left_out: bool
    asked: bool  # matched last by a '!' line of a .tonyignore
    secret: bool = False  # left out by SECRETS (and by no later rule)


class Rules:
    """The rules in force in one directory of the walk; ``child`` gives its subdirectory's."""

    def __init__(self, specs: tuple[_Spec, ...]):
        self.specs = specs

    @classmethod
    def for_root(cls, root: str) -> Rules:
        """The defaults, then the ignore files of the git work tree above ``root`` (outermost
        first), then ``root``'s own."""
        specs = [
            _Spec("", _spec(list(DEFAULTS)), False),
            _Spec("", _spec(list(SECRETS)), False, True),
        ]
        above: list[str] = []
        here = root
        for _ in range(MAX_LEVELS_UP):
            parent = os.path.dirname(here)
            if parent == here or os.path.exists(os.path.join(here, ".git")):
                break
            above.append(parent)
            here = parent
        else:
            above = []
        if not os.path.exists(os.path.join(here, ".git")):
            above = []  # not in a git work tree: only the directory's own files count
        outer = [
            (d, s)
            for d in reversed(above)
            for s in _load(d, "../" + os.path.relpath(root, d).replace(os.sep, "/"))
        ]
        if not _leaves_out_root(root, outer):
            specs.extend(s for _, s in outer)  # else the user ships what git ignores: theirs
            # would leave out everything
        return cls(tuple(specs)).child(root, "")

    def child(self, real_dir: str, rel: str) -> Rules:
        """The rules for the directory ``rel`` (shipped name), read from ``real_dir``."""
        return Rules(self.specs + tuple(_load(real_dir, rel)))

    def decide(self, rel: str, is_dir: bool) -> Decision:
        left_out, asked, secret = False, False, False
        for s in self.specs:
            if s.base.startswith("../"):  # from above the shipped directory
                path = posixpath.join(s.base[3:], rel)
            elif s.base:
                if not rel.startswith(s.base + "/"):
                    continue
                path = rel[len(s.base) + 1 :]
            else:
                path = rel
            got = s.spec.check_file(path + "/" if is_dir else path)  # type: ignore[attr-defined]
            if got.include is not None:
                left_out = bool(got.include)
                asked = s.asks and not left_out
                secret = s.secret and left_out
        return Decision(left_out, asked, secret)


def _leaves_out_root(root: str, outer: list[tuple[str, _Spec]]) -> bool:
    """Whether the ignore files above ``root`` leave out ``root`` or a directory on the way
    to it (each judged by the files of the directories above it, the last word winning)."""
    if not outer:
        return False
    top, chain, a = outer[0][0], [], root
    while a != top and os.path.commonpath([top, a]) == top:
        chain.append(a)
        a = os.path.dirname(a)
    for a in reversed(chain):
        left_out = False
        for d, s in outer:
            if a != d and os.path.commonpath([d, a]) == d:
                got = s.spec.check_file(os.path.relpath(a, d) + "/")  # type: ignore[attr-defined]
                if got.include is not None:
                    left_out = bool(got.include)
        if left_out:
            return True
    return False


def _load(real_dir: str, base: str) -> list[_Spec]:
    out = []
    for name in FILES:
        lines = _read(real_dir, name)
        if lines:
            out.append(_Spec(base, _spec(lines), name == ".tonyignore"))
    return out
