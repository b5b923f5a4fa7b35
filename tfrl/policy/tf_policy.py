"""TFPolicy: a Keras model and an action distribution, acting and learning in compiled code.

An algorithm subclasses `TFPolicy` once and overrides `loss` (required) and, as it needs,
`postprocess_trajectory`, `stats`, `extra_action_out`, `make_optimizer`, `make_model` and
`make_action_distribution`. Everything TensorFlow runs is compiled once:

- `compute_actions` is one call of a concrete function with a fixed input signature
  (observations `[B, ...]`, state-ins, `explore` as a bool tensor), returning actions,
  logp, distribution inputs and value together.
- `learn_on_batch` runs every SGD epoch and minibatch of a batch in one compiled call
  (`strategy.run` per minibatch, in a `tf.range` loop), shuffling and slicing
  minibatches in the graph, or, with `learn_input="tf_data"`, pulling them from a
  distributed `tfrl.policy.dataset.to_dataset` pipeline (see `tf_train_step`).

Under a `MirroredStrategy` every replica gets `minibatch_size / num_replicas` rows and the
optimizer sums the replicas' gradients, so `loss` must average over the *global*
minibatch; `self.global_mean(x)` does that (and equals `tf.reduce_mean(x)` on one device).
`self.forward(model, train_batch)` and `self.valid_mask(train_batch)` let one loss serve
feed-forward and recurrent models (sequence columns are `[B, T, ...]`, see
`train_columns`).

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
    >>> batch = {"obs": np.zeros((8, 4), np.float32), "actions": np.zeros(8, np.int64),
    ...          "advantages": np.ones(8, np.float32)}
    >>> info = policy.learn_on_batch(batch)
    >>> sorted(info["learner_stats"]), policy.num_traces["learn_on_batch"]
    (['num_grad_updates', 'num_traces', 'total_loss'], 1)
"""

import threading
from typing import Any, Dict, List, Optional, Tuple

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf
import tree

from tfrl.core.columns import Columns
from tfrl.policy import space_specs
from tfrl.policy.policy import (Policy, action_output_view_requirements,
                                recurrent_view_requirements)
from tfrl.policy import tf_policy_export
from tfrl.policy.strategy import make_strategy, strategy_devices
from tfrl.policy.tf_train_step import TrainStep

DEFAULT_CONFIG = {
    "explore": True,
    "lr": 1e-4,
    "grad_clip": None,
    "num_sgd_iter": 1,
    "sgd_minibatch_size": None,
    "shuffle_sequences": True,
    "learn_input": "in_graph",
    "seed": None,
    "num_gpus": 0,
    "_fake_gpus": False,
    "model": {},
}


class TFPolicy(Policy):
    """A Keras/TF2 policy; subclasses supply the loss.

    Args:
        observation_space: Observation space of one agent.
        action_space: Action space of one agent.
        config: Policy config; keys used (defaults in `DEFAULT_CONFIG`): `explore`,
            `lr`, `grad_clip` (global-norm clipping of the summed gradients),
            `num_sgd_iter` (epochs per `learn_on_batch`), `sgd_minibatch_size` (rows
            per minibatch; None: the whole batch, one step per epoch; for recurrent
            policies it counts timesteps and minibatches hold `sgd_minibatch_size //
            model["max_seq_len"]` whole sequences), `shuffle_sequences`
            (a new permutation of the rows per epoch), `learn_input` ("in_graph" or
            "tf_data", see `tf_train_step`), `seed`, `num_gpus` and `_fake_gpus` (the strategy, see `make_strategy`),
            `model` (the model config for the catalog).
        strategy: A `tf.distribute.Strategy` to use instead of the one the config asks
            for (e.g. `tf.distribute.get_strategy()` for the default strategy). Share one
            `MirroredStrategy` object between policies: separate instances over the same
            devices collide in their collective ops.
    """

    def __init__(self, observation_space: gym.Space, action_space: gym.Space,
                 config: Optional[dict] = None, *,
                 strategy: Optional[tf.distribute.Strategy] = None):
        super().__init__(observation_space, action_space, config)
        self.config = {**DEFAULT_CONFIG, **self.config}
        self._tower_local = threading.local()
        self.strategy = strategy if strategy is not None else make_strategy(self.config)
        self.devices = strategy_devices(self.strategy)
        self._np_random = np.random.default_rng(self.config["seed"])
        if self.config["seed"] is not None:
            keras.utils.set_random_seed(int(self.config["seed"]))
        self.dist_class, self.num_outputs = self.make_action_distribution()
        with self.strategy.scope():
            self.model = self.make_model()
            self._recurrent = bool(getattr(self.model, "is_recurrent", False))
            self._initial_state = (
                [np.asarray(s)[0] for s in tree.flatten(self.model.get_initial_state(1))]
                if self._recurrent else [])
            self._call_model(space_specs.zeros_batch(self.observation_space, 1),
                             [s[None] for s in self._initial_state])
            self.optimizer = self.make_optimizer()
            self.optimizer.build(self.model.trainable_variables)
            self.num_grad_updates = tf.Variable(0, dtype=tf.int64, trainable=False,
                                                name="num_grad_updates")
        self.view_requirements.update(action_output_view_requirements())
        self.view_requirements.update(recurrent_view_requirements(
            self._initial_state, int(self.config["model"].get("max_seq_len", 20))))
        self.num_traces = {"compute_actions": 0}
        self._explore_tensors = {True: tf.constant(True), False: tf.constant(False)}
        self._obs_spec = space_specs.batch_spec(self.observation_space)
        obs_spec, state_specs, explore_spec = self.action_input_signature()
        # Flat positional arguments: a concrete function binds them faster than nests.
        self._actions_fn = tf.function(
            self._compute_actions_graph,
            input_signature=tree.flatten(obs_spec) + state_specs + [explore_spec],
        ).get_concrete_function()
        self._train = TrainStep(self)

    # ------------------------------------------------------ algorithm hooks

    def loss(self, model: keras.Model, dist_class: type, train_batch: Dict[str, tf.Tensor]
             ) -> tf.Tensor:
        """This replica's share of the loss: averaged over the *global* minibatch.

        Runs inside the compiled train step, once per replica and minibatch (replicas
        trace concurrently, in threads). Keep tensors for `stats` in `self.tower_stats`,
        which is private to each replica, never in other attributes.

        Args:
            model: The policy's Keras model.
            dist_class: The action distribution class (`dist_class(dist_inputs, model)`).
            train_batch: This replica's rows of the minibatch, column -> tensor.
        """
        raise NotImplementedError(
            f"{type(self).__name__} must override loss(model, dist_class, train_batch) to learn."
        )

    @property
    def tower_stats(self) -> Dict[str, tf.Tensor]:
        """A dict private to the current replica's step: `loss` writes, `stats` reads."""
        stats = getattr(self._tower_local, "stats", None)
        if stats is None:
            stats = self._tower_local.stats = {}
        return stats

    def stats(self, train_batch: Dict[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
        """Scalar statistics of one replica's minibatch; default: none.

        Compute them as means over this replica's rows (`tf.reduce_mean`, not
        `global_mean`): they are averaged over replicas and minibatches into
        `learner_stats`.
        """
        return {}

    def extra_action_out(self, input_dict: Dict[str, Any], state_batches: List[tf.Tensor],
                         model: keras.Model, action_dist: Any) -> Dict[str, tf.Tensor]:
        """Extra `[B, ...]` outputs of `compute_actions`; default: none (the value
        estimate is always returned as `vf_preds`)."""
        return {}

    def make_optimizer(self) -> keras.optimizers.Optimizer:
        """The optimizer (built under the strategy scope); default: Adam(`lr`).

        Leave gradient clipping to `grad_clip` (applied to the replicas' summed
        gradients), not to the optimizer's `clipnorm` options (per replica)."""
        return keras.optimizers.Adam(self.config["lr"])

    def make_action_distribution(self) -> Tuple[type, int]:
        """`(dist_class, num_outputs)` for the action space; default: from the catalog."""
        from tfrl.models.catalog import ModelCatalog

        return ModelCatalog.get_action_dist(self.action_space, self.config["model"])

    def make_model(self) -> keras.Model:
        """The Keras model (called under the strategy scope); default: from the catalog."""
        from tfrl.models.catalog import ModelCatalog

        return ModelCatalog.get_model(self.observation_space, self.action_space,
                                      self.num_outputs, self.config["model"])

    # ------------------------------------------------------------- acting

    def compute_actions(self, obs_batch: Any, state_batches: Optional[List[Any]] = None,
                        prev_action_batch: Any = None, prev_reward_batch: Any = None,
                        info_batch: Any = None, episodes: Any = None,
                        explore: Optional[bool] = None, timestep: Optional[int] = None,
                        **kwargs) -> Tuple[Any, List[np.ndarray], Dict[str, np.ndarray]]:
        """Actions, state-outs and extra fetches (`action_dist_inputs`, `action_logp`,
        `action_prob`, `vf_preds`, ...) for a batch, in one compiled call."""
        obs, states, explore_t = self.action_inputs(obs_batch, state_batches, explore)
        outputs = self._actions_fn(*tree.flatten(obs), *states, explore_t)
        self.global_timestep = (int(timestep) if timestep is not None
                                else self.global_timestep + len(tree.flatten(obs)[0]))
        return self.action_outputs(outputs)

    def action_input_signature(self) -> List[Any]:
        """Specs of `action_graph`'s arguments: obs `[B, ...]`, state-ins, explore."""
        state_specs = [tf.TensorSpec((None,) + s.shape, tf.as_dtype(s.dtype))
                       for s in self._initial_state]
        return [self._obs_spec, state_specs, tf.TensorSpec((), tf.bool)]

    def action_inputs(self, obs_batch: Any, state_batches: Optional[List[Any]],
                      explore: Optional[bool]) -> Tuple[Any, List[np.ndarray], tf.Tensor]:
        """Checked arguments (tensors) of the compiled action function (used by
        TFRunBuilder)."""
        spec = self._obs_spec
        if (isinstance(obs_batch, np.ndarray) and isinstance(spec, tf.TensorSpec)
                and obs_batch.dtype == spec.dtype.as_numpy_dtype
                and obs_batch.shape[1:] == tuple(spec.shape[1:])):
            obs = obs_batch  # the common case, already in shape
        else:
            obs = space_specs.to_batch(self.observation_space, obs_batch, "obs_batch")
        num_rows = len(tree.flatten(obs)[0])
        states = list(state_batches or [])
        if len(states) != len(self._initial_state):
            raise ValueError(
                f"compute_actions(): {type(self).__name__} has {len(self._initial_state)} "
                f"state tensor(s); received {len(states)} state batch(es). Pass "
                "get_initial_state() (batched) for a new episode's first step."
            )
        checked = []
        for i, (state, init) in enumerate(zip(states, self._initial_state)):
            state = np.asarray(state, init.dtype)
            if state.shape != (num_rows,) + init.shape:
                raise ValueError(
                    f"compute_actions(): state_batches[{i}] must have shape "
                    f"{(num_rows,) + init.shape}; received {state.shape}."
                )
            checked.append(state)
        explore = self.config["explore"] if explore is None else explore
        # Tensors, not numpy: a concrete function converts numpy arguments slowly.
        return (tree.map_structure(tf.constant, obs), [tf.constant(s) for s in checked],
                self._explore_tensors[bool(explore)])

    @staticmethod
    def action_outputs(outputs: Any) -> Tuple[Any, List[np.ndarray], Dict[str, np.ndarray]]:
        """Numpy `(actions, state_outs, extra_fetches)` from the compiled outputs."""
        actions, state_outs, extras = outputs
        def numpy(value):
            return (value.numpy() if isinstance(value, tf.Tensor)
                    else tree.map_structure(lambda t: t.numpy(), value))

        return numpy(actions), [s.numpy() for s in state_outs], {
            k: numpy(v) for k, v in extras.items()}

    def action_graph(self, obs: Any, state_in: List[tf.Tensor], explore: tf.Tensor) -> Any:
        """The action computation, for use inside compiled code."""
        dist_inputs, value, state_out = self._call_model(obs, state_in)
        dist = self.dist_class(dist_inputs, self.model)
        action_spec = space_specs.batch_spec(self.action_space)
        as_space_dtype = lambda a: tree.map_structure(  # noqa: E731
            lambda x, s: tf.cast(x, s.dtype), a, action_spec)

        # Both actions, then a select: cheaper than a tf.cond for small models.
        sampled = as_space_dtype(dist.sample())
        sampled_logp = dist.sampled_action_logp()  # [B]
        greedy = as_space_dtype(dist.deterministic_sample())
        actions = tree.map_structure(
            lambda a, b: tf.where(tf.reshape(explore, [1] * len(a.shape)), a, b), sampled, greedy)
        logp = tf.where(explore, sampled_logp, tf.zeros_like(sampled_logp))
        extras = {
            Columns.ACTION_DIST_INPUTS: dist_inputs,  # [B, num_outputs]
            Columns.ACTION_LOGP: logp,  # [B]
            Columns.ACTION_PROB: tf.exp(logp),  # [B]
            Columns.VF_PREDS: value,  # [B]
        }
        extras.update(self.extra_action_out({Columns.OBS: obs}, state_in, self.model, dist))
        return actions, state_out, extras

    def _compute_actions_graph(self, *args):
        self.num_traces["compute_actions"] += 1
        num_obs = len(tree.flatten(self._obs_spec))
        obs = tree.unflatten_as(self._obs_spec, list(args[:num_obs]))
        return self.action_graph(obs, list(args[num_obs:-1]), args[-1])

    def _call_model(self, obs: Any, state_in: List[Any]):
        """`(dist_inputs [B, n], value [B], state_out)` for one timestep."""
        if not self._recurrent:
            dist_inputs, value = self.model(obs, training=False)
            return dist_inputs, value, []
        obs_t = tree.map_structure(lambda o: tf.expand_dims(o, 1), obs)  # [B, 1, ...]
        seq_lens = tf.ones(tf.shape(tree.flatten(obs)[0])[:1], tf.int32)  # [B]
        dist_inputs, value, state_out = self.model((obs_t, list(state_in), seq_lens),
                                                   training=False)
        return dist_inputs[:, 0], value[:, 0], list(state_out)

    # ------------------------------------------------------------ learning

    def global_mean(self, values: tf.Tensor, mask: Optional[tf.Tensor] = None) -> tf.Tensor:
        """This replica's share of the mean of `values` over the global minibatch.

        Summed over replicas (as the optimizer sums gradients) it gives the mean over
        all replicas' rows (where `mask` is true, if given).
        """
        values = tf.convert_to_tensor(values)
        if mask is None:
            count = tf.cast(tf.size(values), values.dtype)
            total = tf.reduce_sum(values)
        else:
            mask = tf.cast(mask, values.dtype)
            count = tf.reduce_sum(mask)
            total = tf.reduce_sum(values * mask)
        context = tf.distribute.get_replica_context()
        if context is not None and context.num_replicas_in_sync > 1:
            count = context.all_reduce(tf.distribute.ReduceOp.SUM, tf.stop_gradient(count))
        return total / tf.maximum(count, 1.0)

    def forward(self, model: keras.Model, train_batch: Dict[str, tf.Tensor]
                ) -> Tuple[tf.Tensor, tf.Tensor]:
        """`(dist_inputs, value)` of a train batch: `[B, n]`, `[B]` for feed-forward
        models; `[B, T, n]`, `[B, T]` for recurrent ones (from `state_in_*`, `seq_lens`)."""
        if not self._recurrent:
            return model(train_batch[Columns.OBS], training=True)
        state_in = [train_batch[f"state_in_{i}"] for i in range(len(self._initial_state))]
        dist_inputs, value, _ = model(
            (train_batch[Columns.OBS], state_in, train_batch[Columns.SEQ_LENS]), training=True)
        return dist_inputs, value

    def valid_mask(self, train_batch: Dict[str, tf.Tensor]) -> Optional[tf.Tensor]:
        """`[B, T]` bool, True at real (not padded) timesteps; None if feed-forward."""
        if not self._recurrent:
            return None
        seq_lens = train_batch[Columns.SEQ_LENS]  # [B]
        max_len = tf.shape(tree.flatten(train_batch[Columns.OBS])[0])[1]
        return tf.sequence_mask(seq_lens, max_len)

    def learn_on_batch(self, samples: Any) -> Dict[str, Any]:
        """Runs `num_sgd_iter` epochs of minibatch SGD on `samples` in one compiled call.

        Returns:
            `{"learner_stats": {...}, "num_traces": {...}}`; learner stats are averaged
            over minibatches: `total_loss`, the `stats()` entries, `num_grad_updates`
            and `num_traces` (traces of the compiled learn function).
        """
        stats = self._train.learn(samples)
        return {"learner_stats": stats, "num_traces": dict(self.num_traces)}

    def compute_gradients(self, postprocessed_batch: Any) -> Tuple[List[np.ndarray], Dict]:
        """Gradients of the loss on the whole batch (summed over replicas), as numpy."""
        grads, stats = self._train.gradients(postprocessed_batch)
        return grads, {"learner_stats": stats, "num_traces": dict(self.num_traces)}

    def apply_gradients(self, gradients: List[Any]) -> None:
        """Applies `compute_gradients` results with the optimizer."""
        self._train.apply(gradients)

    # -------------------------------------------------------------- state

    def get_weights(self) -> List[np.ndarray]:
        """The model's variables (`model.weights` order) as numpy arrays.

        A list, as in RLlib's TF2 policies: Keras numbers layer names per process, so
        two policies with the same architecture share the order, not the names.
        """
        return [np.array(v.numpy()) for v in self.model.weights]

    def set_weights(self, weights: List[Any]) -> None:
        """Sets the model's variables from a `get_weights` list."""
        variables = self.model.weights
        if not isinstance(weights, (list, tuple)) or len(weights) != len(variables):
            got = (f"{len(weights)} arrays" if isinstance(weights, (list, tuple))
                   else type(weights).__name__)
            raise ValueError(
                f"set_weights() takes the list get_weights() returns: {len(variables)} arrays "
                f"for the variables of {type(self).__name__}'s model; received {got}."
            )
        values = [np.asarray(w) for w in weights]
        for i, (variable, value) in enumerate(zip(variables, values)):
            if tuple(value.shape) != tuple(variable.shape):
                raise ValueError(
                    f"set_weights(): weight {i} ({variable.path}) must have shape "
                    f"{tuple(variable.shape)}; received shape {value.shape}."
                )
        for variable, value in zip(variables, values):
            variable.assign(value)

    def get_state(self) -> Dict[str, Any]:
        """Weights, optimizer variables, the global timestep and the update counter."""
        state = super().get_state()
        state["_optimizer_variables"] = [np.array(v.numpy()) for v in self.optimizer.variables]
        state["num_grad_updates"] = int(self.num_grad_updates.numpy())
        return state

    def set_state(self, state: Dict[str, Any]) -> None:
        """Restores a `get_state` result (optimizer variables too, if present)."""
        super().set_state(state)
        opt_values = state.get("_optimizer_variables")
        if opt_values is not None:
            variables = self.optimizer.variables
            shapes = [tuple(v.shape) for v in variables]
            got = [tuple(np.shape(v)) for v in opt_values]
            if shapes != got:
                raise ValueError(
                    f"set_state(): '_optimizer_variables' must have shapes {shapes}; "
                    f"received {got}."
                )
            for variable, value in zip(variables, opt_values):
                variable.assign(value)
        self.num_grad_updates.assign(int(state.get("num_grad_updates", 0)))

    def export_model(self, export_dir: str, onnx: Optional[int] = None) -> None:
        """Writes a SavedModel with named serving signatures (see `tf_policy_export`)."""
        if onnx:
            raise ValueError(f"export_model(): ONNX export is not supported; received onnx={onnx!r}.")
        tf_policy_export.export_saved_model(self, export_dir)

    def export_checkpoint(self, export_dir: str) -> None:
        """Writes a checkpoint of the model, the optimizer and the update counter."""
        tf_policy_export.write_checkpoint(self, export_dir)

    def import_checkpoint(self, export_dir: str) -> None:
        """Restores an `export_checkpoint` directory (same architecture)."""
        tf_policy_export.read_checkpoint(self, export_dir)

    def get_initial_state(self) -> List[np.ndarray]:
        """The model's initial state for one agent (unbatched); `[]` if feed-forward."""
        return [s.copy() for s in self._initial_state]

    def is_recurrent(self) -> bool:
        """Whether the model is recurrent."""
        return self._recurrent
