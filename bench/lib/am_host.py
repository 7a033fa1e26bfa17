"""``python -m bench.lib.am_host JOB_DIR``: tony-jupyter's AM (Coordinator + HTTP API, unchanged)
with the FakeProvider, in its own process so its CPU and memory can be measured alone.
``TONY_BENCH_PROFILE=FILE``: run it under cProfile and write the stats to FILE at its end."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from bench.lib.fake_provider import FakeProvider
from tony_jupyter.am.main import AM


def main() -> int:
    job_dir = Path(sys.argv[1]).resolve()

    async def amain() -> int:
        return await AM(job_dir, FakeProvider()).run()

    profile = os.environ.get("TONY_BENCH_PROFILE")
    if not profile:
        return asyncio.run(amain())
    import cProfile

    with cProfile.Profile() as prof:
        try:
            return asyncio.run(amain())
        finally:
            prof.dump_stats(profile)


if __name__ == "__main__":
    sys.exit(main())
