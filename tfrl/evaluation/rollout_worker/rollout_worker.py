"""RolloutWorker: policies plus an environment, producing SampleBatches (RLlib's API).

A worker builds its env (vectorized into a BaseEnv), one policy per policy id (with a
preprocessor and an observation filter each), and a sampler; `sample()` returns a
SampleBatch (single agent) or MultiAgentBatch of `rollout_fragment_length * num_envs`
steps. It also learns (`learn_on_batch`, `compute_gradients`/`apply_gradients`) and
exchanges weights, filters and state, so copies of it can run as remote workers.

The parts live in their own modules of this package: the constructor's arguments
(`args`, from a trainer config: `config`), env creation (`env`), policies (`policies`,
`tfrl.policy.policy_map`), learning (`learning`), save/restore and filters (`state`); the
sampler is `tfrl.evaluation.sampler`.

    worker = RolloutWorker(env_creator=lambda ctx: gym.make("CartPole-v1"),
                           policy_spec=PPOTFPolicy)
    batch = worker.sample()            # SampleBatch of 100 env steps
    worker.learn_on_batch(batch)
"""

import collections.abc
import dataclasses
import logging
import random
from typing import Any, Callable, Collection, Dict, List, Optional, Tuple, Type, Union

import numpy as np

from tfrl.core import types
from tfrl.data.sample_batch import DEFAULT_POLICY_ID, concat_samples
from tfrl.env.env_context import EnvContext
from tfrl.evaluation.rollout_worker import args as worker_setup
from tfrl.evaluation.rollout_worker import env as worker_env
from tfrl.evaluation.rollout_worker import learning as worker_learning
from tfrl.evaluation.rollout_worker import policies as worker_policies
from tfrl.evaluation.rollout_worker import state as worker_state
from tfrl.evaluation.callbacks import DefaultCallbacks
from tfrl.evaluation.sampler import sampler_for_worker
from tfrl.evaluation.rollout_worker.args import apply_process_settings, check_worker_args
from tfrl.models.action_mask import ActionMaskModel
from tfrl.models.catalog import MODEL_DEFAULTS
from tfrl.offline.io_context import IOContext
from tfrl.offline.output_writer import NoopOutput
from tfrl.policy.policy import Policy
from tfrl.policy.policy_map import PolicyMap
from tfrl.utils.filter import get_filter
from tfrl.utils.typing import SampleBatchType

logger = logging.getLogger(__name__)

_global_worker: Optional["RolloutWorker"] = None


def get_global_worker() -> Optional["RolloutWorker"]:
    """The RolloutWorker most recently constructed in this process (None if none)."""
    return _global_worker


def _deepmind_options(preprocessor_pref: Optional[str], model_config: dict) -> Optional[dict]:
    """`wrap_deepmind` options for ALE envs (None: no wrapping), as RLlib: with the
    "deepmind" preference and no custom preprocessor; `dim` and `framestack` from the
    model config. The worker clips rewards itself (`clip_rewards`), so the env does not."""
    config = {**MODEL_DEFAULTS, **model_config}
    if preprocessor_pref != "deepmind" or config["custom_preprocessor"] is not None:
        return None
    return {"dim": int(config["dim"]), "framestack": config["framestack"], "clip_rewards": False}


def _default_mapping_fn(agent_id: Any, episode: Any, worker: Any = None, **kwargs: Any) -> str:
    return DEFAULT_POLICY_ID


class RolloutWorker:
    """Collects experience with policies in an environment (RLlib's RolloutWorker).

    The 41 keyword-only constructor arguments are RLlib's (their defaults, and tfrl's
    treatment of each, are in `tfrl.evaluation.rollout_worker.args.WorkerArgs`); an unknown
    keyword raises `UnknownKeyError` (a `TypeError` and `ValueError`) naming the closest
    valid one.

    Attributes:
        args: The checked arguments (a frozen `WorkerArgs`).
    """

    global_vars: Optional[Dict[str, Any]]  # the last `set_global_vars` (None before)

    def __init__(self, **kwargs: Any):
        global _global_worker
        self.args = args = check_worker_args(kwargs)
        apply_process_settings(args)
        _global_worker = self
        self.policy_config = pc = args.policy_config
        self.env_context = EnvContext(args.env_config or {}, worker_index=args.worker_index,
                                      vector_index=0, num_workers=args.num_workers)
        cb = args.callbacks
        self.callbacks = cb if isinstance(cb, DefaultCallbacks) else (cb or DefaultCallbacks)()
        self.worker_index, self.num_workers = args.worker_index, args.num_workers
        self.model_config = args.model_config or pc.get("model") or {}
        self.policy_mapping_fn: Callable = _default_mapping_fn
        self.set_policy_mapping_fn(args.policy_mapping_fn)
        self.env_creator = args.env_creator
        self.num_envs = args.num_envs
        self.rollout_fragment_length = args.rollout_fragment_length * args.num_envs
        self.count_steps_by, self.batch_mode = args.count_steps_by, args.batch_mode
        self.compress_observations = args.compress_observations
        self.observation_filter = args.observation_filter
        self.last_batch, self.global_vars, self.fake_sampler = None, None, args.fake_sampler
        self.spaces = args.spaces
        seed = args.seed
        if self.worker_index > 0 and seed is not None:
            random.seed(seed)
            np.random.seed(seed)
            import tensorflow as tf  # deferred: `import tfrl` does not load TensorFlow

            tf.random.set_seed(seed)

        on_created = None
        if self.callbacks.overrides("on_sub_environment_created"):
            on_created = self._on_sub_env_created
        self.make_sub_env_fn = worker_env.SubEnvMaker(
            args.env_creator, self.env_context, remote=args.remote_worker_envs,
            validate=args.validate_env, seed=seed, record_env=args.record_env,
            log_dir=args.log_dir, on_created=on_created,
            deepmind=_deepmind_options(args.preprocessor_pref, self.model_config))
        self.env = None
        if not (self.worker_index == 0 and self.num_workers > 0 and not pc.get("create_env_on_driver")):
            self.env = self._make_env()
            if (worker_env.is_atari(self.env) and args.preprocessor_pref == "deepmind"
                    and args.clip_rewards is None):  # RLlib: clip Atari rewards by default
                self.args = args = dataclasses.replace(args, clip_rewards=True)

        specs = worker_policies.resolve_spaces(
            args.policy_specs, self.env, self.spaces, self.policy_mapping_fn, self)
        self.policies_to_train: List[Any] = []
        self._spec_ids = list(specs)
        self.set_policies_to_train(args.policies_to_train or list(specs))
        worker_policies.check_gpus(pc, self.worker_index)
        self.policy_map = PolicyMap(pc.get("policy_map_capacity"), self.worker_index)
        self.preprocessors: Dict[Any, Any] = {}
        self.filters: Dict[Any, Any] = {}
        for pid, spec in specs.items():
            self._build_policy(pid, spec)
        self.multiagent = set(self.policy_map) != {DEFAULT_POLICY_ID}
        if self.multiagent and self.env is not None:
            worker_env.check_multi_agent_env(self.env, list(self.policy_map))

        self.async_env = None
        if self.env is not None:
            self.async_env = self._vectorize(self.env)
        self.io_context = IOContext(args.log_dir, pc, self.worker_index, self)
        self.reward_estimators: List[Any] = worker_setup.make_estimators(
            args.input_evaluation, self.policy_map, pc.get("gamma", 0.99))
        self.output_writer = args.output_creator(self.io_context) or NoopOutput()
        self.sampler = None
        if self.async_env is not None:
            self.sampler = sampler_for_worker(self, args)
        self.input_reader = args.input_creator(self.io_context)

    @property
    def keeps_all_columns(self) -> bool:
        """Whether sampled batches keep the columns the policies' losses do not read
        (view requirements with `used_for_training=False`, e.g. PPO's `new_obs`): True
        when the worker writes its batches as offline data or estimates off-policy
        returns from them."""
        return (not isinstance(getattr(self, "output_writer", None), (NoopOutput, type(None)))
                or bool(getattr(self, "reward_estimators", None)))

    def _make_env(self) -> Any:
        """Sub-env 0 from the env creator (prepared: validated, checked unless
        `disable_env_checking`, seeded, recorded), or None."""
        env = self.args.env_creator(self.env_context.copy_with_overrides())
        check = not self.policy_config.get("disable_env_checking")
        return None if env is None else self.make_sub_env_fn.prepare(env, self.env_context,
                                                                      check=check)

    def _vectorize(self, env: Any) -> Any:
        args = self.args
        return worker_env.vectorize(env, self.make_sub_env_fn, self.num_envs,
                                    args.remote_worker_envs, args.remote_env_batch_wait_ms,
                                    self.policy_config)

    def _restart_envs(self, error: BaseException) -> None:
        """After the env loop raised `error`: closes the envs and builds new ones (same
        EnvContexts and seeds) and a new sampler, so that the next `sample()` starts new
        episodes. The episodes in progress are dropped (no metrics, not counted as
        done); the batch being collected is lost."""
        logger.warning("Worker %d: the env loop raised %s: %s; closing and re-creating the "
                       "envs (the episodes in progress are dropped).", self.worker_index,
                       type(error).__name__, error)
        old_sampler, old_env = self.sampler, self.async_env
        for stop in (getattr(old_sampler, "stop", None), getattr(old_env, "stop", None)):
            try:
                if stop is not None:
                    stop()
            except Exception as e:  # a broken env may fail to close; it is dropped anyway
                logger.warning("Closing the failed env raised %s: %s", type(e).__name__, e)
        self.env = self._make_env()
        self.async_env = self._vectorize(self.env)
        self.sampler = sampler_for_worker(self, self.args)
        if self.input_reader is old_sampler:
            self.input_reader = self.sampler

    def _on_sub_env_created(self, env: Any, ctx: EnvContext) -> None:
        self.callbacks.on_sub_environment_created(worker=self, sub_environment=env, env_context=ctx)

    def _build_policy(self, pid: str, spec: Any) -> Policy:
        config = worker_policies.merged_policy_config(self.policy_config, spec, self.worker_index,
                                                      self.args.seed)
        if self.model_config and "model" not in (spec.config or {}):
            config["model"] = self.model_config
        policy, preprocessor = worker_policies.build_policy(pid, spec, config)
        self.policy_map[pid] = policy
        self.policy_map.policy_specs[pid] = spec
        self.preprocessors[pid] = preprocessor
        name = self.observation_filter
        model = getattr(policy, "action_model", None)  # TFPolicy's acting model
        if isinstance(model, ActionMaskModel) and name != "NoFilter":
            raise ValueError(
                f"Policy {pid!r} masks actions with its observation's action mask, and "
                f"observation_filter={name!r} would normalize the mask with the rest of the "
                "observation. Received: observation_filter="
                f"{name!r}. Use observation_filter='NoFilter' (normalize the other entries "
                "in the env), or set model_config['action_mask_key']=None.")
        if self.args.sample_async and name == "MeanStdFilter":
            name = "ConcurrentMeanStdFilter"  # the sampler thread updates it concurrently
        self.filters[pid] = get_filter(name, preprocessor.shape)
        self.callbacks.on_create_policy(policy_id=pid, policy=policy)
        return policy

    # ------------------------------------------------------------------ sampling
    def sample(self) -> SampleBatchType:
        """Returns a batch of at least (complete_episodes) or at most/exactly
        (truncate_episodes) `rollout_fragment_length * num_envs` steps.

        If the env loop raises (an env's step or reset raised), the error reaches the
        caller and the worker re-creates its envs and sampler (see `_restart_envs`), so
        the next call samples new episodes.

        Raises:
            ValueError: If this worker has no env / input reader (a local worker with
                remote workers; set `create_env_on_driver=True`).
        """
        if self.fake_sampler and self.last_batch is not None:
            return self.last_batch
        if self.input_reader is None:
            raise ValueError(
                "RolloutWorker has no input_reader and cannot sample: it has no env (the local "
                "worker of a set with remote workers). Set config['create_env_on_driver'] = True "
                "to sample on it."
            )
        try:
            batches = [self.input_reader.next()]
            steps = self._count(batches[0])
            max_batches = self.num_envs if self.batch_mode == "truncate_episodes" else float("inf")
            while steps < self.rollout_fragment_length and len(batches) < max_batches:
                batches.append(self.input_reader.next())
                steps += self._count(batches[-1])
        except Exception as e:
            # The env loop (a generator) is finished once it raised: give this worker new
            # envs for the next call, then let the error through.
            if self.sampler is not None and self.input_reader is self.sampler:
                self._restart_envs(e)
            raise
        batch = concat_samples(batches) if len(batches) > 1 else batches[0]
        self.callbacks.on_sample_end(worker=self, samples=batch)
        self.output_writer.write(batch)
        if self.reward_estimators:
            worker_setup.feed_estimators(self.reward_estimators, batch)
        if self.compress_observations:
            batch.compress(bulk=self.compress_observations == "bulk")
        if self.fake_sampler:
            self.last_batch = batch
        return batch

    def _count(self, batch: types.Batch) -> int:
        return batch.count if self.count_steps_by == "env_steps" else batch.agent_steps()

    def sample_with_count(self) -> Tuple[SampleBatchType, int]:
        """`(batch, batch.count)`."""
        batch = self.sample()
        return batch, batch.count

    def sample_and_learn(self, expected_batch_size: int, num_sgd_iter: int,
                         sgd_minibatch_size: int, standardize_fields: List[str]
                         ) -> Tuple[Dict[str, types.LearnerInfo], int]:
        """Samples and runs minibatch SGD on it; returns `(info, batch.count)`.

        Raises:
            ValueError: If the batch does not have `expected_batch_size` steps.
        """
        return worker_learning.sample_and_learn(self, expected_batch_size, num_sgd_iter,
                                                sgd_minibatch_size, standardize_fields)

    # ------------------------------------------------------------------ learning
    # `{pid: info}` of `policy.learn_on_batch` for each trainable policy's batch (the
    # function itself, not a method handing the batch on: see `worker_learning`).
    learn_on_batch = worker_learning.learn_on_batch

    def compute_gradients(self, samples: types.Batch) -> Tuple[Any, Dict[str, Any]]:
        """`(grads, info)`; dicts by policy id for a MultiAgentBatch."""
        return worker_learning.compute_gradients(self, samples)

    def apply_gradients(self, grads: Any) -> None:
        """Applies gradients from `compute_gradients` to the trainable policies."""
        worker_learning.apply_gradients(self, grads)

    def get_weights(self, policies: Union[str, Collection[str], None] = None
                    ) -> Dict[str, Any]:
        """`{pid: weights}` of the given policy ids (one id or a list; None: all)."""
        if policies is None:
            policies = list(self.policy_map)
        elif isinstance(policies, str) or not isinstance(policies, collections.abc.Collection):
            policies = [policies]  # one id
        return {pid: self.policy_map[pid].get_weights() for pid in policies}

    def set_weights(self, weights: Dict[str, Any],
                    global_vars: Optional[Dict[str, Any]] = None) -> None:
        """Sets each policy's weights (unknown id: KeyError), then the global vars if given."""
        for pid, w in weights.items():
            self.policy_map[pid].set_weights(w)
        if global_vars:
            self.set_global_vars(global_vars)

    def get_global_vars(self) -> Optional[Dict[str, Any]]:
        """The last global vars set (None before the first `set_global_vars`)."""
        return self.global_vars

    def set_global_vars(self, global_vars: Dict[str, Any],
                        policy_ids: Optional[List[str]] = None) -> None:
        """Passes `global_vars` (e.g. `{"timestep": n}`) to the policies (all, or
        `policy_ids`) and stores them."""
        for pid in (self.policy_map if policy_ids is None else policy_ids):
            self.policy_map[pid].on_global_var_update(global_vars)
        self.global_vars = global_vars

    # ------------------------------------------------------------------ policies
    def get_policy(self, policy_id: str = DEFAULT_POLICY_ID) -> Optional[Policy]:
        """The policy with that id, or None."""
        return self.policy_map.get(policy_id)

    def add_policy(self, *, policy_id: str, policy_cls: type, observation_space: Any = None,
                   action_space: Any = None, config: Optional[dict] = None,
                   policy_mapping_fn: Optional[Callable] = None,
                   policies_to_train: Optional[List[Any]] = None,
                   policy_state: Optional[dict] = None) -> Policy:
        """Builds and adds a policy (with preprocessor and filter); returns it.

        Raises:
            ValueError: If `policy_id` exists, or its spaces cannot be determined.
        """
        if policy_id in self.policy_map:
            raise ValueError(f"Policy ID {policy_id!r} already in policy map; remove it first.")
        spec = worker_policies.normalize_policy_specs(
            {policy_id: (policy_cls, observation_space, action_space, config)})
        spec = worker_policies.resolve_spaces(spec, self.env, self.spaces,
                                              policy_mapping_fn or self.policy_mapping_fn, self)
        self._spec_ids.append(policy_id)
        policy = self._build_policy(policy_id, spec[policy_id])
        if policy_state is not None:
            policy.set_state(policy_state)
        self.set_policy_mapping_fn(policy_mapping_fn)
        self.set_policies_to_train(policies_to_train)
        return policy

    def remove_policy(self, *, policy_id: str = DEFAULT_POLICY_ID,
                      policy_mapping_fn: Optional[Callable] = None,
                      policies_to_train: Optional[List[Any]] = None) -> None:
        """Removes a policy with its preprocessor and filter.

        Raises:
            ValueError: If there is no such policy.
        """
        if policy_id not in self.policy_map:
            raise ValueError(f"Policy ID {policy_id!r} not in policy map {sorted(self.policy_map, key=repr)}.")
        del self.policy_map[policy_id]
        del self.preprocessors[policy_id]
        del self.filters[policy_id]
        self._spec_ids.remove(policy_id)
        self.policies_to_train = [p for p in self.policies_to_train if p != policy_id]
        self.set_policy_mapping_fn(policy_mapping_fn)
        self.set_policies_to_train(policies_to_train)

    def set_policy_mapping_fn(self, policy_mapping_fn: Optional[Callable] = None) -> None:
        """Sets `(agent_id, episode, worker, **kw) -> PolicyID` (None keeps the current one).

        Raises:
            ValueError: If it is not callable.
        """
        if policy_mapping_fn is not None:
            self.policy_mapping_fn = worker_policies.checked_mapping_fn(policy_mapping_fn)

    def set_policies_to_train(self, policies_to_train: Optional[List[Any]] = None) -> None:
        """Sets the trainable policy ids (None keeps the current list).

        Raises:
            TypeError: If not a list/tuple/set. ValueError: For unknown policy ids.
        """
        if policies_to_train is not None:
            self.policies_to_train = worker_policies.checked_policies_to_train(
                policies_to_train, self._spec_ids)

    def set_callbacks(self, callbacks: Union[DefaultCallbacks, Type[DefaultCallbacks], None] = None
                      ) -> None:
        """Replaces the callbacks (a `DefaultCallbacks` instance, or a subclass to
        instantiate; None: keep the instance, e.g. after changing its class). The
        sampler fires the new episode hooks from its next step on (running episodes too).

        Raises:
            TypeError: If `callbacks` is neither a DefaultCallbacks instance nor subclass.
        """
        if callbacks is not None:
            if isinstance(callbacks, type) and issubclass(callbacks, DefaultCallbacks):
                callbacks = callbacks()
            if not isinstance(callbacks, DefaultCallbacks):
                raise TypeError(
                    "set_callbacks() takes a DefaultCallbacks subclass or instance; received "
                    f"{type(callbacks).__name__}: {callbacks!r}.")
            self.callbacks = callbacks
        if self.sampler is not None:
            self.sampler.refresh_callbacks(self.callbacks)

    def for_policy(self, func: Callable[..., Any], policy_id: str = DEFAULT_POLICY_ID,
                   **kwargs: Any) -> Any:
        """`func(policy, **kwargs)` for one policy."""
        return func(self.policy_map[policy_id], **kwargs)

    def foreach_policy(self, func: Callable[..., Any], **kwargs: Any) -> List[Any]:
        """`[func(policy, pid, **kwargs)]` over all policies, in map order."""
        return [func(p, pid, **kwargs) for pid, p in self.policy_map.items()]

    def foreach_trainable_policy(self, func: Callable[..., Any], **kwargs: Any) -> List[Any]:
        """As `foreach_policy`, over the trainable policies only."""
        return [func(p, pid, **kwargs) for pid, p in self.policy_map.items()
                if pid in self.policies_to_train]

    # ------------------------------------------------------------------ envs & misc
    def foreach_env(self, func: Callable) -> list:
        """`[func(sub_env)]`; `[func(base_env)]` without sub-env objects; `[]` without env."""
        if self.async_env is None:
            return []
        envs = self.async_env.get_sub_environments()
        return [func(e) for e in envs] if envs else [func(self.async_env)]

    def foreach_env_with_context(self, func: Callable) -> list:
        """As `foreach_env`, calling `func(env, env_context)` (per-sub-env vector_index)."""
        if self.async_env is None:
            return []
        envs = self.async_env.get_sub_environments()
        if not envs:
            return [func(self.async_env, self.env_context)]
        return [func(e, self.env_context.copy_with_overrides(vector_index=i))
                for i, e in enumerate(envs)]

    def apply(self, func: Callable, *args: Any) -> Any:
        """`func(self, *args)`."""
        return func(self, *args)

    def get_metrics(self) -> List[Any]:
        """The RolloutMetrics of the episodes completed since the last call, then the
        off-policy estimates (`OffPolicyEstimate`s) made since then."""
        out = list(self.sampler.get_metrics()) if self.sampler is not None else []
        for estimator in self.reward_estimators:
            out.extend(estimator.get_metrics())
        return out

    def get_filters(self, flush_after: bool = False) -> Dict[str, Any]:
        """`{pid: serializable filter}`; `flush_after` clears the buffers afterwards."""
        return worker_state.get_filters(self.filters, flush_after)

    def sync_filters(self, new_filters: Dict[str, Any]) -> None:
        """Syncs each filter with `new_filters[pid]` (KeyError if one is missing)."""
        worker_state.sync_filters(self.filters, new_filters)

    def save(self) -> bytes:
        """Filters, policy states and specs, and global vars as bytes."""
        return worker_state.save_worker(self)

    def restore(self, objs: bytes) -> None:
        """Restores `save()` output; re-adds missing policies with their state."""
        worker_state.restore_worker(self, objs)

    def get_state(self) -> dict:
        """What `save()` pickles, as a dict (filter states, policy states, specs, global vars)."""
        return worker_state.get_worker_state(self)

    def set_state(self, state: dict) -> None:
        """Restores a `get_state()` dict, as `restore()`."""
        worker_state.set_worker_state(self, state)

    def stop(self) -> None:
        """Stops the sampler thread (if any) and closes the envs."""
        if self.sampler is not None and hasattr(self.sampler, "stop"):
            self.sampler.stop()
        if self.async_env is not None:
            self.async_env.stop()

    # ------------------------------------------------------------------ host utilities
    def creation_args(self) -> dict:
        """The keyword arguments this worker was constructed with (aliases folded in)."""
        return dict(self.args.given)

    def get_host(self) -> str:
        """This machine's host name."""
        return worker_setup.host_name()

    def get_node_ip(self) -> str:
        """This machine's IP address on the default route (127.0.0.1 if offline)."""
        return worker_setup.node_ip()

    def find_free_port(self) -> int:
        """A TCP port that is free on this machine right now."""
        return worker_setup.free_port()

    @classmethod
    def as_remote(cls, num_cpus: Optional[float] = None, num_gpus: Optional[float] = None,
                  memory: Optional[int] = None, object_store_memory: Optional[int] = None,
                  resources: Optional[dict] = None) -> Any:
        """This class as a Ray actor class (needs `pip install 'tfrl[ray]'`)."""
        return worker_setup.ray_actor_class(cls, num_cpus, num_gpus, memory,
                                            object_store_memory, resources)

    def setup_torch_data_parallel(self, url: str, world_rank: int, world_size: int,
                                  backend: str) -> None:
        """Not available: tfrl has no torch policies.

        Raises:
            NotImplementedError: Always; use `learner_workers` (a
                tf.distribute.MultiWorkerMirroredStrategy from TF_CONFIG).
        """
        raise NotImplementedError(
            "setup_torch_data_parallel is torch-only; tfrl policies are TensorFlow. For "
            "data-parallel learning across machines set learner_workers (e.g. .resources("
            "learner_workers=2)) and TF_CONFIG in each process: the policy then learns under "
            "tf.distribute.MultiWorkerMirroredStrategy.")

    def __repr__(self) -> str:
        return f"RolloutWorker(worker_index={self.worker_index}, policies={list(self.policy_map)})"


# Introspection (help(), IDEs, Ray) sees RLlib's keywords with their defaults.
RolloutWorker.__init__.__signature__ = worker_setup.SIGNATURE  # type: ignore[attr-defined]
