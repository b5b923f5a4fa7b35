"""tfrl: reinforcement learning on TensorFlow 2 and Keras 3 with RLlib's classic API.

`ray.rllib.<path>.<Name>` lives at `tfrl.<path>.<Name>`; importing `tfrl` itself is
cheap (it imports neither TensorFlow nor Ray). It makes TensorFlow's start-up quiet:
the C++ and CUDA notices TensorFlow prints when it loads are hidden unless the
environment variable `TFRL_VERBOSE=1` is set (or `TF_CPP_MIN_LOG_LEVEL` below 2, or the
CLI's `--verbose`); see `tfrl.utils.quiet`.
"""

__version__ = "0.1.0.dev0"

# Before anything imports TensorFlow: hide its start-up notices unless asked for them.
from tfrl.utils import quiet as _quiet  # noqa: E402

_quiet.install()

# Registers the optional execution backends (Ray) by name for the layers that use them
# (RemoteVectorEnv, WorkerSet) without importing Ray: see tfrl.utils.backend_registry.
from tfrl import backends as _backends  # noqa: E402,F401
