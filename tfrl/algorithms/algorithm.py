"""Algorithm: workers and a training step, driven one `train()` iteration at a time.

A concrete algorithm (PG, A2C, PPO, ...) sets two class attributes and one method:

    class PPO(Algorithm):
        config_class = PPOConfig               # its frozen config dataclass
        default_policy_class = PPOTFPolicy     # the policy it trains

        def training_step(self):               # one step, top to bottom
            batch = synchronous_parallel_sample(self.workers, self.shared_metrics, ...)
            info = train_one_step(self.workers, batch, self.shared_metrics, ...)
            sync_weights(self.workers, self.shared_metrics)
            return info

`train()` runs `training_step()` until the iteration holds `timesteps_per_iteration`
steps and lasted `min_iter_time_s`, then reports the episodes and `shared_metrics`
(counters, timers, learner info) as RLlib's result dict. An algorithm may instead define
only RLlib 1.x's `execution_plan(workers, config)` (a LocalIterator of result dicts, as
IMPALA, APPO and A3C do); `train()` then pulls one result from it.

With `in_graph=True` and a TF-native env (`"tfrl/CartPole-v1"`, ...), an algorithm that
`supports_in_graph` (PG, A2C, PPO) builds its workers without an env (the policy's spaces
come from the TF env) and an `InGraphIteration` that samples, computes advantages and
learns in one compiled call; its `training_step()` calls `in_graph_training_step()` in
place of sampling and learning. Checkpoints then also hold the TF envs' state. Evaluation
samples gymnasium's env of the same id (`"CartPole-v1"`) on the Python path.

`Algorithm(config=..., env=...)` takes the config dataclass or an RLlib-style dict,
builds the training `WorkerSet` (and an evaluation one when evaluation is configured).
Every `evaluation_interval`-th iteration evaluates the policies after training, or, with
`evaluation_parallel_to_training=True`, while the iteration trains: the evaluation
workers, given the weights of the iteration's start, sample in a thread of this process
(which drives remote evaluation workers when there are any) and `train()` waits for both.
`save()`/`restore()` write and read a checkpoint directory (see `checkpoints`)
holding every policy's weights and optimizer slots, filters, counters and RNG states,
so a restored algorithm continues as the saved one would have.
"""

import concurrent.futures
import logging
import os
import random
import tempfile
import threading
import time
from typing import Any, ClassVar, Dict, List, Optional, Type, Union

import keras
import numpy as np
import tensorflow as tf

from tfrl.algorithms import checkpoints
from tfrl.algorithms.algorithm_config import AlgorithmConfig
from tfrl.algorithms.fit_loop import fit
from tfrl.core import types
from tfrl.data.rollout_metrics import RolloutMetrics
from tfrl.data.sample_batch import DEFAULT_POLICY_ID
from tfrl.evaluation.metrics import summarize_episodes
from tfrl.evaluation.rollout_worker.state import get_worker_state, set_worker_state
from tfrl.evaluation.sampling.ops import unsquash_and_clip
from tfrl.evaluation.worker_set import WorkerSet
from tfrl.execution.common import STEPS_SAMPLED_COUNTER
from tfrl.execution.in_graph import (InGraphIteration, check_in_graph_config, gymnasium_env,
                                     in_graph_spaces)
from tfrl.execution.iter import LocalIterator, SharedMetrics
from tfrl.execution.metric_ops import CollectMetrics, OncePerTimeInterval, OncePerTimestepsElapsed
from tfrl.policy.nonfinite import NonFiniteStateError
from tfrl.utils.filter_manager import FilterManager

logger = logging.getLogger(__name__)


class ReportingIterator(LocalIterator[types.ResultDict]):
    """The result dicts of a plan, with the `CollectMetrics` operator that makes them.

    Args:
        results: The plan's (not yet started) iterator of result dicts.
        metrics_op: The operator at its end, whose episode window `Algorithm.save()`
            checkpoints.
    """

    def __init__(self, results: LocalIterator[types.ResultDict], metrics_op: CollectMetrics):
        super().__init__(results.base_iterator, results.shared_metrics, results.local_transforms,
                         timeout=results.timeout, name=results.name)
        self.metrics_op = metrics_op


def metrics_reporting(train_op: LocalIterator[Any], workers: types.WorkerSet,
                      config: Dict[str, Any]) -> ReportingIterator:
    """`StandardMetricsReporting` (RLlib's), keeping its `CollectMetrics` operator as the
    returned iterator's `metrics_op` so that checkpoints include the episode window."""
    metrics_op = CollectMetrics(workers, min_history=config["metrics_smoothing_episodes"],
                                timeout_seconds=config["collect_metrics_timeout"])
    it = (train_op.filter(OncePerTimestepsElapsed(config["timesteps_per_iteration"]))
          .filter(OncePerTimeInterval(config["min_iter_time_s"]))
          .for_each(metrics_op))
    return ReportingIterator(it, metrics_op)


class Algorithm:
    """Base class of the algorithms (RLlib's `Algorithm`, formerly `Trainer`).

    Args:
        config: The algorithm's config dataclass, an RLlib-style dict, or None (the
            defaults).
        env: The env (a registered name, gymnasium id or creator); overrides
            `config["env"]`.
        logger_creator: Accepted for RLlib compatibility; unused.

    Attributes:
        config: The frozen config (RLlib 2.x's `algo.config.lr`), which also reads as
            RLlib 1.x's flat dict (`algo.config["lr"]`, `dict(algo.config)`).
        algo_config: The same config object (tfrl's earlier name for it).
        workers: The training `WorkerSet`.
        evaluation_workers: The evaluation `WorkerSet`, or None.
        iteration: Number of completed `train()` calls.
        shared_metrics: The counters, timers and info the training steps update.
        train_exec_impl: The execution plan of an algorithm without `training_step`
            (None otherwise, and after a failed step until the next `train()`).
    """

    config_class: ClassVar[Type[AlgorithmConfig]] = AlgorithmConfig
    default_policy_class: Optional[type] = None
    # Whether `training_step()` runs the in-graph path when the config asks for it
    # (`in_graph=True`; see `in_graph_training_step`).
    supports_in_graph: ClassVar[bool] = False
    _name = "Algorithm"

    def __init__(self, config: Union[AlgorithmConfig, Dict[str, Any], None] = None,
                 env: Any = None, logger_creator: Any = None):
        algo_config = self._to_config(config)
        if env is not None:
            algo_config = algo_config.replace(env=env)
        if algo_config.env is None and algo_config.input == "sampler":
            raise ValueError(
                f"{type(self).__name__} needs an env: pass env='CartPole-v1' (a gymnasium id, "
                "a name given to tfrl.env.registry.register_env, or a creator function), or "
                "set it in the config; or, without an env, read experiences from another "
                "input (config.offline_data(input_=lambda ioctx: PolicyServerInput(ioctx, "
                "address, port)) with .environment(observation_space=..., action_space=...)).")
        if algo_config.in_graph:
            self._check_in_graph(algo_config)
        self.algo_config = algo_config
        self.config: AlgorithmConfig = algo_config
        self.iteration = 0
        self._time_total = 0.0
        self._episodes_total = 0
        self._start_time = time.time()
        self._first_train_time: Optional[float] = None
        self._logdir: Optional[str] = None
        if algo_config.seed is not None:
            keras.utils.set_random_seed(int(algo_config.seed))
        self.callbacks = algo_config.callbacks_class()
        self.workers: types.WorkerSet = self._make_workers(algo_config, algo_config.num_workers)
        self.evaluation_workers: Optional[types.WorkerSet] = None
        if algo_config.evaluation_interval or algo_config.evaluation_num_workers:
            self.evaluation_workers = self._make_evaluation_workers()
        # The counters, timers and info that `training_step()` passes to the operators,
        # and the operator that turns them and the episodes into a result dict.
        self.shared_metrics = SharedMetrics()
        self._metrics_op = CollectMetrics(
            self.workers, min_history=algo_config.metrics_smoothing_episodes,
            timeout_seconds=algo_config.collect_metrics_timeout)
        self._last_result_steps = 0
        self._last_result_time = time.monotonic()
        # The plan of an algorithm defined by `execution_plan` alone (None otherwise).
        self.train_exec_impl: Optional[LocalIterator[types.ResultDict]] = None
        # The compiled iteration of the in-graph path (None on the Python path).
        self.in_graph_iteration: Optional[InGraphIteration] = None
        # The thread that evaluates while training (evaluation_parallel_to_training).
        self._evaluation_thread: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self._init_training()
        self.callbacks.on_algorithm_init(algorithm=self)

    # ------------------------------------------------------------------ setup

    @classmethod
    def _to_config(cls, config: Any) -> AlgorithmConfig:
        if isinstance(config, cls.config_class):
            return config
        if isinstance(config, AlgorithmConfig):
            return cls.config_class.from_dict(config.to_dict())
        if config is None or isinstance(config, dict):
            return cls.config_class.from_dict(config or {})
        raise TypeError(f"{cls.__name__}(config=...) takes a {cls.config_class.__name__}, a "
                        f"dict or None; received {type(config).__name__}.")

    @classmethod
    def get_default_config(cls) -> Dict[str, Any]:
        """The default config as an RLlib-style dict."""
        return cls.config_class().to_dict()

    def _check_in_graph(self, config: AlgorithmConfig) -> None:
        """Raises a `ValueError` if this algorithm cannot train `config` in the graph."""
        if not self.supports_in_graph:
            raise ValueError(
                f"{type(self).__name__} does not train on the in-graph path; received "
                "in_graph=True. Expected an on-policy algorithm that does (PPO, A2C, PG), "
                "or set .rollouts(in_graph=False).")
        check_in_graph_config(config)

    def _make_workers(self, config: AlgorithmConfig, num_workers: int) -> types.WorkerSet:
        if config.in_graph:
            # The policy's spaces come from the TF-native env, which the compiled
            # iteration steps itself: the workers make no env.
            obs_space, action_space = in_graph_spaces(config.env)
            config = config.replace(env=None, observation_space=obs_space,
                                    action_space=action_space)
        # The frozen config: WorkerSet takes its dict (keys already checked).
        return WorkerSet(policy_class=self.default_policy_class, trainer_config=config,
                         num_workers=num_workers, logdir=self._logdir)

    def _make_evaluation_workers(self) -> types.WorkerSet:
        overrides = {"explore": False, "in_evaluation": True,
                     **self.algo_config.evaluation_config}
        if self.algo_config.in_graph:  # evaluated on gymnasium's env of the same id
            env, env_config = gymnasium_env(self.algo_config.env,
                                            self.algo_config.env_config)
            overrides.update(env=env, env_config=env_config, in_graph=False)
        eval_config = self.algo_config.replace(**overrides)
        return self._make_workers(eval_config, self.algo_config.evaluation_num_workers)

    @property
    def logdir(self) -> str:
        """Where `save()` writes by default: a new temporary directory, made on first use."""
        if self._logdir is None:
            self._logdir = tempfile.mkdtemp(prefix=f"{type(self).__name__}_")
        return self._logdir

    @staticmethod
    def execution_plan(workers: types.WorkerSet, config: Dict[str, Any]
                       ) -> LocalIterator[types.ResultDict]:
        """The LocalIterator of result dicts this algorithm trains with."""
        raise NotImplementedError("Algorithm subclasses define execution_plan(workers, config).")

    # --------------------------------------------------------------- training

    def _init_training(self) -> None:
        """Builds what training needs besides the workers: the compiled iteration of the
        in-graph path, or the plan of an algorithm defined by `execution_plan` alone
        (subclasses add e.g. a replay buffer)."""
        if self.algo_config.in_graph:
            self.in_graph_iteration = InGraphIteration(
                self.workers.local_worker().get_policy(), self.config,
                standardize_advantages=self.config.get("normalize_advantages") == "batch")
        elif self._plan_backed():
            self._build_plan()

    def in_graph_training_step(self) -> Dict[str, types.LearnerInfo]:
        """Sampling, advantages and learning in one compiled call (the in-graph path,
        `in_graph=True`): counts the steps, records the learner info and hands the
        finished episodes to the metrics; the learner info."""
        if self.in_graph_iteration is None:
            raise RuntimeError(f"{type(self).__name__}: in_graph_training_step() needs "
                               "in_graph=True in the config.")
        info, episodes = self.in_graph_iteration.step(self.shared_metrics)
        self._metrics_op.add_episodes(episodes)
        return info

    @classmethod
    def _plan_backed(cls) -> bool:
        """Whether the algorithm trains through its `execution_plan`: the class that
        defines it is a subclass of the one defining `training_step` (an RLlib 1.x
        algorithm defines only the plan; a subclass of PPO may replace PPO's plan)."""
        def definer(name: str) -> int:
            return next(i for i, k in enumerate(cls.__mro__) if name in vars(k))
        return definer("execution_plan") < definer("training_step")

    def training_step(self) -> Dict[str, Any]:
        """One training step: sample, learn, update the workers. `train()` calls it until
        the iteration holds `timesteps_per_iteration` steps and lasted `min_iter_time_s`,
        then collects the episode metrics; it returns the learner info
        `{policy_id: {"learner_stats": ...}}`.

        This default serves algorithms defined by an `execution_plan` alone (RLlib 1.x
        style, and the asynchronous IMPALA, APPO and A3C, whose learner thread or
        gradient stream overlaps with sampling): it returns the plan's next result dict
        (the plan applies the iteration's thresholds itself). A plan whose step raised
        is dropped, and the next call builds a new one (same counters and episode
        window; what the old one held in flight is not trained on).
        """
        if self.train_exec_impl is None:
            self._build_plan()
        plan = self.train_exec_impl
        if plan is None:
            raise RuntimeError(f"{type(self).__name__}.execution_plan() built no plan.")
        try:
            return next(plan)
        except StopIteration as e:
            self._drop_plan()
            raise RuntimeError(f"{type(self).__name__}'s execution plan ended (its input "
                               "has no more items); build a new algorithm to train "
                               "again.") from e
        except BaseException:
            self._drop_plan()
            raise

    def _build_plan(self) -> None:
        """Builds the execution plan on the algorithm's counters, timers, info and
        episode window."""
        # Plans take RLlib 1.x's flat config dict.
        plan = self.execution_plan(self.workers, self.config.to_dict())
        plan.shared_metrics.restore(self.shared_metrics.save())
        plan.shared_metrics.timers = self.shared_metrics.timers
        self.shared_metrics = plan.shared_metrics
        metrics_op = getattr(plan, "metrics_op", None)
        if metrics_op is not None:
            metrics_op.episode_history = list(self._metrics_op.episode_history)
            self._metrics_op = metrics_op
        self.train_exec_impl = plan

    def _drop_plan(self) -> None:
        """Forgets a plan whose step raised (its generators are finished)."""
        self.train_exec_impl = None

    def _run_iteration(self) -> Dict[str, Any]:
        """Runs `training_step()` until the iteration is complete; the result dict."""
        if self._plan_backed():
            return dict(self.training_step())
        while True:
            try:
                self.training_step()
            except StopIteration as e:  # e.g. from an input reader: not a bare one
                raise RuntimeError(f"{type(self).__name__}.training_step() raised "
                                   f"StopIteration: {e!r}") from e
            if self._iteration_complete():
                return self._metrics_op.report(self.shared_metrics)

    def _iteration_complete(self) -> bool:
        """True once `timesteps_per_iteration` steps were sampled since the last result
        and then `min_iter_time_s` seconds have passed since it (RLlib's
        `OncePerTimestepsElapsed` and `OncePerTimeInterval`, in that order)."""
        min_steps = int(self.config["timesteps_per_iteration"] or 0)
        if min_steps > 0:
            steps = self.shared_metrics.counters[STEPS_SAMPLED_COUNTER]
            if steps - self._last_result_steps < min_steps:
                return False
            self._last_result_steps = steps
        min_seconds = float(self.config["min_iter_time_s"] or 0)
        if min_seconds > 0:
            now = time.monotonic()
            if now - self._last_result_time < min_seconds:
                return False
            self._last_result_time = now
        return True

    def train(self) -> Dict[str, Any]:
        """Runs one iteration (`training_step()` until it is complete); its result dict.

        If the iteration raises (an env or a callback failed, a worker timed out, a
        learner step went non-finite), the error reaches the caller unchanged and the
        algorithm stays usable: the next `train()` runs a new iteration, with the
        counters where they were (steps sampled before the error stay counted; a batch
        that was not learned on is dropped).
        """
        start = time.time()
        if self._first_train_time is None:
            self._first_train_time = start
        interval = int(self.algo_config.evaluation_interval or 0)
        evaluate = interval > 0 and (self.iteration + 1) % interval == 0
        trained = threading.Event()  # ends an evaluation_duration="auto" in parallel
        evaluation = (self._evaluate_in_parallel(trained)
                      if evaluate and self.algo_config.evaluation_parallel_to_training
                      else None)
        try:
            result = self._run_iteration()
        except BaseException:
            trained.set()
            if evaluation is not None:  # no evaluation outlives the iteration
                concurrent.futures.wait([evaluation])
            raise
        trained.set()
        self._sync_filters_if_needed()
        self.iteration += 1
        if evaluation is not None:
            result.update(evaluation.result())
        elif evaluate:
            result.update(self.evaluate())
        took = time.time() - start
        self._time_total += took
        self._episodes_total += int(result.get("episodes_this_iter", 0) or 0)
        counters = dict(self.shared_metrics.counters)
        result.setdefault("info", {})
        result.update(
            training_iteration=self.iteration,
            iterations_since_restore=self.iteration,
            timesteps_total=int(counters.get("num_env_steps_sampled", 0)),
            agent_timesteps_total=int(counters.get("num_agent_steps_sampled", 0)),
            episodes_total=self._episodes_total,
            time_this_iter_s=took,
            time_total_s=self._time_total,
            timestamp=int(time.time()),
            counters=counters,
            done=False,
        )
        self.callbacks.on_train_result(algorithm=self, result=result)
        return result

    def _sync_filters_if_needed(self) -> None:
        """Merges the remote workers' observation-filter statistics into the local
        worker's filters and sends the merged filters back (as RLlib does after each
        training step), so every worker normalises with the statistics of all data."""
        workers = self.workers
        if self.algo_config.observation_filter == "NoFilter" or not workers.remote_workers():
            return
        FilterManager.synchronize(workers.local_worker().filters, workers.remote_workers())

    def fit(self, total_timesteps: Optional[int] = None, iterations: Optional[int] = None,
            callbacks: Optional[List[Any]] = None, verbose: Any = "auto") -> Any:
        """Keras-style training loop with Keras callbacks (one epoch = one `train()`);
        returns a `keras.callbacks.History`. See `tfrl.algorithms.fit_loop.fit`."""
        return fit(self, total_timesteps=total_timesteps, iterations=iterations,
                   callbacks=callbacks, verbose=verbose)

    def evaluate(self) -> Dict[str, Any]:
        """Runs `evaluation_duration` episodes (or timesteps) with the evaluation workers
        (`explore=False` unless `evaluation_config` says otherwise).

        Returns:
            `{"evaluation": metrics}` (RLlib's shape) with `episode_reward_mean`, ... of
            the evaluation episodes.
        """
        self.callbacks.on_evaluate_start(algorithm=self)
        self._sync_evaluation_workers()
        return self._run_evaluation()

    def _sync_evaluation_workers(self) -> None:
        """Gives the evaluation workers the training workers' weights and filters."""
        if self.evaluation_workers is None:
            self.evaluation_workers = self._make_evaluation_workers()
        weights = self.workers.local_worker().get_weights()
        filters = self.workers.local_worker().get_filters()
        self.evaluation_workers.foreach_worker(
            lambda w: (w.set_weights(weights), w.sync_filters(filters)))

    def _evaluate_in_parallel(self, trained: threading.Event
                              ) -> "concurrent.futures.Future[Dict[str, Any]]":
        """Starts an evaluation, on the weights of now, in the evaluation thread
        (`trained`: set when the iteration's training ended, which ends an evaluation of
        `evaluation_duration="auto"`)."""
        self.callbacks.on_evaluate_start(algorithm=self)
        self._sync_evaluation_workers()
        if self._evaluation_thread is None:
            self._evaluation_thread = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix=f"{type(self).__name__}-evaluation")
        return self._evaluation_thread.submit(self._run_evaluation, trained)

    def _run_evaluation(self, trained: Optional[threading.Event] = None) -> Dict[str, Any]:
        """Samples `evaluation_duration` episodes (or timesteps) with the evaluation
        workers as they are; `{"evaluation": metrics}`. With `evaluation_duration="auto"`:
        sampling rounds until `trained` is set (at least one round), or without `trained`
        max(1, evaluation_num_workers) episodes (or timesteps), as RLlib does."""
        eval_workers = self.evaluation_workers
        if eval_workers is None:  # _sync_evaluation_workers makes them before this runs
            raise RuntimeError("_run_evaluation() called before the evaluation workers "
                               "were made; call evaluate() instead.")
        by_episodes = self.algo_config.evaluation_duration_unit == "episodes"
        auto = self.algo_config.evaluation_duration == "auto"
        duration = (max(1, int(self.algo_config.evaluation_num_workers)) if auto
                    else int(self.algo_config.evaluation_duration))
        until_trained = trained if auto else None
        samplers = ([eval_workers.local_worker()] if not eval_workers.remote_workers()
                    else None)
        episodes: List[Any] = []
        steps = 0
        rounds = 0

        def enough() -> bool:
            if until_trained is not None:
                return rounds > 0 and until_trained.is_set()
            return (len(episodes) if by_episodes else steps) >= duration

        while not enough():
            rounds += 1
            if samplers is not None:
                batches = [w.sample() for w in samplers]
                metrics = [m for w in samplers for m in w.get_metrics()]
            else:
                # the local evaluation worker has no env when there are remote ones
                batches = eval_workers.foreach_worker(lambda w: w.sample(), local_worker=False)
                metrics = [m for ms in eval_workers.foreach_worker(
                    lambda w: w.get_metrics(), local_worker=False) for m in ms]
            steps += sum(b.env_steps() if hasattr(b, "env_steps") else b.count for b in batches)
            episodes.extend(metrics)
        if by_episodes and until_trained is None:
            episodes = episodes[:duration]
        result = summarize_episodes(episodes, episodes, keep_custom_metrics=False)
        result["timesteps_this_iter"] = steps
        self.callbacks.on_evaluate_end(algorithm=self, evaluation_metrics=result)
        return {"evaluation": result}

    # ----------------------------------------------------------------- acting

    def compute_single_action(self, observation: Any = None, state: Optional[List[Any]] = None,
                              *, prev_action: Any = None, prev_reward: Any = None,
                              info: Any = None, input_dict: Any = None,
                              policy_id: str = DEFAULT_POLICY_ID, full_fetch: bool = False,
                              explore: Optional[bool] = None, timestep: Optional[int] = None,
                              unsquash_action: Optional[bool] = None,
                              clip_action: Optional[bool] = None, **kwargs) -> Any:
        """The action for one raw env observation, preprocessed and filtered as the
        workers do (the filter is not updated).

        Returns:
            The action; `(action, state_out, extra_fetches)` if `state` is given or
            `full_fetch`.
        """
        worker = self.workers.local_worker()
        policy = self._policy(policy_id, "compute_single_action")
        if input_dict is not None:
            observation = input_dict["obs"]
        obs = worker.preprocessors[policy_id].transform(observation)
        obs = worker.filters[policy_id](obs, update=False)
        action, state_out, extra = policy.compute_single_action(
            obs, state, prev_action=prev_action, prev_reward=prev_reward, info=info,
            explore=explore, timestep=timestep, **kwargs)
        unsquash = self.config["normalize_actions"] if unsquash_action is None else unsquash_action
        clip = self.config["clip_actions"] if clip_action is None else clip_action
        action = unsquash_and_clip(action, policy.action_space, unsquash, clip)
        if state or full_fetch:
            return action, state_out, extra
        return action

    def get_policy(self, policy_id: str = DEFAULT_POLICY_ID) -> Optional[types.Policy]:
        """The local worker's policy `policy_id` (None if there is none)."""
        return self.workers.local_worker().get_policy(policy_id)

    def _policy(self, policy_id: str, where: str) -> types.Policy:
        worker = self.workers.local_worker()
        if policy_id not in worker.policy_map:
            raise KeyError(f"{where}(): no policy {policy_id!r}; this algorithm has "
                           f"{sorted(worker.policy_map)} (policy {policy_id!r} not found "
                           "in PolicyMap).")
        return worker.policy_map[policy_id]

    def get_weights(self, policies: Optional[List[str]] = None) -> Dict[str, Any]:
        """`{policy_id: weights}` of the local worker."""
        return self.workers.local_worker().get_weights(policies)

    def set_weights(self, weights: Dict[str, Any]) -> None:
        """Sets the local worker's weights and syncs them to the remote workers."""
        self.workers.local_worker().set_weights(weights)
        if self.workers.remote_workers():
            self.workers.sync_weights()

    def export_policy_model(self, export_dir: str, policy_id: str = DEFAULT_POLICY_ID,
                            onnx: Optional[int] = None) -> None:
        """Writes policy `policy_id` as a SavedModel with serving signatures, or as ONNX
        with opset `onnx` (`Policy.export_model`)."""
        self._policy(policy_id, "export_policy_model").export_model(export_dir, onnx=onnx)

    def export_policy_checkpoint(self, export_dir: str,
                                 policy_id: str = DEFAULT_POLICY_ID) -> None:
        """Writes policy `policy_id`'s model/optimizer checkpoint (`Policy.export_checkpoint`)."""
        self._policy(policy_id, "export_policy_checkpoint").export_checkpoint(export_dir)

    # ------------------------------------------------------------ checkpoints

    def __getstate__(self) -> Dict[str, Any]:
        state = {
            "episode_history": [tuple(m) for m in self._metrics_op.episode_history],
            "worker": get_worker_state(self.workers.local_worker(), specs=False),
            "iteration": self.iteration,
            "time_total": self._time_total,
            "episodes_total": self._episodes_total,
            "metrics": self.shared_metrics.save(),
            "rng": {"python": random.getstate(), "numpy": np.random.get_state(),
                    "tf_global_generator": tf.random.get_global_generator().state.numpy()},
        }
        if self.in_graph_iteration is not None:
            state["in_graph"] = self.in_graph_iteration.get_state()
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        set_worker_state(self.workers.local_worker(), state["worker"], same_policies=True)
        if self.workers.remote_workers():
            filters = self.workers.local_worker().get_filters()
            self.workers.foreach_worker(lambda w: w.sync_filters(filters))
            self.workers.sync_weights()
        self.iteration = int(state["iteration"])
        self._time_total = float(state["time_total"])
        self._episodes_total = int(state["episodes_total"])
        self.shared_metrics.restore(state["metrics"])
        # The next iteration's step threshold counts from the restored counter, as it
        # would have from the last result's (a checkpoint is saved between iterations).
        self._last_result_steps = int(
            self.shared_metrics.counters.get(STEPS_SAMPLED_COUNTER, 0))
        self._metrics_op.episode_history = [RolloutMetrics(*m) for m in state["episode_history"]]
        rng = state["rng"]
        random.setstate(rng["python"])
        np.random.set_state(rng["numpy"])
        tf.random.get_global_generator().state.assign(rng["tf_global_generator"])
        if self.in_graph_iteration is not None and "in_graph" in state:
            self.in_graph_iteration.set_state(state["in_graph"])

    def save(self, checkpoint_dir: Optional[str] = None) -> str:
        """Writes a checkpoint directory `checkpoint_<iteration>` under `checkpoint_dir`
        (default: the algorithm's logdir), atomically; returns its path.

        It holds the policies' states (weights, optimizer variables, RNG states, KL
        coefficient, schedule positions), filters, counters, the metrics' episode
        window and the global Python/numpy/TF RNG states. The environments' own state is
        not saved: a restored algorithm starts new episodes, so its continuation equals
        the uninterrupted run exactly when the env holds no state across `sample()`
        calls (e.g. `batch_mode="complete_episodes"` with resets that do not depend on
        the env's RNG).
        """
        directory = checkpoint_dir or self.logdir
        path = os.path.join(directory, f"checkpoint_{self.iteration:06d}")
        return checkpoints.write_checkpoint(path, self.__getstate__(), {
            "algorithm": type(self).__name__, "iteration": self.iteration,
            "policy_ids": sorted(self.workers.local_worker().policy_map)})

    save_checkpoint = save

    def restore(self, checkpoint_path: str) -> None:
        """Restores a `save()` directory into this algorithm (same config and policies)."""
        state, metadata = checkpoints.read_checkpoint(checkpoint_path, with_metadata=True)
        saved = metadata.get("algorithm")
        if saved and saved != type(self).__name__:
            raise ValueError(f"restore(): {checkpoint_path!r} holds a {saved} checkpoint; this "
                             f"is a {type(self).__name__}. Restore it into a {saved}.")
        try:
            self.__setstate__(state)
        except NonFiniteStateError as error:  # checked before anything was restored
            arrays = os.path.join(checkpoint_path, checkpoints.ARRAYS_FILE)
            raise checkpoints.CheckpointError(f"restore(): {arrays!r}: {error}") from None

    load_checkpoint = restore

    def stop(self) -> None:
        """Stops the workers (and evaluation workers)."""
        if self._evaluation_thread is not None:
            self._evaluation_thread.shutdown(wait=True)
            self._evaluation_thread = None
        for workers in (self.workers, self.evaluation_workers):
            if workers is not None:
                workers.stop()

    cleanup = stop

    def __repr__(self) -> str:
        return f"{type(self).__name__}(env={self.config['env']!r})"

