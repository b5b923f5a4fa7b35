"""OffPolicyConfig: the keys every replay-based algorithm (DQN, SAC, TD3, DDPG) shares.

RLlib's names and the defaults of its DQN (each algorithm's config overrides the ones it
changes). `replay_buffer_config` is a dict as in RLlib 2.x; a partial dict is merged:
into the class's default by the constructor and `from_dict`, into the current value by
`replace()` and the builder methods (`.training(replay_buffer_config={"capacity": 10})`
keeps the other entries); subclasses name more such dicts in `_MERGED_DICTS`. Its keys:

- `type`: "MultiAgentReplayBuffer" (uniform) or "MultiAgentPrioritizedReplayBuffer"
  (proportional prioritized replay; see `prioritized_replay`); RLlib's single-agent
  names "ReplayBuffer" and "PrioritizedReplayBuffer" mean the same;
- `capacity`: the buffer's size in timesteps (per policy);
- `prioritized_replay_alpha`, `prioritized_replay_beta`, `prioritized_replay_eps`: the
  priority exponent, the importance-weight exponent and the constant added to the TD
  errors (used by the prioritized type);
- `final_prioritized_replay_beta`, `prioritized_replay_beta_annealing_timesteps`
  (RLlib 1.x's keys): beta moves linearly from `prioritized_replay_beta` to
  `final_prioritized_replay_beta` over that many stored timesteps, then stays; None (the
  default) keeps beta at `prioritized_replay_beta` (RLlib's default 0.4 for both);
- `replay_sequence_length`: timesteps per stored item (1: single transitions);
- `worker_side_prioritization`: the rollout workers compute their rows' priorities
  (Ape-X DQN only; the other algorithms refuse True).

Example:
    >>> from tfrl.algorithms.td3.td3_config import TD3Config
    >>> config = TD3Config().training(replay_buffer_config={"capacity": 5000})
    >>> config.replay_buffer_config["capacity"], config.replay_buffer_config["type"]
    (5000, 'MultiAgentReplayBuffer')
"""

import dataclasses
from typing import Any, ClassVar, Dict, Mapping, Optional

from tfrl.algorithms.algorithm_config import ALIASES, AlgorithmConfig
from tfrl.utils.config_keys import check_keys
from tfrl.utils.config_values import (
    AT_LEAST_ONE, NON_NEGATIVE, POSITIVE, UNIT_INTERVAL, OneOf, check_value)

__all__ = ["OffPolicyConfig", "PRIORITIZED_BUFFER_TYPES", "REPLAY_BUFFER_ENTRIES",
           "REPLAY_BUFFER_TYPES", "replay_buffer_defaults"]

REPLAY_BUFFER_TYPES = ("MultiAgentReplayBuffer", "MultiAgentPrioritizedReplayBuffer",
                       "ReplayBuffer", "PrioritizedReplayBuffer")
# The `type`s that mean proportional prioritized replay (RLlib's class names).
PRIORITIZED_BUFFER_TYPES = ("MultiAgentPrioritizedReplayBuffer", "PrioritizedReplayBuffer")

# The entries of `replay_buffer_config`: key -> (type, allowed range).
REPLAY_BUFFER_ENTRIES: Dict[str, Any] = {
    "type": (str, OneOf(REPLAY_BUFFER_TYPES)),
    "capacity": (int, AT_LEAST_ONE),
    "prioritized_replay_alpha": (float, NON_NEGATIVE),
    "prioritized_replay_beta": (float, UNIT_INTERVAL),
    "prioritized_replay_eps": (float, POSITIVE),
    "final_prioritized_replay_beta": (Optional[float], UNIT_INTERVAL),
    "prioritized_replay_beta_annealing_timesteps": (int, AT_LEAST_ONE),
    "replay_sequence_length": (int, AT_LEAST_ONE),
    "worker_side_prioritization": (bool, None),
}


def replay_buffer_defaults(type_: str = "MultiAgentPrioritizedReplayBuffer",
                           capacity: int = 50000) -> Dict[str, Any]:
    """A full `replay_buffer_config` with RLlib's prioritized-replay defaults."""
    return {"type": type_, "capacity": capacity, "prioritized_replay_alpha": 0.6,
            "prioritized_replay_beta": 0.4, "prioritized_replay_eps": 1e-6,
            "final_prioritized_replay_beta": None,
            "prioritized_replay_beta_annealing_timesteps": 20000,
            "replay_sequence_length": 1, "worker_side_prioritization": False}


@dataclasses.dataclass(frozen=True)
class OffPolicyConfig(AlgorithmConfig):
    """AlgorithmConfig plus the replay and target-network keys (RLlib's names).

    Attributes:
        replay_buffer_config: The replay buffer (see the module docstring).
        store_buffer_in_checkpoints: Save the buffer's contents in checkpoints.
        n_step: Transitions of `n_step` steps (n-step returns), built at insertion.
        training_intensity: Replayed timesteps per sampled timestep (None: RLlib's
            natural value, `train_batch_size / rollout_fragment_length`).
        num_steps_sampled_before_learning_starts: Env steps sampled before the first
            update (classic key `learning_starts`).
        target_network_update_freq: Steps between target-network updates (0: every
            update).
        tau: The target networks move `tau` of the way to the online ones per target
            update (1: a copy).
    """

    replay_buffer_config: dict = dataclasses.field(default_factory=replay_buffer_defaults)
    store_buffer_in_checkpoints: bool = False
    n_step: int = 1
    training_intensity: Optional[float] = None
    num_steps_sampled_before_learning_starts: int = 1000
    target_network_update_freq: int = 500
    tau: float = 1.0

    _RANGES: ClassVar[Dict[str, Any]] = {
        "n_step": AT_LEAST_ONE, "training_intensity": POSITIVE,
        "num_steps_sampled_before_learning_starts": NON_NEGATIVE,
        "target_network_update_freq": NON_NEGATIVE, "tau": UNIT_INTERVAL}

    # Dict fields whose given (partial) value is merged into the default or current one.
    _MERGED_DICTS: ClassVar[tuple] = ("replay_buffer_config",)
    # Whether `replay_buffer_config["worker_side_prioritization"]` may be True (the
    # rollout workers compute their rows' priorities: Ape-X DQN).
    _WORKER_SIDE_PRIORITIZATION: ClassVar[bool] = False
    # The entries `replay_buffer_config` takes: key -> (type, allowed range); a subclass
    # that replays sequences (R2D2) adds and narrows entries.
    _REPLAY_BUFFER_ENTRIES: ClassVar[Dict[str, Any]] = REPLAY_BUFFER_ENTRIES

    def __post_init__(self) -> None:
        fields = {f.name: f for f in dataclasses.fields(self)}
        for name in self._MERGED_DICTS:
            given = getattr(self, name)
            if isinstance(given, Mapping):
                factory = fields[name].default_factory
                default = factory() if callable(factory) else {}
                object.__setattr__(self, name, {**default, **given})
        super().__post_init__()

    def validate(self) -> None:
        super().validate()
        owner = type(self).__name__
        if "learning_starts" in self.replay_buffer_config:
            raise ValueError(
                f"{owner}: replay_buffer_config holds 'learning_starts' (RLlib 2.0's place for "
                "it); set num_steps_sampled_before_learning_starts (or learning_starts) at the "
                "top level of the config instead.")
        entries = self._REPLAY_BUFFER_ENTRIES
        check_keys(self.replay_buffer_config, entries, f"{owner} replay_buffer_config")
        for key, (annotation, bound) in entries.items():
            check_value(f"replay_buffer_config[{key!r}]", self.replay_buffer_config[key],
                        annotation, bound, owner)
        if (self.replay_buffer_config["worker_side_prioritization"]
                and not self._WORKER_SIDE_PRIORITIZATION):
            raise ValueError(
                f"{owner}: replay_buffer_config['worker_side_prioritization']=True is not "
                f"implemented for {owner} (the learner computes the priorities; Ape-X DQN's "
                "workers compute them); set it to False.")

    @property
    def prioritized_replay(self) -> bool:
        """Whether the replay buffer is prioritized (its `type`)."""
        return self.replay_buffer_config["type"] in PRIORITIZED_BUFFER_TYPES

    def replace(self, **kwargs: Any) -> "AlgorithmConfig":
        for key, given in list(kwargs.items()):
            name = ALIASES.get(key, key)
            if name in self._MERGED_DICTS and isinstance(given, Mapping):
                kwargs[key] = {**getattr(self, name), **given}
        return super().replace(**kwargs)
