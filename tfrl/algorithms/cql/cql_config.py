"""CQLConfig: conservative Q-learning's config, SAC's plus RLlib's CQL keys.

Example:
    >>> config = CQLConfig().training(min_q_weight=1.0, bc_iters=0)
    >>> config.min_q_weight, config.bc_iters, config.num_actions
    (1.0, 0, 10)
"""

import dataclasses
from typing import Any, ClassVar, Dict

from tfrl.algorithms.algorithm_config import _field
from tfrl.algorithms.off_policy_config import replay_buffer_defaults
from tfrl.algorithms.sac.sac_config import SACConfig
from tfrl.utils.config_values import AT_LEAST_ONE, NON_NEGATIVE, POSITIVE

__all__ = ["CQLConfig"]


@dataclasses.dataclass(frozen=True)
class CQLConfig(SACConfig):
    """SACConfig plus CQL's keys (RLlib's names and defaults).

    Attributes:
        bc_iters: Gradient steps at the start during which the actor clones the logged
            actions instead of maximising Q.
        temperature: `T` of the logsumexp over sampled actions.
        num_actions: Actions sampled per row from each of the three proposals.
        lagrangian: Learn the penalty's weight `alpha'` (Lagrangian dual).
        lagrangian_thresh: The threshold the Lagrangian holds the penalty to.
        min_q_weight: The penalty's weight.
        deterministic_backup: The critics' targets leave out the entropy term
            (`y = r + gamma Q'(s', a')`; RLlib's CQL).
        input: Where the data come from (an experience file, directory, glob, ...;
            "sampler" samples the env: online CQL).
        evaluation_config: Evaluation workers sample the env with the greedy policy, so
            that `evaluate()` measures the learnt policy with real rollouts.

    (The rest: see `SACConfig`; the replay buffer holds the rows read and is uniform by
    default.)
    """

    bc_iters: int = 20000
    temperature: float = 1.0
    num_actions: int = 10
    lagrangian: bool = False
    lagrangian_thresh: float = 5.0
    min_q_weight: float = 5.0
    deterministic_backup: bool = True
    replay_buffer_config: dict = dataclasses.field(default_factory=lambda: replay_buffer_defaults(
        type_="MultiAgentReplayBuffer", capacity=int(1e6)))
    evaluation_config: dict = _field({"input": "sampler", "explore": False})

    _RANGES: ClassVar[Dict[str, Any]] = {
        "bc_iters": NON_NEGATIVE, "temperature": POSITIVE, "num_actions": AT_LEAST_ONE,
        "min_q_weight": NON_NEGATIVE}
