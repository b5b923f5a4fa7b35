"""RLlib's `ray.rllib.algorithms.impala.tf` package path (V-trace v2)."""
