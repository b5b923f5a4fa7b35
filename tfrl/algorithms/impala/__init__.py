"""IMPALA (RLlib's `ray.rllib.algorithms.impala`): V-trace (`vtrace`), the loss
(`impala_loss`) and the config (`impala_config`). No algorithm class yet, so IMPALA is
not in the algorithm registry."""
