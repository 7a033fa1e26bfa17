"""The cells the tests run through %%tony, one definition each. The training cells share
MWMS_MODEL: the digits model (``X``, ``y`` pushed from the notebook) under
MultiWorkerMirroredStrategy; a test's own cell adds what it checks around it."""

# The strategy comes first: MultiWorkerMirroredStrategy must be made before any other TF op.
MWMS_MODEL = """
strategy = tf.distribute.MultiWorkerMirroredStrategy()
dataset = tf.data.Dataset.from_tensor_slices((X, y)).shuffle(2000, seed=0).repeat().batch(64)
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Input((64,)),
                                 tf.keras.layers.Dense(64, activation="relu"),
                                 tf.keras.layers.Dense(10)])
    model.compile(optimizer="adam",
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
"""

# Three epochs of 30 steps with progress(); pull history, replicas and fit.
MWMS = (
    """
import tensorflow as tf
import tony_jupyter
"""
    + MWMS_MODEL
    + """fit = model.fit(dataset, epochs=3, steps_per_epoch=30, verbose=2,
                callbacks=[tony_jupyter.progress()])
history = fit.history
replicas = strategy.num_replicas_in_sync
history["loss"][-1]
"""
)

# ParameterServerStrategy: the chief trains, the workers and the ps serve until stopped.
PS = """
import tensorflow as tf
import tony_jupyter

resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
if resolver.task_type in ("worker", "ps"):
    tf.distribute.Server(resolver.cluster_spec(), job_name=resolver.task_type,
                         task_index=resolver.task_id, protocol="grpc", start=True).join()
strategy = tf.distribute.ParameterServerStrategy(resolver)

def dataset_fn(input_context):
    return tf.data.Dataset.from_tensor_slices((X, y)).shuffle(2000).repeat().batch(64)

with strategy.scope():
    model = tf.keras.Sequential([tf.keras.layers.Input((64,)),
                                 tf.keras.layers.Dense(64, activation="relu"),
                                 tf.keras.layers.Dense(10)])
    model.compile(optimizer="adam",
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], steps_per_execution=5)
history = model.fit(tf.keras.utils.experimental.DatasetCreator(dataset_fn), epochs=3,
                    steps_per_epoch=30, verbose=2, callbacks=[tony_jupyter.progress()]).history
ps_devices = len(strategy.extended.parameter_devices)
history["loss"][-1]
"""

# Eight short epochs checkpointed with BackupAndRestore to checkpoint_dir(), with room to strike
# between checkpoints; pulls the epoch this attempt began at and the attempt.
CHECKPOINTED = (
    """
import os, time
import tensorflow as tf
import tony_jupyter

class FirstEpoch(tf.keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        global first_epoch
        if first_epoch is None:
            first_epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        time.sleep(0.5)  # room for the test to strike between checkpoints

first_epoch = None
attempt = int(os.environ["TONY_ATTEMPT"])
"""
    + MWMS_MODEL
    + """backup = tf.keras.callbacks.BackupAndRestore(backup_dir=tony_jupyter.checkpoint_dir())
history = model.fit(dataset, epochs=8, steps_per_epoch=10, verbose=2,
                    callbacks=[backup, FirstEpoch(), tony_jupyter.progress()]).history
len(history["loss"])
"""
)

# worker:1 hangs before it can register: a sitecustomize.py for the tasks' PYTHONPATH (it runs
# before the executor).
HANG_WORKER_1 = (
    "import os, time\nif os.environ.get('TONY_TASK_ID') == 'worker:1':\n    time.sleep(600)\n"
)

# PyTorch DDP with gloo on the digits (X, y pushed from the notebook): each rank trains on its
# own rows; init_process_group needs no arguments (torchrun's env:// contract). Pulls the
# losses, whether every replica's parameters are equal, the ranks seen and the state_dict.
DDP = """
import os
import torch, torch.distributed as dist, tony_jupyter
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
xs = torch.tensor(X[rank::world]); ys = torch.tensor(y[rank::world], dtype=torch.long)
model = DDP(torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10)))
opt = torch.optim.SGD(model.parameters(), lr=0.2)
losses, steps, g = [], 60, torch.Generator().manual_seed(rank)
for step in range(1, steps + 1):
    idx = torch.randint(0, len(xs), (64,), generator=g)
    loss = torch.nn.functional.cross_entropy(model(xs[idx]), ys[idx])
    opt.zero_grad(); loss.backward(); opt.step()
    losses.append(loss.item())
    tony_jupyter.report(step=step, loss=loss.item(), total_steps=steps)
flat = torch.cat([p.detach().flatten() for p in model.parameters()])
every = [torch.zeros_like(flat) for _ in range(world)]
dist.all_gather(every, flat)
equal = all(torch.equal(every[0], other) for other in every[1:])
ranks = [int(os.environ[k]) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "WORLD")]
state = {k: v.clone() for k, v in model.module.state_dict().items()}
dist.destroy_process_group()
losses[-1]
"""

# An elastic DDP job (--workers MIN:MAX): twelve short epochs, rank 0 checkpointing each to
# checkpoint_dir() then reporting epoch_done (for the test to strike at), so a round the elastic
# agent restarts resumes there: rank 0 reads the checkpoint, the others get its epoch and (from
# DDP) its parameters. The rank and world size are the agent's, per round.
ELASTIC_DDP = """
import os, time
import torch, torch.distributed as dist, tony_jupyter
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
ckpt = os.path.join(tony_jupyter.checkpoint_dir(), "ddp.pt")
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))
opt = torch.optim.SGD(net.parameters(), lr=0.2)
first_epoch, losses = 0, []
if rank == 0 and os.path.exists(ckpt):
    saved = torch.load(ckpt)
    net.load_state_dict(saved["model"]); opt.load_state_dict(saved["opt"])
    first_epoch, losses = saved["epoch"], saved["losses"]
start = torch.tensor([first_epoch])
dist.broadcast(start, 0)  # where rank 0 resumes, every rank resumes
first_epoch = int(start.item())
model = DDP(net)  # which broadcasts rank 0's parameters
xs = torch.tensor(X[rank::world]); ys = torch.tensor(y[rank::world], dtype=torch.long)
g = torch.Generator().manual_seed(1000 * first_epoch + rank)
for epoch in range(first_epoch, 12):
    for step in range(15):
        idx = torch.randint(0, len(xs), (64,), generator=g)
        loss = torch.nn.functional.cross_entropy(model(xs[idx]), ys[idx])
        opt.zero_grad(); loss.backward(); opt.step()
    mean = loss.detach().clone()
    dist.all_reduce(mean)
    losses.append(mean.item() / world)
    if rank == 0:
        state = {"model": net.state_dict(), "opt": opt.state_dict(), "epoch": epoch + 1,
                 "losses": losses}
        torch.save(state, ckpt + ".tmp"); os.replace(ckpt + ".tmp", ckpt)
    tony_jupyter.report(epoch_done=epoch + 1, loss=losses[-1])
    dist.barrier()
    time.sleep(1.0)  # room for the test to strike between checkpoints
dist.destroy_process_group()
losses[-1]
"""

# JAX on every task: jax.distributed.initialize() with no arguments, a psum across the
# processes, and a few steps of data-parallel linear regression whose gradients are averaged
# across processes; pulls what each saw.
JAX = """
import jax, jax.numpy as jnp, numpy as np
from jax.experimental import multihost_utils
jax.distributed.initialize()
pid, n = jax.process_index(), jax.process_count()
total = jax.pmap(lambda v: jax.lax.psum(v, "i"), axis_name="i")(jnp.array([pid + 1.0]))[0]
rng = np.random.default_rng(pid)
x = rng.normal(size=(128, 3)).astype("float32"); w_true = np.array([1.0, -2.0, 0.5], "float32")
yv = x @ w_true
w = jnp.zeros(3)
grad = jax.jit(jax.grad(lambda w, x, y: jnp.mean((x @ w - y) ** 2)))
losses = []
for step in range(20):
    g = multihost_utils.process_allgather(grad(w, x, yv)).mean(axis=0)  # all-reduce of grads
    w = w - 0.3 * g
    losses.append(float(jnp.mean((x @ w - yv) ** 2)))
ws = multihost_utils.process_allgather(w)
same = bool(np.allclose(ws[0], ws[-1]))
seen = (pid, n, float(total), jax.config.jax_cpu_collectives_implementation)
jax.distributed.shutdown()
losses[-1]
"""
