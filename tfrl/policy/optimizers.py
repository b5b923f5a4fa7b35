"""Adam with TensorFlow's fused update kernel: the policies' default optimizer.

Keras 3's `keras.optimizers.Adam` writes its update as ~35 TensorFlow ops per variable
(casts, powers, the moment updates, the step). Inside a policy's compiled learning loop
those ops are traced, optimized and instantiated once per process: for the 64x64 PPO
network they are about 40 % of the graph, ~8 MB of peak memory and ~0.15 s of the
first learning step. `FusedAdam` is `keras.optimizers.Adam` (same arguments, slots,
schedules, `get_config`, checkpoints) whose dense update is one
`ResourceApplyAdam` op per variable: the same formula as Keras' update,

    m += (g - m) (1 - beta_1);  v += (g^2 - v) (1 - beta_2)
    var -= lr sqrt(1 - beta_2^t) / (1 - beta_1^t) m / (sqrt(v) + epsilon)

computed by TensorFlow's kernel. In float32 the result differs from Keras' in the last
bits (the kernel computes `1 - beta_1` in float32, Keras in Python); in float64 it is
the formula exactly (Keras' float64 update rounds beta_1 and beta_2 to float32 in the bias
correction, ~1e-5 relative). AMSGrad, sparse gradients (`tf.IndexedSlices`) and
dtypes other than float32/float64 take Keras' own update.
"""

from typing import Any

import keras
import tensorflow as tf

_FUSED_DTYPES = (tf.float32, tf.float64)
_EPSILON_FORMS = ("keras", "torch")


@keras.saving.register_keras_serializable(package="tfrl")
class FusedAdam(keras.optimizers.Adam):
    """`keras.optimizers.Adam` with one fused TensorFlow op per dense variable update.

    Takes `keras.optimizers.Adam`'s arguments (see the module docstring) and
    `epsilon_form`: "keras" (the default: `epsilon` added to `sqrt(v)` before the bias
    correction, Keras' and TensorFlow's formula) or "torch" (`epsilon` added to the
    bias-corrected `sqrt(v / (1 - beta_2^t))`, as `torch.optim.Adam` and so SB3 do; the
    fused kernel then gets `epsilon * sqrt(1 - beta_2^t)`, the same update). The two
    differ while `1 - beta_2^t` is small (the first few thousand steps) for gradients
    not much larger than `epsilon`, e.g. a conv net's with SB3's `epsilon=1e-5`.

    Raises:
        ValueError: For an unknown `epsilon_form`, or "torch" with `amsgrad`.
    """

    def __init__(self, *args, epsilon_form: str = "keras", **kwargs):
        super().__init__(*args, **kwargs)
        if epsilon_form not in _EPSILON_FORMS:
            raise ValueError(f"FusedAdam: epsilon_form must be one of {list(_EPSILON_FORMS)}; "
                             f"received {epsilon_form!r}.")
        if epsilon_form == "torch" and self.amsgrad:
            raise ValueError("FusedAdam: epsilon_form='torch' is not implemented with "
                             "amsgrad=True; use epsilon_form='keras' or amsgrad=False.")
        self.epsilon_form = epsilon_form

    def get_config(self):
        """Keras' Adam config plus `epsilon_form`."""
        return {**super().get_config(), "epsilon_form": self.epsilon_form}

    def apply(self, grads, trainable_variables=None):
        """Applies one step (see `keras.optimizers.Optimizer.apply`); the bias
        corrections `beta^t` are computed once per step, not once per variable."""
        self._powers = {}
        try:
            return super().apply(grads, trainable_variables)
        finally:
            self._powers = None

    def update_step(self, gradient, variable, learning_rate):
        """Applies one Adam step to `variable` (see `keras.optimizers.Adam`)."""
        dtype = tf.as_dtype(variable.dtype)
        torch_form = getattr(self, "epsilon_form", "keras") == "torch"
        if torch_form and isinstance(gradient, tf.IndexedSlices):
            gradient = tf.convert_to_tensor(gradient)  # the fused (dense) update below
        if (self.amsgrad or dtype not in _FUSED_DTYPES
                or isinstance(gradient, tf.IndexedSlices)):
            return super().update_step(gradient, variable, learning_rate)
        index = self._get_variable_index(variable)
        m, v = self._momentums[index], self._velocities[index]
        # The hyperparameters in the variable's dtype straight from Python (tf.cast of a
        # Python float would round it to float32 first).
        beta_1 = tf.constant(self.beta_1, dtype)
        beta_2 = tf.constant(self.beta_2, dtype)
        powers = getattr(self, "_powers", None)
        if powers is None or dtype not in powers:
            local_step = tf.cast(self.iterations + 1, dtype)
            step_powers = (tf.pow(beta_1, local_step), tf.pow(beta_2, local_step))
            if powers is not None:  # inside `apply`: the other variables reuse them
                powers[dtype] = step_powers
        beta1_power, beta2_power = powers[dtype] if powers else step_powers
        epsilon = tf.constant(self.epsilon, dtype)
        if torch_form:
            epsilon = epsilon * tf.sqrt(1.0 - beta2_power)
        return tf.raw_ops.ResourceApplyAdam(
            var=_handle(variable), m=_handle(m), v=_handle(v),
            beta1_power=beta1_power, beta2_power=beta2_power,
            lr=tf.cast(learning_rate, dtype), beta1=beta_1, beta2=beta_2,
            epsilon=epsilon, grad=tf.cast(gradient, dtype))


def without_single_replica_all_reduce(optimizer: Any, strategy: tf.distribute.Strategy) -> Any:
    """`optimizer` (a Keras optimizer or a MultiOptimizer's) with Keras' cross-replica
    gradient sum skipped when `strategy` has one replica, where the sum is the identity.

    Keras sums gradients through `ReplicaContext.all_reduce`, whose gradient is a
    `tf.custom_gradient`: in a traced function each call registers a new gradient function
    in TensorFlow's process-wide registry, which keeps the whole traced graph alive after
    the policy is gone (a few MB per policy; 12.9 GB in one test process). With one
    replica the sum changes nothing, so the updates are bit for bit the same. (With
    several replicas the sum is needed, and the registry entry stays.)
    """
    if strategy.num_replicas_in_sync != 1:
        return optimizer
    for inner in getattr(optimizer, "optimizers", [optimizer]):
        if hasattr(inner, "_all_reduce_sum_gradients"):
            inner._all_reduce_sum_gradients = list  # grads_and_vars -> the same pairs
    return optimizer


def _handle(variable) -> tf.Tensor:
    """The resource handle of a Keras or TensorFlow variable (under a distribution
    strategy's update, the handle of this device's copy)."""
    if isinstance(variable, keras.Variable):
        variable = variable.value
    return variable.handle


class MultiOptimizer(tf.Module):
    """Several optimizers, each updating its own group of variables: the policy's
    `optimizer` when parts of one model learn at different rates (SAC's actor, critics
    and temperature; TD3's actor and critics).

    `apply_gradients` sends each `(gradient, variable)` pair to the optimizer of the
    variable's group (pairs of a group with no gradient this step leave that optimizer
    untouched); `variables` are the optimizers' variables in group order (what
    `get_state` saves). It is a `tf.Module`, so checkpoints track every optimizer.

    Args:
        groups: `(optimizer, variables)` pairs; every variable in exactly one group.

    Raises:
        ValueError: For no groups, or a variable in two groups.

    Example:
        >>> import keras
        >>> a, b = keras.Variable(1.0), keras.Variable(1.0)
        >>> opt = MultiOptimizer([(keras.optimizers.SGD(0.1), [a]),
        ...                       (keras.optimizers.SGD(0.5), [b])])
        >>> opt.build([a, b])
        >>> opt.apply_gradients([(tf.constant(1.0), a), (tf.constant(1.0), b)])
        >>> round(float(a.numpy()), 4), round(float(b.numpy()), 4)
        (0.9, 0.5)
    """

    def __init__(self, groups):
        super().__init__(name="multi_optimizer")
        groups = [(optimizer, list(variables)) for optimizer, variables in groups]
        if not groups:
            raise ValueError("MultiOptimizer needs at least one (optimizer, variables) group; "
                             "received none.")
        self.optimizers = [optimizer for optimizer, _ in groups]
        # Plain (untracked) holder: checkpoints track the optimizers, not the model's
        # variables a second time.
        self._index = _GroupIndex([variables for _, variables in groups])

    @property
    def built(self) -> bool:
        """Whether every optimizer has built its variables."""
        return all(getattr(optimizer, "built", True) for optimizer in self.optimizers)

    def build(self, var_list) -> None:
        """Builds each optimizer on its group.

        Raises:
            ValueError: If `var_list` holds a variable of no group.
        """
        stray = [v.path for v in var_list if id(v) not in self._index.group_of]
        if stray:
            raise ValueError(f"MultiOptimizer.build(): variables {stray} are in no group; "
                             "list every trainable variable in one group.")
        for optimizer, variables in zip(self.optimizers, self._index.groups):
            if not getattr(optimizer, "built", False):
                optimizer.build(variables)

    @property
    def variables(self):
        """The optimizers' variables (iterations, slots), group by group."""
        return [v for optimizer in self.optimizers for v in optimizer.variables]

    @property
    def iterations(self):
        """The first optimizer's step counter."""
        return self.optimizers[0].iterations

    def apply_gradients(self, grads_and_vars) -> None:
        """Applies each pair with its group's optimizer (see the class docstring).

        Raises:
            ValueError: For a variable of no group.
        """
        per_group = [[] for _ in self.optimizers]
        for gradient, variable in grads_and_vars:
            index = self._index.group_of.get(id(variable))
            if index is None:
                raise ValueError(f"MultiOptimizer.apply_gradients(): variable {variable.path} "
                                 "is in no group.")
            per_group[index].append((gradient, variable))
        for optimizer, pairs in zip(self.optimizers, per_group):
            if pairs:
                optimizer.apply_gradients(pairs)


class _GroupIndex:
    """MultiOptimizer's variable groups and `id(variable) -> group`."""

    def __init__(self, groups):
        self.groups = groups
        self.group_of = {}
        for index, variables in enumerate(groups):
            for variable in variables:
                if id(variable) in self.group_of:
                    raise ValueError(
                        f"MultiOptimizer: variable {variable.path} is in groups "
                        f"{self.group_of[id(variable)]} and {index}; give each variable "
                        "to one optimizer.")
                self.group_of[id(variable)] = index
