"""`LoopCore`: what both sampling loops share — settings, episode bookkeeping and
callbacks, step counting, fragment output, per-policy helpers and batched inference
over several TF policies.

What the loops read from their worker: `policy_map`,
`policy_mapping_fn`, `preprocessors`, `filters` (all looked up when needed, so
policies added later are seen).
"""

import math
from typing import Any, Callable, Dict, Iterator, List, Optional

import gymnasium as gym

from tfrl.data.sample_batch import next_unroll_id
from tfrl.evaluation.sampling.collectors import FragmentOutput, wants_prev_columns
from tfrl.evaluation.episode import Episode
from tfrl.data.rollout_metrics import RolloutMetrics
from tfrl.evaluation.sample_batch_builder import MultiAgentSampleBatchBuilder
from tfrl.evaluation.sampling.ops import ActionProcessor, ObservationChecker, PerfStats
from tfrl.data.sample_batch import DEFAULT_POLICY_ID
from tfrl.utils.spaces.space_utils import fill_value_for_space


class LoopCore:
    """State and helpers shared by `SamplingLoop` and `VectorSamplingLoop`.

    Args:
        worker: The worker (`policy_map`, `policy_mapping_fn`, `preprocessors`,
            `filters`).
        base_env: The BaseEnv to sample.
        extra_batch_callback: Receives batches given to `Episode.add_extra_batch`.
        callbacks: A DefaultCallbacks instance.
        perf_stats: The sampler's PerfStats.
        rollout_fragment_length: Steps per fragment (truncate mode; `inf` never cuts).
        count_steps_by: "env_steps" or "agent_steps".
        multiple_episodes_in_batch: Truncate mode (pack episodes, cut fragments) if
            True; else complete mode (one batch per finished episode).
        horizon: Steps after which an episode is cut (truncated) and its sub-env reset.
        soft_horizon: At the horizon, end the episode logically without a reset:
            `on_episode_end` fires, then the same `Episode` continues after
            `Episode.soft_reset()` without another `on_episode_start` (RLlib's sampler
            starts episodes only for new or reset sub-envs). The step at the horizon is
            recorded with terminated=truncated=False, as RLlib records done=False there
            (the env goes on); postprocessing bootstraps from its next observation.
        no_done_at_end: Record terminated/truncated False at episode ends.
        clip_rewards: True (sign), a number (clip) or False/None.
        normalize_actions: Unsquash Box actions into the bounds.
        clip_actions: Clip Box actions to the bounds.
        observation_fn: Rewrites each sub-env's agent observations, or None.
        render: Render after each step.
        explore: The `explore` argument of `compute_actions` (None: policy config).
        output: The fragment to continue (another loop's `output`), or None for a new
            one.
    """

    def __init__(self, *, worker: Any, base_env: Any, extra_batch_callback: Callable,
                 callbacks: Any, perf_stats: PerfStats, rollout_fragment_length: float,
                 count_steps_by: str, multiple_episodes_in_batch: bool,
                 horizon: Optional[int], soft_horizon: bool, no_done_at_end: bool,
                 clip_rewards: Any, normalize_actions: bool, clip_actions: bool,
                 observation_fn: Optional[Callable], render: bool, explore: Any = None,
                 output: Optional[FragmentOutput] = None):
        self.worker = worker
        self.base_env = base_env
        self.extra_batch_callback = extra_batch_callback
        self.callbacks = callbacks
        self.perf_stats = perf_stats
        self.rollout_fragment_length = rollout_fragment_length
        self.count_by_agent_steps = count_steps_by == "agent_steps"
        self.multiple_episodes_in_batch = multiple_episodes_in_batch
        self.horizon = horizon if horizon and not math.isinf(horizon) else None
        self.soft_horizon = soft_horizon
        self.no_done_at_end = no_done_at_end
        self.clip_rewards = clip_rewards
        self.normalize_actions = normalize_actions
        self.clip_actions = clip_actions
        self.observation_fn = observation_fn
        self.render = render
        self.explore = explore
        self.refresh_callbacks(callbacks)
        self.output = FragmentOutput(multiagent=False) if output is None else output
        self.ready: List[Any] = []
        self._cache: Dict[tuple, Any] = {}

    def refresh_callbacks(self, callbacks: Any = None) -> None:
        """Uses `callbacks` (None: the current instance) from the next step on.

        The loops skip the episode hooks that the callbacks' class does not override;
        call this after replacing the callbacks or changing their class so that the
        new hooks fire.
        """
        if callbacks is not None:
            self.callbacks = callbacks
        callbacks = self.callbacks
        self.callbacks_step = _overrides(callbacks, "on_episode_step")
        self.callbacks_start = _overrides(callbacks, "on_episode_start")
        self.callbacks_end = _overrides(callbacks, "on_episode_end")
        self.callbacks_postprocess = _overrides(callbacks, "on_postprocess_trajectory")

    @property
    def policy_map(self) -> Any:
        return self.worker.policy_map

    # --------------------------------------------------------------- episodes
    def new_episode(self, env_id: Any) -> Episode:
        worker = self.worker
        return Episode(
            worker.policy_map, worker.policy_mapping_fn,
            lambda: MultiAgentSampleBatchBuilder(worker.policy_map, self.clip_rewards,
                                                 self.callbacks),
            self.extra_batch_callback, env_id, worker=worker)

    def episode_started(self, episode: Episode, env_id: Any) -> None:
        if self.callbacks_start:  # (the default hook does nothing)
            self.callbacks.on_episode_start(worker=self.worker, base_env=self.base_env,
                                            policies=self.policy_map, episode=episode,
                                            env_index=env_id)

    def episode_step(self, episode: Episode, env_id: Any) -> None:
        self.callbacks.on_episode_step(worker=self.worker, base_env=self.base_env,
                                       policies=self.policy_map, episode=episode,
                                       env_index=env_id)

    def episode_finished(self, episode: Episode, env_id: Any) -> None:
        """on_episode_end, the episode's RolloutMetrics, and (complete mode) its batch."""
        if self.callbacks_end:  # (the default hook does nothing)
            self.callbacks.on_episode_end(worker=self.worker, base_env=self.base_env,
                                          policies=self.policy_map, episode=episode,
                                          env_index=env_id)
        self.ready.append(RolloutMetrics(
            episode_length=episode.length, episode_reward=episode.total_reward,
            agent_rewards=dict(episode.agent_rewards), custom_metrics=episode.custom_metrics,
            hist_data=episode.hist_data, media=episode.media))
        if not self.multiple_episodes_in_batch:
            self.output.env_steps = episode.length  # the batch holds this episode only
            self.emit_fragment()

    # ------------------------------------------------------ steps and output
    def count_steps(self, env_steps: int, agent_steps: int) -> None:
        self.output.env_steps += env_steps
        self.output.agent_steps += agent_steps

    def fragment_full(self) -> bool:
        if not self.multiple_episodes_in_batch:
            return False
        out = self.output
        steps = out.agent_steps if self.count_by_agent_steps else out.env_steps
        return steps >= self.rollout_fragment_length

    def emit_fragment(self) -> None:
        """Builds the output collected so far into a batch for the sampler (an empty
        MultiAgentBatch if its steps were all left out as not to train on)."""
        self.output.multiagent = set(self.policy_map) != {DEFAULT_POLICY_ID}
        if self.output.batches or self.output.env_steps:
            self.ready.append(self.output.build())
        else:
            self.output.env_steps = self.output.agent_steps = 0

    def take_ready(self) -> Iterator[Any]:
        """Yields the ready fragments and metrics, each removed before it is yielded, so
        the suspended loop holds none of them while the next fragment is sampled."""
        ready, self.ready = self.ready, []
        ready.reverse()
        while ready:
            yield ready.pop()

    @staticmethod
    def unroll_id() -> int:
        return next_unroll_id()

    # ------------------------------------------------------ per-policy tools
    def _cached(self, kind: str, pid: str, policy: Any, make: Callable) -> Any:
        key = (kind, pid)
        hit = self._cache.get(key)
        if hit is None or hit[0] is not policy:
            hit = self._cache[key] = (policy, make(policy))
        return hit[1]

    def policy_tools(self, pid: str) -> tuple:
        """`(ObservationChecker of the original space, preprocessor or None, filter or
        None)` of policy `pid`."""
        policy = self.policy_map[pid]
        checker = self._cached("checker", pid, policy, lambda p: ObservationChecker(
            getattr(p.observation_space, "original_space", p.observation_space)))
        preps = getattr(self.worker, "preprocessors", None) or {}
        filters = getattr(self.worker, "filters", None) or {}
        return checker, preps.get(pid), filters.get(pid)

    def prev_columns(self, pid: str) -> tuple:
        return self._cached("prev", pid, self.policy_map[pid], wants_prev_columns)

    def zero_action(self, pid: str) -> Any:
        return self._cached("zero", pid, self.policy_map[pid],
                            lambda p: fill_value_for_space(p.action_space, 0))

    def action_processor(self, pid: str) -> ActionProcessor:
        return self._cached("actions", pid, self.policy_map[pid], lambda p: ActionProcessor(
            p.action_space, self.normalize_actions, self.clip_actions))

    # ------------------------------------------------------------ inference
    @staticmethod
    def run_builder_ok(policy: Any) -> bool:
        """Whether the policy's action graph can join a TFRunBuilder call: TF inference,
        and `compute_actions` defined by the class that defines `action_graph` (a policy
        that adds its own exploration in `compute_actions`, as DQN's epsilon and noisy
        nets or TD3's noise do, acts by its own call)."""
        return (callable(getattr(policy, "action_input_signature", None))
                and getattr(policy, "inference", "tf") == "tf"
                and _defined_by(type(policy), "compute_actions")
                is _defined_by(type(policy), "action_graph"))

    def run_with_builder(self, inputs: Dict[tuple, tuple]) -> Dict[tuple, tuple]:
        """The actions of several TF policies in one compiled call; `inputs` and the
        result are keyed by `(policy id, explore)`."""
        from tfrl.utils.tf_run_builder import TFRunBuilder  # imports TensorFlow

        builder = TFRunBuilder(debug_name="sampler")
        handles = {key: builder.add_fetches(policy, obs, state_batches, key[1], pa, pr)
                   for key, (policy, obs, state_batches, pa, pr, _) in inputs.items()}
        return {key: (builder.get(h), inputs[key][2]) for key, h in handles.items()}


def _defined_by(cls: type, name: str) -> Optional[type]:
    """The class of `cls`'s MRO whose body defines `name` (None if none does)."""
    return next((c for c in cls.__mro__ if name in vars(c)), None)


def _overrides(callbacks: Any, name: str) -> bool:
    overrides = getattr(type(callbacks), "overrides", None)
    if callable(overrides):
        try:
            return bool(overrides(name))
        except ValueError:
            return True
    return True


def space_of(policy: Any) -> gym.Space:
    """The original (unpreprocessed) observation space of a policy."""
    return getattr(policy.observation_space, "original_space", policy.observation_space)
