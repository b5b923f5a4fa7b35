"""Test-process set-up shared by every test module.

TensorFlow's logical CPU devices can only be configured before the first op runs, once
per process, so it happens here, at collection time, before any test module imports
code that touches TensorFlow.

GPUs are hidden, from this process and from the subprocesses tests start (they inherit
`CUDA_VISIBLE_DEVICES`): the tests compare numbers bit for bit between runs, strategies
and processes, and expect the devices of a CPU-only machine (the default strategy and
`num_gpus=0` on the CPU, `_fake_gpus` on logical CPUs), so they hold on a GPU machine too.
"""

import os
import random

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["CUDA_VISIBLE_DEVICES"] = ""

import numpy as np
import pytest

NUM_LOGICAL_CPUS = 2


def _configure_logical_cpus():
    import tensorflow as tf

    tf.config.set_visible_devices([], "GPU")  # in case CUDA was initialised already
    cpus = tf.config.list_physical_devices("CPU")
    # Listing *logical* devices would initialise the runtime, so configure first.
    tf.config.set_logical_device_configuration(
        cpus[0], [tf.config.LogicalDeviceConfiguration()] * NUM_LOGICAL_CPUS
    )


_configure_logical_cpus()


@pytest.fixture(autouse=True)
def _seed_everything():
    """Every test starts from the same numpy, Python and TF random state."""
    import tensorflow as tf

    random.seed(0)
    np.random.seed(0)
    tf.random.set_seed(0)
    yield
