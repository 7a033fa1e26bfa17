"""Where the Parquet files are: local paths or ``hdfs://`` URLs (files, directories, globs),
resolved to a sorted file list on a pyarrow filesystem. HDFS goes through WebHDFS (fsspec), so
no libhdfs or JVM is needed on the reading side."""

from __future__ import annotations

import functools
import getpass
import glob as globlib
import os
import xml.etree.ElementTree as ET
from urllib.parse import urlparse

from ..core import hadoopconf, tokens
from ..core.errors import TonyError
from ..core.kerberos import Login
from ..core.protocol import ExecutorEnv


class DataError(TonyError, ValueError):
    """Parquet input that cannot become the dataset asked for; the message names the fix."""


def _webhdfs(url: str):
    """An fsspec WebHDFS filesystem for ``url``: ``TONY_WEBHDFS_URL``, else the NameNode(s) of
    ``$HADOOP_CONF_DIR`` (the active one of an HA pair), else the URL's host on port 9870."""
    try:
        from fsspec.implementations.webhdfs import WebHDFS
    except ImportError:
        raise DataError(
            f"{url}: reading hdfs:// needs fsspec (pip install fsspec), which WebHDFS access "
            "goes through"
        ) from None
    urls = os.environ.get(ExecutorEnv.var("webhdfs_url")) or _namenode_urls(url) or ""
    namenodes = [u if "://" in u else f"http://{u}" for u in _by_state(urls)]
    base = namenodes[0] if namenodes else f"http://{urlparse(url).hostname or '127.0.0.1'}:9870"
    b = urlparse(base)
    verify = tokens.ca_bundle()
    web: dict = {"session_verify": verify}
    if len(namenodes) > 1:  # an HA pair: followed across a failover, the active one first
        from .webhdfs import FailoverWebHDFS

        make = functools.partial(FailoverWebHDFS, tuple(namenodes), **web)
    else:
        web.update(port=b.port or 9870, use_https=b.scheme == "https")
        make = functools.partial(WebHDFS, b.hostname, **web)
    token = tokens.hdfs_token()
    user = os.environ.get("HADOOP_USER_NAME") or getpass.getuser()
    if token:  # in a task on a secure cluster: the job's delegation token
        fs = make(token=token)
    elif not _kerberos_cluster():
        fs = make(user=user)
    else:  # on the notebook host of a secure cluster: SPNEGO with the user's ticket or keytab
        fs = make()
        try:
            fs.session.auth = Login.from_env().auth()
        except TonyError as e:
            raise DataError(f"{url}: {e}") from None
    tokens.verify_each_call(fs.session, verify)
    return fs


def _by_state(urls: str) -> list[str]:
    """The WebHDFS addresses of ``urls`` (an HA pair is ``;``-separated), the one whose JMX
    says it is active first, else in their order."""
    candidates = [u.strip() for u in urls.split(";") if u.strip()]
    if len(candidates) < 2:
        return candidates
    import requests

    for url in candidates:
        try:
            r = requests.get(
                f"{url}/jmx",
                params={"qry": "Hadoop:service=NameNode,name=NameNodeStatus"},
                timeout=5,
                verify=tokens.ca_bundle(),
            )
            beans = r.json().get("beans", []) if r.ok else []
        except (requests.RequestException, ValueError):
            continue
        if any(b.get("State") == "active" for b in beans):
            return [url, *(u for u in candidates if u != url)]
    return candidates


def _kerberos_cluster() -> bool:
    return _site_value("core-site.xml", "hadoop.security.authentication") == "kerberos"


def _namenode_urls(url: str) -> str | None:
    """The NameNodes' web addresses (``;``-separated for an HA pair) as ``$HADOOP_CONF_DIR``
    gives them, read as the launcher reads them (hadoopconf.py: nameservices, HTTPS_ONLY,
    default ports); None without a configuration, or where it names no NameNode for ``url``."""
    conf_dir = os.environ.get("HADOOP_CONF_DIR")
    if not conf_dir:
        return None
    try:
        return hadoopconf.namenodes(url, conf_dir).url
    except TonyError as e:
        raise DataError(f"{url}: {e}") from None


def _site_value(site: str, key: str) -> str | None:
    conf = os.environ.get("HADOOP_CONF_DIR")
    path = os.path.join(conf, site) if conf else None
    if not path or not os.path.isfile(path):
        return None
    for prop in ET.parse(path).getroot().iter("property"):
        if (prop.findtext("name") or "").strip() == key:
            return (prop.findtext("value") or "").strip() or None
    return None


def filesystem(url: str | os.PathLike) -> tuple[object, str]:
    """(pyarrow filesystem, path on it) for a local path or an ``hdfs://`` URL, to write or
    read Parquet with pyarrow itself, e.g.
    ``fs, path = filesystem("hdfs:///user/me/data"); pq.write_table(t, f"{path}/part-0.parquet",
    filesystem=fs)``. HDFS goes through WebHDFS, found as :func:`dataset` finds it."""
    import pyarrow.fs as pafs

    url = os.fspath(url)
    if url.startswith("hdfs://"):
        return pafs.PyFileSystem(pafs.FSSpecHandler(_webhdfs(url))), urlparse(url).path or "/"
    return pafs.LocalFileSystem(), os.path.abspath(os.path.expanduser(url))


def _is_data_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return not name.startswith(("_", ".")) and not name.endswith(".crc")


def _has_magic(path: str) -> bool:
    return any(c in path for c in "*?[")


def resolve(paths) -> tuple[object, list[str]]:
    """(pyarrow filesystem, sorted file paths) for files, directories and globs."""
    import pyarrow.fs as pafs

    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if not items:
        raise DataError("dataset() got no paths; pass a file, a directory or a glob")
    schemes = {str(p).startswith("hdfs://") for p in items}
    if len(schemes) > 1:
        raise DataError("mix of hdfs:// and local paths; read them as two datasets")
    files: list[str] = []
    if schemes == {True}:
        fs = _webhdfs(str(items[0]))
        for p in map(str, items):
            path = urlparse(p).path or "/"
            try:
                if _has_magic(path):
                    found = sorted(fs.glob(path))
                elif fs.isdir(path):
                    found = sorted(x for x in fs.find(path) if x.endswith(".parquet"))
                else:
                    found = [path] if fs.exists(path) else []
            except OSError as e:
                raise DataError(f"cannot read {p} through WebHDFS: {e}") from None
            if not found:
                raise DataError(f"{p} matches no file on HDFS; check the path (hdfs dfs -ls)")
            files += [x for x in found if _is_data_file(x)]
        arrow_fs = pafs.PyFileSystem(pafs.FSSpecHandler(fs))
    else:
        for p in (os.fspath(x) for x in items):
            p = os.path.expanduser(p)
            if _has_magic(p):
                found = sorted(x for x in globlib.glob(p, recursive=True) if os.path.isfile(x))
            elif os.path.isdir(p):
                found = sorted(globlib.glob(os.path.join(p, "**", "*.parquet"), recursive=True))
            else:
                found = [p] if os.path.isfile(p) else []
            if not found:
                what = "glob" if _has_magic(p) else "path"
                raise DataError(f"{what} {p!r} matches no file; check the path (ls {p})")
            files += [os.path.abspath(x) for x in found if _is_data_file(x)]
        arrow_fs = pafs.LocalFileSystem()
    return arrow_fs, list(dict.fromkeys(files))


def open_parquet(fs, path: str):
    """A ``ParquetFile`` (footer read), or DataError when ``path`` is not Parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(fs.open_input_file(path))
    except (pa.ArrowInvalid, OSError) as e:
        raise DataError(
            f"{path} is not a Parquet file ({str(e).splitlines()[0]}); pass only Parquet files, "
            "e.g. a glob like 'dir/*.parquet'"
        ) from None
