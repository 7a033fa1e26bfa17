"""``python -m tony_jupyter.am JOB_DIR``: a thin entry point (see :mod:`tony_jupyter.am.main`)."""

import sys

from .main import main

sys.exit(main())
