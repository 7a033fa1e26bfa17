"""The live job widget (stock ipywidgets) and the loop that feeds it from a job's AM."""

from .follow import follow
from .view import JobView

__all__ = ["JobView", "follow"]
