"""Export of a TFPolicy: a SavedModel for serving and a checkpoint of its training state.

The SavedModel holds the model's variables and four named signatures over flat, named
inputs (`obs`, or `obs_<key>...` for nested observation spaces, then `state_in_<i>` for
recurrent models, then `prev_actions` / `prev_rewards` if the model consumes them). The
observation inputs are the env's: for a policy whose observations are the catalog's
flattened Dict / Tuple or one-hot Discrete / MultiDiscrete form of the env's (its space's
`original_space`), the model takes the env's entries (an action mask as
`obs_action_mask`) and preprocesses them in the graph (`tfrl.models.tf.graph_preprocess`).

- `deterministic_action` (also `serving_default`): `actions`, `action_dist_inputs`,
  `vf_preds`, and `state_out_<i>` for recurrent models;
- `stochastic_action`: the same plus `action_logp` and `action_prob`, sampled;
- `action_dist_inputs`: `action_dist_inputs` only;
- `value`: `vf_preds` only.

Nested actions come out flat as `actions_<key>...`. It loads without tfrl or Keras:
`tf.saved_model.load(export_dir).signatures["deterministic_action"](obs=...)`.

The checkpoint (`tf.train.Checkpoint`) holds the model, the optimizer (slots and
iterations) and the update counter. Both are written to a temporary directory next to
`export_dir` and renamed into place, so a failed export leaves no half-written result.
"""

import os
import shutil
import tempfile
from typing import Any, Callable, Dict, List, Tuple

import tensorflow as tf
import tree

from tfrl.core.columns import Columns
from tfrl.models.tf.graph_preprocess import graph_preprocessor
from tfrl.policy import space_specs
from tfrl.policy.train_columns import autograph_converted

CHECKPOINT_PREFIX = "policy"


def _names(prefix: str, structure: Any) -> List[str]:
    return [prefix + "".join(f"_{p}" for p in path) for path, _ in tree.flatten_with_path(structure)]


def atomic_dir(export_dir: str, write) -> str:
    """Runs `write(tmp_dir)`, then moves tmp_dir to `export_dir` (replacing it)."""
    export_dir = os.path.abspath(export_dir)
    parent = os.path.dirname(export_dir)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".tmp_export_", dir=parent)
    try:
        write(tmp)
        if os.path.exists(export_dir):
            shutil.rmtree(export_dir)
        os.replace(tmp, export_dir)
    finally:
        if os.path.exists(tmp):
            shutil.rmtree(tmp)
    return export_dir


def flat_inputs(policy) -> Tuple[List[tf.TensorSpec], Callable]:
    """The exported models' flat, named input specs and `split(args) -> (obs, states,
    prev)`, which rebuilds the policy's inputs from them (see the module docstring)."""
    obs_spec, state_specs, _, prev_specs = policy.action_input_signature()
    # The env's observations (e.g. a Dict's `obs_action_mask`, `obs_observation`) when
    # the policy's are their flattened / one-hot form: preprocessed in the graph.
    raw_space = getattr(policy.observation_space, "original_space", None)
    preprocess = None if raw_space is None else graph_preprocessor(raw_space)
    if preprocess is not None:
        obs_spec = space_specs.batch_spec(raw_space)
    obs_names = _names(Columns.OBS, obs_spec)
    num_obs = len(obs_names)
    flat_specs = [tf.TensorSpec(s.shape, s.dtype, name=n)
                  for s, n in zip(tree.flatten(obs_spec), obs_names)]
    flat_specs += [tf.TensorSpec(s.shape, s.dtype, name=f"state_in_{i}")
                   for i, s in enumerate(state_specs)]
    flat_specs += [tf.TensorSpec(s.shape, s.dtype, name=name) for name, s in prev_specs.items()]
    num_states = len(state_specs)

    def split(args):
        obs = tree.unflatten_as(obs_spec, list(args[:num_obs]))
        if preprocess is not None:
            obs = preprocess(obs)
        states = list(args[num_obs:num_obs + num_states])
        prev = dict(zip(prev_specs, args[num_obs + num_states:]))
        return obs, states, prev

    return flat_specs, split


def named_outputs(actions: Any, state_out: List[tf.Tensor]) -> Dict[str, tf.Tensor]:
    """`actions` (flat as `actions_<key>...` if nested) and `state_out_<i>` by name."""
    result = dict(zip(_names(Columns.ACTIONS, actions), tree.flatten(actions)))
    result.update({f"state_out_{i}": s for i, s in enumerate(state_out)})
    return result


def tf_variable(weight: Any) -> tf.Variable:
    """The `tf.Variable` that holds a Keras 3 weight (the weight itself if it is one)."""
    if isinstance(weight, tf.Variable):
        return weight
    value = getattr(weight, "value", None)
    if isinstance(value, tf.Variable):
        return value
    raise TypeError(f"Cannot export the weight {getattr(weight, 'path', weight)!r}: it is "
                    f"not backed by a tf.Variable (received {type(weight).__name__}); "
                    "export needs Keras' TensorFlow backend.")


def export_saved_model(policy, export_dir: str) -> str:
    """Writes `policy`'s SavedModel (see the module docstring); returns its directory."""
    flat_specs, split = flat_inputs(policy)

    def outputs(args, explore: bool) -> Dict[str, tf.Tensor]:
        obs, states, prev = split(args)
        actions, state_out, extras = autograph_converted(policy.action_graph)(
            obs, states, tf.constant(explore), prev)
        result = named_outputs(actions, state_out)
        result.update(extras)
        if not explore:
            result.pop(Columns.ACTION_LOGP)
            result.pop(Columns.ACTION_PROB)
        return result

    module = tf.Module()
    # The variables, not the Keras model: saving a model traces its default signature,
    # which fails for models with call kwargs (prev_actions). The tf.Variables under the
    # Keras ones: tracked as Keras variables, they are restored for TF2's loader only;
    # TF1's session loader (TF Serving, `saved_model_cli run`) then reads uninitialized
    # variables.
    module.model_variables = [tf_variable(w) for w in policy.model.weights]
    # Seeds `stochastic_action`'s samples (its state advances with every call).
    module.sampling_generator = policy.sampling_generator

    @tf.function(input_signature=flat_specs, autograph=False)
    def deterministic_action(*args):
        return outputs(args, explore=False)

    @tf.function(input_signature=flat_specs, autograph=False)
    def stochastic_action(*args):
        return outputs(args, explore=True)

    # The single-output signatures call the traced deterministic graph rather than
    # tracing the policy's action computation again (each trace of it costs as much as
    # the whole export's saving); they return its outputs unchanged.
    deterministic = deterministic_action.get_concrete_function()

    @tf.function(input_signature=flat_specs, autograph=False)
    def action_dist_inputs(*args):
        return {Columns.ACTION_DIST_INPUTS: deterministic(*args)[Columns.ACTION_DIST_INPUTS]}

    @tf.function(input_signature=flat_specs, autograph=False)
    def value(*args):
        return {Columns.VF_PREDS: deterministic(*args)[Columns.VF_PREDS]}

    signatures = {
        "serving_default": deterministic,
        "deterministic_action": deterministic,
        "stochastic_action": stochastic_action.get_concrete_function(),
        "action_dist_inputs": action_dist_inputs.get_concrete_function(),
        "value": value.get_concrete_function(),
    }
    return atomic_dir(export_dir, lambda d: tf.saved_model.save(module, d, signatures=signatures))


def _checkpoint(policy) -> tf.train.Checkpoint:
    return tf.train.Checkpoint(model=policy.model, optimizer=policy.optimizer,
                               num_grad_updates=policy.num_grad_updates)


def write_checkpoint(policy, export_dir: str) -> str:
    """Writes the model, optimizer and update counter; returns the directory."""
    return atomic_dir(
        export_dir, lambda d: _checkpoint(policy).write(os.path.join(d, CHECKPOINT_PREFIX)))


def read_checkpoint(policy, export_dir: str) -> None:
    """Restores a `write_checkpoint` directory into `policy` (same architecture).

    Raises:
        FileNotFoundError: If `export_dir` holds no tfrl policy checkpoint.
    """
    prefix = os.path.join(export_dir, CHECKPOINT_PREFIX)
    if not tf.io.gfile.exists(prefix + ".index"):
        raise FileNotFoundError(
            f"No policy checkpoint in {export_dir!r} (expected {prefix}.index, as written by "
            "export_checkpoint())."
        )
    _checkpoint(policy).read(prefix).assert_existing_objects_matched()
