"""The shared core: what every side (the notebook, the AM, the task) imports and none owns: the
job's spec and its configuration table, the records a job writes, the wire protocol, tokens,
Kerberos and Hadoop's configuration, the bundle, supervision of child processes.

It imports no side (pyproject.toml's import contracts): a module that needs the notebook side,
the AM or the executor belongs there instead.
"""
