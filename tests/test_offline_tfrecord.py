"""TFRecordWriter / TFRecordReader: exact round trips, rolled shards, the tf.data
pipeline feeding learn_on_batch, the `input`/`output_format` config keys, bad files."""

import glob

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from tfrl.algorithms.pg import PGTFPolicy
from tfrl.data.sample_batch import SampleBatch
from tfrl.evaluation.rollout_worker import RolloutWorker
from tfrl.offline.input_creators import input_creator_from_config
from tfrl.offline.io_context import IOContext
from tfrl.offline.tfrecord import TFRecordReader, TFRecordWriter

OBS = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
ACT = gym.spaces.Discrete(2)


def batch(n=10, start=0):
    rng = np.random.default_rng(start)
    return SampleBatch({
        "obs": rng.standard_normal((n, 4)).astype(np.float32),
        "frames": rng.integers(0, 255, (n, 3, 2)).astype(np.uint8),
        "wide": rng.standard_normal(n),  # float64
        "actions": rng.integers(0, 2, n).astype(np.int64),
        "small": rng.integers(-5, 5, n).astype(np.int32),
        "terminateds": rng.random(n) < 0.3,
        "rewards": rng.standard_normal(n).astype(np.float32),
        "t": np.arange(start, start + n, dtype=np.int64),
    })


@pytest.mark.parametrize("rows_per_record", [1, 3, 64])
def test_round_trip_is_exact_and_shards_roll(tmp_path, rows_per_record):
    writer = TFRecordWriter(str(tmp_path), max_file_size=600, rows_per_record=rows_per_record)
    batches = [batch(10, 10 * i) for i in range(5)]
    for b in batches:
        writer.write(b)
    writer.close()
    assert len(writer.files) >= 3
    reader = TFRecordReader(str(tmp_path), shuffle=False, cycle_length=1)
    got = list(reader.dataset(batch_size=50, repeat=False))
    assert len(got) == 1
    want = SampleBatch.concat_samples(batches)
    got_t = got[0]["t"].numpy()
    order = np.argsort(got_t)
    np.testing.assert_array_equal(got_t[order], want["t"])
    for k in want.keys():
        value = got[0][k].numpy()[order]
        assert value.dtype == want[k].dtype, k
        assert value.shape == want[k].shape, k
        np.testing.assert_array_equal(value, want[k], err_msg=k)


@pytest.mark.parametrize("rows_per_record,buffer", [(64, 40), (3, 13), (1, 5)])
def test_pipeline_shuffles_rows_and_cycles(tmp_path, rows_per_record, buffer):
    writer = TFRecordWriter(str(tmp_path), max_file_size=800, rows_per_record=rows_per_record)
    for i in range(4):
        writer.write(batch(10, 10 * i))
    writer.close()
    config = {"seed": 1, "shuffle_buffer_size": buffer}
    reader = TFRecordReader(str(tmp_path), IOContext(config=config))
    batches = list(reader.dataset(8, repeat=False))
    assert [len(b["t"]) for b in batches] == [8] * 5  # rows carried over between blocks
    one_pass = np.concatenate([b["t"].numpy() for b in batches])
    assert sorted(one_pass) == list(range(40))  # every row once
    assert not np.array_equal(one_pass, np.arange(40))  # shuffled
    again = TFRecordReader(str(tmp_path), IOContext(config=config)).dataset(8, repeat=False)
    np.testing.assert_array_equal(np.concatenate([b["t"].numpy() for b in again]), one_pass)
    ts = np.concatenate([b["t"].numpy() for b in reader.dataset(batch_size=8).take(20)])
    assert len(ts) == 160 and set(ts) <= set(range(40))  # cycles over the shards


def test_shards_of_other_rows_per_record_read_together(tmp_path):
    for i, rows in enumerate([1, 4, 64]):
        w = TFRecordWriter(str(tmp_path / f"d{i}"), rows_per_record=rows)
        w.write(batch(10, 10 * i))
        w.close()
    reader = TFRecordReader(str(tmp_path / "d*" / "*.tfrecord"), shuffle=False)
    assert reader.rows_per_record == 64
    got = list(reader.dataset(batch_size=6, repeat=False))
    t = np.concatenate([b["t"].numpy() for b in got])
    assert len(got) == 5 and sorted(t) == list(range(30))
    obs = np.concatenate([b["obs"].numpy() for b in got])
    written = np.concatenate([batch(10, 10 * i)["obs"] for i in range(3)])
    np.testing.assert_array_equal(obs, written[t])  # each row whole, from its own shard


def test_learn_on_batch_takes_pipeline_tensors(tmp_path):
    policy = PGTFPolicy(OBS, ACT, {"seed": 0, "model": {"fcnet_hiddens": [8]}})
    b = batch(64)
    b["advantages"] = np.ones(64, np.float32)
    writer = TFRecordWriter(str(tmp_path))
    writer.write(b)
    writer.close()
    ds = TFRecordReader(str(tmp_path), IOContext(config={"seed": 0})).dataset(batch_size=32)
    it = iter(ds)
    before = [w.copy() for w in policy.get_weights()]
    for _ in range(3):
        info = policy.learn_on_batch(next(it))
    assert np.isfinite(info["learner_stats"]["total_loss"])
    assert any(not np.allclose(a, c) for a, c in zip(before, policy.get_weights()))
    assert max(info["num_traces"].values()) == 1  # the learn function traced once


def test_input_config_reads_tfrecord_and_output_format_writes_it(tmp_path):
    out = str(tmp_path / "out")
    worker = RolloutWorker(env_creator=lambda ctx: gym.make("CartPole-v1"),
                           policy_spec=PGTFPolicy, rollout_fragment_length=50,
                           policy_config={"output": out, "output_format": "tfrecord",
                                          "seed": 0, "model": {"fcnet_hiddens": [8]}})
    sampled = [worker.sample() for _ in range(2)]
    worker.output_writer.close()
    worker.stop()
    assert glob.glob(out + "/*.tfrecord")
    reader = input_creator_from_config(out)(IOContext(config={"train_batch_size": 100,
                                                              "seed": 0}))
    assert isinstance(reader, TFRecordReader)
    got = reader.next()
    assert got.count == 100
    want = SampleBatch.concat_samples(sampled)
    # A shuffled, repeating stream: every row read is a row written, exactly.
    written = {(int(e), int(t)): o.tobytes() for e, t, o in
               zip(want["eps_id"], want["t"], want["obs"])}
    assert all(written[(int(e), int(t))] == o.tobytes()
               for e, t, o in zip(got["eps_id"], got["t"], got["obs"]))
    assert got["obs"].dtype == want["obs"].dtype and "infos" not in got


def test_bad_inputs(tmp_path):
    with pytest.raises(ValueError, match="rows_per_record must be an int >= 1; received 0"):
        TFRecordWriter(str(tmp_path / "w"), rows_per_record=0)
    with pytest.raises(TypeError, match="SampleBatch or MultiAgentBatch; received list"):
        TFRecordWriter(str(tmp_path / "w")).write([batch(2)])
    w = TFRecordWriter(str(tmp_path / "w"))
    w.write(batch(2))
    with pytest.raises(ValueError, match="differ from the ones written before"):
        w.write(SampleBatch(obs=np.zeros((2, 5), np.float32)))
    w.close()
    with tf.io.TFRecordWriter(str(tmp_path / "foreign.tfrecord")) as f:
        f.write(b"not an example")
    with pytest.raises(ValueError, match=r"first record of .*foreign\.tfrecord is not"):
        TFRecordReader(str(tmp_path / "foreign.tfrecord"))
    w2 = TFRecordWriter(str(tmp_path / "w2"))
    w2.write(SampleBatch(obs=np.zeros((2, 5), np.float32)))
    w2.close()
    with pytest.raises(ValueError, match="batch_size must be >= 1; received 0"):
        TFRecordReader(str(tmp_path / "w")).dataset(0)
    with pytest.raises(ValueError, match="Read them separately"):
        TFRecordReader([str(tmp_path / "w"), str(tmp_path / "w2")])


def test_pipeline_tensors_stay_tensors_through_the_learners_checks():
    from tfrl.policy import space_specs

    obs = tf.constant(np.ones((3, 4), np.float64))
    out = space_specs.to_batch(OBS, obs, "obs", keep_tensors=True)
    assert isinstance(out, tf.Tensor) and out.dtype == tf.float32  # cast in TF, not numpy
    same = tf.constant(np.ones((3, 4), np.float32))
    assert space_specs.to_batch(OBS, same, "obs", keep_tensors=True) is same
    assert isinstance(space_specs.to_batch(OBS, same, "obs"), np.ndarray)  # the default
    with pytest.raises(ValueError, match=r"must have shape \[B, 4\].*received shape \(3, 5\)"):
        space_specs.to_batch(OBS, tf.zeros((3, 5)), "obs", keep_tensors=True)
    with pytest.raises(TypeError, match="must be numeric"):
        space_specs.to_batch(OBS, tf.fill((3, 4), "a"), "obs", keep_tensors=True)
    ints = gym.spaces.Box(0, 9, (2,), np.int64)
    with pytest.raises(TypeError, match="dtype float32, which does not convert"):
        space_specs.to_batch(ints, tf.zeros((3, 2)), "obs", keep_tensors=True)


def test_shards_that_do_not_fit_the_policy_fail_naming_the_file(tmp_path):
    """A shard missing a column the policy's loss reads, or written for other observations,
    fails when the pipeline is built (not in the first learning step), naming the file."""

    class Worker:  # what the reader reads of its worker: the policy map
        policy_map = {"default_policy": PGTFPolicy(OBS, ACT, {"seed": 0})}

    no_actions = SampleBatch({k: v for k, v in batch(8).items() if k != "actions"})
    wide_obs = SampleBatch({**batch(8), "obs": np.zeros((8, 5), np.float32)})
    for name, data, message in [
            ("no_actions", no_actions, r"no_actions.*lack the column\(s\) \['actions'\]"),
            ("wide_obs", wide_obs, r"wide_obs.*have shape \(5,\) per row; the policy "
                                   r"expects \(4,\)")]:
        w = TFRecordWriter(str(tmp_path / name))
        w.write(data)
        w.close()
        reader = TFRecordReader(str(tmp_path / name), IOContext(worker=Worker()))
        with pytest.raises(ValueError, match=message):
            reader.next()
    # The same files read without a worker (nothing to check against), and a fitting one
    # with it.
    assert TFRecordReader(str(tmp_path / "wide_obs")).next()["obs"].shape[1:] == (5,)
    w = TFRecordWriter(str(tmp_path / "fits"))
    w.write(batch(8))
    w.close()
    reader = TFRecordReader(str(tmp_path / "fits"), IOContext(config={"train_batch_size": 4},
                                                               worker=Worker()))
    assert reader.next()["obs"].shape == (4, 4)


def test_nonfinite_values_are_refused_naming_the_shards_column_and_row(tmp_path):
    # Issue 29: offline records are checked where they enter.
    writer = TFRecordWriter(str(tmp_path), rows_per_record=4)
    bad = batch(10)
    bad["rewards"][6] = np.nan
    writer.write(bad)
    writer.close()
    reader = TFRecordReader(str(tmp_path), shuffle=False, cycle_length=1)
    with pytest.raises(ValueError, match=r"TFRecordReader: a batch read from the shards \[.*"
                                         r"\.tfrecord'\] holds a bad value: column 'rewards', "
                                         r"row 6: nan is not a finite number"):
        reader.read_all()
    reader = TFRecordReader(str(tmp_path), IOContext(config={"train_batch_size": 10}),
                            shuffle=False, cycle_length=1)
    with pytest.raises(ValueError, match=r"column 'rewards', row 6: nan is not a finite"):
        reader.next()
