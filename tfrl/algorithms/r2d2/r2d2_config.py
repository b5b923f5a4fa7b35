"""R2D2Config: R2D2's config dataclass (re-exported by `tfrl.algorithms.r2d2.r2d2`, RLlib's
path).

RLlib 2.x's R2D2 keys on top of `DQNConfig`: `zero_init_states`, `use_h_function`,
`h_function_epsilon`, and in `replay_buffer_config` the sequence entries
`storage_unit` ("sequences"), `replay_burn_in` and `replay_sequence_length` (-1: computed
as `model["max_seq_len"] + replay_burn_in`, as in RLlib, which refuses any other value).
RLlib 1.x's top-level `burn_in` is accepted as another name of `replay_burn_in`.

Example:
    >>> config = R2D2Config.from_dict({"replay_buffer_config": {"replay_burn_in": 4},
    ...                                "model": {"use_lstm": True, "max_seq_len": 8}})
    >>> replay_burn_in(config.to_dict()), replay_sequence_length(config.to_dict())
    (4, 12)
    >>> R2D2Config.from_dict({"burn_in": 2}).to_dict()["burn_in"]
    2
"""

import dataclasses
from typing import Any, ClassVar, Dict, Mapping, Optional

from tfrl.algorithms.dqn.dqn_config import DQNConfig
from tfrl.algorithms.off_policy_config import REPLAY_BUFFER_ENTRIES, replay_buffer_defaults
from tfrl.models.model_defaults import model_setting
from tfrl.utils.config_values import NON_NEGATIVE, POSITIVE, OneOf

__all__ = ["R2D2Config", "replay_burn_in", "replay_sequence_length"]


def _replay_buffer_defaults() -> Dict[str, Any]:
    return {**replay_buffer_defaults("MultiAgentReplayBuffer", 100000),
            "storage_unit": "sequences", "replay_sequence_length": -1, "replay_burn_in": 0}


@dataclasses.dataclass(frozen=True)
class R2D2Config(DQNConfig):
    """R2D2's config: `DQNConfig`'s keys with RLlib's R2D2 defaults, plus R2D2's own.

    Attributes:
        zero_init_states: Learn from every replayed sequence starting at a zero
            recurrent state (True), or at the state stored with its first step when it was
            sampled (False).
        use_h_function: Rescale the targets with `h(x) = sign(x) (sqrt(|x| + 1) - 1) +
            eps x` (Kapturowski et al. 2019, after Pohlen et al. 2018): the target is
            `h(R + gamma^k h^-1(Q_target))`.
        h_function_epsilon: The `eps` of `h`.
        burn_in: RLlib 1.x's name of `replay_buffer_config["replay_burn_in"]` (None:
            not given). Setting both to different values is an error.
        replay_buffer_config: As `OffPolicyConfig`'s, with `storage_unit` "sequences",
            `replay_burn_in` (the first steps of each replayed sequence only warm up the
            recurrent state: no loss on them) and `replay_sequence_length` (-1: computed,
            `model["max_seq_len"] + replay_burn_in`). `capacity` counts timesteps (the
            buffer holds `capacity // replay_sequence_length` sequences). Uniform replay
            only: prioritized replay of sequences is not implemented.

    Deviations from RLlib's defaults, to keep a default R2D2 cheap and runnable on one
    machine: `num_workers` 0 (RLlib: 2) and `training_intensity` None, one gradient
    step per sampling round (RLlib: 150). `model` defaults to `{"use_lstm": True}` (RLlib
    asks the user to turn on an LSTM or attention net and refuses other models); tfrl's
    R2D2 takes a feed-forward model too and then learns on single transitions (DQN with
    the rescaled targets). `batch_mode` "truncate_episodes" is accepted (RLlib requires
    "complete_episodes", the default here too): a fragment's last step, which has no
    next step in its sequence, bootstraps from its `new_obs`.
    """

    # RLlib's R2D2 defaults that differ from DQN's.
    adam_epsilon: float = 1e-3
    lr: float = 1e-4
    gamma: float = 0.997
    train_batch_size: int = 1000
    target_network_update_freq: int = 1000
    batch_mode: str = "complete_episodes"
    replay_buffer_config: dict = dataclasses.field(default_factory=_replay_buffer_defaults)
    model: dict = dataclasses.field(default_factory=lambda: {"use_lstm": True})
    # R2D2's own keys.
    zero_init_states: bool = True
    use_h_function: bool = True
    h_function_epsilon: float = 1e-3
    burn_in: Optional[int] = None

    _RANGES: ClassVar[Dict[str, Any]] = {"h_function_epsilon": POSITIVE,
                                         "burn_in": NON_NEGATIVE}
    _REPLAY_BUFFER_ENTRIES: ClassVar[Dict[str, Any]] = {
        **REPLAY_BUFFER_ENTRIES,
        "replay_sequence_length": (int, None),  # -1 only: checked in validate()
        "replay_burn_in": (int, NON_NEGATIVE),
        "storage_unit": (str, OneOf(("sequences",))),
    }

    def validate(self) -> None:
        def fail(msg: str) -> None:
            raise ValueError(f"R2D2Config: {msg}")

        if self.num_atoms != 1 or self.noisy:
            fail(f"distributional Q-learning and noisy nets are not implemented for R2D2 "
                 f"(as in RLlib); received num_atoms={self.num_atoms!r}, "
                 f"noisy={self.noisy!r}. Use num_atoms=1 and noisy=False.")
        super().validate()
        if self.prioritized_replay:
            fail(f"replay_buffer_config['type']={self.replay_buffer_config['type']!r}: "
                 "prioritized replay of sequences is not implemented; use "
                 "'MultiAgentReplayBuffer' (uniform, RLlib's R2D2 default).")
        given = self.replay_buffer_config["replay_burn_in"]
        if self.burn_in is not None and given not in (0, self.burn_in):
            fail(f"burn_in={self.burn_in!r} (RLlib 1.x's name) and "
                 f"replay_buffer_config['replay_burn_in']={given!r} disagree; set one of "
                 "them.")
        model = self.model or {}
        for key in ("lstm_use_prev_action", "lstm_use_prev_reward",
                    "attention_use_n_prev_actions", "attention_use_n_prev_rewards"):
            if model.get(key):
                fail(f"model[{key!r}]={model[key]!r} is not supported by tfrl's R2D2 yet (the "
                     "bootstrap step appended to each replayed sequence has no previous "
                     "action and reward column); set it to "
                     f"{'False' if key.startswith('lstm') else '0'}.")

    def _validate_replay_sequence_length(self, fail) -> None:
        length = self.replay_buffer_config["replay_sequence_length"]
        if length != -1:
            raise ValueError(
                "R2D2Config: replay_buffer_config['replay_sequence_length'] is computed as "
                "model['max_seq_len'] + replay_burn_in (as in RLlib); leave it at -1 and "
                f"set those instead. Received {length!r}.")


def replay_burn_in(config: Mapping[str, Any]) -> int:
    """The burn-in steps of a replayed sequence: `burn_in` if given, else
    `replay_buffer_config["replay_burn_in"]` (an R2D2 config dict)."""
    if config.get("burn_in") is not None:
        return int(config["burn_in"])
    return int(config["replay_buffer_config"]["replay_burn_in"])


def replay_sequence_length(config: Mapping[str, Any]) -> int:
    """Rows per stored and replayed sequence of a recurrent R2D2: `model["max_seq_len"]
    + replay_burn_in` (an R2D2 config dict)."""
    return int(model_setting(config["model"], "max_seq_len")) + replay_burn_in(config)
