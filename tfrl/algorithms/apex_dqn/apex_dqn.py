"""Ape-X DQN: distributed prioritized experience replay (RLlib's `apex_dqn`).

Horgan et al. 2018, "Distributed Prioritized Experience Replay". Many rollout workers,
each exploring with its own constant epsilon (`PerWorkerEpsilonGreedy`), sample, compute
their rows' priorities themselves (n-step TD errors under their copy of the weights:
`worker_side_prioritization`) and send the rows straight to one of
`num_replay_buffer_shards` replay shards; the driver never holds the sampled rows. A
learner thread learns on batches replayed from the shards and returns the replayed rows'
new priorities to their shard. One `training_step()`:

    1. collect the sampling calls that finished (each worker keeps
       `max_requests_in_flight_per_sampler_worker` calls in flight: sample, prioritize,
       store in a random shard);
    2. send the learner's weights to each worker that sampled `max_weight_sync_delay`
       steps since its last ones;
    3. once `num_steps_sampled_before_learning_starts` steps were sampled, ask random
       shards for `training_intensity * new steps / train_batch_size` replays of
       `train_batch_size` rows;
    4. hand the replays that arrived to the learner thread (waiting while its queue is
       full);
    5. send the learner's new priorities back to the shards, count the trained steps and
       update the target network every `target_network_update_freq` trained steps.

Where things run. With remote workers (`num_workers > 0`) the workers and the shards are
Ray actors (`pip install 'tfrl[ray]'`; a local Ray runtime is started unless one is
initialized; shards ask for `num_cpus_per_replay_shard` CPUs, 0 by default, and
`custom_resources_per_replay_shard`) and the learner is a thread of the driver. Without
remote workers (`num_workers=0`, tfrl's default) the same steps run in the driver
process without Ray: the local worker samples, the shards are plain objects and the
learner learns on the driver's thread right after each replay, so a run is deterministic
and a checkpoint (with `store_buffer_in_checkpoints`) continues exactly; that is how the
conformance suite runs it. (Local mode rather than an error without Ray: Ape-X's parts
are then testable and debuggable in one process, as DQN is.)

Metrics come from the last third of the remote workers (the ones with the smallest
epsilons), as in RLlib; from the local worker without remote workers.

Example:
    >>> from tfrl.algorithms.apex_dqn import ApexDQNConfig
    >>> config = ApexDQNConfig().training(optimizer={"max_weight_sync_delay": 100})
    >>> config.algo_class.__name__, config.optimizer["num_replay_buffer_shards"]
    ('ApexDQN', 4)
"""

import collections
import concurrent.futures
import logging
import queue
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from tfrl.algorithms.algorithm import Algorithm
from tfrl.algorithms.apex_dqn.apex_dqn_config import ApexDQNConfig
from tfrl.algorithms.apex_dqn.apex_dqn_tf_policy import ApexDQNTFPolicy
from tfrl.algorithms.apex_dqn.apex_learner_thread import ApexLearnerThread, LearnerOutput
from tfrl.algorithms.apex_dqn.replay_shards import ReplayShards, sample_and_store
from tfrl.algorithms.off_policy_plan import NUM_NONFINITE_TD_ERRORS
from tfrl.core import types
from tfrl.execution.common import (AGENT_STEPS_SAMPLED_COUNTER, AGENT_STEPS_TRAINED_COUNTER,
                                   LEARNER_INFO, SAMPLE_TIMER, STEPS_SAMPLED_COUNTER,
                                   STEPS_TRAINED_COUNTER, global_vars_of)
from tfrl.execution.metric_ops import CollectMetrics
from tfrl.execution.train_ops import update_target_network

logger = logging.getLogger(__name__)

NUM_WEIGHT_SYNCS = "num_weight_syncs"
NUM_REPLAY_REQUESTS = "num_replay_requests"
# The checkpoint entries of the replay shards' contents and of the driver's own state.
REPLAY_SHARDS_STATE = "replay_shards"
APEX_STATE = "apex"
# How long the driver waits at a time for room in the learner's queue before checking
# that the learner is still alive.
_QUEUE_POLL_S = 1.0


class ApexDQN(Algorithm):
    """Ape-X DQN (see `ApexDQNConfig`, `ApexDQNTFPolicy` and the module docstring).

    Attributes:
        replay_shards: The replay shards (`ReplayShards`).
        learner_thread: The learner (`ApexLearnerThread`; a running thread only with
            remote workers).
    """

    config_class = ApexDQNConfig
    default_policy_class = ApexDQNTFPolicy
    config: ApexDQNConfig

    def _init_training(self) -> None:
        config = self.config
        remote = self.workers.remote_workers()
        self.replay_shards = ReplayShards(config, remote=bool(remote))
        if remote:
            self.replay_shards.wait_ready(config.sample_timeout_s)
        self._shard_senders = self.replay_shards.senders()
        self.learner_thread = ApexLearnerThread(
            self.workers.local_worker(), config.train_batch_size, config.learner_queue_size,
            config.prioritized_replay)
        if remote:
            self.learner_thread.start()
            # Metrics from the workers with the smallest epsilons: the last third (rounded
            # up), as in RLlib.
            self._metrics_op = CollectMetrics(
                self.workers, min_history=config.metrics_smoothing_episodes,
                timeout_seconds=config.collect_metrics_timeout,
                selected_workers=remote[-((len(remote) + 2) // 3):])
        # Picks the shard of each sampling call and replay (seeded: part of the state).
        self._rng = np.random.default_rng(
            np.random.SeedSequence(config.seed).spawn(1)[0] if config.seed is not None
            else None)
        # Per remote worker, its sampling calls in flight and the shard each stores into.
        self._sampling: Dict[int, List[Tuple[concurrent.futures.Future, int]]] = (
            collections.defaultdict(list))
        self._filled_shards: List[int] = []  # shards that were sent rows, in that order
        self._replaying: List[Tuple[int, concurrent.futures.Future]] = []
        self._steps_since_weight_sync: Dict[int, int] = collections.defaultdict(int)
        self._steps_since_replay = 0
        self._weights: Any = None  # the learner's weights as last shared with the workers
        self._stopping = False

    # ------------------------------------------------------------------ the step

    def training_step(self) -> Dict[str, types.LearnerInfo]:
        """One round of Ape-X's driver loop (the module docstring's steps 1-5); the
        latest learner info."""
        config, metrics = self.config, self.shared_metrics
        # 1. Sampling calls that finished: rows prioritized and stored on the workers.
        sampled = self._collect_samples()  # {worker index: env steps}
        # 2. The learner's weights to the workers that sampled enough since their last.
        self._sync_worker_weights(sampled)
        # 3. Replay requests in proportion to the new steps, once learning has started.
        if metrics.counters[STEPS_SAMPLED_COUNTER] > config.num_steps_sampled_before_learning_starts:
            self._request_replays(sum(sampled.values()))
        # 4. Replayed batches to the learner.
        self._feed_learner()
        # 5. Its new priorities to the shards, the trained steps, the target network.
        for output in self._learner_outputs():
            self._record(output)
            update_target_network(self.workers, metrics, config.target_network_update_freq,
                                  by_steps_trained=True)
        return metrics.info.get(LEARNER_INFO, {})

    def _collect_samples(self) -> Dict[int, int]:
        """Starts sampling calls (sample, prioritize, store in a random shard) up to the
        in-flight limit of each worker and collects those that finished; counts their
        steps. Without remote workers: one such call on the local worker."""
        config, counters = self.config, self.shared_metrics.counters
        prioritize = config.replay_buffer_config["worker_side_prioritization"]
        results: List[Tuple[int, int, Dict[str, int]]] = []  # (worker, shard, counts)
        with self.shared_metrics.timers[SAMPLE_TIMER]:
            remote = self.workers.remote_workers()
            if not remote:
                shard = self._random_shard()
                results.append((0, shard, sample_and_store(
                    self.workers.local_worker(), self._shard_senders[shard], prioritize)))
            for handle in remote:
                calls = self._sampling[handle.worker_index]
                while len(calls) < config.max_requests_in_flight_per_sampler_worker:
                    shard = self._random_shard()
                    calls.append((handle.apply(sample_and_store, self._shard_senders[shard],
                                               prioritize), shard))
            in_flight = [f for calls in self._sampling.values() for f, _ in calls]
            if in_flight:
                concurrent.futures.wait(in_flight, timeout=config.timeout_s_sampler_manager,
                                        return_when=concurrent.futures.FIRST_COMPLETED)
            for index, calls in self._sampling.items():
                for future, shard in [c for c in calls if c[0].done()]:
                    calls.remove((future, shard))
                    # A failed call raises here.
                    results.append((index, shard, future.result()))
        sampled: Dict[int, int] = collections.defaultdict(int)
        for index, shard, counts in results:
            if shard not in self._filled_shards:
                self._filled_shards.append(shard)
            counters[STEPS_SAMPLED_COUNTER] += counts["env_steps"]
            counters[AGENT_STEPS_SAMPLED_COUNTER] += counts["agent_steps"]
            sampled[index] += counts["env_steps"]
        return dict(sampled)

    def _random_shard(self) -> int:
        return int(self._rng.integers(self.replay_shards.num_shards))

    def _sync_worker_weights(self, sampled: Dict[int, int]) -> None:
        """Sends the learner's weights (and the global vars) to each remote worker that
        sampled `max_weight_sync_delay` steps since it last got them; the local worker
        gets the global vars (it holds the learner's policies)."""
        global_vars = global_vars_of(self.shared_metrics)
        self.workers.local_worker().set_global_vars(global_vars)
        delay = self.config.optimizer["max_weight_sync_delay"]
        for handle in self.workers.remote_workers():
            index = handle.worker_index
            self._steps_since_weight_sync[index] += sampled.get(index, 0)
            if index not in sampled or self._steps_since_weight_sync[index] < delay:
                continue
            if self._weights is None or self.learner_thread.weights_updated:
                self.learner_thread.weights_updated = False
                self._weights = handle.share(self.workers.local_worker().get_weights())
            handle.call("set_weights", self._weights, global_vars=global_vars
                        ).add_done_callback(self._log_failure(f"set_weights on worker {index}"))
            self._steps_since_weight_sync[index] = 0
            self.shared_metrics.counters[NUM_WEIGHT_SYNCS] += 1

    def _request_replays(self, new_steps: int) -> None:
        """Asks random shards for `training_intensity` replayed rows per new sampled row
        (in batches of `train_batch_size`, at least one per `train_batch_size` steps);
        only shards that were sent rows are asked (RLlib asks any, and an empty shard
        replays nothing)."""
        config = self.config
        self._steps_since_replay += new_steps
        if self._steps_since_replay < config.train_batch_size or not self._filled_shards:
            return
        # training_intensity None: the natural ratio (as many trained steps as sampled).
        intensity = 1.0 if config.training_intensity is None else config.training_intensity
        wanted = self._steps_since_replay / config.train_batch_size * intensity
        self._steps_since_replay = 0
        limit = config.max_requests_in_flight_per_replay_worker
        for _ in range(max(1, int(round(wanted)))):
            shard = self._filled_shards[int(self._rng.integers(len(self._filled_shards)))]
            if limit is not None and sum(i == shard for i, _ in self._replaying) >= limit:
                continue
            self._replaying.append((shard, self.replay_shards.call(shard, "replay")))
            self.shared_metrics.counters[NUM_REPLAY_REQUESTS] += 1

    def _feed_learner(self) -> None:
        """Puts the replayed batches that arrived (in request order) on the learner's
        queue; without remote workers the learner learns on each at once."""
        pending = [f for _, f in self._replaying]
        if pending and self.config.timeout_s_replay_manager > 0:
            concurrent.futures.wait(pending, timeout=self.config.timeout_s_replay_manager,
                                    return_when=concurrent.futures.FIRST_COMPLETED)
        ready = [(shard, f) for shard, f in self._replaying if f.done()]
        self._replaying = [(shard, f) for shard, f in self._replaying if not f.done()]
        for shard, future in ready:
            batch = future.result()
            if batch is None or batch.count == 0:  # that shard holds no rows yet
                continue
            self._put_on_learner_queue((shard, batch))
            if not self.learner_thread.is_alive():  # no remote workers: learn now
                self.learner_thread.step()

    def _put_on_learner_queue(self, item: Tuple[int, types.Batch]) -> None:
        while True:
            self.learner_thread.raise_if_failed()
            try:
                self.learner_thread.inqueue.put(item, timeout=_QUEUE_POLL_S)
                return
            except queue.Full:
                continue

    def _learner_outputs(self) -> List[LearnerOutput]:
        """The learner's outputs waiting now.

        Raises:
            RuntimeError: If the learner thread died.
        """
        self.learner_thread.raise_if_failed()
        outputs = []
        while True:
            try:
                outputs.append(self.learner_thread.outqueue.get_nowait())
            except queue.Empty:
                return outputs

    def _record(self, output: LearnerOutput) -> None:
        """Sends an output's priorities to its shard and counts its trained steps."""
        counters = self.shared_metrics.counters
        if output.td_errors:
            self.replay_shards.call(output.shard_index, "update_priorities", output.td_errors
                                    ).add_done_callback(self._log_failure("update_priorities"))
        if output.num_nonfinite:
            counters[NUM_NONFINITE_TD_ERRORS] += output.num_nonfinite
        counters[STEPS_TRAINED_COUNTER] += output.env_steps
        counters[AGENT_STEPS_TRAINED_COUNTER] += output.agent_steps
        self.shared_metrics.info[LEARNER_INFO] = output.info

    # ------------------------------------------------------------- reporting

    def train(self) -> Dict[str, Any]:
        """`Algorithm.train()` plus `info["learner_queue"]` (the learner queue's sizes)
        and `info["replay_shard_0"]` (shard 0's statistics; every shard's, as
        `replay_shard_<i>`, with `optimizer["debug"]`)."""
        result = super().train()
        info = result.setdefault("info", {})
        info["learner_queue"] = self.learner_thread.learner_queue_size.stats()
        shards = (range(self.replay_shards.num_shards) if self.config.optimizer["debug"]
                  else [0])
        for i in shards:
            info[f"replay_shard_{i}"] = self.replay_shards.call(i, "stats").result(
                self.config.sample_timeout_s)
        return result

    # ----------------------------------------------------------- checkpoints

    def __getstate__(self) -> Dict[str, Any]:
        state = super().__getstate__()
        state[APEX_STATE] = {
            "rng": self._rng.bit_generator.state,
            "steps_since_replay": self._steps_since_replay,
            "filled_shards": list(self._filled_shards),
            "steps_since_weight_sync": {str(k): v for k, v in
                                        self._steps_since_weight_sync.items()}}
        if self.config.store_buffer_in_checkpoints:
            state[REPLAY_SHARDS_STATE] = self.replay_shards.get_state(self.config.sample_timeout_s)
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        super().__setstate__(state)
        apex = state.get(APEX_STATE)
        if apex is not None:
            self._rng.bit_generator.state = apex["rng"]
            self._steps_since_replay = int(apex["steps_since_replay"])
            self._filled_shards = [int(i) for i in apex["filled_shards"]]
            self._steps_since_weight_sync = collections.defaultdict(int, {
                int(k): int(v) for k, v in apex["steps_since_weight_sync"].items()})
        shards = state.get(REPLAY_SHARDS_STATE)
        if shards is not None:
            self.replay_shards.set_state(shards, self.config.sample_timeout_s)

    def _log_failure(self, what: str) -> Any:
        """A callback that logs a failed call the driver does not wait for (not once
        `stop()` has begun: calls still in flight then fail by design)."""
        def check(future: concurrent.futures.Future) -> None:
            error = future.exception()
            if error is not None and not self._stopping:
                logger.warning("Ape-X: %s failed: %r", what, error)
        return check

    def stop(self) -> None:
        """Stops the learner thread, the replay shards and the workers."""
        self._stopping = True
        self.learner_thread.stop()
        self.replay_shards.stop()
        super().stop()

    cleanup = stop


ApexDQNConfig.algo_class = ApexDQN

# RLlib 1.x names.
APEX_DEFAULT_CONFIG = ApexDQNConfig().to_dict()
ApexTrainer = ApexDQN
