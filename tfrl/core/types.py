"""The vocabulary of tfrl as typing Protocols: batch, policy, worker, worker set, operator.

An algorithm is a short pipeline of operators over batches that workers sample with
their policies; this module names what each of those must offer, so that the execution
operators and `Algorithm` can say what they take without importing the classes that
implement it (those live in higher layers: `SampleBatch`/`MultiAgentBatch`, `Policy`,
`RolloutWorker`, `WorkerSet`, the worker handles). A class satisfies a Protocol by
having its methods; it does not subclass it. mypy checks that the concrete classes fit
wherever one is passed where a Protocol is expected.

One training iteration, in these words:

    workers: WorkerSet                              # local worker + remote workers
    workers.sync_weights()                          # remotes act with the local weights
    batch: Batch = workers.local_worker().sample()  # or one `sample` per remote worker
    info = workers.local_worker().learn_on_batch(batch)   # {policy_id: learner info}
    policy: Policy = workers.local_worker().get_policy("default_policy")
    policy.get_weights()                            # numpy weights, sent to the remotes

and as a plan of operators (`tfrl.execution`), each an `Operator` mapping one item of
a `LocalIterator` to the next:

    ParallelRollouts(workers)                # a LocalIterator of batches
        .combine(ConcatBatches(4000))        # Operator[Batch, List[Batch]]
        .for_each(TrainOneStep(workers))     # Operator[Batch, Tuple[Batch, infos]]

Policy ids are strings (`"default_policy"`); weights, gradients and observations are
left as `Any` (numpy arrays or nests of them, whose structure depends on the policy).
This module imports nothing but the standard library: it is the bottom layer.
"""

import concurrent.futures
from typing import (TYPE_CHECKING, Any, Callable, Collection, Dict, List, Mapping, Optional,
                    Protocol, Sequence, Tuple, TypeVar, Union)

if TYPE_CHECKING:  # annotations only: importing gymnasium at run time is not needed here
    import gymnasium as gym

__all__ = ["Batch", "Policy", "Worker", "RemoteWorker", "WorkerSet", "Operator",
           "LearnerInfo", "ResultDict"]

InT = TypeVar("InT", contravariant=True)
OutT = TypeVar("OutT", covariant=True)

# `{"learner_stats": {name: value}, ...}`: what a policy's `learn_on_batch` returns.
LearnerInfo = Dict[str, Any]
# The result dict of one training iteration (`episode_reward_mean`, `timesteps_total`, ...).
ResultDict = Dict[str, Any]


class Batch(Protocol):
    """Experiences: a `SampleBatch` (columns of one policy) or a `MultiAgentBatch`.

    What every batch offers, whichever of the two it is. Code that needs the columns
    (`batch["obs"]`) or the per-policy batches (`batch.policy_batches`) checks which
    one it has (`isinstance(batch, MultiAgentBatch)`).
    """

    @property
    def count(self) -> int:
        """Rows of a SampleBatch; env steps of a MultiAgentBatch."""

    def __len__(self) -> int:
        """Same as `count`."""

    def env_steps(self) -> int:
        """Env steps the batch covers."""

    def agent_steps(self) -> int:
        """Agent steps (summed over the policies of a MultiAgentBatch)."""

    def copy(self) -> "Batch":
        """A deep copy."""

    def size_bytes(self) -> int:
        """Memory held by the batch's arrays."""

    def decompress_if_needed(self) -> "Batch":
        """The batch with compressed columns decompressed (in place)."""


class Policy(Protocol):
    """Maps observations to actions and learns from batches (RLlib's `Policy`).

    The concrete base class is `tfrl.policy.policy.Policy`; `TFPolicy` and the
    algorithms' policies build on it.
    """

    @property
    def observation_space(self) -> "gym.Space":
        """Observation space of one agent."""

    @property
    def action_space(self) -> "gym.Space":
        """Action space of one agent."""

    @property
    def config(self) -> Mapping[str, Any]:
        """The policy's config (read it; do not change it)."""

    @property
    def global_timestep(self) -> int:
        """Env steps acted on so far (set by `on_global_var_update`)."""

    def compute_actions(self, obs_batch: Any, state_batches: Optional[List[Any]] = None,
                        prev_action_batch: Any = None, prev_reward_batch: Any = None,
                        info_batch: Any = None, episodes: Any = None,
                        explore: Optional[bool] = None, timestep: Optional[int] = None,
                        **kwargs: Any) -> Tuple[Any, List[Any], Dict[str, Any]]:
        """`(actions [B, ...], state_outs, extra_fetches)` for a batch of observations."""

    def compute_single_action(self, obs: Any = None, state: Optional[List[Any]] = None, *,
                              prev_action: Any = None, prev_reward: Any = None,
                              info: Any = None, input_dict: Optional[Dict[str, Any]] = None,
                              episode: Any = None, explore: Optional[bool] = None,
                              timestep: Optional[int] = None,
                              **kwargs: Any) -> Tuple[Any, List[Any], Dict[str, Any]]:
        """`compute_actions` for one observation, without the batch axis."""

    def learn_on_batch(self, samples: Any, *, num_sgd_iter: Optional[int] = None,
                       sgd_minibatch_size: Optional[int] = None,
                       shuffle_sequences: Optional[bool] = None) -> LearnerInfo:
        """Trains on a SampleBatch of this policy's rows (`num_sgd_iter` epochs of
        `sgd_minibatch_size`-row minibatches; None: the policy's config); returns the
        learner info."""

    def compute_gradients(self, postprocessed_batch: Any) -> Tuple[Any, LearnerInfo]:
        """`(gradients, learner info)` of the loss on a batch."""

    def apply_gradients(self, gradients: Any) -> None:
        """Applies gradients from `compute_gradients`."""

    def on_global_var_update(self, global_vars: Dict[str, Any]) -> None:
        """Receives the learner's global vars (`{"timestep": env steps sampled}`)."""

    def get_weights(self) -> Any:
        """The model weights as numpy arrays."""

    def set_weights(self, weights: Any) -> None:
        """Sets weights from `get_weights`."""

    def get_state(self) -> Dict[str, Any]:
        """Everything needed to restore the policy (weights, optimizer, counters, RNG)."""

    def set_state(self, state: Dict[str, Any]) -> None:
        """Restores a `get_state` result."""

    def get_initial_state(self) -> List[Any]:
        """Initial recurrent state of one agent; `[]` for feed-forward policies."""

    def is_recurrent(self) -> bool:
        """Whether the policy keeps recurrent state."""

    def export_model(self, export_dir: str, onnx: Optional[int] = None) -> None:
        """Writes the model for serving (a SavedModel)."""

    def export_checkpoint(self, export_dir: str) -> None:
        """Writes a checkpoint of the policy."""


class Worker(Protocol):
    """Policies plus an environment, in this process (RLlib's `RolloutWorker`).

    Samples batches with its policies and, as the local worker of a `WorkerSet`, learns
    on them and hands out the new weights.
    """

    @property
    def policy_map(self) -> Mapping[str, Policy]:
        """Policy id -> policy."""

    @property
    def policies_to_train(self) -> Collection[str]:
        """Ids of the policies that learn."""

    @property
    def filters(self) -> Dict[str, Any]:
        """Policy id -> observation filter (synchronized in place)."""

    @property
    def preprocessors(self) -> Mapping[str, Any]:
        """Policy id -> observation preprocessor."""

    @property
    def global_vars(self) -> Optional[Dict[str, Any]]:
        """The global vars last set (None before the first)."""

    def sample(self) -> Batch:
        """A batch of experiences from the worker's env (or input reader)."""

    def learn_on_batch(self, samples: Batch, *, num_sgd_iter: Optional[int] = None,
                       sgd_minibatch_size: Optional[int] = None,
                       shuffle_sequences: Optional[bool] = None) -> Dict[str, LearnerInfo]:
        """Each trainable policy learns on its part of `samples` (SGD settings as in
        `Policy.learn_on_batch`); `{policy_id: info}`."""

    def compute_gradients(self, samples: Batch) -> Tuple[Any, Dict[str, Any]]:
        """`(gradients, info)`; both by policy id for a MultiAgentBatch."""

    def apply_gradients(self, grads: Any) -> None:
        """Applies gradients from `compute_gradients`."""

    def get_weights(self, policies: Union[str, Collection[str], None] = None
                    ) -> Dict[str, Any]:
        """`{policy_id: weights}` of the given policy id(s) (None: all)."""

    def set_weights(self, weights: Dict[str, Any],
                    global_vars: Optional[Dict[str, Any]] = None) -> None:
        """Sets each policy's weights (and the global vars, if given)."""

    def set_global_vars(self, global_vars: Dict[str, Any],
                        policy_ids: Optional[List[str]] = None) -> None:
        """Passes the global vars to the policies."""

    def get_policy(self, policy_id: str = ...) -> Optional[Policy]:
        """The policy with that id; None if there is none (`policy_map[id]` raises)."""

    def foreach_policy(self, func: Callable[..., Any], **kwargs: Any) -> List[Any]:
        """`[func(policy, policy_id, **kwargs)]` over all policies."""

    def foreach_trainable_policy(self, func: Callable[..., Any], **kwargs: Any) -> List[Any]:
        """As `foreach_policy`, over the trainable policies only."""

    def get_metrics(self) -> List[Any]:
        """Metrics of the episodes completed since the last call."""

    def get_filters(self, flush_after: bool = False) -> Dict[str, Any]:
        """`{policy_id: filter}`, to send to other workers."""

    def sync_filters(self, new_filters: Dict[str, Any]) -> None:
        """Takes over filters from `get_filters`."""

    def stop(self) -> None:
        """Stops sampling and closes the envs."""


class RemoteWorker(Protocol):
    """A handle to a worker elsewhere (a thread, a Ray actor): calls return futures.

    The concrete base class is `tfrl.evaluation.worker_set.handles.WorkerHandle`.
    """

    @property
    def worker_index(self) -> int:
        """The worker's index (remote workers count from 1)."""

    def call(self, method: str, *args: Any, **kwargs: Any) -> concurrent.futures.Future:
        """Runs `worker.<method>(*args, **kwargs)` there; a future of the result."""

    def apply(self, func: Callable[..., Any], *args: Any) -> concurrent.futures.Future:
        """Runs `func(worker, *args)` there; a future of the result."""

    def is_alive(self) -> bool:
        """False once the worker is known to be gone."""

    def share(self, value: Any) -> Any:
        """`value` in a form to pass to many calls (a Ray object ref: put once)."""


class WorkerSet(Protocol):
    """The local worker (which learns) and the remote workers (which sample).

    The concrete class is `tfrl.evaluation.worker_set.WorkerSet`.
    """

    def local_worker(self) -> Worker:
        """The worker in this process."""

    def remote_workers(self) -> Sequence[RemoteWorker]:
        """Handles of the remote workers, in index order."""

    def sync_weights(self, policies: Optional[Sequence[str]] = None,
                     from_worker: Optional[Any] = None,
                     global_vars: Optional[Dict[str, Any]] = None) -> None:
        """Sends the local worker's weights (and global vars) to every remote worker."""

    def foreach_worker(self, func: Callable[[Any], Any], *, local_worker: bool = True
                       ) -> List[Any]:
        """`[func(worker)]` on every worker, the local one first (`local_worker=False`:
        the remote ones only)."""

    def stop(self) -> None:
        """Stops every worker."""


class Operator(Protocol[InT, OutT]):
    """One step of an execution plan: a callable from one item to the next.

    `LocalIterator.for_each(op)` maps an operator over a stream (`combine` when it
    returns a list to flatten, `filter` when it returns a bool). Operators are plain
    functions or objects with `__call__` that keep state across items (`ConcatBatches`
    buffers batches); they reach the pipeline's counters through
    `tfrl.execution.iter.get_shared_metrics()`.
    """

    def __call__(self, item: InT, /) -> OutT:
        """The output for one input item."""
