"""``tony_jupyter.data.dataset``: a ``tf.data.Dataset`` over Parquet files, sharded for the
calling task and streamed in record batches.

- **Where** (``sources``): local paths or ``hdfs://`` URLs (read through WebHDFS:
  ``TONY_WEBHDFS_URL``, else ``dfs.namenode.http-address`` in ``$HADOOP_CONF_DIR/hdfs-site.xml``,
  else the URL's host on port 9870), each a file, a directory (its ``*.parquet`` files) or a
  glob. ``filesystem(url)`` gives the same place as a pyarrow filesystem, to write Parquet to.
- **Which rows** (``plan``): the calling task's share. The readers are ``chief:0`` (if any) and
  then the workers, in TensorFlow's input-pipeline order (``tf.distribute`` auto-sharding is
  switched off on the returned dataset, so rows are never sharded twice). With at least as many
  files as readers, each reader takes every N-th file; with fewer, row groups are dealt out so
  row counts balance; with fewer row groups than readers, contiguous row ranges (sizes within one
  row). The evaluator, parameter servers and code outside a job read everything.
  ``shard=(i, n)`` overrides this (e.g. from a ``tf.distribute.InputContext``); ``shard=False``
  switches it off.
- **Memory** (``batches``): ``dataset()`` reads runs of whole row groups (about 64k rows),
  two at a time, or, for files with row groups over 64 MiB decoded, streams them page by page
  with ``ParquetFile.iter_batches`` as ``record_batches()`` does. Either way a task holds a
  few row groups at most, never the data set.
- **Elements**: ``features`` is a dict ``{column: tensor}`` (Keras models with named ``Input``
  layers take it as is); ``stack=True`` gives one ``float32`` matrix ``[batch, n_features]``
  instead. With ``label=``, elements are ``(features, label)``. Numeric and bool columns become
  tensors of their type, strings ``tf.string``, fixed-size lists (arrays of ``--shard``, or
  embeddings) ``[batch, k]``; anything else is an error naming the column. ``tfdata`` says
  how rows cross into TensorFlow.
- **Without TensorFlow** (``arrays``): ``batches()`` gives the same rows as NumPy batches, for
  PyTorch, JAX or NumPy code; ``torch_dataset()`` as a ``torch.utils.data.IterableDataset``;
  ``torch_rows(df)`` makes a ``--shard`` value a map-style ``torch.utils.data.Dataset``.
"""

from .arrays import Batches, batches, torch_dataset, torch_rows
from .batches import DEFAULT_BATCH_SIZE, record_batches
from .plan import (
    INDEX_PREFIX,
    Piece,
    ShardPlan,
    plan_columns,
    plan_pieces,
    reader_index,
    shard_plan,
)
from .sources import DataError, _namenode_urls, _webhdfs, filesystem, open_parquet, resolve
from .tfdata import dataset

__all__ = [
    "Batches",
    "DEFAULT_BATCH_SIZE",
    "INDEX_PREFIX",
    "DataError",
    "Piece",
    "ShardPlan",
    "_namenode_urls",
    "_webhdfs",
    "batches",
    "dataset",
    "filesystem",
    "open_parquet",
    "plan_columns",
    "plan_pieces",
    "reader_index",
    "record_batches",
    "resolve",
    "shard_plan",
    "torch_dataset",
    "torch_rows",
]
