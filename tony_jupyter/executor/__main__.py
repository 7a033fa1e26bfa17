"""``python -m tony_jupyter.executor``: a thin entry point, so that every module of the executor
is imported once under its own name (an exception class defined in a ``__main__`` module would be
a second class, which the other modules' ``except`` clauses could not catch).
``--spare``: a spare executor (spare.py), which waits for its task."""

import sys

if sys.argv[1:] == ["--spare"]:
    from .spare import serve

    sys.exit(serve())

from .main import main

sys.exit(main())
