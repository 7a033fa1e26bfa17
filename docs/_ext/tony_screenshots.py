"""``{tony-screenshot} NAME``: the browser test's screenshot ``build/browser/NAME.png``
(tests/browser/test_lab.py takes them on this version). Copied into the built site when the
browser test has run in this checkout; otherwise the page says how to make it, so the docs build
without a browser."""

from __future__ import annotations

import os
from pathlib import Path

SHOTS = Path(__file__).resolve().parents[2] / "build" / "browser"


def setup(app):  # pragma: no cover - run by Sphinx
    from docutils import nodes
    from sphinx.util.docutils import SphinxDirective

    class Screenshot(SphinxDirective):
        required_arguments = 1
        final_argument_whitespace = True

        def run(self):
            name, _, alt = self.arguments[0].partition(" ")
            shot = SHOTS / f"{name}.png"
            if not shot.is_file():
                text = (
                    f"Screenshot {name}.png: taken by the browser test (pytest -m browser "
                    "tests/browser/test_lab.py, into build/browser/); not taken in this checkout."
                )
                return [nodes.note("", nodes.paragraph(text=text))]
            self.env.note_dependency(str(shot))
            here = Path(self.env.doc2path(self.env.docname)).parent
            return [nodes.image(uri=os.path.relpath(shot, here), alt=alt or name)]

    app.add_directive("tony-screenshot", Screenshot)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
