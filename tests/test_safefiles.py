"""Files named by someone else (tony_jupyter/core/safefiles.py) and the places that write them: the
warm YARN AM's hand-over (WarmPool.adopt) and the spare executor that unpacks the shipped
directory. Nothing lands outside its directory; archives hold directories and regular files."""

import base64
import io
import os
import tarfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from tony_jupyter.am.yarn.warmpool import WarmPool
from tony_jupyter.core import safefiles, srcdir
from tony_jupyter.core.errors import UnsafeFileError
from tony_jupyter.core.spec import JobSpec, TaskSpec
from tony_jupyter.executor.warmtask import write_job_files


def tar_of(*members: tuple[tarfile.TarInfo, bytes | None]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


def cve_2025_4517_chain(outside: Path, dest: Path) -> bytes:
    """The link chain that Python 3.11.7's ``filter="data"`` lets through: links whose
    resolved path exceeds PATH_MAX, so the filter's realpath stops resolving and sees a path
    inside, while the kernel follows them out; then a file written through the last one."""
    comp, steps, members = "d" * 247, "abcdefghijklmnop", []
    path = ""
    for s in steps:
        members.append((member(os.path.join(path, comp), tarfile.DIRTYPE), None))
        members.append((member(os.path.join(path, s), tarfile.SYMTYPE, comp), None))
        path = os.path.join(path, comp)
    linkpath = os.path.join(*steps, "l" * 254)
    members.append((member(linkpath, tarfile.SYMTYPE, "../" * len(steps)), None))
    up = "/.." * len(dest.resolve().parts[1:])
    members.append((member("escape", tarfile.SYMTYPE, linkpath + up + str(outside)), None))
    members.append((member("escape/pwned.txt"), b"pwned\n"))
    return tar_of(*members)


@pytest.fixture
def dirs(tmp_path):
    outside, cwd = tmp_path / "outside", tmp_path / "container"
    outside.mkdir()
    cwd.mkdir()
    (outside / "victim.txt").write_text("mine")
    return outside, cwd


def hand_over(cwd: Path, archive: bytes) -> None:
    write_job_files(str(cwd), {"src.tar.gz": base64.b64encode(archive).decode()})


def nothing_outside(outside: Path) -> bool:
    return sorted(p.name for p in outside.iterdir()) == ["victim.txt"] and (
        (outside / "victim.txt").read_text() == "mine"
    )


def test_the_cve_2025_4517_link_chain_writes_nothing_outside(dirs):
    outside, cwd = dirs
    with pytest.raises(UnsafeFileError, match="symbolic link"):
        hand_over(cwd, cve_2025_4517_chain(outside, cwd / "src"))
    assert nothing_outside(outside)
    assert not (cwd / "src").exists()  # what was unpacked before the refusal is gone


BAD_MEMBERS = {
    "absolute": ([(member("{outside}/victim.txt"), b"x")], "absolute"),
    "dot-dot": ([(member("../outside/victim.txt"), b"x")], "'..'"),
    "dot-dot inside a name": ([(member("a/../../outside/victim.txt"), b"x")], "'..'"),
    "symlink out": ([(member("l", tarfile.SYMTYPE, "{outside}"), None)], "symbolic link"),
    "symlink then a file through it": (
        [(member("l", tarfile.SYMTYPE, "../outside"), None), (member("l/victim.txt"), b"x")],
        "symbolic link",
    ),
    "hardlink out": ([(member("h", tarfile.LNKTYPE, "{outside}/victim.txt"), None)], "hard link"),
    "hardlink inside": (
        [(member("a"), b"x"), (member("h", tarfile.LNKTYPE, "a"), None)],
        "hard link",
    ),
    "device": ([(member("dev", tarfile.CHRTYPE), None)], "device"),
    "fifo": ([(member("fifo", tarfile.FIFOTYPE), None)], "FIFO"),
    "a name twice": ([(member("a"), b"1"), (member("a"), b"2")], "twice"),
}


@pytest.mark.parametrize("case", list(BAD_MEMBERS))
def test_an_archive_member_that_would_leave_its_directory_is_refused(dirs, case):
    outside, cwd = dirs
    members, why = BAD_MEMBERS[case]
    for info, _ in members:
        info.name = info.name.format(outside=outside)
        info.linkname = info.linkname.format(outside=outside)
    with pytest.raises(UnsafeFileError, match=why):
        hand_over(cwd, tar_of(*members))
    assert nothing_outside(outside)
    assert not (cwd / "src").exists()


def test_sizes_and_members_are_bounded_as_read(tmp_path, monkeypatch):
    big = tar_of(*[(member(f"f{i}"), b"x" * 1000) for i in range(5)])
    with pytest.raises(UnsafeFileError, match="more than 4000 bytes"):
        safefiles.extract_tar(io.BytesIO(big), tmp_path / "a", max_bytes=4000, max_members=10)
    with pytest.raises(UnsafeFileError, match="more than 3 members"):
        safefiles.extract_tar(io.BytesIO(big), tmp_path / "b", max_bytes=10_000, max_members=3)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    # a gzip bomb: 200 MB of zeros in one member, refused at the bound, not unpacked whole
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = member("zeros")
        info.size = 200 << 20
        tar.addfile(info, io.BytesIO(bytes(info.size)))
    assert len(buf.getvalue()) < 1 << 20
    with pytest.raises(UnsafeFileError, match="bytes"):
        hand_over(tmp_path, buf.getvalue())
    assert not (tmp_path / "src").exists()


def test_a_shipped_directory_round_trips_through_the_hand_over(tmp_path):
    d = tmp_path / "nb"
    (d / "pkg").mkdir(parents=True)
    (d / "pkg" / "mod.py").write_text("X = 1\n")
    (d / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(d / "run.sh", 0o755)
    src = srcdir.collect(d, cwd=d)
    cwd = tmp_path / "container"
    cwd.mkdir()
    write_job_files(
        str(cwd),
        {
            "src.tar.gz": base64.b64encode(srcdir.archive(src)).decode(),
            "cell.py": base64.b64encode(b"x = 1\n").decode(),
        },
    )
    assert (cwd / "src" / "pkg" / "mod.py").read_text() == "X = 1\n"
    assert os.access(cwd / "src" / "run.sh", os.X_OK)
    assert (cwd / "cell.py").read_text() == "x = 1\n"
    with tarfile.open(fileobj=io.BytesIO(srcdir.archive(src))) as tar:
        assert {m.type for m in tar.getmembers()} == {tarfile.REGTYPE}


@pytest.mark.parametrize(
    "name", ["../escape.txt", "{outside}/abs.txt", "a/../../escape.txt", "", "sub/x", ".", "a\0b"]
)
def test_a_hand_over_file_name_outside_the_directory_is_refused(dirs, name):
    outside, cwd = dirs
    (cwd / "sub").symlink_to(outside)  # a directory link already there: not a way out either
    with pytest.raises(UnsafeFileError, match="refused the file name"):
        write_job_files(str(cwd), {name.format(outside=outside): base64.b64encode(b"x").decode()})
    assert nothing_outside(outside)


def test_a_link_in_the_last_place_is_replaced_not_written_through(dirs):
    outside, cwd = dirs
    (cwd / "spec.json").symlink_to(outside / "victim.txt")  # as NodeManager localizes files
    safefiles.write_file(cwd, "spec.json", b"{}")
    assert (cwd / "spec.json").read_bytes() == b"{}" and not (cwd / "spec.json").is_symlink()
    assert nothing_outside(outside)


def pool(tmp_path) -> WarmPool:
    provider = SimpleNamespace(keep_staging=False, shards=None)
    return WarmPool(provider, verifier="0" * 64)  # type: ignore[arg-type]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.mark.parametrize("name", ["../escape.txt", "{outside}/abs.txt", "sub/../../escape.txt"])
def test_the_warm_am_adopts_no_file_outside_the_job_directory(tmp_path, dirs, name):
    outside, job_dir = dirs
    spec = JobSpec("j", (TaskSpec("worker", 1),)).to_json().encode()
    files = {"spec.json": b64(spec), name.format(outside=outside): b64(b"x")}
    with pytest.raises(UnsafeFileError, match="refused the file name"):
        pool(tmp_path).adopt(job_dir, files)
    assert nothing_outside(outside) and not (tmp_path / "escape.txt").exists()
    assert not (job_dir / "spec.json").exists()  # every name checked before any is written


def test_the_warm_am_adopts_the_jobs_files_over_the_templates_links(tmp_path, dirs):
    outside, job_dir = dirs
    spec = JobSpec("j", (TaskSpec("worker", 1),))
    (job_dir / "spec.json").symlink_to(outside / "victim.txt")  # localized: a link into the cache
    p = pool(tmp_path)
    p.adopt(job_dir, {"spec.json": b64(spec.to_json().encode()), "cell.py": b64(b"x = 1")})
    assert JobSpec.from_json((job_dir / "spec.json").read_text()) == spec
    assert p.files == {"spec.json": b64(spec.to_json().encode()), "cell.py": b64(b"x = 1")}
    assert nothing_outside(outside)
