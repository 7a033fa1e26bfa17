"""The server extension tests' fixtures (tests/helpers/server.py): ``upstream``, ``running_job``."""

from helpers.server import running_job, upstream  # noqa: F401 - registered as fixtures here
