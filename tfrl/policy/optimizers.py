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

import keras
import tensorflow as tf

_FUSED_DTYPES = (tf.float32, tf.float64)


@keras.saving.register_keras_serializable(package="tfrl")
class FusedAdam(keras.optimizers.Adam):
    """`keras.optimizers.Adam` with one fused TensorFlow op per dense variable update.

    Takes exactly `keras.optimizers.Adam`'s arguments; see the module docstring.
    """

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
        return tf.raw_ops.ResourceApplyAdam(
            var=_handle(variable), m=_handle(m), v=_handle(v),
            beta1_power=beta1_power, beta2_power=beta2_power,
            lr=tf.cast(learning_rate, dtype), beta1=beta_1, beta2=beta_2,
            epsilon=tf.constant(self.epsilon, dtype), grad=tf.cast(gradient, dtype))


def _handle(variable) -> tf.Tensor:
    """The resource handle of a Keras or TensorFlow variable (under a distribution
    strategy's update, the handle of this device's copy)."""
    if isinstance(variable, keras.Variable):
        variable = variable.value
    return variable.handle
