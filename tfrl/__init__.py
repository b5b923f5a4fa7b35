"""tfrl: reinforcement learning on TensorFlow 2 and Keras 3 with RLlib's classic API.

`ray.rllib.<path>.<Name>` lives at `tfrl.<path>.<Name>`; importing `tfrl` itself is
cheap (it imports neither TensorFlow nor Ray).
"""

__version__ = "0.1.0.dev0"
