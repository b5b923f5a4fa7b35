"""tfrl: reinforcement learning on TensorFlow 2 and Keras 3 with RLlib's classic API.

`ray.rllib.<path>.<Name>` lives at `tfrl.<path>.<Name>`; importing `tfrl` itself is
cheap (it imports neither TensorFlow nor Ray).
"""

__version__ = "0.1.0.dev0"

# Registers the optional execution backends (Ray) by name for the layers that use them
# (RemoteVectorEnv, WorkerSet) without importing Ray: see tfrl.utils.backend_registry.
from tfrl import backends as _backends  # noqa: E402,F401
