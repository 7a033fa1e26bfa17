"""A spare executor: started by a spare AM before its job came (tony_jupyter/core/warmproc.py), with
every module a task needs imported; handed its task's environment, cwd and log file, it runs
the task as ``python -m tony_jupyter.executor`` would. Given a framework (the kernel's last job's),
it imports that too while it waits, once told to (warm.WarmProcess.import_now: the kernel's last job
has ended); its AM hands it only a task whose environment that import would have read the same
(warm.WarmProcess.fits)."""

from __future__ import annotations

from ..core import amcall
from ..core import warmproc as warm
from ..core.protocol import WarmSecret, WarmTask


def serve(framework: str = "") -> int:
    warm.end_with_parent(signal_too=True)  # its spare AM, from its main thread: am/warmstart.py
    import encodings.idna  # noqa: F401 - what a task imports before its user code: here,
    import secrets  # noqa: F401 - while idle, not once the task came

    from . import main, tensorboard  # noqa: F401

    job = warm.wait_for_job(lambda: warm.preload(framework))  # told once its AM may
    if job is None:
        return 0  # the AM is gone
    warm.become(job)
    return main.main()


def serve_yarn(framework: str = "") -> int:
    """In a warm YARN AM's spare container (am/yarn/warmapp.py): imported (``framework`` too, at
    once: while the job that started the warm AM may still run, on a cluster's nodes which
    that job's containers may share), wait for the task, write the job's files where a fresh
    container would have them localized, take the task's environment, and run it."""
    import encodings.idna  # noqa: F401
    import os
    import secrets  # noqa: F401
    import sys

    from ..core.errors import UnsafeFileError
    from . import main, tensorboard  # noqa: F401

    warm.preload(framework)
    job = _wait_for_task()
    if job is None:
        return 0  # released (the job did not need it), or the warm AM is gone
    cwd = os.getcwd()
    try:
        write_job_files(cwd, job.files)
    except UnsafeFileError as e:
        print(f"tony-jupyter: the job's files were refused: {e}", file=sys.stderr)
        return 1
    for var in (warm.SPARE_URL, warm.SPARE_TOKEN):
        os.environ.pop(var, None)
    # NodeManager expands {{PWD}} in a fresh container's environment; here it is this one's.
    os.environ.update({k: v.replace("{{PWD}}", cwd) for k, v in job.env.items()})
    return main.main()


def write_job_files(cwd: str, files: dict[str, str]) -> None:
    """The job's files (base64, from the warm AM) where a fresh container would have them
    localized; names checked and the shipped directory unpacked by safefiles.py, which refuses
    what would land outside ``cwd``."""
    import base64
    import io

    from ..core import jobdir, safefiles, srcdir

    for name, b64 in files.items():
        data = base64.b64decode(b64)
        if name == jobdir.SRC_ARCHIVE:  # the shipped directory, where a fresh container
            # unpacks it (an empty one too, as NodeManager's)
            dest = safefiles.inside(cwd, jobdir.SRC)
            safefiles.extract_tar(io.BytesIO(data), dest, srcdir.MAX_BYTES, srcdir.MAX_FILES)
        else:
            safefiles.write_file(cwd, name, data)


def _wait_for_task(give_up_s: float = 120.0) -> WarmTask | None:
    """Long-poll the warm AM until it hands a task (None: released, or the AM is gone)."""
    import json
    import os
    import time
    import urllib.error
    import urllib.request

    base = f"{os.environ[warm.SPARE_URL]}/api/v1/spare"
    query = f"?container={os.environ['CONTAINER_ID']}"
    # The launch secret (in this container's launch_container.sh, which other containers can
    # read): spent at once for the secret this executor polls with, which only it holds.
    launch_secret = os.environ.pop(warm.SPARE_TOKEN, "")
    hello = urllib.request.Request(
        base + "/hello" + query,
        data=b"{}",
        headers={"Authorization": f"Bearer {launch_secret}"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(hello, timeout=60) as r:
            secret = WarmSecret.checked(json.loads(r.read())).secret
    except (OSError, ValueError):
        return None  # refused (taken over), or the warm AM is gone: released as unused
    req = urllib.request.Request(
        base + "/task" + query, headers={"Authorization": f"Bearer {secret}"}
    )
    failing_since = None
    while True:
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                failing_since = None
                if r.status == 200:
                    return WarmTask.checked(json.loads(r.read()))
        except urllib.error.HTTPError as e:
            if e.code in amcall.GONE:  # 404: the route closed, no task came for it
                return None
            failing_since = failing_since or time.monotonic()
        except OSError:
            failing_since = failing_since or time.monotonic()
        if failing_since is not None:
            if time.monotonic() - failing_since > give_up_s:
                return None
            time.sleep(0.2)
