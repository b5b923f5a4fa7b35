"""DQNConfig: DQN's config dataclass (re-exported by `tfrl.algorithms.dqn.dqn`, RLlib's path).

RLlib's DQN keys and defaults on top of `OffPolicyConfig` (the replay buffer's keys and
their checks live there). Two subdicts are merged into their defaults (a given
`replay_buffer_config` or `exploration_config` only needs the keys it changes) and
checked at the door. `learning_starts` (RLlib 1.x) is an alias of
`num_steps_sampled_before_learning_starts`.

Example:
    >>> config = DQNConfig.from_dict({"learning_starts": 500,
    ...                               "replay_buffer_config": {"capacity": 1000}})
    >>> config.num_steps_sampled_before_learning_starts, config.replay_buffer_config["capacity"]
    (500, 1000)
    >>> config.replay_buffer_config["prioritized_replay_alpha"]
    0.6
"""

import copy
import dataclasses
from typing import Any, ClassVar, Dict, List, Optional

from tfrl.algorithms.off_policy_config import OffPolicyConfig
from tfrl.utils.config_keys import check_keys
from tfrl.utils.config_values import (
    AT_LEAST_ONE, NON_NEGATIVE, POSITIVE, UNIT_INTERVAL, check_value)

EXPLORATION_DEFAULTS: Dict[str, Any] = {
    "type": "EpsilonGreedy",
    "initial_epsilon": 1.0,
    "final_epsilon": 0.02,
    "epsilon_timesteps": 10000,
}
TD_ERROR_LOSS_FNS = ("huber", "mse")


def _field(default: Any) -> Any:
    return dataclasses.field(default_factory=lambda: copy.deepcopy(default))


# The numeric entries of `exploration_config`: key -> (type, allowed range).
_EPSILON_ENTRIES: Dict[str, Any] = {
    "initial_epsilon": (float, UNIT_INTERVAL),
    "final_epsilon": (float, UNIT_INTERVAL),
    "epsilon_timesteps": (int, AT_LEAST_ONE),
}


@dataclasses.dataclass(frozen=True)
class DQNConfig(OffPolicyConfig):
    """DQN's config (RLlib's DQN defaults): `OffPolicyConfig`'s replay and target keys
    (`replay_buffer_config`, `n_step`, `training_intensity`,
    `num_steps_sampled_before_learning_starts`, `target_network_update_freq`, `tau`,
    `store_buffer_in_checkpoints`) plus DQN's own.

    Attributes:
        dueling: Dueling heads `Q = V + A - mean A` (V is the catalog model's value
            head on the shared trunk, A its output layer).
        hiddens: Hidden sizes after the model's trunk (`model["fcnet_hiddens"]`): tfrl
            appends them to the trunk (`post_fcnet_hiddens`), shared by the value and
            advantage streams (RLlib gives each stream its own copy).
        double_q: Double Q-learning (the online network picks the next action).
        noisy, num_atoms: Noisy nets and distributional Q are not implemented: only
            `noisy=False`, `num_atoms=1` are accepted (so `sigma0`, the noise scale, and
            `v_min`, `v_max`, the support of the value distribution, are not read).
        exploration_config: `EpsilonGreedy` with `initial_epsilon`, `final_epsilon`,
            `epsilon_timesteps` (linear decay over the policy's timesteps); merged into
            the defaults as `replay_buffer_config` is.
        td_error_loss_fn: "huber" or "mse".
        adam_epsilon: Adam's epsilon.

    DQN replays single transitions: `replay_buffer_config["replay_sequence_length"]`
    must be 1.
    """

    # RLlib's DQN defaults that differ from COMMON_CONFIG / PolicyConfig.
    lr: float = 5e-4
    grad_clip: Optional[float] = 40.0
    train_batch_size: int = 32
    rollout_fragment_length: int = 4
    timesteps_per_iteration: int = 1000
    # Replayed rows are drawn at random already: no second shuffle of them.
    shuffle_sequences: bool = False
    exploration_config: dict = _field(EXPLORATION_DEFAULTS)
    # DQN's own keys.
    dueling: bool = True
    hiddens: List[int] = _field([256])
    double_q: bool = True
    noisy: bool = False
    sigma0: float = 0.5
    num_atoms: int = 1
    v_min: float = -10.0
    v_max: float = 10.0
    td_error_loss_fn: str = "huber"
    adam_epsilon: float = 1e-8

    _RANGES: ClassVar[Dict[str, Any]] = {
        "num_atoms": AT_LEAST_ONE, "adam_epsilon": POSITIVE, "sigma0": NON_NEGATIVE}
    _MERGED_DICTS: ClassVar[tuple] = ("replay_buffer_config", "exploration_config")

    def validate(self) -> None:
        super().validate()

        def fail(msg: str) -> None:
            raise ValueError(f"DQNConfig: {msg}")

        if self.noisy:
            fail("noisy=True (noisy networks) is not implemented in tfrl; set noisy=False "
                 "and explore with exploration_config (EpsilonGreedy).")
        if self.num_atoms != 1:
            fail(f"num_atoms={self.num_atoms} (distributional Q) is not implemented in tfrl; "
                 "set num_atoms=1.")
        if self.td_error_loss_fn not in TD_ERROR_LOSS_FNS:
            fail(f"td_error_loss_fn must be one of {TD_ERROR_LOSS_FNS}; received "
                 f"{self.td_error_loss_fn!r}.")
        if not all(isinstance(h, int) and not isinstance(h, bool) and h > 0
                   for h in self.hiddens):
            fail(f"hiddens must be a list of positive ints; received {self.hiddens!r}.")
        length = self.replay_buffer_config["replay_sequence_length"]
        if length != 1:
            fail("replay_buffer_config['replay_sequence_length'] must be 1 (DQN replays "
                 f"timesteps); received {length!r}.")
        self._validate_exploration_config(fail)

    def _validate_exploration_config(self, fail) -> None:
        ex = self.exploration_config
        check_keys(ex, EXPLORATION_DEFAULTS, f"{type(self).__name__} exploration_config")
        if ex["type"] != "EpsilonGreedy":
            fail(f"exploration_config['type'] must be 'EpsilonGreedy' (the one DQN "
                 f"exploration tfrl implements); received {ex['type']!r}.")
        for key, (annotation, bound) in _EPSILON_ENTRIES.items():
            check_value(f"exploration_config[{key!r}]", ex[key], annotation, bound,
                        type(self).__name__)
