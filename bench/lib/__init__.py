"""What the parts share, no part itself: ``common`` (the ``Context`` a part's ``run`` gets,
medians, A B A B rounds, results on disk, the devcluster), ``runners`` (one run of
``workload.py`` on each side: tony-jupyter, by hand, TonY via ``tony_peer``, distributed shell
via ``dshell``), ``cpu_roles``, the AM-scale helpers (``am_host``, ``fake_provider``,
``sim_executors``), ``parquet_rss`` (the data part's memory side), ``plots`` and ``table``."""
