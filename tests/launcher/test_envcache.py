"""The packed environments a host keeps by content hash (launcher/yarn/envcache.py)."""

import os

from tony_jupyter.launcher.yarn import envcache


def test_a_kept_archive_is_fetched_and_only_the_latest_are_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    dest = tmp_path / "dest.tar.gz"
    assert not envcache.fetch("aa", dest) and not dest.exists()
    for i, digest in enumerate(("aa", "bb", "cc")):
        packed = tmp_path / f"{digest}.tar.gz"
        packed.write_bytes(digest.encode() * 1000)
        envcache.keep(digest, packed)
        os.utime(envcache.directory() / f"{digest}.tar.gz", (1000 + i, 1000 + i))
        packed.unlink()  # as the launcher's temporary directory goes
    kept = sorted(p.name for p in envcache.directory().iterdir())
    assert kept == ["bb.tar.gz", "cc.tar.gz"]  # KEEP = 2, the oldest went
    assert envcache.fetch("bb", dest) and dest.read_bytes() == b"bb" * 1000
    assert oct(envcache.directory().stat().st_mode & 0o777) == "0o700"


def test_a_cache_that_cannot_be_written_costs_nothing_but_the_keeping(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    packed = tmp_path / "p.tar.gz"
    packed.write_bytes(b"x")
    envcache.keep("aa", packed)  # logs a warning, raises nothing
    assert packed.read_bytes() == b"x"
    assert not envcache.fetch("aa", tmp_path / "d.tar.gz")
