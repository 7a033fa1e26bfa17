"""``python -m bench.lib.am_host JOB_DIR``: tony-jupyter's AM (Coordinator + HTTP API, unchanged)
with the FakeProvider, in its own process so its CPU and memory can be measured alone.
``TONY_BENCH_PROFILE=FILE``: run it under cProfile and write the stats to FILE at its end."""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

from bench.lib.common import REPO
from bench.lib.fake_provider import FakeProvider
from tony_jupyter.am.main import AM
from tony_jupyter.core.aminfo import AmInfo
from tony_jupyter.core.jobdir import JobDir
from tony_jupyter.core.protocol import token_verifier
from tony_jupyter.core.spec import JobSpec


def launch(
    d: Path, spec: JobSpec, prefix: list[str] | None = None
) -> tuple[subprocess.Popen, dict]:
    """Start this AM on job directory ``d`` (``spec``, a fresh job token and its verifier, as
    a launcher writes them), behind ``prefix`` (e.g. taskset); its process and am.json."""
    files = JobDir(d)
    files.spec.write_text(spec.to_json())
    files.env.write_text(spec.env_json())
    token = secrets.token_urlsafe(32)
    files.token.write_text(token)
    files.token_verifier.write_text(token_verifier(token))  # what the AM knows of it
    am = subprocess.Popen(
        [*(prefix or []), sys.executable, "-m", "bench.lib.am_host", str(d)],
        cwd=REPO,
        stdout=open(files.am_log, "wb"),  # noqa: SIM115 - the child holds it
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 30
    while (info := AmInfo.read(files.am_info)) is None:
        if am.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"bench AM did not start: {files.am_log.read_text()[-2000:]}")
        time.sleep(0.05)
    return am, info.to_json()


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
