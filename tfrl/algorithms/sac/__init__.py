"""Soft actor-critic (RLlib's `ray.rllib.algorithms.sac`): so far the pure losses
(`tfrl.algorithms.sac.sac_loss`) and the config (`tfrl.algorithms.sac.sac_config`); the
policy and the algorithm come next."""
