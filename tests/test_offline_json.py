"""JsonWriter / JsonReader (RLlib's JSON-lines format), the `input`/`output` config keys,
ShuffledInput and MixedInput, and the errors for bad files."""

import base64
import glob
import json
import os

import gymnasium as gym
import numpy as np
import pytest

from tfrl.algorithms.algorithm_config import AlgorithmConfig
from tfrl.algorithms.pg import PGTFPolicy
from tfrl.data.sample_batch import MultiAgentBatch, SampleBatch
from tfrl.evaluation.rollout_worker import RolloutWorker
from tfrl.offline.input_creators import input_creator_from_config
from tfrl.offline.io_context import IOContext
from tfrl.offline.json_format import (JsonRecordError, decode_batch, encode_batch,
                                      lz4_available, pack_column, unpack_column)
from tfrl.offline.json_reader import JsonReader
from tfrl.offline.json_writer import JsonWriter
from tfrl.offline.mixed_input import MixedInput, ShuffledInput
from tfrl.offline.output_creators import output_creator_from_config

OBS = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
ACT = gym.spaces.Discrete(2)


def sampler_like_batch(n=7, seed=0, eps=(0, 1)):
    """The columns and dtypes tfrl's sampler produces, plus odd ones."""
    rng = np.random.default_rng(seed)
    infos = np.empty(n, dtype=object)
    for i in range(n):
        infos[i] = {"i": i, "name": "x"}
    return SampleBatch({
        "obs": rng.standard_normal((n, 4)).astype(np.float32),
        "new_obs": rng.standard_normal((n, 4)).astype(np.float32),
        "actions": rng.integers(0, 2, n).astype(np.int64),
        "rewards": rng.standard_normal(n).astype(np.float32),
        "terminateds": np.arange(n) == n - 1,
        "truncateds": np.zeros(n, bool),
        "eps_id": np.repeat(np.array(eps, np.int64), [n // 2, n - n // 2]),
        "t": np.arange(n, dtype=np.int64),
        "agent_index": np.zeros(n, np.int64),
        "action_prob": rng.uniform(0.1, 1.0, n).astype(np.float32),
        "action_logp": rng.standard_normal(n).astype(np.float32),
        "action_dist_inputs": rng.standard_normal((n, 2)).astype(np.float32),
        "vf_preds": rng.standard_normal(n).astype(np.float32),
        "infos": infos,
    })


def assert_same(a, b):
    assert sorted(a.keys()) == sorted(b.keys())
    for k in a.keys():
        x, y = a[k], b[k]
        if k == "infos":
            assert list(x) == list(y)
            continue
        assert x.dtype == y.dtype, (k, x.dtype, y.dtype)
        assert x.shape == y.shape, (k, x.shape, y.shape)
        np.testing.assert_array_equal(x, y, err_msg=k)


@pytest.mark.parametrize("compress", [(), ("obs", "new_obs"), ("obs", "new_obs", "actions",
                                                               "rewards", "action_prob")])
def test_round_trip_every_column_dtype_and_shape(tmp_path, compress):
    batch = sampler_like_batch()
    writer = JsonWriter(str(tmp_path), compress_columns=compress)
    writer.write(batch)
    writer.write(sampler_like_batch(seed=1, eps=(2, 3)))
    back = list(JsonReader(str(tmp_path)).read_all_files())
    assert len(back) == 2
    assert_same(batch, back[0])
    assert_same(sampler_like_batch(seed=1, eps=(2, 3)), back[1])
    line = open(writer.files[0]).readline()
    record = json.loads(line)
    assert record["type"] == "SampleBatch"
    for col in ("obs", "actions"):
        assert isinstance(record[col], str) == (col in compress)


def test_compressed_columns_keep_any_dtype_and_shape_plain_json_follows_the_rules(tmp_path):
    frames = np.arange(5 * 3 * 3, dtype=np.uint8).reshape(5, 3, 3)
    wide = np.linspace(0, 1, 5, dtype=np.float64)
    batch = SampleBatch(frames=frames, wide=wide, nested={"a": np.ones((5, 2), np.int32)})
    back = decode_batch(encode_batch(batch, compress_columns=["frames", "wide", "nested"]))
    assert back["frames"].dtype == np.uint8 and back["frames"].shape == (5, 3, 3)
    np.testing.assert_array_equal(back["frames"], frames)
    assert back["wide"].dtype == np.float64
    assert back["nested"]["a"].dtype == np.int32
    plain = decode_batch(encode_batch(batch))
    # JSON lists carry no dtype: floats -> float32, ints -> int64 (see json_format).
    assert plain["frames"].dtype == np.int64 and plain["wide"].dtype == np.float32
    np.testing.assert_array_equal(plain["frames"], frames)


def test_plain_obs_take_the_dtype_of_the_policy_space():
    batch = SampleBatch(obs=np.array([[1, 2], [3, 4]], np.uint8), actions=np.array([0, 1]))
    space = gym.spaces.Box(0, 255, (2,), np.uint8)
    back = decode_batch(encode_batch(batch), spaces={"default_policy": (space, ACT)})
    assert back["obs"].dtype == np.uint8


def test_multi_agent_batch_round_trip(tmp_path):
    ma = MultiAgentBatch({"p0": sampler_like_batch(4), "p1": sampler_like_batch(3, seed=2)}, 5)
    for compress in [(), ("obs",)]:
        out = tmp_path / str(len(compress))
        JsonWriter(str(out), compress_columns=compress).write(ma)
        back = JsonReader(str(out)).next()
        assert isinstance(back, MultiAgentBatch) and back.count == 5
        assert sorted(back.policy_batches) == ["p0", "p1"]
        for pid in ma.policy_batches:
            assert_same(ma.policy_batches[pid], back.policy_batches[pid])
    record = json.loads(open(glob.glob(str(tmp_path / "0" / "*"))[0]).readline())
    assert record["type"] == "MultiAgentBatch" and record["count"] == 5


def test_files_roll_by_size_and_are_named_like_rllib(tmp_path):
    writer = JsonWriter(str(tmp_path), ioctx=IOContext(worker_index=3), max_file_size=2000)
    batches = [sampler_like_batch(seed=i, eps=(2 * i, 2 * i + 1)) for i in range(6)]
    for b in batches:
        writer.write(b)
    writer.close()
    files = sorted(glob.glob(str(tmp_path / "*.json")), key=lambda f: int(f[:-5].rsplit("_", 1)[1]))
    assert len(files) >= 3
    assert all("_worker-3_" in os.path.basename(f) and os.path.basename(f).startswith("output-")
               for f in files)
    # Each file but the last went over the limit with its last line only.
    for f in files[:-1]:
        lines = open(f).read().splitlines(keepends=True)
        assert sum(len(line) for line in lines) > 2000
        assert sum(len(line) for line in lines[:-1]) <= 2000
    read = [b for f in files for b in JsonReader(f).read_all_files()]
    assert len(read) == 6
    for a, b in zip(batches, read):
        assert_same(a, b)


def test_glob_directory_and_list_inputs(tmp_path):
    for name in ("a", "b"):
        JsonWriter(str(tmp_path / name)).write(sampler_like_batch(3))
    a_file = glob.glob(str(tmp_path / "a" / "*.json"))[0]
    assert JsonReader(str(tmp_path / "a")).files == [a_file]
    assert len(JsonReader(str(tmp_path / "*" / "*.json")).files) == 2
    assert len(JsonReader([str(tmp_path / "a"), str(tmp_path / "b")]).files) == 2
    assert JsonReader(a_file).files == [a_file]


def test_empty_glob_and_missing_path_raise(tmp_path):
    with pytest.raises(ValueError, match=r"no files match '.*\*\.json'"):
        JsonReader(str(tmp_path / "*.json"))
    with pytest.raises(ValueError, match="no files match"):
        JsonReader(str(tmp_path))  # an empty directory
    with pytest.raises(ValueError, match="neither a file, a directory nor a glob"):
        JsonReader(str(tmp_path / "missing.json"))
    with pytest.raises(TypeError, match="inputs must be a path"):
        JsonReader([])


def test_reader_cycles_over_all_files_in_a_shuffled_order(tmp_path):
    for i in range(4):
        JsonWriter(str(tmp_path / f"d{i}")).write(SampleBatch(obs=np.full((2, 4), i, np.float32),
                                                              actions=[0, 1]))
    reader = JsonReader(str(tmp_path / "*" / "*.json"), IOContext(config={"seed": 3}))
    seen = [int(reader.next()["obs"][0, 0]) for _ in range(8)]
    assert sorted(seen[:4]) == [0, 1, 2, 3] and sorted(seen[4:]) == [0, 1, 2, 3]
    assert seen[:4] != [0, 1, 2, 3] or seen[4:] != [0, 1, 2, 3]
    again = JsonReader(str(tmp_path / "*" / "*.json"), IOContext(config={"seed": 3}))
    assert [int(again.next()["obs"][0, 0]) for _ in range(8)] == seen


def test_shuffled_input_returns_every_batch_in_another_order():
    class Count:
        i = 0

        def next(self):
            self.i += 1
            return self.i

    shuffled = ShuffledInput(Count(), n=10, seed=0)
    got = [shuffled.next() for _ in range(30)]
    assert len(set(got)) == 30 and got != sorted(got)
    assert max(got) <= 40
    assert [ShuffledInput(Count(), n=0).next() for _ in range(3)] == [1, 1, 1]
    with pytest.raises(ValueError, match="n must be an int >= 0"):
        ShuffledInput(Count(), n=-1)


# ------------------------------------------------------------------ bad files
def _write_lines(path, lines):
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


def test_truncated_line_names_file_and_line(tmp_path):
    good = encode_batch(sampler_like_batch(3))
    f = _write_lines(tmp_path / "data.json", [good, good[: len(good) // 2]])
    reader = JsonReader(f)
    with pytest.raises(JsonRecordError, match=r"corrupt or truncated JSON record in "
                                              r".*data\.json, line 2"):
        list(reader.read_all_files())


def test_corrupted_compressed_column_names_file_and_line(tmp_path):
    record = json.loads(encode_batch(sampler_like_batch(3), compress_columns=["obs"]))
    record["obs"] = base64.b64encode(b"garbage" * 4).decode()
    f = _write_lines(tmp_path / "bad.json", [json.dumps(record)])
    with pytest.raises(JsonRecordError, match=r"bad\.json, line 1: .*neither tfrl's nor RLlib"):
        JsonReader(f).next()
    record["obs"] = "not base64!"
    f = _write_lines(tmp_path / "bad2.json", ["", json.dumps(record)])
    with pytest.raises(JsonRecordError, match=r"bad2\.json, line 2: .*not a base64"):
        JsonReader(f).next()
    f = _write_lines(tmp_path / "bad3.json", [json.dumps({"obs": [1]})])
    with pytest.raises(JsonRecordError, match=r"bad3\.json, line 1: .*no 'type' field"):
        JsonReader(f).next()


def _pg_worker(**kw):
    return RolloutWorker(env_creator=lambda ctx: None, policy_spec=PGTFPolicy,
                         spaces={"default_policy": (OBS, ACT)},
                         policy_config={"model": {"fcnet_hiddens": [8]}, "seed": 0}, **kw)


def test_missing_column_and_wrong_obs_shape_name_file_and_line(tmp_path):
    no_actions = sampler_like_batch(3)
    del no_actions["actions"]
    f = _write_lines(tmp_path / "noact.json", [encode_batch(no_actions)])
    worker = _pg_worker(input_creator=lambda ioctx: JsonReader(f, ioctx))
    with pytest.raises(JsonRecordError, match=r"noact\.json, line 1 lacks the column\(s\) "
                                              r"\['actions'\] that PGTFPolicy needs"):
        worker.sample()
    wide = SampleBatch(obs=np.zeros((3, 5), np.float32), actions=np.zeros(3, np.int64))
    f2 = _write_lines(tmp_path / "wide.json", [encode_batch(wide)])
    worker = _pg_worker(input_creator=lambda ioctx: JsonReader(f2, ioctx))
    with pytest.raises(JsonRecordError, match=r"observations in .*wide\.json, line 1 have "
                                              r"shape \(5,\) per row; policy 'default_policy' "
                                              r"expects \(4,\)"):
        worker.sample()


def test_pack_column_round_trip_and_encoding():
    x = np.arange(6, dtype=np.int16).reshape(2, 3)
    text = pack_column(x)
    assert isinstance(text, str)
    np.testing.assert_array_equal(unpack_column(text), x)
    raw = base64.b64decode(text)
    assert raw.startswith(b"\x04\x22\x4d\x18") == lz4_available()


@pytest.mark.skipif(not lz4_available(), reason="lz4 not installed")
def test_lz4_columns_refuse_pickled_classes(tmp_path):
    import pickle

    import lz4.frame

    class Calls:  # unpickling it would call os.getcwd (harmless here; os.system elsewhere)
        def __reduce__(self):
            return os.getcwd, ()

    evil = base64.b64encode(lz4.frame.compress(pickle.dumps(Calls()))).decode()
    with pytest.raises(ValueError, match=r"refers to \w+\.getcwd; only numpy arrays"):
        unpack_column(evil)
    # Through a file: the reader names the file and the line.
    record = json.loads(encode_batch(sampler_like_batch(3)))
    record["obs"] = evil
    path = tmp_path / "evil.json"
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(JsonRecordError, match=r"evil\.json, line 1: .*refers to \w+\.getcwd"):
        JsonReader(str(path)).next()


# ------------------------------------------------------------------ config keys
def test_output_and_input_config_keys_write_and_read_through_workers(tmp_path):
    from toy_envs import CounterEnv  # noqa: F401  (tests' toy envs)

    out = str(tmp_path / "out")
    config = {"output": out, "output_compress_columns": ["obs"], "seed": 0,
              "model": {"fcnet_hiddens": [8]}}
    writer = RolloutWorker(env_creator=lambda ctx: gym.make("CartPole-v1"),
                           policy_spec=PGTFPolicy, rollout_fragment_length=20,
                           policy_config=config)
    sampled = [writer.sample() for _ in range(3)]
    writer.stop()
    writer.output_writer.close()
    files = glob.glob(out + "/*.json")
    assert len(files) == 1
    reader = RolloutWorker(env_creator=lambda ctx: None, policy_spec=PGTFPolicy,
                           spaces={"default_policy": (gym.make("CartPole-v1").observation_space,
                                                      ACT)},
                           rollout_fragment_length=20,
                           policy_config={"input": out, "model": {"fcnet_hiddens": [8]},
                                          "seed": 0})
    read = [reader.sample() for _ in range(3)]
    key = lambda b: int(b["eps_id"][0]) * 1000 + int(b["t"][0])  # noqa: E731
    for a, b in zip(sorted(sampled, key=key), sorted(read, key=key)):
        assert_same(a, b)


def test_algorithm_config_accepts_offline_keys(tmp_path):
    JsonWriter(str(tmp_path)).write(sampler_like_batch())
    config = AlgorithmConfig().offline_data(
        input_=str(tmp_path), output=str(tmp_path / "o"), output_compress_columns=[],
        output_max_file_size=1000, shuffle_buffer_size=4, input_evaluation=["is", "wis"])
    d = config.to_dict()
    assert d["input"] == str(tmp_path) and d["output_max_file_size"] == 1000
    AlgorithmConfig.from_dict({"input": {"sampler": 0.5, str(tmp_path): 0.5}})
    AlgorithmConfig.from_dict({"input": [str(tmp_path)]})
    with pytest.raises(ValueError, match="output_max_file_size"):
        AlgorithmConfig.from_dict({"output_max_file_size": 0})
    with pytest.raises(ValueError, match="must sum to 1.0; they sum to 0.9"):
        AlgorithmConfig.from_dict({"input": {"sampler": 0.4, str(tmp_path): 0.5}})
    with pytest.raises(ValueError, match=r"Unsupported `output` config value: 3 \(int\)"):
        AlgorithmConfig.from_dict({"output": 3})
    with pytest.raises(ValueError, match="no files match"):
        AlgorithmConfig.from_dict({"input": str(tmp_path / "*.nothing")})


def test_input_creator_from_config_shuffles_and_mixes(tmp_path):
    for i in range(3):
        JsonWriter(str(tmp_path / "a")).write(SampleBatch(obs=np.full((1, 4), i, np.float32),
                                                          actions=[0]))
    ioctx = IOContext(config={"shuffle_buffer_size": 3, "seed": 0})
    reader = input_creator_from_config(str(tmp_path / "a"))(ioctx)
    assert isinstance(reader, ShuffledInput) and isinstance(reader.child, JsonReader)
    JsonWriter(str(tmp_path / "b")).write(SampleBatch(obs=np.full((1, 4), 9, np.float32),
                                                      actions=[0]))
    mixed = input_creator_from_config({str(tmp_path / "a"): 0.75,
                                       str(tmp_path / "b"): 0.25})(IOContext(config={"seed": 1}))
    assert isinstance(mixed, MixedInput)
    from_b = np.mean([mixed.next()["obs"][0, 0] == 9 for _ in range(400)])
    assert 0.18 < from_b < 0.32


def test_output_creator_from_config(tmp_path):
    assert type(output_creator_from_config({})(IOContext())).__name__ == "NoopOutput"
    writer = output_creator_from_config({"output": "logdir", "output_max_file_size": 10})(
        IOContext(log_dir=str(tmp_path)))
    assert isinstance(writer, JsonWriter) and writer.max_file_size == 10
    with pytest.raises(ValueError, match="needs a worker log_dir"):
        output_creator_from_config({"output": "logdir"})(IOContext())
    with pytest.raises(ValueError, match="output_format"):
        output_creator_from_config({"output": "x", "output_format": "csv"})



@pytest.mark.parametrize("column,value,message", [
    ("rewards", np.nan, r"column 'rewards', row 1: nan is not a finite number"),
    ("rewards", 1e39, r"column 'rewards', row 1: 1e\+39 overflows float32 \(largest "
                      r"3.4028235e\+38\)"),
    ("obs", -np.inf, r"column 'obs', row 1: -inf is not a finite number"),
    ("new_obs", 1e300, r"column 'new_obs', row 1: 1e\+300 overflows float32"),
])
def test_nonfinite_or_float32_overflowing_values_name_file_line_column_and_row(
        tmp_path, column, value, message):
    # Issue 29: such a record used to be read (1e39 silently became inf in float32) and
    # broke the learner's update; now the reader refuses it where it enters.
    bad = sampler_like_batch(3)
    bad[column] = bad[column].astype(np.float64)
    bad[column][1] = value
    good = encode_batch(sampler_like_batch(3))
    f = _write_lines(tmp_path / "data.json", [good, encode_batch(bad), good])
    reader = JsonReader(f, IOContext(worker=_pg_worker()))
    assert reader.next().count == 3
    with pytest.raises(JsonRecordError, match=r"data\.json, line 2: " + message):
        reader.next()
    assert reader.next().count == 3  # the reader goes on with the next line


def test_nonfinite_values_in_compressed_columns_are_refused(tmp_path):
    bad = sampler_like_batch(3)
    bad["obs"][2, 1] = np.nan
    f = _write_lines(tmp_path / "packed.json", [encode_batch(bad, compress_columns=["obs"])])
    with pytest.raises(JsonRecordError, match=r"packed\.json, line 1: column 'obs', row 2: "
                                              r"nan is not a finite number"):
        JsonReader(f).next()


def test_a_json_file_of_random_bytes_names_the_file(tmp_path):
    # Issue 29: it used to raise a bare UnicodeDecodeError.
    path = tmp_path / "random.json"
    path.write_bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    with pytest.raises(JsonRecordError, match=r"random\.json, line 1 is not UTF-8 text: byte "
                                              r"0x[0-9a-f]{2} at column \d+"):
        JsonReader(str(path)).next()


def test_marwil_on_a_file_with_one_nan_reward_reports_it_and_learns_on(tmp_path):
    # The probe (item 3): one NaN reward in an offline file read by MARWIL made
    # every later train() raise NonFiniteUpdateError, also on clean data.
    from tfrl.algorithms.marwil import MARWIL

    rng = np.random.default_rng(0)

    def episode(eps_id, reward=1.0):
        n = 8
        return encode_batch(SampleBatch(
            obs=rng.uniform(-1, 1, (n, 4)).astype(np.float32),
            actions=rng.integers(0, 2, n), rewards=np.full(n, reward),
            terminateds=np.arange(n) == n - 1, eps_id=np.full(n, eps_id, np.int64)))

    data = tmp_path / "data"
    data.mkdir()
    _write_lines(data / "episodes.json", [episode(0, np.nan)] + [episode(i) for i in range(1, 9)])
    algo = MARWIL(config={"env": None, "input": str(data), "train_batch_size": 16,
                          "observation_space": OBS, "action_space": ACT,
                          "model": {"fcnet_hiddens": [8]}, "seed": 0,
                          "evaluation_interval": None})
    try:
        with pytest.raises(JsonRecordError, match=r"episodes\.json, line 1: column 'rewards', "
                                                  r"row 0: nan is not a finite number"):
            algo.train()
        for _ in range(2):
            stats = algo.train()["info"]["learner"]["default_policy"]["learner_stats"]
            assert np.isfinite(stats["total_loss"])
            assert np.isfinite(stats["moving_average_sqd_adv_norm"])
    finally:
        algo.stop()
