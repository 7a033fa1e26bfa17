"""tony-jupyter's benchmark suite: ``python -m bench [PART] [--quick] [--list]`` (README.md).
Each part is one module here (``bench/<part>.py``); what they share is in ``bench/lib/``."""
