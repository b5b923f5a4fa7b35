"""CQL: conservative Q-learning (RLlib's `ray.rllib.algorithms.cql`), SAC with a penalty
on the Q-values of actions outside the data, learning from offline data.

Plan: SAC's (`OffPolicyAlgorithm`): the workers read their `input` (experience files;
nothing is sampled from an env unless `input="sampler"`), the rows read go into the
replay buffer, and each learning phase replays `train_batch_size`-row minibatches from
it for its gradient steps in one compiled call. With `evaluation_interval`, the learnt
policy is run greedily on the env (`evaluation_config={"input": "sampler", "explore":
False}`).

Example:
    >>> from tfrl.algorithms.cql import CQLConfig
    >>> CQLConfig().training(lagrangian=True).lagrangian
    True
"""

from tfrl.algorithms.cql.cql_config import CQLConfig
from tfrl.algorithms.cql.cql_tf_policy import CQLTFPolicy
from tfrl.algorithms.sac.sac import SAC


class CQL(SAC):
    """Conservative Q-learning (see `CQLConfig`, `CQLTFPolicy`)."""

    config_class = CQLConfig
    default_policy_class = CQLTFPolicy


CQLConfig.algo_class = CQL

# RLlib 1.x name: the default config as a flat dict.
DEFAULT_CONFIG = CQLConfig().to_dict()
