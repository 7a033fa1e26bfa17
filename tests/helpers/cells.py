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
