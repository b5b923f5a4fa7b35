"""CQLDQNConfig: discrete CQL's config, DQN's keys plus CQL's `min_q_weight` and
`temperature` (RLlib's names).

Example:
    >>> config = CQLDQNConfig().training(min_q_weight=2.0)
    >>> config.min_q_weight, config.temperature, config.evaluation_config["input"]
    (2.0, 1.0, 'sampler')
"""

import dataclasses
from typing import Any, ClassVar, Dict

from tfrl.algorithms.algorithm_config import _field
from tfrl.algorithms.dqn.dqn_config import DQNConfig
from tfrl.utils.config_values import NON_NEGATIVE, POSITIVE

__all__ = ["CQLDQNConfig"]


@dataclasses.dataclass(frozen=True)
class CQLDQNConfig(DQNConfig):
    """DQNConfig plus discrete CQL's keys.

    Attributes:
        min_q_weight: The conservative penalty's weight (`cql_dqn_loss`); 0 is DQN.
        temperature: `T` of the logsumexp over the actions.
        evaluation_config: Evaluation workers sample the env with the greedy policy, so
            that `evaluate()` measures the learnt policy with real rollouts.

    (The rest: see `DQNConfig`. SAC-based CQL's `bc_iters`, `num_actions`, `lagrangian`,
    `lagrangian_thresh` and `deterministic_backup` have no meaning here: the logsumexp
    runs over every action and there is no actor.)
    """

    min_q_weight: float = 1.0
    temperature: float = 1.0
    evaluation_config: dict = _field({"input": "sampler", "explore": False})

    _RANGES: ClassVar[Dict[str, Any]] = {
        "min_q_weight": NON_NEGATIVE, "temperature": POSITIVE}

    def validate(self) -> None:
        super().validate()
        if self.num_atoms > 1 or self.noisy:
            raise ValueError(
                "CQLDQNConfig: the conservative penalty is on expected Q-values: "
                f"num_atoms must be 1 and noisy False; received num_atoms={self.num_atoms}, "
                f"noisy={self.noisy}. Use DQN for distributional or noisy Q-learning.")
