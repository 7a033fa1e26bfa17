"""The server extension's settings, as traitlets: ``c.TonyJupyter.<name>`` in a
``jupyter_server_config.py``, or ``--TonyJupyter.<name>=...`` on the command line."""

from __future__ import annotations

from traitlets import Bool, Float, Int, Unicode
from traitlets.config import Configurable


class TonyJupyter(Configurable):
    jobs_home = Unicode(
        "",
        help="""Where the user's job records live (the jobs/ directory under it): the same
        directory the kernels' %%tony magics write to. Empty (the default): $TONY_JUPYTER_HOME,
        else ~/.tony-jupyter, as the kernels find it. Set here, it is also handed to the kernels
        this server starts.""",
    ).tag(config=True)

    proxy_enabled = Bool(
        True,
        help="""Serve /tony/proxy/<job>/<endpoint>/: a job's TensorBoard (and other endpoints
        it registered) through this server, authenticated as the server's user. Off: the
        widgets and the panel show no TensorBoard.""",
    ).tag(config=True)

    endpoint_cache_seconds = Float(
        2.0,
        help="""How long the proxy reuses a job's registered endpoints before asking its AM
        again (TensorBoard's page loads dozens of files at once).""",
    ).tag(config=True)

    max_events_wait_seconds = Float(
        10.0,
        help="""The longest a client's long-poll for a job's events
        (/tony/api/jobs/<id>/events?timeout=) is held open.""",
    ).tag(config=True)

    threads = Int(
        8,
        help="""Threads for the blocking calls behind the REST API (to AMs, to YARN's
        ResourceManager), so that they never run on the server's event loop.""",
    ).tag(config=True)

    history_days = Float(
        0.0,
        help="""How many days a finished job's history is kept (its record here, its entry
        on HDFS). 0 (the default): $TONY_JUPYTER_HISTORY_DAYS, else 30, as TonY's portal.
        Set here, it is also handed to the kernels this server starts (and their YARN AMs).""",
    ).tag(config=True)

    tensorboard_idle_seconds = Float(
        600.0,
        help="""A finished job's TensorBoard (started on demand by the proxy from the event
        files in the job's history) is stopped after this many seconds without a request.""",
    ).tag(config=True)
