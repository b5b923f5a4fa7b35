"""ReplayShards: Ape-X's replay buffer, split into shards that live beside the learner.

Each shard is a prioritized `LocalReplayBuffer` of `capacity // num_replay_buffer_shards`
timesteps that replays `train_batch_size` rows at a time. With remote workers the shards
are Ray actors (`WorkerActor`s holding the buffer, asking for `num_cpus_per_replay_shard`
CPUs, 0 by default as in RLlib, and `custom_resources_per_replay_shard`); without them
they are plain objects in the driver process. Either way the driver talks to shard `i`
through `call(i, method, *args)`, which returns a `concurrent.futures.Future` (already
settled for a local shard), and the rollout workers get `senders()`: one object per
shard whose `add_batch(batch)` stores the batch there (a call the worker does not wait
for, for an actor).

`sample_and_store` is what a rollout worker runs for Ape-X: sample, compute the rows'
priorities with its own policy (worker-side prioritization), send them to a shard.
"""

import concurrent.futures
import functools
import logging
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from tfrl.algorithms.off_policy_plan import beta_schedule
from tfrl.core import types
from tfrl.data.sample_batch import DEFAULT_POLICY_ID, MultiAgentBatch
from tfrl.execution.replay_buffer import LocalReplayBuffer
from tfrl.utils.backend_registry import REMOTE_WORKER, load_backend

logger = logging.getLogger(__name__)


def shard_kwargs(config: Any, index: int) -> Dict[str, Any]:
    """The `LocalReplayBuffer` arguments of replay shard `index` of `config` (an
    `ApexDQNConfig`): prioritized or uniform as `replay_buffer_config` says, n-step
    transitions built in the shard unless the workers build them
    (`worker_side_prioritization`), no `learning_starts` of its own (the driver decides
    when replaying starts), a seed of its own."""
    rb = config["replay_buffer_config"]
    seed = config["seed"]
    return dict(
        capacity=max(1, rb["capacity"] // config.num_replay_buffer_shards),
        replay_batch_size=config["train_batch_size"], learning_starts=0,
        seed=None if seed is None else int(
            np.random.SeedSequence([int(seed), index]).generate_state(1)[0]),
        prioritized_replay=config.prioritized_replay,
        prioritized_replay_alpha=rb["prioritized_replay_alpha"],
        prioritized_replay_beta=beta_schedule(rb),
        prioritized_replay_eps=rb["prioritized_replay_eps"],
        compress_observations=config["compress_observations"],
        n_step=1 if rb["worker_side_prioritization"] else config["n_step"],
        gamma=config["gamma"])


class _ActorSender:
    """Stores batches in a shard actor from wherever it is unpickled (a rollout worker's
    process), without waiting for the shard."""

    def __init__(self, actor: Any):
        self.actor = actor  # the shard's Ray actor handle (a `WorkerActor`)

    def add_batch(self, batch: types.Batch) -> None:
        self.actor.call.remote("add_batch", batch)


def _settled(fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future:
    """A future holding `fn(*args)` (or its exception), computed now."""
    future: concurrent.futures.Future = concurrent.futures.Future()
    try:
        future.set_result(fn(*args))
    except Exception as e:  # handed to whoever reads the future, as an actor's would be
        future.set_exception(e)
    return future


class ReplayShards:
    """The shards of Ape-X's replay buffer (see the module docstring).

    Args:
        config: The algorithm's `ApexDQNConfig`.
        remote: Start the shards as Ray actors (else they live in this process).

    Raises:
        ImportError: If `remote` and Ray is not installed (naming `pip install 'tfrl[ray]'`).
    """

    def __init__(self, config: Any, remote: bool):
        self.num_shards = int(config["optimizer"]["num_replay_buffer_shards"])
        self.remote = bool(remote)
        self.local: List[LocalReplayBuffer] = []
        self.handles: List[Any] = []
        if not self.remote:
            self.local = [LocalReplayBuffer(**shard_kwargs(config, i))
                          for i in range(self.num_shards)]
            return
        # Ray's actor handle, loaded by name as WorkerSet loads it (Ray is imported only
        # when shards are actors).
        handle_class = load_backend(REMOTE_WORKER, "ray")
        resources = dict(config["custom_resources_per_replay_shard"]) or None
        self.handles = [
            handle_class.create(functools.partial(LocalReplayBuffer, **shard_kwargs(config, i)),
                                   worker_index=i,
                                   num_cpus=config["num_cpus_per_replay_shard"],
                                   resources=resources)
            for i in range(self.num_shards)]

    def senders(self) -> List[Any]:
        """Per shard, an object whose `add_batch(batch)` stores a batch there (picklable
        for remote shards: a worker process can use it)."""
        if not self.remote:
            return list(self.local)
        return [_ActorSender(handle.actor) for handle in self.handles]

    def call(self, index: int, method: str, *args: Any) -> concurrent.futures.Future:
        """`shard.<method>(*args)` on shard `index`, as a future."""
        if not self.remote:
            return _settled(getattr(self.local[index], method), *args)
        return self.handles[index].call(method, *args)

    def apply(self, index: int, fn: Callable[..., Any], *args: Any
              ) -> concurrent.futures.Future:
        """`fn(shard, *args)` on shard `index`, as a future (e.g. its actor's node)."""
        if not self.remote:
            return _settled(fn, self.local[index], *args)
        return self.handles[index].apply(fn, *args)

    def wait_ready(self, timeout: float) -> None:
        """Waits until every shard answers (remote shards start asynchronously).

        Raises:
            TimeoutError: If a shard has not started within `timeout` seconds.
        """
        futures = [self.call(i, "__len__") for i in range(self.num_shards)]
        done, pending = concurrent.futures.wait(futures, timeout=timeout)
        if pending:
            raise TimeoutError(
                f"ReplayShards: {len(pending)} of {self.num_shards} replay-shard actors did not "
                f"start within {timeout} s. Each asks for num_cpus_per_replay_shard CPUs and "
                "custom_resources_per_replay_shard: check that the Ray cluster offers them.")
        for future in done:
            future.result()

    def get_state(self, timeout: Optional[float] = None) -> List[Dict[str, Any]]:
        """Every shard's `get_state()` (for checkpoints)."""
        return [self.call(i, "get_state").result(timeout) for i in range(self.num_shards)]

    def set_state(self, states: List[Dict[str, Any]], timeout: Optional[float] = None) -> None:
        """Restores a `get_state()` result into shards built from the same config."""
        if len(states) != self.num_shards:
            raise ValueError(f"ReplayShards.set_state(): the checkpoint holds {len(states)} "
                             f"replay shards; this algorithm has {self.num_shards} "
                             "(optimizer['num_replay_buffer_shards']). Use the same number.")
        for future in [self.call(i, "set_state", s) for i, s in enumerate(states)]:
            future.result(timeout)

    def stop(self) -> None:
        """Ends the shard actors (their contents are lost)."""
        for handle in self.handles:
            handle.kill()
        self.handles = []


def add_worker_priorities(worker: types.Worker, batch: types.Batch) -> types.Batch:
    """`batch` with each policy's rows turned into n-step transitions with priorities
    (the policies' `worker_priorities`; a policy without that method leaves its rows as
    they are)."""
    if isinstance(batch, MultiAgentBatch):
        return MultiAgentBatch(
            {pid: _prioritized(worker.get_policy(pid), rows)
             for pid, rows in batch.policy_batches.items()}, batch.count)
    return _prioritized(worker.get_policy(DEFAULT_POLICY_ID), batch)


def _prioritized(policy: Any, rows: Any) -> Any:
    prioritize = getattr(policy, "worker_priorities", None)
    return prioritize(rows) if prioritize is not None and rows.count else rows


def sample_and_store(worker: types.Worker, shard: Any, worker_side_prioritization: bool
                     ) -> Dict[str, int]:
    """Ape-X's sampling call, run on a rollout worker: one `sample()`, its rows'
    priorities computed here (with `worker_side_prioritization`), the batch sent to
    `shard` (`add_batch`); returns the steps sampled (`env_steps`, `agent_steps`)."""
    batch = worker.sample()
    counts = {"env_steps": int(batch.env_steps()), "agent_steps": int(batch.agent_steps())}
    if worker_side_prioritization:
        batch = add_worker_priorities(worker, batch)
    shard.add_batch(batch)
    return counts
