"""Asynchronous PPO (RLlib's `ray.rllib.algorithms.appo`): the loss (`appo_loss`) and
the config (`appo_config`). No algorithm class yet, so APPO is not in the algorithm
registry."""
