"""NumpyInference: a dense TFPolicy's actions and values in numpy, on a copy of its weights.

A concrete TF function call has a fixed cost several times that of the same small MLP
in numpy, and a sampler stepping a handful of environments pays it every step (numbers:
bench/RESULTS.md, "Numbers that were in docstrings"). This path
serves policies whose acting model (`policy.action_model`, default `policy.model`) is
the catalog's `FullyConnectedNetwork` (activations tanh/relu/elu/swish/linear) over a
`Box` observation space (or that network inside the catalog's `ActionMaskModel`, whose
masking it applies as the compiled path does), or its `VisionNetwork` with a small conv
encoder (MinAtar's; see `stack_problem` for the size rule), with a `Categorical`, `MultiCategorical`, `DiagGaussian`,
`SquashedGaussian` or `Deterministic` action distribution. It returns what the compiled
path returns (same keys, dtypes and shapes); sampling draws from a numpy `Generator`
the policy owns (seeded, and part of its state). The weights are copied lazily: the
policy counts changes of its weights (`weights_version`: `learn_on_batch`,
`apply_gradients`, `set_weights`, `set_state` and `import_checkpoint` increment it) and
the copy is refreshed on the first call after a change. Code that assigns the acting
model's variables directly must increment `policy.weights_version` itself (or use
`config["inference"] = "tf"`).

`unsupported_reason(policy)` says why a policy cannot use this path (None if it can).
"""

import functools
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import gymnasium as gym
import keras
import numpy as np
import tensorflow as tf

from tfrl.core.columns import Columns
from tfrl.models.action_mask import ActionMaskModel, apply_action_mask_np
from tfrl.models.tf import tf_action_dist as dists
from tfrl.models.tf.fcnet import FullyConnectedNetwork
from tfrl.models.tf.visionnet import VisionNetwork


def sigmoid(x: np.ndarray) -> np.ndarray:
    """The logistic function through tanh (no overflow for large |x|)."""
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _tanh(x):
    return np.tanh(x, out=x)


def _relu(x):
    return np.maximum(x, 0.0, out=x)


# Activations applied to a fresh float32 temporary: in place where numpy can.
_ACTIVATIONS: Dict[Any, Callable[[np.ndarray], np.ndarray]] = {
    keras.activations.tanh: _tanh,
    keras.activations.relu: _relu,
    keras.activations.elu: lambda x: np.where(x > 0.0, x, np.expm1(np.minimum(x, 0.0))),
    keras.activations.silu: lambda x: x * sigmoid(x),
    keras.activations.linear: None,
}
#: A dense layer in numpy: `(kernel [in, out], bias [out], in-place activation or None)`.
DenseParams = Tuple[np.ndarray, np.ndarray, Optional[Callable[[np.ndarray], np.ndarray]]]
_HALF_LOG_2PI = np.float32(0.5 * np.log(2.0 * np.pi))
_LOG2 = np.float32(np.log(2.0))


def activation_problem(layers: Iterable[Any]) -> Optional[str]:
    """Why the numpy path cannot evaluate the Keras Dense `layers` (an activation it does
    not have), or None."""
    for layer in layers:
        if layer.activation not in _ACTIVATIONS:
            return f"layer {layer.name} has activation {layer.activation!r}"
    return None


def dense_params(values: Iterator[np.ndarray], layer: Any, activation: bool = True
                 ) -> DenseParams:
    """The next kernel and bias of `values` (a `WeightReader.read()` iterator) as
    `layer`'s `DenseParams` (its activation, or None with `activation=False`)."""
    fn = _ACTIVATIONS[layer.activation] if activation else None
    return (next(values), next(values), fn)


def mlp_forward(x: np.ndarray, layers: Sequence[DenseParams]) -> np.ndarray:
    """`x` `[B, in]` through dense layers: `x @ kernel + bias`, then the activation."""
    for kernel, bias, fn in layers:
        x = np.dot(x, kernel)
        x += bias
        if fn is not None:
            x = fn(x)
    return x


# ------------------------------------------------------- Keras layer stacks
# A trunk of Keras layers in numpy: Dense, Conv2D (channels-last, no dilation or groups,
# "same"/"valid" padding, as im2col + one matmul), Flatten, Rescaling and the
# channels-first Permute. Convs pay im2col's copies where TF's kernels do not: past
# NUMPY_CONV_MAX_MACS multiply-adds per observation a trunk acts in TF (the crossover
# is measured in bench/RESULTS.md, "numpy conv acting").
NUMPY_CONV_MAX_MACS = 200_000
_PERMUTE_TO_CHANNELS_LAST = (2, 3, 1)


def stack_problem(layers: Sequence[Any], input_shape: Sequence[Optional[int]]
                  ) -> Optional[str]:
    """Why `layers` (applied in order to `[B, *input_shape]` float32 rows) cannot run in
    numpy, or None (`input_shape` may be `(None,)` for feature rows of a dense stack)."""
    macs = 0
    shape = tuple(input_shape)
    for layer in layers:
        kind = type(layer)
        if kind in (keras.layers.Dense, keras.layers.Conv2D):
            problem = activation_problem([layer])
            if problem is not None:
                return problem
            if any(v.dtype != "float32" for v in layer.weights) or (
                    layer.compute_dtype != "float32"):
                return f"layer {layer.name} does not compute in float32"
        if kind is keras.layers.Conv2D:
            if (layer.data_format != "channels_last" or tuple(layer.dilation_rate) != (1, 1)
                    or layer.groups != 1 or layer.padding not in ("same", "valid")):
                return (f"layer {layer.name} is a Conv2D with settings the numpy path lacks "
                        "(channels-first, dilation, groups or causal padding)")
            if not layer.use_bias:
                return f"layer {layer.name} is a Conv2D without a bias"
            out = layer.compute_output_shape((1,) + shape)[1:]
            kh, kw = layer.kernel_size
            macs += kh * kw * shape[-1] * int(np.prod(out))
            shape = tuple(int(d) for d in out)
        elif kind is keras.layers.Dense:
            if not layer.use_bias or len(shape) != 1:
                return f"layer {layer.name} is a Dense layer without a bias or on {shape} rows"
            shape = (int(layer.units),)
        elif kind is keras.layers.Flatten:
            shape = (int(np.prod(shape)),)
        elif kind is keras.layers.Rescaling:
            pass
        elif kind is keras.layers.Permute and tuple(layer.dims) == _PERMUTE_TO_CHANNELS_LAST:
            shape = shape[1:] + shape[:1]
        else:
            return f"layer {layer.name} is a {kind.__name__} (numpy has Dense, Conv2D, Flatten)"
    if macs > NUMPY_CONV_MAX_MACS:
        return (f"the conv layers take {macs:,} multiply-adds per observation, more than "
                f"numpy's im2col beats TF's kernels at ({NUMPY_CONV_MAX_MACS:,})")
    return None


def stack_variables(layers: Sequence[Any]) -> List[Any]:
    """The variables `stack_forward`'s parameters are read from, in `stack_params`' order."""
    return [w for layer in layers if type(layer) in (keras.layers.Dense, keras.layers.Conv2D)
            for w in (layer.kernel, layer.bias)]


def stack_params(values: Iterator[np.ndarray], layers: Sequence[Any]
                 ) -> List[Callable[[np.ndarray], np.ndarray]]:
    """Each layer as a numpy function of its input, the kernels and biases taken in order
    from `values` (a `WeightReader.read()` iterator over `stack_variables(layers)`)."""
    fns: List[Callable[[np.ndarray], np.ndarray]] = []
    for layer in layers:
        kind = type(layer)
        if kind is keras.layers.Dense:
            fns.append(functools.partial(mlp_forward, layers=[dense_params(values, layer)]))
        elif kind is keras.layers.Conv2D:
            kernel, bias = next(values), next(values)
            fns.append(functools.partial(
                _conv2d, kernel=kernel.reshape(-1, kernel.shape[-1]), bias=bias,
                size=tuple(layer.kernel_size), stride=tuple(layer.strides),
                same=layer.padding == "same", fn=_ACTIVATIONS[layer.activation]))
        elif kind is keras.layers.Flatten:
            fns.append(lambda x: x.reshape(len(x), -1))
        elif kind is keras.layers.Rescaling:
            scale = np.float32(layer.scale)
            offset = np.float32(layer.offset)
            fns.append(lambda x, scale=scale, offset=offset: x * scale + offset)
        else:  # the channels-first Permute
            fns.append(lambda x: x.transpose(0, 2, 3, 1))
    return fns


def stack_forward(x: np.ndarray, fns: Sequence[Callable[[np.ndarray], np.ndarray]]
                  ) -> np.ndarray:
    """`x` through `stack_params`' functions."""
    for fn in fns:
        x = fn(x)
    return x


def _conv2d(x: np.ndarray, kernel: np.ndarray, bias: np.ndarray, size: Tuple[int, int],
            stride: Tuple[int, int], same: bool, fn: Any) -> np.ndarray:
    """Keras' Conv2D on `[B, H, W, C]`: im2col patches `[B * H' * W', kh * kw * C]` (the
    kernel's `[kh, kw, C, O]` order) times the kernel `[kh * kw * C, O]`."""
    (kh, kw), (sh, sw) = size, stride
    if same:  # TensorFlow's SAME: the output is ceil(in / stride), extra padding after
        pads = [(0, 0)]
        for extent, k, s in ((x.shape[1], kh, sh), (x.shape[2], kw, sw)):
            total = max((-(-extent // s) - 1) * s + k - extent, 0)
            pads.append((total // 2, total - total // 2))
        x = np.pad(x, pads + [(0, 0)])
    windows = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(1, 2))
    windows = windows[:, ::sh, ::sw]  # [B, H', W', C, kh, kw]
    rows = windows.shape[:3]
    patches = windows.transpose(0, 1, 2, 4, 5, 3).reshape(
        -1, kernel.shape[0])  # [B * H' * W', kh * kw * C], a copy
    out = np.dot(patches, kernel)  # 2-D: one BLAS call
    out += bias
    out = out.reshape(rows + (kernel.shape[1],))
    return out if fn is None else fn(out)


class WeightReader:
    """Copies a fixed list of variables to numpy in one compiled call (reading them one
    by one costs one TensorFlow op call each, paid after every learning call by the numpy
    acting paths).

    Args:
        variables: The variables (Keras or TensorFlow), read in this order.

    Example:
        >>> a, b = keras.Variable(np.ones(2, np.float32)), keras.Variable(2.0)
        >>> [x.tolist() for x in WeightReader([a, b]).read()]
        [[1.0, 1.0], 2.0]
    """

    def __init__(self, variables: List[Any]):
        self._variables = list(variables)
        # A partial, not a lambda: TensorFlow counts traces per function code object
        # across instances and warns ("5 out of the last 5 calls ... triggered
        # tf.function retracing") when a program builds several policies; each reader
        # traces once, by design, and a partial is keyed by itself.
        self._fn = tf.function(functools.partial(_identities, self._variables),
                               autograph=False)

    def read(self) -> List[np.ndarray]:
        """The variables' current values (copies, not views of the variables' memory)."""
        return [np.array(value) for value in self._fn()]


def _identities(variables: List[Any]) -> List[tf.Tensor]:
    return [tf.identity(tf.convert_to_tensor(v)) for v in variables]


def unsupported_reason(policy: Any, overridden: List[str]) -> Optional[str]:
    """Why `policy` cannot act in numpy (None if it can).

    Args:
        policy: A TFPolicy, fully built.
        overridden: Names of TFPolicy action methods its class overrides.
    """
    model = _unmasked(policy.action_model)
    if overridden:
        return overrides_reason(policy, overridden)
    if type(model) not in (FullyConnectedNetwork, VisionNetwork):
        return (f"the model is a {type(model).__name__}, not the catalog's "
                "FullyConnectedNetwork or VisionNetwork (custom and recurrent models run "
                "in TF)")
    if not isinstance(policy.observation_space, gym.spaces.Box):
        return f"the observation space {policy.observation_space} is not a Box"
    if type(model) is VisionNetwork:
        shape = policy.observation_space.shape
        problem = (stack_problem(list(model.conv_layers) + list(model.post_layers), shape)
                   or stack_problem(model.value_layers, shape))
    else:
        problem = activation_problem(list(model.hidden_layers) + list(model.value_layers))
    if problem is not None:
        return problem
    if any(v.dtype != "float32" for v in model.weights):
        return "the model's variables are not all float32"
    dist = policy.dist_class
    func = dist.func if isinstance(dist, functools.partial) else dist
    if func not in _DISTRIBUTIONS:
        return (f"the action distribution {getattr(func, '__name__', func)!r} is not one of "
                f"{sorted(d.__name__ for d in _DISTRIBUTIONS)}")
    keywords = dist.keywords if isinstance(dist, functools.partial) else {}
    allowed = {"input_lens", "low", "high", "action_space"}
    if set(keywords) - allowed:
        return f"the action distribution has parameters {sorted(set(keywords) - allowed)}"
    return None


def overrides_reason(policy: Any, overridden: List[str]) -> Optional[str]:
    """Why a policy whose class overrides the TFPolicy action methods `overridden` acts in
    TF (None when it overrides none): the numpy path would bypass them."""
    return f"{type(policy).__name__} overrides {', '.join(overridden)}" if overridden else None


def _unmasked(model: Any) -> Any:
    """The model inside the catalog's action-masking wrapper (or `model` itself)."""
    return model.inner if isinstance(model, ActionMaskModel) else model


def make_numpy_inference(policy: Any, mode: str, overridden: List[str]
                         ) -> Optional["NumpyInference"]:
    """The numpy path for `policy` under `config["inference"]` = `mode`, or None (TF).

    Raises:
        ValueError: For an unknown mode, or mode "numpy" on a policy it cannot serve.
    """
    return choose(policy, mode, lambda: unsupported_reason(policy, overridden),
                  lambda: NumpyInference(policy))


def choose(policy: Any, mode: str, reason: Callable[[], Optional[str]],
           build: Callable[[], Any]) -> Optional[Any]:
    """`build()` (a numpy acting path) under `config["inference"]` = `mode` when
    `reason()` (why `policy` cannot act in numpy) is None, else None (TF). A policy with a
    model of its own supplies both (e.g. TD3's actor-critic, DQN's distributional head).

    Raises:
        ValueError: For an unknown mode, or mode "numpy" when `reason()` is not None.
    """
    if mode not in ("auto", "tf", "numpy"):
        raise ValueError(
            f"config['inference'] must be 'auto', 'tf' or 'numpy'; received {mode!r}.")
    if mode == "tf":
        return None
    problem = reason()
    if problem is None:
        return build()
    if mode == "numpy":
        raise ValueError(
            f"config['inference']='numpy' is not supported for {type(policy).__name__}: "
            f"{problem}. Use inference='auto' (numpy when supported) or 'tf'."
        )
    return None


class NumpyInference:
    """Acts and estimates values for a dense policy in numpy (see the module docstring).

    Args:
        policy: A TFPolicy for which `unsupported_reason` is None. Its `model`,
            `dist_class`, `action_space`, `weights_version` and `sampling_rng` are used.
    """

    def __init__(self, policy):
        self._policy = policy
        self._version = None
        self._reader: Optional[WeightReader] = None
        self._layers: List[DenseParams] = []
        self._mask: Optional[Tuple[int, int]] = None  # (start, stop) of an action mask
        self._value_layers: List[DenseParams] = []
        self._vision = False  # a VisionNetwork: layer stacks (`stack_params`) instead
        self._stacks: Tuple[List[Any], List[Any]] = ([], [])
        dist = policy.dist_class
        self._dist = dist.func if isinstance(dist, functools.partial) else dist
        keywords = dist.keywords if isinstance(dist, functools.partial) else {}
        self._sample, self._greedy = _DISTRIBUTIONS[self._dist]
        self._params = dict(keywords)
        if self._dist is dists.SquashedGaussian:
            low = np.asarray(keywords.get("low", -1.0), np.float32)
            high = np.asarray(keywords.get("high", 1.0), np.float32)
            self._params = {"low": low, "high": high}
        if self._dist is dists.MultiCategorical:
            self._params = {"splits": np.cumsum(keywords["input_lens"])[:-1]}
        self._action_dtype = np.dtype(
            policy.action_space.dtype if not isinstance(policy.action_space, (
                gym.spaces.Discrete, gym.spaces.MultiDiscrete)) else np.int64)

    def refresh(self) -> None:
        """Copies the model's weights (called when the policy's weights changed).

        A separate value network with the policy network's layer sizes (the catalog's
        default) is laid out for paired evaluation: the first layers of both as one
        matmul `[obs_dim, 2 * H1]`, deeper layers and the output layers as stacked
        `[2, ...]` matmuls (the value column padded to the number of logits).
        """
        version = self._policy.weights_version
        masked = self._policy.action_model
        model = _unmasked(masked)
        self._mask = ((masked.mask_start, masked.mask_stop)
                      if isinstance(masked, ActionMaskModel) else None)
        head = model.policy_head
        free_log_std = bool(head.free_log_std)
        self._vision = isinstance(model, VisionNetwork)
        trunk = (list(model.conv_layers) + list(model.post_layers) if self._vision
                 else list(model.hidden_layers))
        value_trunk = list(model.value_layers)
        if self._reader is None:  # the layers are fixed once the model is built
            extra = [head.log_std] if free_log_std else []
            self._reader = WeightReader(
                stack_variables(trunk) + stack_variables([head.dense])
                + stack_variables(value_trunk) + stack_variables([model.value_out]) + extra)
        values = iter(self._reader.read())
        if self._vision:  # conv stacks: evaluated apart (no paired layout)
            self._stacks = (stack_params(values, trunk), [])
            self._layers = []
        else:
            self._layers = [dense_params(values, layer) for layer in trunk]
        self._logits = dense_params(values, head.dense, activation=False)
        if self._vision:
            self._stacks = (self._stacks[0], stack_params(values, value_trunk))
            self._value_layers = []
        else:
            self._value_layers = [dense_params(values, layer) for layer in value_trunk]
        kernel, bias, _ = dense_params(values, model.value_out, activation=False)
        self._log_std = next(values) if free_log_std else None
        self._share = bool(model.vf_share_layers)
        self._value_out = (kernel[:, 0], bias[0])
        self._paired = self._pair_layers()
        self._version = version

    def _pair_layers(self) -> Optional[Tuple[Any, ...]]:
        """Stacked weights for evaluating the policy and value networks together."""
        pi, vf = self._layers, self._value_layers
        if (self._share or not pi or len(pi) != len(vf)
                or any(p[0].shape != v[0].shape or p[2] is not v[2] for p, v in zip(pi, vf))):
            return None
        first = (np.concatenate([pi[0][0], vf[0][0]], axis=1),  # [obs_dim, 2 * H1]
                 np.concatenate([pi[0][1], vf[0][1]]), pi[0][2])
        deeper = [(np.stack([p[0], v[0]]), np.stack([p[1], v[1]])[:, None, :], p[2])
                  for p, v in zip(pi[1:], vf[1:])]  # [2, H, H'], [2, 1, H']
        kernel, bias, _ = self._logits
        out = np.zeros((2,) + kernel.shape, np.float32)  # [2, H_last, n]
        out[0] = kernel
        out[1, :, 0] = self._value_out[0]
        return first, deeper, out, bias, self._value_out[1], pi[0][0].shape[1]

    def _forward(self, obs: np.ndarray, with_dist: bool = True):
        if self._version != self._policy.weights_version:
            self.refresh()
        x = obs if obs.ndim == 2 or self._vision else obs.reshape(len(obs), -1)
        x = x.astype(np.float32, copy=False)  # [B, obs_dim] (images: [B, H, W, C])
        if self._mask is not None:  # the catalog's ActionMaskModel: mask | rest
            start, stop = self._mask
            mask = x[:, start:stop]  # [B, n]
            x = np.concatenate([x[:, :start], x[:, stop:]], axis=-1)  # [B, obs_dim - n]
            dist_inputs, value = self._forward_unmasked(x, with_dist)
            if dist_inputs is not None:  # a fresh array: masked in place
                apply_action_mask_np(dist_inputs, mask, out=dist_inputs)
            return dist_inputs, value
        return self._forward_unmasked(x, with_dist)

    def _forward_unmasked(self, x: np.ndarray, with_dist: bool):
        if self._paired is not None:
            return self._forward_paired(x, with_dist)
        if self._vision:
            trunk, value_trunk = self._stacks
            h = stack_forward(x, trunk) if with_dist or self._share else x
        else:
            h = mlp_forward(x, self._layers) if with_dist or self._share else x
        dist_inputs = None
        if with_dist:
            kernel, bias, _ = self._logits
            dist_inputs = np.dot(h, kernel)  # [B, n]
            dist_inputs += bias
            if self._log_std is not None:
                log_std = np.broadcast_to(self._log_std, dist_inputs.shape)
                dist_inputs = np.concatenate([dist_inputs, log_std], axis=-1)
        v = h if self._share else (stack_forward(x, value_trunk) if self._vision
                                   else mlp_forward(x, self._value_layers))
        value = np.dot(v, self._value_out[0])  # [B]
        value += self._value_out[1]
        return dist_inputs, value

    def _forward_paired(self, x: np.ndarray, with_dist: bool = True):
        # Without dist, the value halves only: the same BLAS calls on the same rows as
        # with it, so value() equals compute_actions' vf_preds bit for bit.
        (kernel, bias, fn), deeper, out_kernel, logits_bias, value_bias, width = self._paired
        branches = slice(0, 2) if with_dist else slice(1, 2)
        h = np.dot(x, kernel)  # [B, 2 * H1]: policy | value
        h += bias
        if fn is not None:
            h = fn(h)
        h = h.reshape(len(x), 2, width).transpose(1, 0, 2)[branches]  # [2 or 1, B, H1], a view
        for kernel, bias, fn in deeper:
            h = np.matmul(h, kernel[branches])  # [2 or 1, B, H]
            h += bias[branches]
            if fn is not None:
                h = fn(h)
        out = np.matmul(h, out_kernel[branches])  # [2 or 1, B, n]
        value = out[-1, :, 0] + value_bias  # [B]
        if not with_dist:
            return None, value
        dist_inputs = out[0]  # [B, n]
        dist_inputs += logits_bias
        if self._log_std is not None:
            log_std = np.broadcast_to(self._log_std, dist_inputs.shape)
            dist_inputs = np.concatenate([dist_inputs, log_std], axis=-1)
        return dist_inputs, value

    def value(self, obs: np.ndarray) -> np.ndarray:
        """Value estimates `[B]` (float32)."""
        return self._forward(obs, with_dist=False)[1]

    def compute_actions(self, obs: np.ndarray, explore: bool
                        ) -> Tuple[np.ndarray, List[np.ndarray], Dict[str, np.ndarray]]:
        """`(actions, [], extra_fetches)` as the compiled path returns them."""
        dist_inputs, value = self._forward(obs)
        if explore:
            actions, logp = self._sample(dist_inputs, self._policy.sampling_rng, self._params)
            prob = np.exp(logp)
        else:
            actions = self._greedy(dist_inputs, self._params)
            logp = np.zeros(len(dist_inputs), np.float32)
            prob = np.ones(len(dist_inputs), np.float32)  # exp(0)
        if actions.dtype != self._action_dtype:
            actions = actions.astype(self._action_dtype)
        return actions, [], {
            Columns.ACTION_DIST_INPUTS: dist_inputs,
            Columns.ACTION_LOGP: logp,
            Columns.ACTION_PROB: prob,
            Columns.VF_PREDS: value,
        }


# ------------------------------------------------------------- distributions
# Each: sample(dist_inputs, rng, params) -> (actions, logp [B] float32) and
# greedy(dist_inputs, params) -> actions.


def _categorical_sample(logits, rng, params):
    # Inverse CDF on the unnormalized probabilities, one uniform draw per row; ufuncs
    # called directly (their Python wrappers cost as much as the work on [B, n]).
    top = np.maximum.reduce(logits, axis=-1, keepdims=True)  # [B, 1]
    shifted = logits - top  # [B, n]
    cdf = np.exp(shifted)
    np.add.accumulate(cdf, axis=-1, out=cdf)  # [B, n], unnormalized
    total = cdf[:, -1]  # [B]
    u = rng.random(len(logits))
    u *= total
    actions = np.add.reduce(cdf < u[:, None], axis=-1, dtype=np.int64)
    np.minimum(actions, logits.shape[-1] - 1, out=actions)
    logp = shifted[_rows(len(logits)), actions]
    logp -= np.log(total)
    return actions, logp


_ROWS: Dict[int, np.ndarray] = {}


def _rows(n: int) -> np.ndarray:
    """`np.arange(n)`, cached (read-only) for the few batch sizes a sampler uses."""
    rows = _ROWS.get(n)
    if rows is None:
        rows = np.arange(n)
        rows.flags.writeable = False
        if len(_ROWS) < 64:
            _ROWS[n] = rows
    return rows


def _categorical_greedy(logits, params):
    return logits.argmax(axis=-1)


def _multi_categorical_sample(logits, rng, params):
    parts = [_categorical_sample(p, rng, None) for p in np.split(logits, params["splits"], -1)]
    return (np.stack([a for a, _ in parts], axis=-1),
            np.sum([logp for _, logp in parts], axis=0, dtype=np.float32))


def _multi_categorical_greedy(logits, params):
    return np.stack([p.argmax(-1) for p in np.split(logits, params["splits"], -1)], axis=-1)


def _normal(inputs, rng, log_std_bounds=None):
    mean, log_std = np.split(inputs, 2, axis=-1)  # [B, A] each
    if log_std_bounds is not None:
        log_std = np.clip(log_std, *log_std_bounds)
    eps = rng.standard_normal(mean.shape, dtype=np.float32)
    u = mean + np.exp(log_std) * eps
    logp = -(0.5 * eps * eps + log_std + _HALF_LOG_2PI).sum(axis=-1)
    return u, logp


def _gaussian_sample(inputs, rng, params):
    return _normal(inputs, rng)


def _gaussian_greedy(inputs, params):
    return np.split(inputs, 2, axis=-1)[0]


def _squash(u, params):
    low, high = params["low"], params["high"]
    return np.clip(low + (np.tanh(u) + 1.0) / 2.0 * (high - low), low, high)


def _squashed_sample(inputs, rng, params):
    # SquashedGaussian's (RLlib's) log-likelihood of the normalized action tanh(u): the
    # per-dimension Gaussian term clipped, the Jacobian floored at SQUASH_EPSILON.
    mean, log_std = np.split(inputs, 2, axis=-1)  # [B, A] each
    log_std = np.clip(log_std, dists.MIN_LOG_NN_OUTPUT, dists.MAX_LOG_NN_OUTPUT)
    eps = rng.standard_normal(mean.shape, dtype=np.float32)
    u = mean + np.exp(log_std) * eps
    gaussian = np.clip(-(0.5 * eps * eps + log_std + _HALF_LOG_2PI),
                       -dists.SQUASHED_LOGP_CLIP, dists.SQUASHED_LOGP_CLIP)
    log_dtanh = 2.0 * (_LOG2 - u - np.logaddexp(0.0, -2.0 * u))  # log(1 - tanh(u)^2)
    jacobian = np.log(np.exp(log_dtanh) + np.float32(dists.SQUASH_EPSILON))
    return _squash(u, params), (gaussian - jacobian).sum(axis=-1).astype(np.float32)


def _squashed_greedy(inputs, params):
    return _squash(np.split(inputs, 2, axis=-1)[0], params)


def _deterministic_sample(inputs, rng, params):
    return inputs, np.zeros(len(inputs), np.float32)


_DISTRIBUTIONS = {
    dists.Categorical: (_categorical_sample, _categorical_greedy),
    dists.MultiCategorical: (_multi_categorical_sample, _multi_categorical_greedy),
    dists.DiagGaussian: (_gaussian_sample, _gaussian_greedy),
    dists.SquashedGaussian: (_squashed_sample, _squashed_greedy),
    dists.Deterministic: (_deterministic_sample, lambda inputs, params: inputs),
}
