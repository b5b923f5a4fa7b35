"""Deep Q-Networks (RLlib's `ray.rllib.algorithms.dqn`): so far the pure loss
(`tfrl.algorithms.dqn.dqn_loss`); the algorithm, its config and policy come next."""
