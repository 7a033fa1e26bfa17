"""The DDP training both sides of bench/ddp.py run: a %%tony --framework pytorch cell (BENCH
pushed from the notebook) or a process torchrun started (BENCH_CONF names the same settings).
``init_process_group`` takes its addresses from the environment either side gives (env://).

Writes OUT/<rank>.json with wall-clock marks (process in user code, process group up, first
step done, end) and steps/s after a warm-up. Threads are pinned (``threads``, default 1) so
both sides run the same compute whatever OMP_NUM_THREADS each sets.
"""

import json
import os
import resource
import time

T_START = time.time()
try:
    BENCH  # noqa: B018 - pushed into the cell's namespace by %%tony
except NameError:
    with open(os.environ["BENCH_CONF"]) as _f:
        BENCH = json.load(_f)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

T_IMPORTED = time.time()
_omp = os.environ.get("OMP_NUM_THREADS")
torch.set_num_threads(int(BENCH.get("threads", 1)))
dist.init_process_group("gloo")
T_INIT = time.time()
_rank = dist.get_rank()
torch.manual_seed(0)
_width = int(BENCH.get("width", 256))
_model = DistributedDataParallel(
    torch.nn.Sequential(
        torch.nn.Linear(64, _width),
        torch.nn.ReLU(),
        torch.nn.Linear(_width, _width),
        torch.nn.ReLU(),
        torch.nn.Linear(_width, 10),
    )
)
_opt = torch.optim.Adam(_model.parameters())
_gen = torch.Generator().manual_seed(_rank)
_x = torch.randn(4096, 64, generator=_gen)
_y = torch.randint(0, 10, (4096,), generator=_gen)
_steps = int(BENCH.get("steps", 50))
_marks: list[float] = []
for _step in range(_steps):
    _idx = torch.randint(0, 4096, (64,), generator=_gen)
    _loss = torch.nn.functional.cross_entropy(_model(_x[_idx]), _y[_idx])
    _opt.zero_grad()
    _loss.backward()
    _opt.step()
    _marks.append(time.time())
dist.destroy_process_group()
_warm = min(10, max(1, _steps // 5))
_result = {
    "index": _rank,
    "pid": os.getpid(),
    "omp_num_threads": _omp,
    "t_start": T_START,
    "t_imported": T_IMPORTED,
    "t_init": T_INIT,
    "t_first_step": _marks[0],
    "t_end": _marks[-1],
    "steps": len(_marks),
    "steps_per_s": (len(_marks) - 1 - _warm) / (_marks[-1] - _marks[_warm]),
    "max_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}
with open(os.path.join(BENCH["out"], f".{_rank}"), "w") as _f:
    json.dump(_result, _f)
os.rename(os.path.join(BENCH["out"], f".{_rank}"), os.path.join(BENCH["out"], f"{_rank}.json"))
