"""TFPolicy: a Keras model and an action distribution, acting and learning in compiled code.

An algorithm subclasses `TFPolicy` once and overrides `loss_and_stats` (or RLlib's `loss`
and `stats`) and, as it needs, `postprocess_trajectory`, `extra_action_out`,
`make_optimizer`, `make_model`, `make_action_distribution` and `call_model`, the one
path from inputs to model outputs that acting, values, the loss and the exported
SavedModel share. Everything TensorFlow runs is compiled once:

- `compute_actions` (and `value`) is one call of a concrete function with a fixed input
  signature (observations `[B, ...]`, state-ins, the previous actions/rewards the model
  consumes, `explore` as a bool tensor), returning actions, logp, distribution inputs
  and value together (see `tf_policy_actions`). Dense catalog policies act in numpy on
  a copy of the weights instead, which is several times cheaper per call
  (`config["inference"]`, see `numpy_inference`).
- `learn_on_batch` runs every SGD epoch and minibatch of a batch in one compiled call
  (`strategy.run` per minibatch, in a `tf.range` loop), shuffling and slicing
  minibatches in the graph, or, with `learn_input="tf_data"`, pulling the same
  minibatches from a tf.data pipeline iterated inside that call (see `tf_train_step`).

Under a `MirroredStrategy` every replica gets `minibatch_size / num_replicas` rows and the
optimizer sums the replicas' gradients, so the loss must average over the *global*
minibatch; `self.global_mean(x)` does that (and equals `tf.reduce_mean(x)` on one device).
`self.forward(model, train_batch)` (`call_model` on a train batch) and
`self.valid_mask(train_batch)` let one loss serve feed-forward and recurrent models
(sequence columns are `[B, T, ...]`, see `train_columns`).

Example:
    >>> import gymnasium as gym, keras, numpy as np
    >>> class PG(TFPolicy):
    ...     def loss(self, model, dist_class, train_batch):
    ...         dist_inputs, _ = model(train_batch["obs"], training=True)
    ...         logp = dist_class(dist_inputs, model).logp(train_batch["actions"])
    ...         return -self.global_mean(logp * train_batch["advantages"])
    >>> policy = PG(gym.spaces.Box(-1.0, 1.0, (4,)), gym.spaces.Discrete(2), {"seed": 0})
    >>> actions, _, extras = policy.compute_actions(np.zeros((3, 4), np.float32))
    >>> actions.shape, sorted(extras)
    ((3,), ['action_dist_inputs', 'action_logp', 'action_prob', 'vf_preds'])
    >>> policy.inference, policy.value(np.zeros((3, 4), np.float32)).shape
    ('numpy', (3,))
    >>> batch = {"obs": np.zeros((8, 4), np.float32), "actions": np.zeros(8, np.int64),
    ...          "advantages": np.ones(8, np.float32)}
    >>> info = policy.learn_on_batch(batch)
    >>> sorted(info["learner_stats"]), policy.num_traces["learn_on_batch"]
    (['num_grad_updates', 'num_nonfinite_updates_skipped', 'num_traces', 'total_loss'], 1)
"""

from typing import Any, ClassVar, Dict, List, Optional, Tuple

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf
import tree

from tfrl.core.columns import Columns
from tfrl.models.catalog import ModelCatalog
from tfrl.models.model_defaults import model_setting
from tfrl.policy import (numpy_inference, portable_export, space_specs, tf_policy_export,
                         tf_policy_state)
from tfrl.policy.numpy_inference import NumpyInference
from tfrl.policy.optimizers import FusedAdam, without_single_replica_all_reduce
from tfrl.policy.policy import (Policy, action_output_view_requirements,
                                recurrent_view_requirements)
from tfrl.policy.policy_config import FrozenConfig, PolicyConfig
from tfrl.policy.strategy import make_strategy, strategy_devices
from tfrl.policy.tf_policy_actions import PREV_COLUMNS, ActionFunctions
from tfrl.policy.tf_train_step import TrainStep
from tfrl.policy.train_columns import autograph_converted
from tfrl.policy.xla import global_mean
from tfrl.utils.checks import check_int

_OR_NONE = "or None for the policy's config"

# RLlib 1.x name: TFPolicy's defaults as a flat dict (the source is `PolicyConfig`).
DEFAULT_CONFIG = PolicyConfig().to_dict()
# Methods whose override takes a policy off the numpy inference path. (`compute_actions`
# is not one: an override either bypasses TFPolicy's or calls it through `super()`, whose
# numpy path computes what its compiled path does.)
_ACTION_METHODS = ("action_graph", "call_model", "extra_action_out", "value")


class TFPolicy(Policy):
    """A Keras/TF2 policy; subclasses supply the loss.

    Args:
        observation_space: Observation space of one agent.
        action_space: Action space of one agent.
        config: Policy config; missing keys take the defaults of `config_class`
            (for an algorithm's policy, its algorithm's config class). Kept read-only
            as `self.config` (a `FrozenConfig`). Keys used: `explore`,
            `lr`, `grad_clip` (global-norm clipping of the summed gradients),
            `num_sgd_iter` (epochs per `learn_on_batch`), `sgd_minibatch_size` (rows
            per minibatch; None: the whole batch, one step per epoch; for recurrent
            policies it counts real timesteps and minibatches hold whole sequences,
            see `tf_train_step.sequence_minibatch`), `shuffle_sequences`
            (a new permutation of the rows per epoch), `learn_input` ("in_graph" or
            "tf_data", see `tf_train_step`), `seed`, `num_gpus` and `_fake_gpus`
            (the strategy, see `make_strategy`),
            `inference` ("auto": numpy when `numpy_inference` supports the policy,
            else TF; "tf"; "numpy": raise if unsupported), `model` (the model config
            for the catalog; with `lstm_use_prev_action` / `lstm_use_prev_reward` or
            `attention_use_n_prev_actions` / `_rewards` above 0, acting takes
            `prev_action_batch` / `prev_reward_batch` and learning reads the
            `prev_actions` / `prev_rewards` columns).
        strategy: A `tf.distribute.Strategy` to use instead of the one the config asks
            for (e.g. `tf.distribute.get_strategy()` for the default strategy). Share one
            `MirroredStrategy` object between policies: separate instances over the same
            devices collide in their collective ops.
    """

    # The config dataclass whose defaults fill the keys a given config lacks; an
    # algorithm's policy names its algorithm's config class.
    config_class: ClassVar[type] = PolicyConfig

    def __init__(self, observation_space: gym.Space, action_space: gym.Space,
                 config: Optional[dict] = None, *,
                 strategy: Optional[tf.distribute.Strategy] = None):
        super().__init__(observation_space, action_space, config)
        self.config = FrozenConfig({**self.default_config(), **self.config})
        if self.config["learn_input"] not in ("in_graph", "tf_data"):
            raise ValueError(
                f"{type(self).__name__}: config['learn_input'] must be 'in_graph' or "
                f"'tf_data'; received {self.config['learn_input']!r}.")
        self.strategy = strategy if strategy is not None else make_strategy(self.config)
        self.devices = strategy_devices(self.strategy)
        seed = self.config["seed"]
        self._np_random = np.random.default_rng(seed)  # seeds minibatch shuffling
        # Samples actions on the numpy inference path; independent of the shuffles.
        self.sampling_rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
        # Seeds sampling on the TF inference path (stateless ops, one seed per call), so
        # that its state is part of get_state() like the numpy generators'. Created when
        # first used (see `sampling_generator`).
        self._sampling_seed = (
            None if seed is None else
            int(np.random.SeedSequence(seed).spawn(2)[1].generate_state(1)[0]))
        self._sampling_generator: Optional[tf.random.Generator] = None
        self.weights_version = 0  # counts changes of the weights (numpy inference copies)
        if seed is not None:
            keras.utils.set_random_seed(int(seed))
        self.dist_class, self.num_outputs = self.make_action_distribution()
        self.num_traces = {}
        with self.strategy.scope():
            self.model = self.make_model()
            self._recurrent = bool(getattr(self.model, "is_recurrent", False))
            self._initial_state = (
                [np.asarray(s)[0] for s in tree.flatten(self.model.get_initial_state(1))]
                if self._recurrent else [])
            self._acting = ActionFunctions(self)
            self.call_model(space_specs.zeros_batch(self.observation_space, 1),
                            [s[None] for s in self._initial_state], self._acting.zero_prev(1))
            self.optimizer = without_single_replica_all_reduce(self.make_optimizer(),
                                                               self.strategy)
            self.optimizer.build(self.model.trainable_variables)
            self.num_grad_updates = tf.Variable(0, dtype=tf.int64, trainable=False,
                                                name="num_grad_updates")
        self._set_view_requirements()
        self._numpy = self._make_numpy_inference()
        if self._numpy is None:  # the TF inference path samples with it from the start
            self.sampling_generator  # noqa: B018 - creates it
        self._train = TrainStep(self)

    @property
    def sampling_generator(self) -> tf.random.Generator:
        """The `tf.random.Generator` that seeds the TF inference path's sampling (one
        stateless seed per call); its state is part of `get_state()`.

        Seeded from `config["seed"]` (non-deterministically without one). Policies on
        the TF inference path create it with the policy; on the numpy path (which
        samples from `sampling_rng`) it is created on first use (a SavedModel export,
        `get_state`, `action_graph`), in the same state, outside any graph: a TF
        variable and its ops cost start-up memory that most runs never need.
        """
        if self._sampling_generator is None:
            with tf.init_scope():
                self._sampling_generator = (
                    tf.random.Generator.from_non_deterministic_state()
                    if self._sampling_seed is None
                    else tf.random.Generator.from_seed(self._sampling_seed))
        return self._sampling_generator

    @classmethod
    def default_config(cls) -> Dict[str, Any]:
        """The defaults of this policy's keys: `config_class().to_dict()`."""
        return cls.config_class().to_dict()

    def _set_view_requirements(self) -> None:
        self.view_requirements.update(action_output_view_requirements())
        self.view_requirements.update(recurrent_view_requirements(
            self._initial_state, int(model_setting(self.config["model"], "max_seq_len"))))
        # Samplers record prev_actions / prev_rewards only if the model consumes them.
        for column in PREV_COLUMNS:
            if column not in self._acting.prev_columns:
                self.view_requirements.pop(column, None)

    def _make_numpy_inference(self) -> Optional[NumpyInference]:
        return numpy_inference.make_numpy_inference(self, self.config["inference"],
                                                    self._overridden_action_methods())

    def _overridden_action_methods(self) -> List[str]:
        """The TFPolicy action methods this policy's class overrides."""
        return [name for name in _ACTION_METHODS
                if getattr(type(self), name) is not getattr(TFPolicy, name)]

    def _weights_changed(self) -> None:
        """Marks the weights as changed (after the change): numpy inference recopies them."""
        self.weights_version += 1

    # ------------------------------------------------------ algorithm hooks

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # A subclass that overrides `loss` but not `loss_and_stats` (RLlib's way, e.g. a
        # PPOTFPolicy with its own loss) learns with its `loss` and `stats`.
        if "loss" in cls.__dict__ and "loss_and_stats" not in cls.__dict__:
            cls.loss_and_stats = TFPolicy.loss_and_stats

    @tf.autograph.experimental.do_not_convert  # converts `loss` and `stats` itself
    def loss_and_stats(self, model: keras.Model, dist_class: type,
                       train_batch: Dict[str, tf.Tensor]
                       ) -> Tuple[tf.Tensor, Dict[str, tf.Tensor]]:
        """This replica's share of the loss, and its statistics: what the train step calls.

        Runs inside the compiled train step, once per replica and minibatch. The loss
        must average over the *global* minibatch (`global_mean`); the stats are scalars
        averaged over this replica's rows (`tf.reduce_mean`), which the train step
        averages over replicas and minibatches into `learner_stats`. The built-in
        algorithms compute the model's outputs here and hand them to a pure loss function
        (e.g. `tfrl.algorithms.ppo.ppo_loss.ppo_loss`). Default: `self.loss(...)` and
        `self.stats(train_batch)`, each converted by autograph (unless marked
        `do_not_convert`). A subclass that overrides `loss` and not `loss_and_stats`
        gets this default, so it reports `stats()` only, not the statistics of the
        algorithm's loss (e.g. PPO's `kl`, without which the KL coefficient stays put);
        to keep those, override `loss_and_stats` and extend `super().loss_and_stats(...)`.

        Args:
            model: The policy's Keras model.
            dist_class: The action distribution class (`dist_class(dist_inputs, model)`).
            train_batch: This replica's rows of the minibatch, column -> tensor.

        Returns:
            `(loss, stats)`: a scalar tensor and a dict of scalar tensors.
        """
        return (autograph_converted(self.loss)(model, dist_class, train_batch),
                autograph_converted(self.stats)(train_batch))

    def loss(self, model: keras.Model, dist_class: type, train_batch: Dict[str, tf.Tensor]
             ) -> tf.Tensor:
        """This replica's share of the loss (RLlib's signature; see `loss_and_stats`)."""
        raise NotImplementedError(
            f"{type(self).__name__} must override loss(model, dist_class, train_batch) (or "
            "loss_and_stats) to learn."
        )

    def stats(self, train_batch: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
        """Scalar statistics of one replica's minibatch (RLlib's `stats_fn`); default: none.

        Compute them as means over this replica's rows (`tf.reduce_mean`, not
        `global_mean`): they are averaged over replicas and minibatches into
        `learner_stats`. Statistics of the loss's terms come from `loss_and_stats`.
        """
        return {}

    @tf.autograph.experimental.do_not_convert  # plain TF ops (an override is converted)
    def extra_action_out(self, input_dict: Dict[str, Any], state_batches: List[tf.Tensor],
                         model: keras.Model, action_dist: Any) -> Dict[str, tf.Tensor]:
        """Extra `[B, ...]` outputs of `compute_actions`; default: none (the value
        estimate is always returned as `vf_preds`)."""
        return {}

    def after_optimizer_step(self) -> None:
        """Runs inside the compiled learning functions after every applied optimizer
        update (in cross-replica context); default: nothing. SAC moves its target
        networks by `tau` here, so that all steps of a learning phase stay one call."""

    def commit_step_stats(self, stats: Dict[str, tf.Tensor]) -> None:
        """Runs inside the compiled learning loop after every optimizer update the
        non-finite guard applied (after `after_optimizer_step`, in cross-replica context),
        with that step's stats reduced over replicas (`total_loss`, the loss's and
        `stats()`'s entries); default: nothing.

        Statistics that persist across updates and follow the batches (MARWIL's moving
        average of the squared advantages) move here rather than in the loss: a step the
        guard refuses (a NaN/inf loss or gradient) then leaves them as they were, as it
        leaves the weights and the optimizer. `compute_gradients` / `apply_gradients`
        do not call it (no stats reach `apply_gradients`).
        """

    @property
    def action_model(self) -> keras.Model:
        """The Keras model that maps observations to `(dist_inputs, value)` when acting
        (what numpy inference evaluates); default: `self.model`. A policy whose model
        holds more networks (SAC's critics) names its acting part here; `self.model`'s
        `call` must then compute the same outputs."""
        return self.model

    def make_optimizer(self) -> keras.optimizers.Optimizer:
        """The optimizer (built under the strategy scope); default: Adam(`lr`)
        (`FusedAdam`: Keras' Adam with TensorFlow's fused update kernel).

        Leave gradient clipping to `grad_clip` (applied to the replicas' summed
        gradients), not to the optimizer's `clipnorm` options (per replica)."""
        return FusedAdam(self.config["lr"])

    def make_action_distribution(self) -> Tuple[type, int]:
        """`(dist_class, num_outputs)` for the action space; default: from the catalog."""
        return ModelCatalog.get_action_dist(self.action_space, self.config["model"])

    def make_model(self) -> keras.Model:
        """The Keras model (called under the strategy scope); default: from the catalog."""
        return ModelCatalog.get_model(self.observation_space, self.action_space,
                                      self.num_outputs, self.config["model"])

    # ------------------------------------------------------------- acting

    def compute_actions(self, obs_batch: Any, state_batches: Optional[List[Any]] = None,
                        prev_action_batch: Any = None, prev_reward_batch: Any = None,
                        info_batch: Any = None, episodes: Any = None,
                        explore: Optional[bool] = None, timestep: Optional[int] = None,
                        **kwargs) -> Tuple[Any, List[np.ndarray], Dict[str, np.ndarray]]:
        """Actions, state-outs and extra fetches (`action_dist_inputs`, `action_logp`,
        `action_prob`, `vf_preds`, ...) for a batch: in numpy for dense policies (see
        `numpy_inference`), else in one compiled call. `global_timestep` advances by the
        batch size; `timestep` (default: `global_timestep`) is this call's step only."""
        numpy = self._numpy
        if numpy is not None:
            obs, flat = obs_batch, self._acting.flat_obs
            if not (flat is not None and isinstance(obs, np.ndarray) and obs.dtype == flat[1]
                    and obs.ndim == len(flat[0]) + 1 and obs.shape[1:] == flat[0]):
                obs = self._acting.check_obs(obs_batch)  # converts, or a clear error
            if state_batches:
                self._acting.check_states(state_batches, len(obs), "compute_actions")
            result = numpy.compute_actions(obs, self.config["explore"] if explore is None
                                           else explore)
            num_rows = len(obs)
        else:
            result, num_rows = self._acting.compute(obs_batch, state_batches, explore,
                                                    prev_action_batch, prev_reward_batch)
        # RLlib's convention: `timestep` is this call's step (exploration schedules); the
        # counter always advances by the rows acted on (samplers pass global_timestep).
        self.global_timestep += num_rows
        return result

    def value(self, obs_batch: Any, state_batches: Optional[List[Any]] = None,
              prev_action_batch: Any = None, prev_reward_batch: Any = None) -> np.ndarray:
        """Value estimates `[B]` (float32) of a batch of observations, e.g. to bootstrap a
        truncated trajectory; the `vf_preds` `compute_actions` returns for the same inputs."""
        if self._numpy is not None:
            obs = self._acting.check_obs(obs_batch)
            if state_batches:
                self._acting.check_states(state_batches, len(obs), "value")
            return self._numpy.value(obs)
        return self._acting.value(obs_batch, state_batches, prev_action_batch,
                                  prev_reward_batch)

    @property
    def inference(self) -> str:
        """Where `compute_actions` and `value` run: "numpy" or "tf"."""
        return "tf" if self._numpy is None else "numpy"

    def action_input_signature(self) -> List[Any]:
        """Specs of `action_graph`'s arguments: obs `[B, ...]`, state-ins, explore, and a
        dict of the previous actions/rewards the model consumes (empty for most)."""
        return self._acting.signature()

    def action_inputs(self, obs_batch: Any, state_batches: Optional[List[Any]],
                      explore: Optional[bool], prev_action_batch: Any = None,
                      prev_reward_batch: Any = None) -> Tuple[Any, ...]:
        """Checked arguments (tensors) of `action_graph` (used by TFRunBuilder)."""
        return self._acting.inputs(obs_batch, state_batches, explore, prev_action_batch,
                                   prev_reward_batch)

    @staticmethod
    def action_outputs(outputs: Any) -> Tuple[Any, List[np.ndarray], Dict[str, np.ndarray]]:
        """Numpy `(actions, state_outs, extra_fetches)` from the compiled outputs."""
        return ActionFunctions.outputs(outputs)

    @tf.autograph.experimental.do_not_convert  # plain TF ops (an override is converted)
    def action_graph(self, obs: Any, state_in: List[tf.Tensor], explore: tf.Tensor,
                     prev: Optional[Dict[str, tf.Tensor]] = None) -> Any:
        """The action computation, for use inside compiled code (`prev`: the model's
        `prev_actions` / `prev_rewards` `[B, ...]`, if it consumes them)."""
        return self._acting.graph(obs, state_in, explore, prev)

    @tf.autograph.experimental.do_not_convert  # plain TF ops (an override is converted)
    def call_model(self, obs: Any, state_in: List[Any], prev: Optional[Dict[str, Any]] = None,
                   seq_lens: Optional[tf.Tensor] = None, training: bool = False
                   ) -> Tuple[tf.Tensor, tf.Tensor, List[tf.Tensor]]:
        """The model's outputs: the one path that `compute_actions` (compiled), `value`,
        the loss (through `forward`) and the exported SavedModel take.

        Override it to change the model's outputs everywhere at once (the numpy
        inference path is then off: it evaluates the catalog model itself).

        Args:
            obs: Observations, `[B, ...]` (one step), or `[B, T, ...]` with `seq_lens`.
            state_in: The recurrent state-ins `[B, ...]`; `[]` for feed-forward models.
            prev: The previous actions/rewards the model consumes (`prev_actions`,
                `prev_rewards`), shaped like `obs`' leading axes; None or `{}` if none.
            seq_lens: `[B]` int32 sequence lengths when `obs` holds padded sequences
                (recurrent models in the loss); None for one step.
            training: Passed to the Keras model (True in the loss).

        Returns:
            `(dist_inputs, value, state_out)`: `[B, n]`, `[B]` for one step (`[B, T, n]`,
            `[B, T]` for sequences), and the state-outs (`[]` for feed-forward models).
        """
        model = self.model
        prev = prev or {}
        if not self._recurrent:
            dist_inputs, value = model(obs, training=training, **prev)
            return dist_inputs, value, []
        if seq_lens is not None:
            dist_inputs, value, state_out = model((obs, list(state_in), seq_lens),
                                                  training=training, **prev)
            return dist_inputs, value, list(state_out)
        obs_t = tree.map_structure(lambda o: tf.expand_dims(o, 1), obs)  # [B, 1, ...]
        seq_lens = tf.ones(tf.shape(tree.flatten(obs)[0])[:1], tf.int32)  # [B]
        prev_t = {k: tf.expand_dims(v, 1) for k, v in prev.items()}  # [B, 1, ...]
        dist_inputs, value, state_out = model((obs_t, list(state_in), seq_lens),
                                              training=training, **prev_t)
        return dist_inputs[:, 0], value[:, 0], list(state_out)

    # ------------------------------------------------------------ learning

    def global_mean(self, values: tf.Tensor, mask: Optional[tf.Tensor] = None) -> tf.Tensor:
        """This replica's share of the mean of `values` over the global minibatch.

        Summed over replicas (as the optimizer sums gradients) it gives the mean over
        all replicas' rows (where `mask` is true, if given).
        """
        return global_mean(values, mask)

    def forward(self, model: keras.Model, train_batch: Dict[str, tf.Tensor]
                ) -> Tuple[tf.Tensor, tf.Tensor]:
        """`(dist_inputs, value)` of a train batch through `call_model(training=True)`:
        `[B, n]`, `[B]` for feed-forward models; `[B, T, n]`, `[B, T]` for recurrent ones
        (from `state_in_*`, `seq_lens`).

        Raises:
            ValueError: If `model` is not the policy's own model (`call_model` runs
                `self.model`).
        """
        if model is not self.model:
            raise ValueError(
                f"{type(self).__name__}.forward() runs call_model on the policy's own model "
                f"(policy.model, a {type(self.model).__name__}); received another model "
                f"({type(model).__name__}). Pass policy.model, or call that model yourself."
            )
        prev = {column: train_batch[column] for column in self._acting.prev_columns}
        state_in = [train_batch[f"state_in_{i}"] for i in range(len(self._initial_state))]
        seq_lens = train_batch[Columns.SEQ_LENS] if self._recurrent else None
        dist_inputs, value, _ = self.call_model(train_batch[Columns.OBS], state_in, prev,
                                                seq_lens=seq_lens, training=True)
        return dist_inputs, value

    def valid_mask(self, train_batch: Dict[str, tf.Tensor]) -> Optional[tf.Tensor]:
        """`[B, T]` bool, True at real (not padded) timesteps; None if feed-forward."""
        if not self._recurrent:
            return None
        seq_lens = train_batch[Columns.SEQ_LENS]  # [B]
        max_len = tf.shape(tree.flatten(train_batch[Columns.OBS])[0])[1]
        return tf.sequence_mask(seq_lens, max_len)

    def shuffle_seed(self) -> int:
        """The seed of the next learning call's minibatch permutations, drawn from the
        policy's seeded generator (saved with its state)."""
        return int(self._np_random.integers(2**31))

    def train_batch(self, samples: Any) -> Any:
        """The batch `learn_on_batch` and `compute_gradients` learn on, from the one they
        were given; default: unchanged. (OnPolicyTFPolicy cuts row batches into
        sequences for recurrent models here.)"""
        return samples

    def learn_on_batch(self, samples: Any, *, num_sgd_iter: Optional[int] = None,
                       sgd_minibatch_size: Optional[int] = None,
                       shuffle_sequences: Optional[bool] = None) -> Dict[str, Any]:
        """Runs `num_sgd_iter` epochs of minibatch SGD on `samples` in one compiled call.

        Every epoch shuffles the rows (whole sequences for recurrent policies), cuts
        `floor(rows / minibatch)` minibatches and drops the rest of that epoch's rows:
        `num_sgd_iter * floor(rows / minibatch)` optimizer steps (see
        `tfrl.policy.tf_train_step`). The arguments change nothing but this call.

        Args:
            samples: One policy's SampleBatch (or dict of columns).
            num_sgd_iter: Epochs; None: `config["num_sgd_iter"]`.
            sgd_minibatch_size: Rows per minibatch (timesteps for recurrent policies); 0:
                the whole batch; None: `config["sgd_minibatch_size"]`.
            shuffle_sequences: Shuffle every epoch; None: `config["shuffle_sequences"]`.

        Returns:
            `{"learner_stats": {...}, "num_traces": {...}}`; learner stats are the mean
            over every minibatch step of every epoch: `total_loss`, the `stats()`
            entries; plus `num_grad_updates` and `num_traces` (traces of the compiled
            learn function).

        Raises:
            ValueError: If `num_sgd_iter` is not an int >= 1 or `sgd_minibatch_size` not
                an int >= 0 (or the batch is smaller than a minibatch).
            NonFiniteUpdateError: If a step's loss or gradients were NaN/inf and
                `config["nonfinite_updates"]` is "raise" (the default); that step and
                the rest of the call were not applied (see `tfrl.policy.tf_train_step`).
        """
        config = self.config
        num_sgd_iter = config["num_sgd_iter"] if num_sgd_iter is None else num_sgd_iter
        if sgd_minibatch_size is None:
            sgd_minibatch_size = config["sgd_minibatch_size"]
        if shuffle_sequences is None:
            shuffle_sequences = config["shuffle_sequences"]
        check_int(num_sgd_iter, "learn_on_batch(): num_sgd_iter", 1, _OR_NONE)
        if sgd_minibatch_size is not None:
            check_int(sgd_minibatch_size, "learn_on_batch(): sgd_minibatch_size", 0, _OR_NONE)
        stats = self._train.learn(self.train_batch(samples), int(num_sgd_iter),
                                  sgd_minibatch_size, bool(shuffle_sequences))
        self._weights_changed()
        return {"learner_stats": stats, "num_traces": dict(self.num_traces)}

    def prepare_learn_graph(self, example: Any) -> List[str]:
        """Makes `learn_graph` usable inside another compiled function (the in-graph
        training path's): fixes the train columns from `example` (rows with every
        column that will be passed) and builds the optimizer. Returns the columns the
        loss reads. See `tf_train_step.TrainStep.prepare_learn_graph`."""
        return self._train.prepare_learn_graph(example)

    def learn_graph(self, columns: Dict[str, tf.Tensor], seed: tf.Tensor,
                    num_sgd_iter: tf.Tensor, minibatch: tf.Tensor,
                    shuffle: tf.Tensor) -> Dict[str, tf.Tensor]:
        """`learn_on_batch`'s compiled loop (the same epochs, minibatch rule, loss,
        optimizer and non-finite guard), called inside another compiled function on
        `[B, ...]` column tensors; its raw stats, for `learn_graph_result` on the host.
        See `tf_train_step.TrainStep.learn_graph`."""
        return self._train.learn_graph(columns, seed, num_sgd_iter, minibatch, shuffle)

    def learn_graph_result(self, stats: Dict[str, Any], updates_before: int,
                           num_steps: int) -> Dict[str, Any]:
        """On the host, after a compiled function ran `learn_graph`: `learn_on_batch`'s
        result from its raw `stats` (`updates_before`: `num_grad_updates` before it ran;
        `num_steps`: the optimizer steps it was to run).

        Raises:
            NonFiniteUpdateError: As `learn_on_batch`.
        """
        stats = self._train.finish(stats, updates_before, num_steps)
        self._weights_changed()
        return {"learner_stats": stats, "num_traces": dict(self.num_traces)}

    def update_groups(self, learning: bool) -> Dict[str, Any]:
        """Which optimizer groups the current step updates: `{group: True, False or a
        scalar bool tensor}`, read inside the compiled functions.

        The update chain asks once in each replica's loss (the loss sees the answer as
        `train_batch.update_groups`, so it can leave out the terms of groups the step
        does not update) and once at the update (`apply_update`'s `groups`). `learning`
        is True in `learn_on_batch`'s loop, False in `compute_gradients` (which returns
        every group's gradients). Default: one group, `{"all": True}`. TD3 answers
        `{"critic": True, "actor": <every policy_delay-th step>}` in the loop.
        """
        return {"all": True}

    def apply_update(self, grads: List[Any], variables: List[Any],
                     groups: Dict[str, Any]) -> None:
        """One learning step's optimizer update, inside the compiled learning loop.

        Called in cross-replica context after the step's non-finite check passed, with
        the per-replica gradients of `variables` (the trainable variables that have one)
        and the step's `update_groups(True)`. Default: `optimizer.apply_gradients` on
        every replica (one group). TD3 updates each of its groups under its entry.
        `after_optimizer_step` follows.
        """
        self.strategy.run(lambda g: self.optimizer.apply_gradients(list(zip(g, variables))),
                          args=(grads,))

    def compute_gradients(self, postprocessed_batch: Any) -> Tuple[List[np.ndarray], Dict]:
        """Gradients of the loss on the whole batch (summed over replicas), as numpy."""
        grads, stats = self._train.gradients(self.train_batch(postprocessed_batch))
        return grads, {"learner_stats": stats, "num_traces": dict(self.num_traces)}

    def apply_gradients(self, gradients: List[Any]) -> None:
        """Applies `compute_gradients` results with the optimizer."""
        self._train.apply(gradients)
        self._weights_changed()

    # -------------------------------------------------------------- state

    def get_weights(self) -> List[np.ndarray]:
        """The model's variables (`model.weights` order) as numpy arrays.

        A list, as in RLlib's TF2 policies: Keras numbers layer names per process, so
        two policies with the same architecture share the order, not the names.
        """
        return tf_policy_state.get_weights(self)

    def set_weights(self, weights: List[Any]) -> None:
        """Sets the model's variables from a `get_weights` list."""
        tf_policy_state.set_weights(self, weights)
        self._weights_changed()

    def get_state(self) -> Dict[str, Any]:
        """Weights, optimizer variables, the global timestep, the update counter and the
        states of the shuffle and sampling RNGs (see `tf_policy_state`)."""
        return tf_policy_state.get_optimizer_state(self, super().get_state())

    def set_state(self, state: Dict[str, Any]) -> None:
        """Restores a `get_state` result (optimizer variables and RNGs too, if present).

        Raises:
            NonFiniteStateError: If its weights or optimizer variables hold NaN or inf
                (nothing is restored then).
        """
        if isinstance(state, dict):
            tf_policy_state.check_finite_state(self, state)
        super().set_state(state)
        tf_policy_state.set_optimizer_state(self, state)

    def export_model(self, export_dir: str, onnx: Optional[int] = None) -> None:
        """Writes a SavedModel with named serving signatures (see `tf_policy_export`),
        or, with `onnx` (an ONNX opset version, as in RLlib), `model.onnx` and
        `model_stochastic.onnx` instead (see `portable_export`; needs tf2onnx)."""
        if onnx is not None:
            self.export_onnx(export_dir, onnx)
            return
        tf_policy_export.export_saved_model(self, export_dir)

    def export_onnx(self, export_dir: str, opset: Optional[int] = None) -> List[str]:
        """Writes `export_dir/model.onnx` (deterministic actions) and
        `model_stochastic.onnx` (see `portable_export`; default opset
        `portable_export.DEFAULT_ONNX_OPSET`); returns their paths."""
        return portable_export.export_onnx(self, export_dir, opset)

    def export_tflite(self, export_dir: str) -> str:
        """Writes `export_dir/model.tflite` with the `deterministic_action` and
        `stochastic_action` signatures (see `portable_export`); returns its path."""
        return portable_export.export_tflite(self, export_dir)

    def export_checkpoint(self, export_dir: str) -> None:
        """Writes a checkpoint of the model, the optimizer and the update counter."""
        tf_policy_export.write_checkpoint(self, export_dir)

    def import_checkpoint(self, export_dir: str) -> None:
        """Restores an `export_checkpoint` directory (same architecture)."""
        tf_policy_export.read_checkpoint(self, export_dir)
        self._weights_changed()

    def get_initial_state(self) -> List[np.ndarray]:
        """The model's initial state for one agent (unbatched); `[]` if feed-forward."""
        return [s.copy() for s in self._initial_state]

    def is_recurrent(self) -> bool:
        """Whether the model is recurrent."""
        return self._recurrent
