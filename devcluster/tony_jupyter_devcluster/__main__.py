"""``python -m tony_jupyter.devcluster``: the devcluster's command line (cli.py)."""

from .cli import main

raise SystemExit(main())
