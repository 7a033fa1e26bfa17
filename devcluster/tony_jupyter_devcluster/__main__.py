"""``python -m tony_jupyter_devcluster``: the devcluster's command line (cli.py)."""

from .cli import main

raise SystemExit(main())
