"""RLlib 1.x's `ray.rllib.execution.buffers`: the mix-in replay buffer."""
