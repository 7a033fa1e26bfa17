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
        return await AM(job_dir, FakeProvider(job_dir)).run()

    if os.environ.get("TONY_BENCH_GC_LOG"):  # each collection's generation and duration
        import gc
        import time

        started = [0.0]

        def note(phase: str, info: dict) -> None:
            if phase == "start":
                started[0] = time.perf_counter()
            elif info["generation"] == 2 or time.perf_counter() - started[0] > 0.05:
                took = time.perf_counter() - started[0]
                print(f"gc gen{info['generation']} {took * 1000:.1f} ms", flush=True)

        gc.callbacks.append(note)
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
