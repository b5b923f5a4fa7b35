"""TD3 and DDPG (RLlib's `ray.rllib.algorithms.td3` and `.ddpg`): so far the pure losses
(`tfrl.algorithms.td3.td3_loss`) and the configs (`tfrl.algorithms.td3.td3_config`); the
policy and the algorithms come next."""
