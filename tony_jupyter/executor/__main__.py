"""``python -m tony_jupyter.executor``: a thin entry point, so that every module of the executor
is imported once under its own name (an exception class defined in a ``__main__`` module would be
a second class, which the other modules' ``except`` clauses could not catch).
``--spare [FRAMEWORK]``: a spare executor (warmtask.py), which imports FRAMEWORK and waits for its
task; ``--spare-yarn [FRAMEWORK]``: one in a warm YARN AM's container."""

import sys

if sys.argv[1:2] == ["--spare"]:
    from .warmtask import serve

    sys.exit(serve(*sys.argv[2:3]))
if sys.argv[1:2] == ["--spare-yarn"]:
    from .warmtask import serve_yarn

    sys.exit(serve_yarn(*sys.argv[2:3]))

from .main import main

sys.exit(main())
