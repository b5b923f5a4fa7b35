"""Export of a TFPolicy for runtimes without TensorFlow: TensorFlow Lite and ONNX.

Both take the SavedModel's flat, named inputs (`obs`, or `obs_<key>...` for nested
observations such as an action mask's Dict, then `state_in_<i>` for recurrent models,
then `prev_actions` / `prev_rewards`; see `tf_policy_export`) and compute, with the
weights frozen into constants, two entry points with named outputs:

- `deterministic_action`: `actions` (`actions_<key>...` if nested), `action_dist_inputs`,
  `vf_preds`, and `state_out_<i>` for recurrent models: the greedy action, as the
  SavedModel's `deterministic_action` signature computes it;
- `stochastic_action`: the same outputs with a sampled action. It samples with the
  runtime's own random ops (TFLite's MULTINOMIAL and RANDOM_STANDARD_NORMAL, ONNX's
  Multinomial and RandomNormalLike), seeded by TensorFlow's global seed when the export
  traced it, not from the policy's generator; it has no `action_logp`.

A TFLite file (`model.tflite`) holds both as signatures:
`ai_edge_litert.interpreter.Interpreter(model_path=...).get_signature_runner(
"deterministic_action")(obs=...)`. ONNX holds one graph per file: `model.onnx`
(deterministic; the file RLlib's `export_model(export_dir, onnx=opset)` writes) and
`model_stochastic.onnx`. The converters (`tensorflow.lite`, `tf2onnx`) are imported
only here; `pip install "tfrl[export]"` installs tf2onnx, onnxruntime and ai-edge-litert.
"""

import importlib
import os
from typing import Any, Dict, List, Optional

import tensorflow as tf
import tree
# The public converters (TFLite's, tf2onnx) freeze variables with this function too.
from tensorflow.python.framework.convert_to_constants import (
    convert_variables_to_constants_v2)

from tfrl.core.columns import Columns
from tfrl.policy import space_specs
from tfrl.policy.tf_policy_export import atomic_dir, flat_inputs, named_outputs
from tfrl.policy.train_columns import autograph_converted

TFLITE_FILE = "model.tflite"
ONNX_FILE = "model.onnx"
ONNX_STOCHASTIC_FILE = "model_stochastic.onnx"
#: The entry points, by name: whether each samples.
ENTRY_POINTS = {"deterministic_action": False, "stochastic_action": True}
#: The ONNX opset when none is given (onnxruntime 1.17+ runs it).
DEFAULT_ONNX_OPSET = 17


def _require(module: str, fmt: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(
            f"Exporting a policy as {fmt} needs the package {module!r}, which is not "
            f"installed ({e}). Install the export extra: pip install \"tfrl[export]\"."
        ) from None


def portable_functions(policy) -> Dict[str, Any]:
    """`{entry point name: tf.function}` over the flat inputs (see the module docstring);
    they read the policy's variables (the converters freeze them)."""
    specs, split = flat_inputs(policy)
    action_spec = space_specs.batch_spec(policy.action_space)

    def outputs(args, explore: bool) -> Dict[str, tf.Tensor]:
        obs, states, prev = split(args)
        dist_inputs, value, state_out = autograph_converted(policy.call_model)(obs, states, prev)
        dist = policy.dist_class(dist_inputs, policy.model)
        actions = dist.sample() if explore else dist.deterministic_sample()
        actions = tree.map_structure(lambda a, s: tf.cast(a, s.dtype), actions, action_spec)
        result = named_outputs(actions, state_out)
        result[Columns.ACTION_DIST_INPUTS] = dist_inputs
        result[Columns.VF_PREDS] = value
        return result

    return {name: tf.function(lambda *args, e=explore: outputs(args, e), input_signature=specs,
                              autograph=False)
            for name, explore in ENTRY_POINTS.items()}


def export_tflite(policy, export_dir: str) -> str:
    """Writes `export_dir/model.tflite` with both entry points as signatures; returns
    the file's path.

    Raises:
        ValueError: If TFLite's built-in ops cannot express the policy's model (the
            SavedModel export takes every model).
    """
    functions = portable_functions(policy)
    specs, _ = flat_inputs(policy)
    signatures = {}
    for name, fn in functions.items():
        concrete = fn.get_concrete_function()
        frozen = convert_variables_to_constants_v2(concrete)
        names = sorted(concrete.structured_outputs)
        # A frozen function returns a flat list in the dict's (sorted) key order.
        signatures[name] = tf.function(
            lambda *args, f=frozen, n=names: dict(zip(n, tree.flatten(f(*args)))),
            input_signature=specs).get_concrete_function()

    def write(tmp: str) -> None:
        saved = os.path.join(tmp, "frozen_saved_model")
        tf.saved_model.save(tf.Module(), saved, signatures=signatures)
        converter = tf.lite.TFLiteConverter.from_saved_model(
            saved, signature_keys=list(ENTRY_POINTS))
        try:
            data = converter.convert()
        except Exception as e:  # the converter raises several types with long logs
            first = str(e).strip().splitlines()
            raise ValueError(
                f"TFLite cannot convert {type(policy).__name__}'s model "
                f"({type(policy.model).__name__}): {first[-1] if first else type(e).__name__}"
                ". Export it as a SavedModel (or ONNX) instead."
            ) from None
        finally:
            tf.io.gfile.rmtree(saved)
        with open(os.path.join(tmp, TFLITE_FILE), "wb") as f:
            f.write(data)

    return os.path.join(atomic_dir(export_dir, write), TFLITE_FILE)


def export_onnx(policy, export_dir: str, opset: Optional[int] = None) -> List[str]:
    """Writes `export_dir/model.onnx` (deterministic) and `model_stochastic.onnx` with
    opset `opset` (default `DEFAULT_ONNX_OPSET`); returns their paths.

    Raises:
        ValueError: For an opset that is not an int of at least 7.
        ImportError: Without tf2onnx.
    """
    if opset is None:
        opset = DEFAULT_ONNX_OPSET
    if not isinstance(opset, int) or isinstance(opset, bool) or opset < 7:
        raise ValueError(f"onnx must be an ONNX opset version, an int >= 7 (e.g. "
                         f"{DEFAULT_ONNX_OPSET}); received {opset!r}.")
    tf2onnx = _require("tf2onnx", "ONNX")
    functions = portable_functions(policy)
    specs, _ = flat_inputs(policy)
    files = {ONNX_FILE: "deterministic_action", ONNX_STOCHASTIC_FILE: "stochastic_action"}

    def write(tmp: str) -> None:
        for filename, name in files.items():
            tf2onnx.convert.from_function(functions[name], input_signature=specs,
                                          opset=opset, output_path=os.path.join(tmp, filename))

    directory = atomic_dir(export_dir, write)
    return [os.path.join(directory, filename) for filename in files]
