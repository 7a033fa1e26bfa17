# tony-jupyter's stand-in for TF1's tensorflow.examples.tutorials.mnist.input_data, which
# TensorFlow 2 no longer has (and which downloaded MNIST into train_dir): the part of it that
# mnist_distributed.py uses, read_data_sets(train_dir).train.next_batch(batch_size), with its
# defaults (images flattened to 784 float32 values in [0, 1], integer labels, shuffled each
# epoch), over the MNIST-shaped arrays in mnist.npz beside the script (tests/helpers/examples.py).

import collections

import numpy as np


class DataSet:
  def __init__(self, images, labels):
    self.images = images.reshape(len(images), 28 * 28).astype(np.float32) / 255.0
    self.labels = labels.astype(np.int64)
    self._order = np.random.permutation(len(self.images))
    self._at = 0

  def next_batch(self, batch_size):
    if self._at + batch_size > len(self._order):
      self._order = np.random.permutation(len(self.images))
      self._at = 0
    batch = self._order[self._at:self._at + batch_size]
    self._at += batch_size
    return self.images[batch], self.labels[batch]


Datasets = collections.namedtuple('Datasets', ['train', 'validation', 'test'])


def read_data_sets(train_dir):
  del train_dir  # nothing to download
  with np.load('mnist.npz') as mnist:
    train = DataSet(mnist['x_train'], mnist['y_train'])
    test = DataSet(mnist['x_test'], mnist['y_test'])
  return Datasets(train=train, validation=None, test=test)
