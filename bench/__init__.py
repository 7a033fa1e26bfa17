"""tony-jupyter's benchmark suite: ``python -m bench [--quick] [--only NAME]`` (see README.md)."""
