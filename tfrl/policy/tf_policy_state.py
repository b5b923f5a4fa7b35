"""A TFPolicy's weights and state as numpy: what `get_state` returns and `set_state` restores.

The state holds the model's weights (a list in `model.weights` order), the optimizer's
variables, the global timestep, the update counter and the bit-generator states of the
policy's generators: the numpy one that seeds minibatch shuffling, the numpy one the
numpy inference path samples actions from and the `tf.random.Generator` that seeds the
TF inference path's sampling (recurrent, conv and custom models). A policy restored from it continues exactly
as the original would (same shuffles, same sampled actions).
"""

from typing import Any, Dict, List

import numpy as np

from tfrl.policy.nonfinite import NonFiniteStateError

RNG_STATE_KEY = "_rng_states"


def get_weights(policy) -> List[np.ndarray]:
    """The model's variables (`model.weights` order) as numpy arrays."""
    return [np.array(v.numpy()) for v in policy.model.weights]


def set_weights(policy, weights: List[Any]) -> None:
    """Sets the model's variables from a `get_weights` list (checked first)."""
    variables = policy.model.weights
    if not isinstance(weights, (list, tuple)) or len(weights) != len(variables):
        got = (f"{len(weights)} arrays" if isinstance(weights, (list, tuple))
               else type(weights).__name__)
        raise ValueError(
            f"set_weights() takes the list get_weights() returns: {len(variables)} arrays "
            f"for the variables of {type(policy).__name__}'s model; received {got}."
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


def check_finite_state(policy, state: Dict[str, Any]) -> None:
    """Refuses a state whose weights or optimizer variables hold NaN or inf (a finite
    learner never produces one: the checkpoint was damaged or written by other code).

    Raises:
        NonFiniteStateError: Naming the variable, the first bad index and value.
    """
    entries = [("weights", "weight", [v.path for v in policy.model.weights])]
    optimizer = getattr(policy, "optimizer", None)
    if optimizer is not None:
        entries.append(("_optimizer_variables", "optimizer variable",
                        [v.path for v in optimizer.variables]))
    for key, what, names in entries:
        values = state.get(key)
        if not isinstance(values, (list, tuple)):
            continue
        for i, value in enumerate(values):
            value = np.asarray(value)
            if value.dtype.kind not in "fc" or np.isfinite(value).all():
                continue
            index = tuple(int(j) for j in np.argwhere(~np.isfinite(value))[0])
            name = names[i] if i < len(names) else "?"
            raise NonFiniteStateError(
                f"set_state(): {what} {i} ({name}) holds {value[index].item()!r} at index "
                f"{index}; a policy state must hold finite numbers. The checkpoint is damaged "
                "or was written from a diverged policy: restore an earlier one.")


def rng_states(policy) -> Dict[str, Any]:
    """The states of the shuffle and sampling generators (copies): numpy bit-generator
    states, and the TF inference path's `tf.random.Generator` state as an array."""
    return {"shuffle": policy._np_random.bit_generator.state,
            "sampling": policy.sampling_rng.bit_generator.state,
            "tf_sampling": np.array(policy.sampling_generator.state.numpy())}


def set_rng_states(policy, states: Dict[str, Any]) -> None:
    """Restores `rng_states` results (the generators must be of the same kind). A state
    saved before the TF generator was part of it (no `tf_sampling`) leaves it as is."""
    if not isinstance(states, dict) or not (
            {"shuffle", "sampling"} <= set(states) <= {"shuffle", "sampling", "tf_sampling"}):
        raise ValueError(
            f"set_state(): '{RNG_STATE_KEY}' must be a dict with keys ['sampling', 'shuffle', "
            f"'tf_sampling'] (from get_state(); older states lack 'tf_sampling'); received "
            f"{states!r:.200}."
        )
    policy._np_random.bit_generator.state = states["shuffle"]
    policy.sampling_rng.bit_generator.state = states["sampling"]
    if "tf_sampling" in states:
        policy.sampling_generator.reset(np.asarray(states["tf_sampling"]))


def get_optimizer_state(policy, state: Dict[str, Any]) -> Dict[str, Any]:
    """Adds the optimizer variables, update counter and RNG states to a base state."""
    state["_optimizer_variables"] = [np.array(v.numpy()) for v in policy.optimizer.variables]
    state["num_grad_updates"] = int(policy.num_grad_updates.numpy())
    state[RNG_STATE_KEY] = rng_states(policy)
    return state


def set_optimizer_state(policy, state: Dict[str, Any]) -> None:
    """Restores what `get_optimizer_state` added (each entry if present)."""
    opt_values = state.get("_optimizer_variables")
    if opt_values is not None:
        variables = policy.optimizer.variables
        shapes = [tuple(v.shape) for v in variables]
        got = [tuple(np.shape(v)) for v in opt_values]
        if shapes != got:
            raise ValueError(
                f"set_state(): '_optimizer_variables' must have shapes {shapes}; "
                f"received {got}."
            )
        for variable, value in zip(variables, opt_values):
            variable.assign(value)
    policy.num_grad_updates.assign(int(state.get("num_grad_updates", 0)))
    if state.get(RNG_STATE_KEY) is not None:
        set_rng_states(policy, state[RNG_STATE_KEY])
