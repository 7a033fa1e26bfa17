"""Sphinx configuration for tony-jupyter's docs (MyST Markdown, pydata-sphinx-theme).

Built by ``bash dev/docs`` into build/docs/html, warnings as errors. Nothing here reaches the
network: no intersphinx, no remote images, no analytics; the theme's assets are in its wheel.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE / "_ext"), str(ROOT)]  # the checkout's tony_jupyter, not an install

import tony_jupyter  # noqa: E402

project = "tony-jupyter"
author = "the tony-jupyter developers"
copyright = "the tony-jupyter developers"
release = version = tony_jupyter.__version__

extensions = ["myst_parser", "tony_reference", "tony_screenshots"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "README.md"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
nitpicky = True
suppress_warnings: list[str] = []

html_theme = "pydata_sphinx_theme"
html_title = f"tony-jupyter {release}"
html_static_path = ["_static"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_show_sourcelink = False
html_last_updated_fmt = None
