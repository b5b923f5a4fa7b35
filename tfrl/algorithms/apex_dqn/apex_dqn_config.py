"""ApexDQNConfig: Ape-X DQN's config dataclass (re-exported by `tfrl.algorithms.apex_dqn.apex_dqn`).

RLlib's Ape-X keys and defaults on top of `DQNConfig`: `optimizer` (a dict merged into
its defaults: `num_replay_buffer_shards`, `max_weight_sync_delay`, `debug`), n-step 3,
`train_batch_size` 512, `training_intensity` 1, a replay buffer of 2,000,000 timesteps
split over the shards, priorities computed on the rollout workers
(`replay_buffer_config["worker_side_prioritization"]`), and per-worker epsilons
(`exploration_config={"type": "PerWorkerEpsilonGreedy"}`).

Deviations from RLlib: `num_workers` keeps tfrl's default 0 (everything in the driver
process, no Ray: see `tfrl.algorithms.apex_dqn.apex_dqn`), not 32; `num_gpus` keeps 0;
the iteration thresholds keep DQN's (`timesteps_per_iteration` 1000, no minimum time),
not 25,000 steps and 30 s. `timeout_s_sampler_manager` defaults to 0.1 s, not 0: the
driver waits that long for a sampling result instead of spinning.

Example:
    >>> config = ApexDQNConfig.from_dict({"optimizer": {"num_replay_buffer_shards": 2}})
    >>> config.optimizer["num_replay_buffer_shards"], config.optimizer["max_weight_sync_delay"]
    (2, 400)
    >>> config.replay_buffer_config["worker_side_prioritization"], config.n_step
    (True, 3)
"""

import copy
import dataclasses
from typing import Any, ClassVar, Dict, Optional

from tfrl.algorithms.dqn.dqn_config import EXPLORATION_DEFAULTS, DQNConfig, check_epsilon_greedy
from tfrl.algorithms.off_policy_config import replay_buffer_defaults
from tfrl.utils.config_keys import check_keys
from tfrl.utils.config_values import AT_LEAST_ONE, NON_NEGATIVE, check_value

#: The exploration types Ape-X takes: RLlib's per-worker constant epsilons (worker `i`
#: of `N` explores with `0.4 ** (1 + 7 * (i - 1) / (N - 1))`, the local worker with 0;
#: without remote workers the plain `EpsilonGreedy` schedule), or plain `EpsilonGreedy`.
EXPLORATION_TYPES = ("PerWorkerEpsilonGreedy", "EpsilonGreedy")

#: `optimizer`'s entries: key -> (type, allowed range), and their defaults (RLlib's).
_OPTIMIZER_ENTRIES: Dict[str, Any] = {
    "num_replay_buffer_shards": (int, AT_LEAST_ONE),
    "max_weight_sync_delay": (int, NON_NEGATIVE),
    "debug": (bool, None),
}
OPTIMIZER_DEFAULTS: Dict[str, Any] = {
    "num_replay_buffer_shards": 4, "max_weight_sync_delay": 400, "debug": False}


def _field(default: Any) -> Any:
    return dataclasses.field(default_factory=lambda: copy.deepcopy(default))


def _replay_buffer_defaults() -> Dict[str, Any]:
    return {**replay_buffer_defaults(capacity=2_000_000), "worker_side_prioritization": True}


@dataclasses.dataclass(frozen=True)
class ApexDQNConfig(DQNConfig):
    """Ape-X DQN's config: `DQNConfig`'s keys with RLlib's Ape-X defaults, plus these.

    Attributes:
        optimizer: `num_replay_buffer_shards` (replay shards; each holds
            `capacity // num_replay_buffer_shards` timesteps), `max_weight_sync_delay`
            (a worker gets the learner's weights once it sampled this many steps since
            its last ones), `debug` (replay statistics of every shard in the result,
            else of shard 0). Merged into the defaults.
        max_requests_in_flight_per_sampler_worker: Sampling calls in flight per remote
            worker.
        max_requests_in_flight_per_replay_worker: Replay calls in flight per shard (None:
            no limit, RLlib's `float("inf")`).
        timeout_s_sampler_manager: Seconds a `training_step()` waits for the first
            sampling result (then takes whatever else is ready).
        timeout_s_replay_manager: Seconds it waits for replayed batches (0: takes those
            ready).
        learner_queue_size: Replayed batches the learner thread's queue holds; the driver
            waits while it is full.
        num_cpus_per_replay_shard: CPUs each replay-shard actor reserves (RLlib: 0; a
            shard mostly waits).
        custom_resources_per_replay_shard: Custom Ray resources each shard actor asks for
            (e.g. a label only one node offers: the shards go there).
    """

    # RLlib's Ape-X defaults that differ from DQN's.
    optimizer: dict = _field(OPTIMIZER_DEFAULTS)
    n_step: int = 3
    train_batch_size: int = 512
    target_network_update_freq: int = 500_000
    training_intensity: Optional[float] = 1.0
    num_steps_sampled_before_learning_starts: int = 50_000
    rollout_fragment_length: int = 50
    replay_buffer_config: dict = dataclasses.field(default_factory=_replay_buffer_defaults)
    exploration_config: dict = _field({**EXPLORATION_DEFAULTS,
                                       "type": "PerWorkerEpsilonGreedy"})
    # Ape-X's own keys.
    max_requests_in_flight_per_sampler_worker: int = 2
    max_requests_in_flight_per_replay_worker: Optional[int] = None
    timeout_s_sampler_manager: float = 0.1
    timeout_s_replay_manager: float = 0.0
    learner_queue_size: int = 16
    num_cpus_per_replay_shard: float = 0.0
    custom_resources_per_replay_shard: dict = _field({})

    _RANGES: ClassVar[Dict[str, Any]] = {
        "max_requests_in_flight_per_sampler_worker": AT_LEAST_ONE,
        "max_requests_in_flight_per_replay_worker": AT_LEAST_ONE,
        "timeout_s_sampler_manager": NON_NEGATIVE, "timeout_s_replay_manager": NON_NEGATIVE,
        "learner_queue_size": AT_LEAST_ONE, "num_cpus_per_replay_shard": NON_NEGATIVE}
    _MERGED_DICTS: ClassVar[tuple] = ("replay_buffer_config", "exploration_config",
                                      "optimizer")
    # Ape-X's workers compute the priorities of their rows (RLlib's worker-side
    # prioritization); the other replay algorithms refuse the key.
    _WORKER_SIDE_PRIORITIZATION: ClassVar[bool] = True

    def validate(self) -> None:
        super().validate()
        owner = type(self).__name__
        check_keys(self.optimizer, _OPTIMIZER_ENTRIES, f"{owner} optimizer")
        for key, (annotation, bound) in _OPTIMIZER_ENTRIES.items():
            check_value(f"optimizer[{key!r}]", self.optimizer[key], annotation, bound, owner)
        if self.replay_buffer_config["worker_side_prioritization"] and not self.prioritized_replay:
            raise ValueError(
                f"{owner}: replay_buffer_config['worker_side_prioritization']=True computes "
                "priorities for a prioritized buffer; received replay_buffer_config['type']="
                f"{self.replay_buffer_config['type']!r}. Use 'MultiAgentPrioritizedReplayBuffer' "
                "or set worker_side_prioritization=False.")
        if self.noisy or self.num_atoms > 1:
            raise ValueError(
                f"{owner}: Ape-X explores with per-worker epsilons over DQN's Q network; "
                f"received noisy={self.noisy!r}, num_atoms={self.num_atoms!r}. Use noisy=False "
                "and num_atoms=1 (DQN has Rainbow's parts).")
        for key, value in self.custom_resources_per_replay_shard.items():
            if not isinstance(key, str) or isinstance(value, bool) or not isinstance(
                    value, (int, float)) or value < 0:
                raise ValueError(
                    f"{owner}: custom_resources_per_replay_shard maps Ray resource names to "
                    f"amounts >= 0; received {{{key!r}: {value!r}}}.")

    def _validate_exploration_config(self, fail) -> None:
        given = self.exploration_config.get("type")
        if given not in EXPLORATION_TYPES:
            fail(f"exploration_config['type'] must be one of {EXPLORATION_TYPES}; received "
                 f"{given!r}.")
        check_epsilon_greedy({**self.exploration_config, "type": "EpsilonGreedy"},
                             type(self).__name__)

    @property
    def num_replay_buffer_shards(self) -> int:
        """`optimizer["num_replay_buffer_shards"]`."""
        return int(self.optimizer["num_replay_buffer_shards"])
