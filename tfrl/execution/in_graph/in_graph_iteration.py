"""InGraphIteration: an on-policy training iteration as one compiled call.

For an environment written in TensorFlow (`tfrl.env.tf_envs`, ids `"tfrl/<gymnasium
id>"`), one `tf.function` runs a whole iteration of PG, A2C or PPO:

1. `T` steps of `N` environments (`N = num_envs_per_worker`; `T` the fewest multiples
   of `rollout_fragment_length` that hold `train_batch_size` steps, as the Python path's
   sampling rounds do), acting with the policy's own `action_graph` (its Keras model,
   action distribution and sampling generator);
2. the bootstrap values of the trajectories' ends (0 after a termination, else
   `V(final_obs)`: a truncated episode and the rollout's end are bootstrapped, as
   `postprocessing.bootstrap_value` does) and the advantages
   (`advantages.time_major_advantages`, `compute_advantages`' maths), standardized over
   the batch if the algorithm does (`normalize_advantages="batch"`);
3. the policy's learning loop on the `N * T` rows (`TFPolicy.learn_graph`: the same
   epochs, minibatches, loss, optimizer and non-finite guard as `learn_on_batch`);
4. the returns and lengths of the episodes that ended, summed in the loop.

The environments' state, their observations and the running returns and lengths
persist between calls (tensors kept here, in `get_state()`), so episodes run across
iterations as in the Python path. The host side (`step`) counts the steps, records the
learner info and hands the finished episodes on as `RolloutMetrics`.

What the Python path does that this one does not (refused with an error by
`check_in_graph_config`): remote workers, recurrent models, observation filters,
reward clipping, `complete_episodes` batches, per-episode callbacks. Evaluation runs on
the Python path, on gymnasium's env of the same id (`gymnasium_env`).
"""

import time
from typing import Any, Dict, List, Mapping, Optional, Tuple

import gymnasium as gym
import numpy as np
import tensorflow as tf

from tfrl.core.columns import Columns
from tfrl.data.rollout_metrics import RolloutMetrics
from tfrl.data.sample_batch import DEFAULT_POLICY_ID
from tfrl.env.base_env_interface import _DUMMY_AGENT_ID
from tfrl.env.tf_envs import TF_ENVS, TFEnvState, TFVectorEnv, make_tf_env
from tfrl.execution.common import (AGENT_STEPS_SAMPLED_COUNTER, AGENT_STEPS_TRAINED_COUNTER,
                                   LEARNER_INFO, STEPS_SAMPLED_COUNTER,
                                   STEPS_TRAINED_COUNTER, STEPS_TRAINED_THIS_ITER_COUNTER)
from tfrl.execution.in_graph.advantages import time_major_advantages
from tfrl.execution.iter import SharedMetrics
from tfrl.policy import space_specs

# The timer of the compiled call (sampling and learning together).
IN_GRAPH_TIMER = "in_graph_iteration"
# Callback hooks the compiled iteration cannot call (they run per episode or per batch).
_UNSUPPORTED_HOOKS = ("on_episode_start", "on_episode_step", "on_episode_end",
                      "on_postprocess_trajectory", "on_sample_end", "on_learn_on_batch",
                      "on_sub_environment_created")
_FIX = "Set .rollouts(in_graph=False) to train on the Python sampling path"


def check_in_graph_config(config: Mapping[str, Any]) -> None:
    """Raises a `ValueError` naming what is received, what is expected and how to fix it
    if `config` (an algorithm config) cannot train on the in-graph path."""
    env = config["env"]
    if not (isinstance(env, str) and env in TF_ENVS):
        raise ValueError(
            f"in_graph=True runs a TF-native environment inside the compiled iteration; "
            f"received env={env!r}. Expected one of {sorted(TF_ENVS)} (e.g. "
            f"'tfrl/CartPole-v1' for gymnasium's CartPole-v1). {_FIX}.")
    refusals = [
        (config["num_workers"] > 0, "num_workers", config["num_workers"], "0",
         "the compiled iteration samples in the driver; set num_workers=0"),
        (config["model"].get("use_lstm") or config["model"].get("use_attention"),
         "model", {k: config["model"].get(k) for k in ("use_lstm", "use_attention")},
         "a feed-forward model", "set use_lstm=False and use_attention=False"),
        (config["observation_filter"] != "NoFilter", "observation_filter",
         config["observation_filter"], "'NoFilter'", "set observation_filter='NoFilter'"),
        (config["clip_rewards"] not in (None, False), "clip_rewards", config["clip_rewards"],
         "None", "set clip_rewards=None"),
        (config["batch_mode"] != "truncate_episodes", "batch_mode", config["batch_mode"],
         "'truncate_episodes'", "set batch_mode='truncate_episodes'"),
        (config["horizon"] is not None, "horizon", config["horizon"], "None",
         "set env_config={'max_episode_steps': ...} instead"),
        (len(config["multiagent"].get("policies") or {}) > 1, "multiagent.policies",
         sorted(config["multiagent"].get("policies") or {}), "one policy",
         "train one policy"),
    ]
    for refused, key, received, expected, fix in refusals:
        if refused:
            raise ValueError(f"in_graph=True does not support {key}={received!r}; expected "
                             f"{expected}: {fix}. {_FIX}.")
    callbacks = config["callbacks"]
    hooks = [h for h in _UNSUPPORTED_HOOKS if callbacks.overrides(h)]
    if hooks:
        raise ValueError(
            f"in_graph=True cannot call the per-episode and per-batch callback hooks; "
            f"received callbacks {callbacks.__name__} overriding {hooks}. Expected only "
            f"on_algorithm_init, on_train_result and the evaluation hooks. {_FIX}.")


def in_graph_spaces(env_id: str) -> Tuple[gym.Space, gym.Space]:
    """The observation and action spaces of one sub-env of the TF-native env `env_id`
    (for the policy, which the workers build before the iteration makes the env)."""
    env_class = TF_ENVS[env_id]
    return env_class.observation_space, env_class.action_space


def gymnasium_env(env_id: str, env_config: Optional[Mapping[str, Any]]
                  ) -> Tuple[str, Dict[str, Any]]:
    """The gymnasium id and `gym.make` keywords of the env that the TF-native env
    `env_id` with `env_config` reimplements (for evaluation on the Python path)."""
    env_config = {k: v for k, v in dict(env_config or {}).items() if k != "dtype"}
    return TF_ENVS[env_id].env_id, env_config


class InGraphIteration:
    """Sampling, advantages and learning of one on-policy iteration in one compiled call
    (see the module docstring).

    Args:
        policy: The `OnPolicyTFPolicy` to act with and train (its `action_graph`,
            `call_model`, `learn_graph`; its config's `gamma`, `lambda`, `use_gae`,
            `use_critic`, `no_done_at_end`, `num_sgd_iter`, `sgd_minibatch_size`,
            `shuffle_sequences`).
        config: The algorithm config (`env`, `env_config`, `num_envs_per_worker`,
            `rollout_fragment_length`, `train_batch_size`, `seed`, `explore`,
            `normalize_actions`, `clip_actions`), checked by `check_in_graph_config`.
        standardize_advantages: Standardize the advantages over the batch (PPO's
            `normalize_advantages="batch"`).

    Attributes:
        env: The `TFVectorEnv`.
        rollout_length: `T`, steps per environment per iteration.
        batch_size: `N * T`, the rows learned on per iteration.
        num_traces: How often the iteration's function was traced (1 after any number
            of iterations).
    """

    def __init__(self, policy: Any, config: Mapping[str, Any],
                 standardize_advantages: bool = False):
        check_in_graph_config(config)
        if policy.is_recurrent():
            raise ValueError("in_graph=True takes a feed-forward model; the policy's model "
                             f"is recurrent. {_FIX}.")
        self._policy = policy
        self._config = config
        try:
            self.env: TFVectorEnv = make_tf_env(config["env"], config["num_envs_per_worker"],
                                                **dict(config["env_config"] or {}))
        except TypeError as e:
            raise ValueError(
                f"in_graph=True: env_config for {config['env']} takes max_episode_steps and "
                f"dtype; received {dict(config['env_config'])!r} ({e}).") from None
        for what, env_space, policy_space in (
                ("observation", self.env.observation_space, policy.observation_space),
                ("action", self.env.action_space, policy.action_space)):
            if env_space != policy_space:
                raise ValueError(f"in_graph=True: the policy's {what} space {policy_space} is "
                                 f"not the env's {env_space}.")
        num_envs = self.env.num_envs
        fragment = config["rollout_fragment_length"]
        if fragment == "auto":
            fragment = -(-config["train_batch_size"] // num_envs)
        rounds = -(-config["train_batch_size"] // (num_envs * fragment))
        self.rollout_length = int(rounds * fragment)
        self.batch_size = num_envs * self.rollout_length
        pconf = policy.config
        self._num_sgd_iter = int(pconf["num_sgd_iter"])
        minibatch = pconf["sgd_minibatch_size"] or self.batch_size
        if minibatch > self.batch_size:
            raise ValueError(
                f"in_graph=True: sgd_minibatch_size={minibatch} is larger than the batch "
                f"({num_envs} envs x {self.rollout_length} steps = {self.batch_size} rows). "
                "Lower sgd_minibatch_size or raise train_batch_size.")
        replicas = policy.strategy.num_replicas_in_sync
        if minibatch % replicas:
            raise ValueError(
                f"in_graph=True: each minibatch is split evenly over the policy's {replicas} "
                f"replicas ({policy.devices}); received sgd_minibatch_size={minibatch}. "
                f"Expected a multiple of {replicas}.")
        self._minibatch = int(minibatch)
        self._shuffle = bool(pconf["shuffle_sequences"])
        self._standardize = bool(standardize_advantages)
        self._explore = bool(config["explore"])
        seed = config["seed"]
        if seed is None:
            seed = int(np.random.randint(2**31))
        state, obs = self.env.reset(seed=int(seed))
        self._carry: Dict[str, Any] = {
            "env_state": state, "obs": obs,
            "episode_return": tf.zeros([num_envs], tf.float32),
            "episode_length": tf.zeros([num_envs], tf.int32)}
        # Fix the train columns (the loss's) from rows shaped like the rollout's.
        self._train_columns = policy.prepare_learn_graph(self._example_rows())
        # Acting draws its seeds from the policy's sampling generator: made now, not
        # while tracing (a variable made in a trace makes tf.function trace again).
        policy.sampling_generator  # noqa: B018
        # Not XLA-compiled as a whole: XLA has no CPU kernel for categorical sampling
        # (StatelessMultinomial), and compiling the whole iteration costs more start-up
        # than it saves on small problems (bench/RESULTS.md). `jit_compile=True` still
        # compiles the loss and gradients, as on the Python path.
        self._iteration_fn = tf.function(self._iteration_graph, autograph=False)
        self._sample_fn: Optional[Any] = None
        self.num_traces = 0

    # ----------------------------------------------------------------- host side

    def step(self, metrics: SharedMetrics) -> Tuple[Dict[str, Any], List[RolloutMetrics]]:
        """One iteration: the compiled call, then its bookkeeping in `metrics` (steps
        sampled and trained, `info[LEARNER_INFO]`, the `IN_GRAPH_TIMER` timer).

        Returns:
            `(info, episodes)`: the learner info `{policy_id: {"learner_stats": ...}}`
            (as `train_one_step`'s) and the `RolloutMetrics` of the episodes that ended.
        """
        policy = self._policy
        updates_before = int(policy.num_grad_updates.numpy())
        seed = tf.constant([policy.shuffle_seed(), 0], tf.int64)
        timer = metrics.timers[IN_GRAPH_TIMER]
        with timer:
            carry, (done, returns, lengths), stats = self._iteration_fn(self._carry, seed)
            timer.push_units_processed(self.batch_size)
        self._carry = carry
        done = done.numpy()  # [T, N]: the episodes in step-then-env order
        returns, lengths = returns.numpy()[done], lengths.numpy()[done]
        num_steps = self._num_sgd_iter * (self.batch_size // self._minibatch)
        info = {DEFAULT_POLICY_ID: policy.learn_graph_result(stats, updates_before, num_steps)}
        for counter in (STEPS_SAMPLED_COUNTER, AGENT_STEPS_SAMPLED_COUNTER,
                        STEPS_TRAINED_COUNTER, AGENT_STEPS_TRAINED_COUNTER):
            metrics.counters[counter] += self.batch_size
        metrics.counters[STEPS_TRAINED_THIS_ITER_COUNTER] = self.batch_size
        metrics.info[LEARNER_INFO] = info
        agent = (_DUMMY_AGENT_ID, DEFAULT_POLICY_ID)
        episodes = [RolloutMetrics(int(n), float(r), agent_rewards={agent: float(r)})
                    for r, n in zip(returns, lengths)]
        return info, episodes

    def sample(self) -> Dict[str, np.ndarray]:
        """One rollout and its advantages, without learning (for inspection and tests):
        the time-major `[T, N, ...]` columns `obs`, `actions`, `action_logp`,
        `action_dist_inputs`, `vf_preds`, `rewards`, `terminateds`, `truncateds`,
        `new_obs` (the observation each step reached, before a reset), `last_r` (the
        bootstrap value of a trajectory ending there), `advantages` and
        `value_targets` (not standardized), `episode_return` and `episode_length` (of
        each env's episode up to and including the step). The environments move on as
        in `step`."""
        if self._sample_fn is None:
            self._sample_fn = tf.function(self._sample_graph, autograph=False)
        carry, columns = self._sample_fn(self._carry)
        self._carry = carry
        return {k: v.numpy() for k, v in columns.items()}

    def get_state(self) -> Dict[str, np.ndarray]:
        """The environments' state, observations and running episode returns/lengths."""
        state = self._carry["env_state"]
        return {"physics": state.physics.numpy(), "elapsed_steps": state.elapsed_steps.numpy(),
                "key": state.key.numpy(), "obs": self._carry["obs"].numpy(),
                "episode_return": self._carry["episode_return"].numpy(),
                "episode_length": self._carry["episode_length"].numpy()}

    def set_state(self, state: Mapping[str, np.ndarray]) -> None:
        """Restores a `get_state()` result (same env and number of envs)."""
        env_state = self.env.make_state(state["physics"], state["elapsed_steps"],
                                        seed=tf.constant(state["key"], tf.int64))
        self._carry = {"env_state": env_state,
                       "obs": tf.constant(state["obs"], tf.float32),
                       "episode_return": tf.constant(state["episode_return"], tf.float32),
                       "episode_length": tf.constant(state["episode_length"], tf.int32)}

    def _example_rows(self) -> Dict[str, np.ndarray]:
        """Two zero rows of every column the rollout makes (fixes the train columns)."""
        policy = self._policy
        action_spec = space_specs.batch_spec(policy.action_space)
        return {
            Columns.OBS: np.zeros((2,) + self.env.observation_space.shape, np.float32),
            Columns.ACTIONS: np.zeros((2,) + tuple(action_spec.shape[1:]),
                                      action_spec.dtype.as_numpy_dtype),
            Columns.ACTION_LOGP: np.zeros(2, np.float32),
            Columns.ACTION_DIST_INPUTS: np.zeros((2, policy.num_outputs), np.float32),
            Columns.VF_PREDS: np.zeros(2, np.float32),
            Columns.REWARDS: np.zeros(2, np.float32),
            Columns.ADVANTAGES: np.zeros(2, np.float32),
            Columns.VALUE_TARGETS: np.zeros(2, np.float32)}

    # ------------------------------------------------------------- compiled side

    def _iteration_graph(self, carry, seed):
        self.num_traces += 1
        carry, steps, episodes = self._rollout(carry)
        columns = self._with_advantages(steps)
        rows = {k: tf.reshape(v, tf.concat([[-1], tf.shape(v)[2:]], 0))  # [T * N, ...]
                for k, v in columns.items()}
        if self._standardize:
            advantages = rows[Columns.ADVANTAGES]
            centered = advantages - tf.reduce_mean(advantages)
            std = tf.sqrt(tf.reduce_mean(tf.square(centered)))
            rows[Columns.ADVANTAGES] = centered / tf.maximum(1e-4, std)
        stats = self._policy.learn_graph(
            {k: rows[k] for k in self._train_columns}, seed,
            tf.constant(self._num_sgd_iter), tf.constant(self._minibatch),
            tf.constant(self._shuffle))
        return carry, episodes, stats

    def _sample_graph(self, carry):
        carry, steps, (_, returns, lengths) = self._rollout(carry)
        return carry, {**self._with_advantages(steps), "episode_return": returns,
                       "episode_length": lengths}

    def _rollout(self, carry):
        """`T` steps of every env: the next carry, the `[T, N, ...]` step columns, and
        `(done, returns, lengths)`, each `[T, N]`: where an episode ended, its return and
        length (fixed shapes; the host picks the ended ones)."""
        policy, env = self._policy, self.env
        explore = tf.constant(self._explore)
        T = self.rollout_length
        names = (Columns.OBS, Columns.ACTIONS, Columns.ACTION_LOGP,
                 Columns.ACTION_DIST_INPUTS, Columns.VF_PREDS, Columns.REWARDS,
                 Columns.TERMINATEDS, Columns.TRUNCATEDS, Columns.NEXT_OBS,
                 "episode_return", "episode_length")

        def body(t, carry, arrays):
            obs = carry["obs"]  # [N, ...]
            actions, _, extras = policy.action_graph(obs, [], explore)
            step = env.step(carry["env_state"], self._env_action(actions))
            episode_return = carry["episode_return"] + step.reward
            episode_length = carry["episode_length"] + 1
            done = tf.logical_or(step.terminated, step.truncated)  # [N]
            values = (obs, actions, extras[Columns.ACTION_LOGP],
                      extras[Columns.ACTION_DIST_INPUTS], extras[Columns.VF_PREDS],
                      step.reward, step.terminated, step.truncated, step.final_obs,
                      episode_return, episode_length)
            arrays = [a.write(t, v) for a, v in zip(arrays, values)]
            carry = {"env_state": step.state, "obs": step.obs,
                     "episode_return": tf.where(done, 0.0, episode_return),
                     "episode_length": tf.where(done, 0, episode_length)}
            return t + 1, carry, arrays

        action_dtype = space_specs.batch_spec(policy.action_space).dtype
        dtypes = (tf.float32, action_dtype, tf.float32, tf.float32, tf.float32, tf.float32,
                  tf.bool, tf.bool, tf.float32, tf.float32, tf.int32)
        arrays = [tf.TensorArray(dtype, size=T) for dtype in dtypes]
        _, carry, arrays = tf.while_loop(lambda t, c, a: t < T, body,
                                         (tf.constant(0), carry, arrays))
        steps = {name: a.stack() for name, a in zip(names, arrays)}  # [T, N, ...]
        done = tf.logical_or(steps[Columns.TERMINATEDS], steps[Columns.TRUNCATEDS])
        episodes = (done, steps.pop("episode_return"), steps.pop("episode_length"))
        return carry, steps, episodes

    def _with_advantages(self, steps):
        """`steps` plus `last_r`, `advantages` and `value_targets` (`[T, N]`)."""
        config = self._policy.config
        T, N = self.rollout_length, self.env.num_envs
        terminated, truncated = steps[Columns.TERMINATEDS], steps[Columns.TRUNCATEDS]
        # A trajectory ends where an episode ended and at the rollout's last step.
        cut = tf.logical_or(tf.logical_or(terminated, truncated),
                            tf.range(T)[:, None] == T - 1)
        if config["use_critic"]:
            final_obs = steps[Columns.NEXT_OBS]
            flat = tf.reshape(final_obs, tf.concat([[T * N], tf.shape(final_obs)[2:]], 0))
            last_r = tf.reshape(self._policy.call_model(flat, [])[1], [T, N])
            if not config["no_done_at_end"]:
                last_r = tf.where(terminated, 0.0, last_r)
        else:  # no value to bootstrap with (RLlib's PG)
            last_r = tf.zeros([T, N])
        advantages, value_targets = time_major_advantages(
            steps[Columns.REWARDS], steps[Columns.VF_PREDS], last_r, cut,
            gamma=config["gamma"], lambda_=config["lambda"], use_gae=config["use_gae"],
            use_critic=config["use_critic"])
        return {**steps, "last_r": last_r, Columns.ADVANTAGES: advantages,
                Columns.VALUE_TARGETS: value_targets}

    def _env_action(self, actions: tf.Tensor) -> tf.Tensor:
        """The env's action from the policy's: Box actions unsquashed from [-1, 1] to
        the bounds (`normalize_actions`) or clipped to them (`clip_actions`), as the
        Python path's `unsquash_and_clip`; discrete ones as int32."""
        space = self.env.action_space
        if isinstance(space, gym.spaces.Discrete):
            return tf.cast(actions, tf.int32)
        actions = tf.cast(actions, tf.float32)
        low, high = space.low.astype(np.float32), space.high.astype(np.float32)
        if self._config["normalize_actions"]:
            return low + (tf.clip_by_value(actions, -1.0, 1.0) + 1.0) * (high - low) / 2.0
        if self._config["clip_actions"]:
            return tf.clip_by_value(actions, low, high)
        return actions
