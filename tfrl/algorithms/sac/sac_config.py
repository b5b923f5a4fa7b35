"""SACConfig: soft actor-critic's config dataclass (RLlib's keys and defaults).

RLlib's classic SAC keys: twin critics (`twin_q`), the critics' and the policy's
networks (`q_model_config`, `policy_model_config`; classic keys `Q_model`,
`policy_model`), soft target updates after every gradient step (`tau`,
`target_network_update_freq=0`; a positive value instead moves the targets by `tau`
every that many sampled env steps), the temperature's start (`initial_alpha`) and target
(`target_entropy`: "auto" is `-dim(A)` for Box actions, `0.98 log(n)` for Discrete(n);
see `tfrl.algorithms.sac.sac_loss.resolve_target_entropy`), and one learning rate per
optimizer (`optimization`). The top-level `lr` is not used by SAC. Partial dicts given
for `q_model_config`, `policy_model_config`, `optimization` and `replay_buffer_config`
are merged (see `tfrl.algorithms.off_policy_config`).

Example:
    >>> config = SACConfig().training(optimization={"actor_learning_rate": 1e-3})
    >>> sorted(config.optimization.items())
    [('actor_learning_rate', 0.001), ('critic_learning_rate', 0.0003), ('entropy_learning_rate', 0.0003)]
"""

import copy
import dataclasses
import math
from typing import Any, ClassVar, Dict

from tfrl.algorithms.off_policy_config import OffPolicyConfig, replay_buffer_defaults
from tfrl.utils.config_keys import check_keys
from tfrl.utils.config_values import POSITIVE, check_value

__all__ = ["SACConfig"]

# RLlib's SAC networks: two hidden layers of 256 units.
_NETWORK_DEFAULTS: Dict[str, Any] = {
    "fcnet_hiddens": [256, 256], "fcnet_activation": "relu", "post_fcnet_hiddens": [],
    "post_fcnet_activation": None, "custom_model": None, "custom_model_config": {}}
_OPTIMIZATION_DEFAULTS = {"actor_learning_rate": 3e-4, "critic_learning_rate": 3e-4,
                          "entropy_learning_rate": 3e-4}


def _network_defaults() -> Dict[str, Any]:
    return copy.deepcopy(_NETWORK_DEFAULTS)


@dataclasses.dataclass(frozen=True)
class SACConfig(OffPolicyConfig):
    """SAC's config: OffPolicyConfig plus the keys below (RLlib's defaults).

    Attributes:
        twin_q: Two critics and the minimum of their targets.
        q_model_config, policy_model_config: The critics' and the policy's networks
            (`fcnet_hiddens`, `fcnet_activation`, `post_fcnet_hiddens`,
            `post_fcnet_activation`, `custom_model`, `custom_model_config`).
        initial_alpha: The entropy temperature at the start (> 0).
        target_entropy: "auto" or a number.
        optimization: `actor_learning_rate`, `critic_learning_rate`,
            `entropy_learning_rate` (> 0 each).

    (`tau`, `n_step`, `replay_buffer_config`, `training_intensity`,
    `num_steps_sampled_before_learning_starts`, `store_buffer_in_checkpoints`,
    `target_network_update_freq`: see `OffPolicyConfig`.)
    """

    twin_q: bool = True
    q_model_config: dict = dataclasses.field(default_factory=_network_defaults)
    policy_model_config: dict = dataclasses.field(default_factory=_network_defaults)
    initial_alpha: float = 1.0
    target_entropy: Any = "auto"
    optimization: dict = dataclasses.field(default_factory=lambda: dict(_OPTIMIZATION_DEFAULTS))
    # OffPolicyConfig's keys with SAC's defaults.
    replay_buffer_config: dict = dataclasses.field(
        default_factory=lambda: replay_buffer_defaults(capacity=int(1e6)))
    tau: float = 5e-3
    target_network_update_freq: int = 0
    num_steps_sampled_before_learning_starts: int = 1500
    # AlgorithmConfig's keys with SAC's defaults.
    rollout_fragment_length: int = 1
    train_batch_size: int = 256
    timesteps_per_iteration: int = 100
    min_iter_time_s: float = 1
    # Replayed rows are drawn at random already: no second shuffle of them.
    shuffle_sequences: bool = False

    _RANGES: ClassVar[Dict[str, Any]] = {"initial_alpha": POSITIVE}
    _MERGED_DICTS: ClassVar[tuple] = ("replay_buffer_config", "q_model_config",
                                      "policy_model_config", "optimization")

    def validate(self) -> None:
        super().validate()
        owner = type(self).__name__
        entropy = self.target_entropy
        numeric = isinstance(entropy, (int, float)) and not isinstance(entropy, bool)
        if not (entropy == "auto" or (numeric and math.isfinite(entropy))):
            raise ValueError(f"{owner}: target_entropy must be 'auto' or a finite number; "
                             f"received {entropy!r} ({type(entropy).__name__}).")
        check_keys(self.optimization, _OPTIMIZATION_DEFAULTS, f"{owner} optimization")
        for key in _OPTIMIZATION_DEFAULTS:
            check_value(f"optimization[{key!r}]", self.optimization[key], float, POSITIVE,
                        owner)
        for name in ("q_model_config", "policy_model_config"):
            check_keys(getattr(self, name), _NETWORK_DEFAULTS, f"{owner} {name}")
