"""The one exception the devcluster raises; its message names the problem and the fix."""


class DevClusterError(Exception):
    """A devcluster operation failed; ``str(err)`` is a paragraph meant for the user."""
