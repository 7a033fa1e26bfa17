"""The YARN AM JVM's class-data-sharing archive (Java's AppCDS): the Hadoop client classes an AM
loads, parsed and verified once per node, user, JDK and classpath, then mapped by every later
AM there instead of read from the jars again (issue 43: about a third of the AM's JVM time).

How it goes. The first AM with no archive for its key records the classes its JVM loads
(``-XX:DumpLoadedClassList``); once its first container has started, it runs the builder
(``python -m tony_jupyter.am.yarn.classarchive``, niced, a session of its own), which dumps the
archive with ``java -Xshare:dump`` over that list, checks that a JVM maps it (``-Xshare:on``)
and renames it into place. Later AMs start their JVM with ``-XX:SharedArchiveFile``.

Where: the NodeManager's directory for the job's user (``LOCAL_USER_DIRS``), else
``$XDG_CACHE_HOME/tony-jupyter/cds``: a user's AMs only ever map an archive that user wrote.

The key: the JDK (its libjvm's path, size, mtime), each jar's path, size and mtime in classpath
order, and the names of the files in the classpath's directories. CDS maps an archive only when
the classpath's jars come before any non-empty directory (the cluster's conf dir comes first in
``yarn.application.classpath``), so an AM on an archive has the jars first and the directories
after; the builder refuses the archive (``<key>.refused``, with why) unless that order changes
nothing: no file in a directory has the name of an entry in a jar. Anything amiss, at any step:
no archive, the JVM as before (Java's ``-Xshare:auto`` also ignores an archive it cannot
validate). ``-Xshare:off`` in ``TONY_AM_JVM_OPTS`` turns it off.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import subprocess
import sys
import time
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

DIR_NAME = "tony-jupyter-cds"
STALE_LOCK_S = 600.0  # a recorder or builder that died: another AM may try again after this
KEEP = 3  # archives kept per directory (one per Hadoop and JDK a node has, usually one)
MAX_DIR_FILES = 2000  # a classpath directory with more files than this: no archive
# The builder's JVM runs beside the AM's (in its container: its memory counts there).
MIN_AM_MEMORY_MB = 768
DUMP_FLAGS = ("-Xmx128m", "-XX:+UseSerialGC", "-Xlog:cds=off", "-Xlog:cds+dynamic=off")
DUMP_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class ClassArchive:
    """One archive's files (in ``home``, named by ``key``) and the classpath it needs."""

    home: str
    key: str
    jars: tuple[str, ...]  # the archive's classpath: the jars, in classpath order, then JPype's
    rest: tuple[str, ...]  # the classpath's other entries (directories): after the jars
    java: str  # the JDK's bin/java, whose libjvm the AM loads

    def path(self, suffix: str) -> Path:
        return Path(self.home) / f"{self.key}.{suffix}"

    @property
    def archive(self) -> Path:
        return self.path("jsa")

    @property
    def classlist(self) -> Path:
        return self.path("classlist")

    @property
    def classpath(self) -> list[str]:
        return [*self.jars, *self.rest]


@dataclass(frozen=True)
class Plan:
    """What the AM's JVM starts with: flags and classpath; ``archive``: the one it maps
    (state "mapped") or records the classes for, to build once the AM's first container has
    started (state "recording")."""

    flags: tuple[str, ...]
    classpath: list[str]
    state: str  # "mapped", "recording", or why there is none
    archive: ClassArchive | None = None


def cache_home(env=os.environ) -> Path:
    for d in (env.get("LOCAL_USER_DIRS") or "").split(","):
        if d and os.path.isdir(d):
            return Path(d) / DIR_NAME
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tony-jupyter" / "cds"


def jpype_jar() -> str:
    """JPype's support jar, which JPype appends to every classpath (jpype/_core.py)."""
    import jpype

    return str(Path(jpype.__file__).resolve().parent.parent / "org.jpype.jar")


def java_for(libjvm: str) -> str | None:
    """The ``bin/java`` of the JDK a libjvm.so belongs to, when it is Java 11 or later (the
    first with app classes in a shared archive for everyone)."""
    real = Path(libjvm).resolve()
    for home in real.parents[1:4]:
        java, release = home / "bin" / "java", home / "release"
        if java.is_file() and release.is_file():
            for line in release.read_text(errors="replace").splitlines():
                if line.startswith("JAVA_VERSION="):
                    major = line.split("=", 1)[1].strip('"').split(".")[0]
                    return str(java) if major.isdigit() and int(major) >= 11 else None
    return None


def expand(classpath: list[str]) -> list[str]:
    """Wildcards as JPype expands them (``dir/*``: its jars, in the directory's order), so that
    two jars with a class in common still load it from the same one as without an archive (the
    key has the order)."""
    out: list[str] = []
    for entry in classpath:
        out.extend(glob.glob(entry + ".jar") if entry.endswith("*") else [entry])
    return out


def dir_files(path: str) -> list[str] | None:
    """The relative names of the files under a classpath directory; None past MAX_DIR_FILES."""
    names: list[str] = []
    for root, dirs, files in os.walk(path):
        dirs.sort()
        rel = os.path.relpath(root, path)
        names.extend(f if rel == "." else f"{rel}/{f}" for f in sorted(files))
        if len(names) > MAX_DIR_FILES:
            return None
    return names


def describe(classpath: list[str], libjvm: str, java: str) -> ClassArchive | None:
    """The archive this classpath and JDK would have (None: a classpath no archive can serve)."""
    entries = [*expand(classpath), jpype_jar()]
    h = hashlib.sha256()
    for p in (libjvm, java):
        st = os.stat(p)
        h.update(f"{os.path.realpath(p)}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    jars: list[str] = []
    rest: list[str] = []
    for e in entries:
        if os.path.isfile(e) and e.lower().endswith((".jar", ".zip")):
            st = os.stat(e)
            jars.append(e)
            h.update(f"jar|{e}|{st.st_size}|{st.st_mtime_ns}\n".encode())
        else:
            names = dir_files(e) if os.path.isdir(e) else []
            if names is None:
                return None
            rest.append(e)
            h.update(f"dir|{e}|{json.dumps(names)}\n".encode())
    return ClassArchive(str(cache_home()), h.hexdigest()[:32], tuple(jars), tuple(rest), java)


def plan(classpath: list[str], libjvm: str, extra_flags: list[str], am_memory_mb: int) -> Plan:
    """How the AM's JVM starts: on the archive, or recording the classes for one, or as before."""
    if "-Xshare:off" in extra_flags:
        return Plan((), classpath, "off (-Xshare:off)")
    try:
        java = java_for(libjvm)
        if java is None:
            return Plan((), classpath, "none (not a JDK 11 or later)")
        a = describe(classpath, libjvm, java)
        if a is None:
            return Plan((), classpath, "none (a classpath directory of too many files)")
        if not _own(Path(a.home)):
            return Plan((), classpath, f"none ({a.home} is not this user's alone)")
        if a.archive.is_file():
            return Plan((f"-XX:SharedArchiveFile={a.archive}",), a.classpath, "mapped", a)
        if a.path("refused").exists():
            return Plan((), classpath, f"none (refused: see {a.path('refused')})")
        if am_memory_mb < MIN_AM_MEMORY_MB:
            return Plan((), classpath, f"none (an AM of under {MIN_AM_MEMORY_MB} MB builds none)")
        if not _lock(a):
            return Plan((), classpath, "none (another AM is building it)")
        a.classlist.unlink(missing_ok=True)
        return Plan((f"-XX:DumpLoadedClassList={a.classlist}",), classpath, "recording", a)
    except Exception as e:  # noqa: BLE001 - the JVM as before, whatever went wrong here
        return Plan((), classpath, f"none ({type(e).__name__}: {e})")


def _own(home: Path) -> bool:
    """The archives' directory (made if missing) is this user's and nobody else may write in
    it: an AM maps only what its own user's AMs wrote."""
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    st = home.stat()
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def _lock(a: ClassArchive) -> bool:
    """This AM records and builds ``a``, unless another one does (a lock younger than
    STALE_LOCK_S)."""
    lock = a.path("lock")
    try:
        if time.time() - lock.stat().st_mtime > STALE_LOCK_S:
            lock.unlink(missing_ok=True)
    except FileNotFoundError:
        pass
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return False
    os.write(fd, f"{os.getpid()}\n".encode())
    os.close(fd)
    return True


def unmapped(a: ClassArchive) -> None:
    """Java did not map the archive (``-Xshare:auto`` goes on without it: a change the key
    does not see): it goes, and the next AM records and builds anew."""
    a.archive.unlink(missing_ok=True)


def abandon(a: ClassArchive) -> None:
    """An AM that recorded but never started the builder (no container started): its list and
    lock go, so that the next AM records again."""
    for p in (a.classlist, a.path("lock")):
        p.unlink(missing_ok=True)


def start_build(a: ClassArchive) -> None:
    """The builder, in the background: niced, in a session of its own, its words in
    ``<key>.log``."""
    with open(a.path("log"), "wb") as log:
        subprocess.Popen(
            [sys.executable, "-m", "tony_jupyter.am.yarn.classarchive", json.dumps(asdict(a))],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def overlap(a: ClassArchive) -> str | None:
    """A file in a classpath directory that a jar has too (the jars-first order could then
    change which one Java finds), or None."""
    names: dict[str, str] = {}
    for d in a.rest:
        if os.path.isdir(d):
            names.update((n, d) for n in dir_files(d) or ())
    for jar in a.jars:
        with zipfile.ZipFile(jar) as z:
            for n in z.namelist():
                if n in names:
                    return f"{names[n]}/{n} is also in {jar}"
    return None


def build(a: ClassArchive) -> str:
    """Dump, check and install the archive; what happened, in words. A refusal is kept
    (``<key>.refused``), so that later AMs do not try again."""
    tmp = a.path(f"jsa.{os.getpid()}")
    listed = a.path(f"classlist.{os.getpid()}")
    try:
        why = overlap(a)
        if why:
            return _refuse(a, f"the classpath's order matters: {why}")
        # The AM's JVM still writes to its list: the lines so far, whole ones only.
        text = a.classlist.read_text(errors="replace")
        listed.write_text(text[: text.rfind("\n") + 1])
        dump = subprocess.run(
            [
                a.java,
                "-Xshare:dump",
                f"-XX:SharedClassListFile={listed}",
                f"-XX:SharedArchiveFile={tmp}",
                *DUMP_FLAGS,
                "-cp",
                os.pathsep.join(a.jars),
            ],
            capture_output=True,
            text=True,
            timeout=DUMP_TIMEOUT_S,
        )
        if dump.returncode != 0 or not tmp.is_file():
            said = (dump.stdout + dump.stderr)[-2000:]
            return _refuse(a, f"java -Xshare:dump failed ({dump.returncode}): {said}")
        check = subprocess.run(
            [
                a.java,
                "-Xshare:on",
                f"-XX:SharedArchiveFile={tmp}",
                *DUMP_FLAGS,
                "-cp",
                os.pathsep.join(a.classpath),
                "-version",
            ],
            capture_output=True,
            text=True,
            timeout=DUMP_TIMEOUT_S,
        )
        if check.returncode != 0:
            return _refuse(a, f"a JVM cannot map it: {(check.stdout + check.stderr)[-2000:]}")
        os.replace(tmp, a.archive)
        _prune(a)
        return f"built {a.archive} ({a.archive.stat().st_size >> 20} MiB)"
    finally:
        for p in (tmp, listed, a.classlist, a.path("lock")):
            p.unlink(missing_ok=True)


def _refuse(a: ClassArchive, why: str) -> str:
    a.path("refused").write_text(why + "\n")
    return f"no archive: {why}"


def _prune(a: ClassArchive) -> None:
    """The newest KEEP archives stay; older ones (another classpath's, another JDK's) go."""
    archives = sorted(Path(a.home).glob("*.jsa"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in archives[KEEP:]:
        old.unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    os.nice(19)  # after the tasks' start, and behind them for the CPU
    f = json.loads(argv[0])
    a = ClassArchive(f["home"], f["key"], tuple(f["jars"]), tuple(f["rest"]), f["java"])
    print(f"tony-jupyter class archive: {build(a)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
