"""An exported policy against TensorFlow Serving's request formats and `saved_model_cli`.

No model server runs here (TF Serving ships as a C++ binary and a Docker image, not a
wheel), so each check does what the server does with a request, on the SavedModel's own
metadata, with TF Serving's own protos (`tensorflow-serving-api`):

- gRPC: a `PredictRequest` built the way a client does (`tf.make_tensor_proto` per named
  input), serialized and parsed back; its inputs must be exactly the signature's, with
  the signature's dtypes and shapes compatible with the signature's (as the server
  validates them, from `saved_model.pb`'s `SignatureDef`); the signature then runs on
  the decoded tensors in a TF1 session, as the server's loader runs a SavedModel (its
  variables restored by the saver's op: Keras 3 variables tracked as such were not,
  fixed in `tf_policy_export`), and the `PredictResponse` holds every output the
  signature declares, with its dtype, and the live policy's actions.
- REST: a JSON body in the row ("instances") and the columnar ("inputs") format, as
  `curl` would send it, decoded by the REST API's rules (JSON numbers to the signature's
  dtype, instances stacked per input) gives the same actions.
- `saved_model_cli run` (TensorFlow's own tool, a process without tfrl) on the exported
  LSTM policy, its inputs from `.npy` files, prints the same actions.

Kinds: an MLP policy on a Box observation, an LSTM policy (state inputs), and a policy
on a Dict observation with an action mask (one input per key).
"""

import json
import os
import re
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from policy_helpers import recurrent_policy
from tfrl.algorithms.ppo import PPOTFPolicy
from tfrl.examples.envs.masked_actions import MaskedActions
from tfrl.models.catalog import ModelCatalog

predict_pb2 = pytest.importorskip("tensorflow_serving.apis.predict_pb2")
from tensorflow.core.protobuf import saved_model_pb2  # noqa: E402

SIGNATURE = "serving_default"


def _signature_def(export_dir, name=SIGNATURE):
    """The `SignatureDef` the server reads from `saved_model.pb` (tag "serve")."""
    saved = saved_model_pb2.SavedModel()
    with open(os.path.join(export_dir, "saved_model.pb"), "rb") as f:
        saved.ParseFromString(f.read())
    (meta,) = [m for m in saved.meta_graphs if "serve" in m.meta_info_def.tags]
    return meta.signature_def[name]


def _run_in_a_session(export_dir, signature, feeds):
    """The signature run as TF Serving's loader runs it: the SavedModel loaded into a
    TF1 session (variables restored by the saver's restore op, not by TF2's object
    graph), fed and fetched by the `SignatureDef`'s tensor names."""
    with tf.Graph().as_default() as graph, tf.compat.v1.Session(graph=graph) as session:
        tf.compat.v1.saved_model.loader.load(session, ["serve"], export_dir)
        return session.run({name: info.name for name, info in signature.outputs.items()},
                           {signature.inputs[name].name: value
                            for name, value in feeds.items()})


def _shape_fits(tensor_shape, shape):
    dims = [d.size for d in tensor_shape.dim]
    return tensor_shape.unknown_rank or (
        len(dims) == len(shape) and all(d in (-1, s) for d, s in zip(dims, shape)))


def _mlp():
    obs_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    policy = PPOTFPolicy(obs_space, gym.spaces.Discrete(3),
                         {"model": {"fcnet_hiddens": [16]}, "seed": 0})
    obs = np.random.default_rng(0).uniform(-1, 1, (5, 4)).astype(np.float32)
    actions, _, _ = policy.compute_actions(obs, explore=False)
    return policy, {"obs": obs}, actions


def _lstm():
    policy = recurrent_policy()
    obs = np.random.default_rng(1).uniform(-1, 1, (2, 3)).astype(np.float32)
    state = [np.full((2, 4), 0.5, np.float32), np.full((2, 4), -0.25, np.float32)]
    actions, _, _ = policy.compute_actions(obs, state, explore=False)
    return policy, {"obs": obs, "state_in_0": state[0], "state_in_1": state[1]}, actions


def _masked():
    raw = MaskedActions(num_actions=10, num_valid=2, episode_len=5)
    prep = ModelCatalog.get_preprocessor_for_space(raw.observation_space)
    policy = PPOTFPolicy(prep.observation_space, raw.action_space,
                         {"model": {"fcnet_hiddens": [16]}, "seed": 0})
    raw_obs, _ = raw.reset(seed=0)
    rows = [raw_obs] + [raw._draw() for _ in range(3)]
    flat = prep.transform_batch({k: np.stack([r[k] for r in rows]) for k in rows[0]})
    actions, _, _ = policy.compute_actions(flat, explore=False)
    masks = np.stack([r["action_mask"] for r in rows])
    assert masks[np.arange(len(rows)), actions].all()  # the mask holds in the live policy
    inputs = {f"obs_{k}": np.stack([r[k] for r in rows]) for k in rows[0]}
    return policy, inputs, actions


KINDS = {"mlp": _mlp, "lstm": _lstm, "masked": _masked}


@pytest.fixture(scope="module", params=sorted(KINDS))
def exported(request, tmp_path_factory):
    policy, inputs, actions = KINDS[request.param]()
    export_dir = str(tmp_path_factory.mktemp(request.param) / "1")  # TF Serving's version dir
    policy.export_model(export_dir)
    return request.param, export_dir, inputs, actions


def test_grpc_predict_request_matches_the_signature_and_returns_the_actions(exported):
    kind, export_dir, inputs, actions = exported
    signature = _signature_def(export_dir)
    # the client
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "policy"
    request.model_spec.signature_name = SIGNATURE
    for name, value in inputs.items():
        request.inputs[name].CopyFrom(tf.make_tensor_proto(value))
    wire = request.SerializeToString()
    # the server: the request's inputs are exactly the signature's, dtypes equal, shapes fit
    received = predict_pb2.PredictRequest.FromString(wire)
    assert received.model_spec.signature_name == SIGNATURE
    assert set(received.inputs) == set(signature.inputs), (kind, sorted(signature.inputs))
    for name, proto in received.inputs.items():
        assert proto.dtype == signature.inputs[name].dtype, name
        assert _shape_fits(signature.inputs[name].tensor_shape,
                           tf.make_ndarray(proto).shape), name
    outputs = _run_in_a_session(export_dir, signature, {
        name: tf.make_ndarray(proto) for name, proto in received.inputs.items()})
    response = predict_pb2.PredictResponse()
    response.model_spec.CopyFrom(received.model_spec)
    for name, value in outputs.items():
        response.outputs[name].CopyFrom(tf.make_tensor_proto(value))
    # the client again
    answer = predict_pb2.PredictResponse.FromString(response.SerializeToString())
    assert set(answer.outputs) == set(signature.outputs)
    for name, proto in answer.outputs.items():
        assert proto.dtype == signature.outputs[name].dtype, name
    np.testing.assert_array_equal(tf.make_ndarray(answer.outputs["actions"]), actions)
    if kind == "lstm":
        assert {"state_out_0", "state_out_1"} <= set(answer.outputs)


def _decode_rest(body, signature):
    """A REST `:predict` body as TF Serving decodes it: the row format ("instances": one
    object per row with every named input, or bare values when the signature has one
    input) or the columnar one ("inputs": a value per name, or a bare value); JSON
    numbers become the signature's dtypes."""
    names = sorted(signature.inputs)
    if "instances" in body:
        rows = body["instances"]
        columns = ({names[0]: rows} if len(names) == 1 and not isinstance(rows[0], dict)
                   else {n: [row[n] for row in rows] for n in names})
    else:
        given = body["inputs"]
        columns = given if isinstance(given, dict) else {names[0]: given}
    assert set(columns) == set(names), (sorted(columns), names)
    return {n: tf.constant(np.asarray(columns[n]),
                           dtype=tf.dtypes.as_dtype(signature.inputs[n].dtype))
            for n in names}


@pytest.mark.parametrize("layout", ["instances", "inputs"])
def test_rest_predict_body_in_both_layouts_returns_the_actions(exported, layout):
    kind, export_dir, inputs, actions = exported
    signature = _signature_def(export_dir)
    if layout == "instances":
        rows = [{n: v[i].tolist() for n, v in inputs.items()} for i in range(len(actions))]
        if len(inputs) == 1:
            rows = [row["obs"] for row in rows]
        body = {"signature_name": SIGNATURE, "instances": rows}
    else:
        body = {"signature_name": SIGNATURE,
                "inputs": {n: v.tolist() for n, v in inputs.items()}}
    decoded = _decode_rest(json.loads(json.dumps(body)), signature)
    run = tf.saved_model.load(export_dir).signatures[body["signature_name"]]
    out = run(**decoded)
    predictions = json.loads(json.dumps({"predictions": out["actions"].numpy().tolist()}))
    assert predictions["predictions"] == actions.tolist()


def test_saved_model_cli_runs_the_exported_lstm_policy(tmp_path):
    # one process (TensorFlow's start-up): the kind with the most inputs and outputs
    policy, inputs, actions = _lstm()
    export_dir = str(tmp_path / "lstm")
    policy.export_model(export_dir)
    cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    if not os.path.exists(cli):
        pytest.skip("saved_model_cli is not next to this Python")
    for name, value in inputs.items():
        np.save(tmp_path / f"{name}.npy", value)
    given = ";".join(f"{name}={tmp_path / name}.npy" for name in inputs)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run([cli, "run", "--dir", export_dir, "--tag_set", "serve",
                           "--signature_def", SIGNATURE, "--inputs", given],
                          capture_output=True, text=True, env=env, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    match = re.search(r"Result for output key actions:\s*\n(\[[^\]]*\])", done.stdout)
    assert match, done.stdout[-2000:]
    printed = [int(x) for x in re.findall(r"-?\d+", match.group(1))]
    assert printed == actions.tolist()
    assert "Result for output key state_out_1:" in done.stdout
