"""tfrl: reinforcement learning on TensorFlow 2 and Keras 3 with RLlib's classic API.

`ray.rllib.<path>.<Name>` lives at `tfrl.<path>.<Name>`; importing `tfrl` itself is
cheap (it imports neither TensorFlow nor Ray).
"""

import sys as _sys

__version__ = "0.1.0.dev0"

if "tensorflow" not in _sys.modules:
    # tensorflow_probability loads its `experimental` and `layers` subpackages (and
    # tf_keras) at import time when TensorFlow is already loaded, but lazily when it is
    # not. Importing it first costs ~1 ms here and saves ~0.5 s and ~10 MB when the
    # action distributions are first used. (Import tfrl before TensorFlow to profit.)
    try:
        import tensorflow_probability as _tfp  # noqa: F401
    except ImportError:  # tfrl reports the missing dependency where it is needed.
        pass

# Registers the optional execution backends (Ray) by name for the layers that use them
# (RemoteVectorEnv, WorkerSet) without importing Ray: see tfrl.utils.backend_registry.
from tfrl import backends as _backends  # noqa: E402,F401  pylint: disable=wrong-import-position
