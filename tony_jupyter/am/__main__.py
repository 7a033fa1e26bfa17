"""``python -m tony_jupyter.am JOB_DIR``: a thin entry point (see :mod:`tony_jupyter.am.cli`).
``--spare N [SPEC_JSON]``: a spare AM with N spare executors (warmstart.py), which waits
for its job;
``--spare-yarn``: a warm AM in its YARN container (yarn/warmapp.py)."""

import sys

from . import timeline

timeline.mark("interpreter up")
if sys.argv[1:2] == ["--spare"]:
    from .warmstart import serve

    sys.exit(serve(int(sys.argv[2]), *sys.argv[3:4]))
if sys.argv[1:2] == ["--spare-yarn"]:
    from .yarn.warmapp import serve as serve_yarn

    sys.exit(serve_yarn(sys.argv[2:]))

from .cli import main  # noqa: E402 - after the mark: the step is the imports

sys.exit(main())
