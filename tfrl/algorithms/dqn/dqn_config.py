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
# What `num_atoms > 1` learns: C51's categorical distribution or QR-DQN's quantiles.
DISTRIBUTIONAL_KINDS = ("c51", "quantile")


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
        num_atoms: Atoms of the return distribution per action; > 1 turns on
            distributional Q-learning (`distributional`), 1 is plain DQN.
        v_min, v_max: The support of C51's distribution (`num_atoms` evenly spaced
            values); returns outside it are clipped to it.
        distributional: tfrl's addition (RLlib has C51 only): "c51" (Bellemare et al.
            2017: a categorical distribution on the support, cross-entropy loss) or
            "quantile" (QR-DQN, Dabney et al. 2018: `num_atoms` quantiles, quantile
            Huber loss; `v_min`/`v_max` unused). Read when `num_atoms > 1`.
        noisy: Noisy nets (Fortunato et al. 2018): the Q head's layers are factorised
            Gaussian `NoisyLayer`s. Exploration then comes from the noise alone (fresh
            noise per acting call with `explore`; the means without), and
            `exploration_config`'s epsilon is not applied (RLlib 2.x's behaviour).
        sigma0: The noisy layers' initial noise scale (`sigma = sigma0 / sqrt(inputs)`).
        exploration_config: `EpsilonGreedy` with `initial_epsilon`, `final_epsilon`,
            `epsilon_timesteps` (linear decay over the policy's timesteps); merged into
            the defaults as `replay_buffer_config` is.
        td_error_loss_fn: "huber" or "mse" (for `num_atoms=1`; the distributional losses
            are their own, as in RLlib).

    With `num_atoms > 1` or `noisy`, the Q network is `DistributionalQTFModel`: the
    catalog's dense or conv trunk and, as in RLlib, separate advantage and value streams
    of `hiddens` each (plain DQN appends `hiddens` to the shared trunk).
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
    distributional: str = "c51"
    td_error_loss_fn: str = "huber"
    adam_epsilon: float = 1e-8

    _RANGES: ClassVar[Dict[str, Any]] = {
        "num_atoms": AT_LEAST_ONE, "adam_epsilon": POSITIVE, "sigma0": NON_NEGATIVE}
    _MERGED_DICTS: ClassVar[tuple] = ("replay_buffer_config", "exploration_config")

    def validate(self) -> None:
        super().validate()

        def fail(msg: str) -> None:
            raise ValueError(f"DQNConfig: {msg}")

        if self.distributional not in DISTRIBUTIONAL_KINDS:
            fail(f"distributional must be one of {DISTRIBUTIONAL_KINDS} (read when "
                 f"num_atoms > 1); received {self.distributional!r}.")
        if self.num_atoms > 1 and self.distributional == "c51" and not (
                float(self.v_min) < float(self.v_max)):
            fail(f"C51 (num_atoms > 1) needs v_min < v_max; received v_min={self.v_min!r}, "
                 f"v_max={self.v_max!r}.")
        if self.num_atoms > 1 or self.noisy:
            model = self.model or {}
            for key in ("custom_model", "use_lstm", "use_attention"):
                if model.get(key):
                    fail(f"num_atoms > 1 and noisy=True build DQN's own Q network "
                         f"(DistributionalQTFModel) on the catalog's dense or conv trunk; "
                         f"received model[{key!r}]={model[key]!r}. Drop {key!r}, or use "
                         "num_atoms=1 and noisy=False.")
        if self.td_error_loss_fn not in TD_ERROR_LOSS_FNS:
            fail(f"td_error_loss_fn must be one of {TD_ERROR_LOSS_FNS}; received "
                 f"{self.td_error_loss_fn!r}.")
        if not all(isinstance(h, int) and not isinstance(h, bool) and h > 0
                   for h in self.hiddens):
            fail(f"hiddens must be a list of positive ints; received {self.hiddens!r}.")
        self._validate_replay_sequence_length(fail)
        self._validate_exploration_config(fail)

    def _validate_replay_sequence_length(self, fail) -> None:
        length = self.replay_buffer_config["replay_sequence_length"]
        if length != 1:
            fail("replay_buffer_config['replay_sequence_length'] must be 1 (DQN replays "
                 f"timesteps); received {length!r}.")

    def _validate_exploration_config(self, fail) -> None:
        check_epsilon_greedy(self.exploration_config, type(self).__name__)


def check_epsilon_greedy(exploration_config: Dict[str, Any], owner: str) -> None:
    """Raises a ValueError unless `exploration_config` is a complete `EpsilonGreedy`
    config (`EXPLORATION_DEFAULTS`' keys, values in range); `owner` names the config
    class in the message. DQN's and QMIX's check."""
    check_keys(exploration_config, EXPLORATION_DEFAULTS, f"{owner} exploration_config")
    if exploration_config["type"] != "EpsilonGreedy":
        raise ValueError(
            f"{owner}: exploration_config['type'] must be 'EpsilonGreedy' (the one "
            f"Q-learning exploration tfrl implements); received "
            f"{exploration_config['type']!r}.")
    for key, (annotation, bound) in _EPSILON_ENTRIES.items():
        check_value(f"exploration_config[{key!r}]", exploration_config[key], annotation,
                    bound, owner)
