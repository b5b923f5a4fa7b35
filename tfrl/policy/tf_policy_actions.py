"""ActionFunctions: a TFPolicy's compiled action and value computations.

`compute_actions` is one call of a concrete function with a flat, fixed input signature:
the observation leaves `[B, ...]`, the state-ins `[B, ...]`, the previous actions and
rewards the model consumes (`prev_actions` `[B, ...]`, `prev_rewards` `[B]`, only with
`lstm_use_prev_action` / `lstm_use_prev_reward` or the attention net's
`attention_use_n_prev_actions` / `_rewards`), and `explore` as a bool tensor. It
returns actions, logp, distribution inputs and value together. `value` is a second
concrete function over the same inputs (without `explore`) returning `vf_preds` only.
Both are traced on first use, once, and both take the model's outputs from the
policy's `call_model`. They trace without autograph (converting tfrl's own code and
`tree` took seconds per policy); the policy's hooks (`action_graph`, `call_model`,
`extra_action_out`) are converted as autograph would convert them, unless marked
`tf.autograph.experimental.do_not_convert` as the built-in ones are
(`autograph_converted`), so an override may still use Python control flow on tensors.

The inputs are checked on the host (`inputs`) and passed as tensors: a concrete function
converts numpy arguments slowly.
"""

from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import tensorflow as tf
import tree

from tfrl.core.columns import Columns
from tfrl.models.tf.action_dist_base import TFActionDistribution
from tfrl.policy import space_specs
from tfrl.policy.train_columns import autograph_converted

PREV_COLUMNS = (Columns.PREV_ACTIONS, Columns.PREV_REWARDS)
#: The settings that make a model consume `PREV_COLUMNS`, as error messages name them (a
#: model's `prev_settings` attribute, if any, names its own).
LSTM_PREV_SETTINGS = ("lstm_use_prev_action=True", "lstm_use_prev_reward=True")


def model_prev_columns(model: Any) -> List[str]:
    """The previous-step columns a model consumes (its `use_prev_action` /
    `use_prev_reward` flags: `lstm_use_prev_action/reward`, `attention_use_n_prev_*`)."""
    flags = (getattr(model, "use_prev_action", False), getattr(model, "use_prev_reward", False))
    return [column for column, used in zip(PREV_COLUMNS, flags) if used]


class ActionFunctions:
    """The compiled action and value functions of one TFPolicy.

    Args:
        policy: The TFPolicy; its spaces, `model`, `call_model`, `dist_class`, `config`,
            initial state, `extra_action_out` and `num_traces` are used.
    """

    def __init__(self, policy):
        self._policy = policy
        self._name = type(policy).__name__
        self.initial_state = policy._initial_state
        self.prev_columns = model_prev_columns(policy.model)
        self.obs_spec = space_specs.batch_spec(policy.observation_space)
        self._flat_obs = isinstance(self.obs_spec, tf.TensorSpec)
        self._num_obs = len(tree.flatten(self.obs_spec))
        # `(shape[1:], numpy dtype)` of a flat observation batch, as plain Python values:
        # comparing them is the whole check of the common case (no TensorShape).
        self.flat_obs = ((tuple(self.obs_spec.shape[1:]), self.obs_spec.dtype.as_numpy_dtype)
                         if self._flat_obs else None)
        self.prev_specs = {}
        if Columns.PREV_ACTIONS in self.prev_columns:
            self.prev_specs[Columns.PREV_ACTIONS] = space_specs.batch_spec(policy.action_space)
        if Columns.PREV_REWARDS in self.prev_columns:
            self.prev_specs[Columns.PREV_REWARDS] = tf.TensorSpec((None,), tf.float32)
        self.state_specs = [tf.TensorSpec((None,) + s.shape, tf.as_dtype(s.dtype))
                            for s in self.initial_state]
        self._explore_tensors = {True: tf.constant(True), False: tf.constant(False)}
        self._actions_fn = None
        self._value_fn = None
        policy.num_traces.setdefault("compute_actions", 0)
        policy.num_traces.setdefault("value", 0)

    # ------------------------------------------------------------- host side

    def zero_prev(self, batch_size: int) -> Dict[str, np.ndarray]:
        """Zero previous actions/rewards of the model's prev inputs (e.g. to build it)."""
        return {k: np.zeros((batch_size,) + tuple(s.shape[1:]), s.dtype.as_numpy_dtype)
                for k, s in self.prev_specs.items()}

    def signature(self) -> List[Any]:
        """Specs of `graph`'s arguments: obs, state-ins, explore, prev inputs (a dict)."""
        return [self.obs_spec, list(self.state_specs), tf.TensorSpec((), tf.bool),
                dict(self.prev_specs)]

    def inputs(self, obs_batch: Any, state_batches: Optional[List[Any]],
               explore: Optional[bool], prev_action_batch: Any = None,
               prev_reward_batch: Any = None, what: str = "compute_actions"
               ) -> Tuple[Any, List[tf.Tensor], tf.Tensor, Dict[str, tf.Tensor]]:
        """Checked arguments of `graph`, as tensors (`(obs, states, explore, prev)`)."""
        obs = self.check_obs(obs_batch)
        num_rows = len(obs) if self._flat_obs else len(tree.flatten(obs)[0])
        states = self.check_states(state_batches, num_rows, what)
        prev = self.check_prev(prev_action_batch, prev_reward_batch, num_rows, what)
        if explore is None:
            explore = self._policy.config["explore"]
        obs = tf.constant(obs) if self._flat_obs else tree.map_structure(tf.constant, obs)
        return (obs, [tf.constant(s) for s in states] if states else [],
                self._explore_tensors[bool(explore)],
                {k: tf.constant(v) for k, v in prev.items()} if prev else {})

    def check_obs(self, obs_batch: Any) -> Any:
        """The observation batch as numpy of the observation spec (or a clear error)."""
        flat = self.flat_obs
        if (flat is not None and isinstance(obs_batch, np.ndarray)
                and obs_batch.dtype == flat[1] and obs_batch.ndim == len(flat[0]) + 1
                and obs_batch.shape[1:] == flat[0]):
            return obs_batch  # the common case, already in shape
        return space_specs.to_batch(self._policy.observation_space, obs_batch, "obs_batch")

    def check_states(self, state_batches: Optional[List[Any]], num_rows: int,
                     what: str) -> List[np.ndarray]:
        states = list(state_batches or [])
        if len(states) != len(self.initial_state):
            raise ValueError(
                f"{what}(): {self._name} has {len(self.initial_state)} state tensor(s); "
                f"received {len(states)} state batch(es). Pass get_initial_state() (batched) "
                "for a new episode's first step."
            )
        checked = []
        for i, (state, init) in enumerate(zip(states, self.initial_state)):
            state = np.asarray(state, init.dtype)
            if state.shape != (num_rows,) + init.shape:
                raise ValueError(
                    f"{what}(): state_batches[{i}] must have shape "
                    f"{(num_rows,) + init.shape}; received {state.shape}."
                )
            checked.append(state)
        return checked

    def check_prev(self, prev_action_batch: Any, prev_reward_batch: Any, num_rows: int,
                   what: str) -> Dict[str, np.ndarray]:
        """The previous actions/rewards the model consumes (others are ignored)."""
        prev = {}
        given = {Columns.PREV_ACTIONS: prev_action_batch, Columns.PREV_REWARDS: prev_reward_batch}
        for column in self.prev_columns:
            arg = "prev_action_batch" if column == Columns.PREV_ACTIONS else "prev_reward_batch"
            value = given[column]
            if value is None:
                settings = getattr(self._policy.model, "prev_settings", LSTM_PREV_SETTINGS)
                flag = settings[PREV_COLUMNS.index(column)]
                raise ValueError(
                    f"{what}(): {self._name}'s model was built with {flag} and needs "
                    f"{arg} (the previous step's values, zeros at an episode's start); "
                    f"received {arg}=None."
                )
            if column == Columns.PREV_ACTIONS:
                value = space_specs.to_batch(self._policy.action_space, value, arg)
            else:
                value = np.asarray(value)
                if value.dtype == object or value.dtype.kind not in "biuf" or value.ndim != 1:
                    raise ValueError(
                        f"{what}(): {arg} must be numeric of shape [B]; received dtype "
                        f"{value.dtype}, shape {value.shape}."
                    )
                value = value.astype(np.float32, copy=False)
            rows = len(tree.flatten(value)[0])
            if rows != num_rows:
                raise ValueError(
                    f"{what}(): {arg} must have one row per observation ({num_rows}); "
                    f"received {rows}."
                )
            prev[column] = value
        return prev

    def compute(self, obs_batch: Any, state_batches: Optional[List[Any]], explore: Optional[bool],
                prev_action_batch: Any = None, prev_reward_batch: Any = None):
        """`(actions, state_outs, extra_fetches)` as numpy, in one compiled call."""
        obs, states, explore_t, prev = self.inputs(obs_batch, state_batches, explore,
                                                   prev_action_batch, prev_reward_batch)
        if self._actions_fn is None:
            self._actions_fn = tf.function(
                self._actions_graph,
                input_signature=self._flat_signature() + [tf.TensorSpec((), tf.bool)],
                autograph=False,
            ).get_concrete_function()
        flat_obs = [obs] if self._flat_obs else tree.flatten(obs)
        outputs = self._actions_fn(*flat_obs, *states, *prev.values(), explore_t)
        return self.outputs(outputs), int(flat_obs[0].shape[0])

    def value(self, obs_batch: Any, state_batches: Optional[List[Any]] = None,
              prev_action_batch: Any = None, prev_reward_batch: Any = None) -> np.ndarray:
        """Value estimates `[B]` in one compiled call."""
        obs, states, _, prev = self.inputs(obs_batch, state_batches, False, prev_action_batch,
                                           prev_reward_batch, what="value")
        if self._value_fn is None:
            self._value_fn = tf.function(
                self._value_graph, input_signature=self._flat_signature(), autograph=False
            ).get_concrete_function()
        return self._value_fn(*tree.flatten(obs), *states, *prev.values()).numpy()

    @staticmethod
    def outputs(outputs: Any) -> Tuple[Any, List[np.ndarray], Dict[str, np.ndarray]]:
        """Numpy `(actions, state_outs, extra_fetches)` from the compiled outputs."""
        actions, state_outs, extras = outputs

        def numpy(value):
            return (value.numpy() if isinstance(value, tf.Tensor)
                    else tree.map_structure(lambda t: t.numpy(), value))

        return numpy(actions), [s.numpy() for s in state_outs], {
            k: numpy(v) for k, v in extras.items()}

    # ---------------------------------------------------------- compiled side

    def graph(self, obs: Any, state_in: List[tf.Tensor], explore: tf.Tensor,
              prev: Optional[Dict[str, tf.Tensor]] = None) -> Any:
        """The action computation, for use inside compiled code."""
        policy = self._policy
        dist_inputs, value, state_out = autograph_converted(policy.call_model)(
            obs, state_in, prev)
        dist = policy.dist_class(dist_inputs, policy.model)
        action_spec = space_specs.batch_spec(policy.action_space)
        as_space_dtype = lambda a: tree.map_structure(  # noqa: E731
            lambda x, s: tf.cast(x, s.dtype), a, action_spec)

        # Both actions, then a select: cheaper than a tf.cond for small models.
        if isinstance(dist, TFActionDistribution):
            # One stateless seed per call from the policy's generator (in its state).
            sampled = as_space_dtype(dist.sample(policy.sampling_generator.make_seeds(1)[:, 0]))
        else:  # a duck-typed dist_class samples its own way (not in get_state())
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
        input_dict = {Columns.OBS: obs, **(prev or {})}
        extras.update(autograph_converted(policy.extra_action_out)(
            input_dict, state_in, policy.model, dist))
        return actions, state_out, extras

    def _flat_signature(self) -> List[tf.TensorSpec]:
        # Flat positional arguments: a concrete function binds them faster than nests.
        return (tree.flatten(self.obs_spec) + list(self.state_specs)
                + list(self.prev_specs.values()))

    def _unflatten(self, args):
        num_states = len(self.state_specs)
        obs = tree.unflatten_as(self.obs_spec, list(args[:self._num_obs]))
        states = list(args[self._num_obs:self._num_obs + num_states])
        prev = dict(zip(self.prev_specs, args[self._num_obs + num_states:]))
        return obs, states, prev

    def _actions_graph(self, *args):
        self._policy.num_traces["compute_actions"] += 1
        obs, states, prev = self._unflatten(args[:-1])
        return autograph_converted(self._policy.action_graph)(obs, states, args[-1], prev)

    def _value_graph(self, *args):
        self._policy.num_traces["value"] += 1
        obs, states, prev = self._unflatten(args)
        return autograph_converted(self._policy.call_model)(obs, states, prev)[1]
