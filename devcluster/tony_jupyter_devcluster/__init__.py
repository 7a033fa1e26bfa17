"""A real pseudo-distributed Hadoop (HDFS + YARN) on this machine, built from Maven Central jars."""

from .cluster import DevCluster
from .errors import DevClusterError

__version__ = "0.1.0"
__all__ = ["DevCluster", "DevClusterError"]
