"""What the tests share that is not a fixture: the cells they run (cells), driving and watching
jobs (jobs), the sharding checks (data) and the devcluster's REST views (yarn). Fixtures live in
tests/conftest.py; no test module imports from another."""
