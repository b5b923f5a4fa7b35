"""Target networks: soft (Polyak) and hard updates of one list of variables toward another.

`soft_update(target, online, tau)` sets every target variable to
`tau * online + (1 - tau) * target` (Lillicrap et al., 2015); `tau=1` copies (DQN's
periodic update, and the first synchronization of a freshly built target network).
Pass the models' `.variables` (not only the trainable ones, so that e.g. normalization
statistics follow too); both lists must come from networks built alike (same layers in
the same order). Works eagerly and inside `tf.function`.

Example:
    >>> import tensorflow as tf
    >>> target, online = [tf.Variable([0.0, 10.0])], [tf.Variable([1.0, 20.0])]
    >>> soft_update(target, online, tau=0.1)
    >>> target[0].numpy().tolist()
    [0.10000000149011612, 11.0]
"""

from typing import Sequence, Union

import numpy as np
import tensorflow as tf

__all__ = ["assign_weights", "hard_update", "soft_update"]


def _check(fn_name: str, target: Sequence[tf.Variable], online: Sequence[tf.Variable]
           ) -> None:
    if len(target) != len(online):
        raise ValueError(f"{fn_name}(): the target and online networks must have as many "
                         f"variables; received {len(target)} and {len(online)}. Build the "
                         "target network as the online one (and call it once if it builds "
                         "lazily) before updating it.")
    for t, o in zip(target, online):
        if not t.shape.is_compatible_with(o.shape) or t.dtype != o.dtype:
            raise ValueError(f"{fn_name}(): target variable {t.name} ({t.dtype.name} "
                             f"{t.shape}) does not match online variable {o.name} "
                             f"({o.dtype.name} {o.shape}); the networks must be built alike.")


def soft_update(target_variables: Sequence[tf.Variable],
                online_variables: Sequence[tf.Variable],
                tau: Union[float, tf.Tensor]) -> None:
    """`target <- tau * online + (1 - tau) * target`, variable by variable.

    Args:
        target_variables: The target network's variables (assigned).
        online_variables: The online network's variables, in the same order.
        tau: In [0, 1] (a Python number is checked; 1 copies exactly).

    Raises:
        ValueError: For lists of different lengths, variables that do not match in
            shape or dtype, or a Python `tau` outside [0, 1].
    """
    target_variables, online_variables = list(target_variables), list(online_variables)
    _check("soft_update", target_variables, online_variables)
    if isinstance(tau, (int, float)):
        if not 0.0 <= tau <= 1.0:
            raise ValueError(f"soft_update(): tau must be in [0, 1]; received {tau!r}.")
        if tau == 1.0:
            for t, o in zip(target_variables, online_variables):
                t.assign(o)
            return
    for t, o in zip(target_variables, online_variables):
        tau_t = tf.cast(tau, t.dtype)
        t.assign(tau_t * o + (1.0 - tau_t) * t)


def hard_update(target_variables: Sequence[tf.Variable],
                online_variables: Sequence[tf.Variable]) -> None:
    """Copies the online variables into the target ones (`soft_update` with `tau=1`)."""
    soft_update(target_variables, online_variables, 1.0)


def assign_weights(variables: Sequence[tf.Variable], values: Sequence, what: str) -> None:
    """Assigns saved arrays to `variables` (e.g. a restored policy's target networks),
    after checking their number and shapes.

    Raises:
        ValueError: If `values` does not hold one array of the right shape per variable
            (the message names `what`, e.g. "set_state(): 'target_weights'").
    """
    if len(values) != len(variables) or any(
            tuple(np.shape(t)) != tuple(v.shape) for t, v in zip(values, variables)):
        raise ValueError(
            f"{what} must hold {len(variables)} arrays of shapes "
            f"{[tuple(v.shape) for v in variables]}; received "
            f"{[tuple(np.shape(t)) for t in values]}.")
    for variable, value in zip(variables, values):
        variable.assign(value)
