"""Multi-agent experience files: MultiAgentBatch round trips through TFRecord (one shard
family per policy, env steps carried by marked rows) and JSON (RLlib's
"MultiAgentBatch" records), property-based round trips (hypothesis), the errors for
shards that do not fit the worker's policies, and a multi-agent PPO run writing TFRecord
shards that a multi-agent BC learns from."""

import glob
import json
import os
import tempfile

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfrl.algorithms.bc import BC, BCTFPolicy
from tfrl.algorithms.pg import PGTFPolicy
from tfrl.algorithms.ppo import PPO
from tfrl.data.sample_batch import MultiAgentBatch, SampleBatch
from tfrl.env.multi_agent_env import MultiAgentEnv
from tfrl.env.registry import register_env
from tfrl.offline.input_creators import input_creator_from_config
from tfrl.offline.io_context import IOContext
from tfrl.offline.json_reader import JsonReader
from tfrl.offline.json_writer import JsonWriter
from tfrl.offline.tfrecord import (ENV_STEP_COLUMN, TFRecordReader, TFRecordWriter,
                                   env_step_marks, read_header_and_policy)
from tfrl.policy.policy import PolicySpec

SPACES = {"a": (gym.spaces.Box(-1.0, 1.0, (4,), np.float32), gym.spaces.Discrete(2)),
          "b": (gym.spaces.Box(0, 255, (2, 3), np.uint8), gym.spaces.Discrete(3))}


def policy_rows(pid, n, seed):
    """Rows of policy "a" (float obs (4,)) or "b" (uint8 obs (2, 3), float64 and int32
    extras): different columns, dtypes and shapes per policy."""
    rng = np.random.default_rng(seed)
    t = np.arange(seed * 1000, seed * 1000 + n, dtype=np.int64)
    if pid == "a":
        return SampleBatch(obs=rng.standard_normal((n, 4)).astype(np.float32),
                           new_obs=rng.standard_normal((n, 4)).astype(np.float32),
                           actions=rng.integers(0, 2, n), rewards=rng.random(n).astype(
                               np.float32), terminateds=rng.random(n) < 0.2, t=t)
    return SampleBatch(obs=rng.integers(0, 255, (n, 2, 3)).astype(np.uint8),
                       actions=rng.integers(0, 3, n).astype(np.int32),
                       wide=rng.standard_normal((n, 2)), rewards=rng.random(n).astype(
                           np.float32), t=t)


def assert_same(want, got):
    assert sorted(want.keys()) == sorted(got.keys())
    for k in want.keys():
        assert got[k].dtype == want[k].dtype, k
        assert got[k].shape == want[k].shape, k
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)


def assert_same_multi_agent(want, got):
    assert isinstance(got, MultiAgentBatch)
    assert got.count == want.count and got.agent_steps() == want.agent_steps()
    assert sorted(got.policy_batches) == sorted(str(p) for p in want.policy_batches)
    for pid, b in want.policy_batches.items():
        assert_same(b, got.policy_batches[str(pid)])


def written_batches():
    """Three MultiAgentBatches: "b" acts on some env steps only, and not at all in one."""
    return [MultiAgentBatch({"a": policy_rows("a", 70, 0), "b": policy_rows("b", 30, 1)}, 70),
            MultiAgentBatch({"a": policy_rows("a", 5, 2)}, 5),
            MultiAgentBatch({"a": policy_rows("a", 50, 3), "b": policy_rows("b", 50, 4)}, 61)]


def test_env_step_marks_sum_to_the_env_steps_and_never_exceed_the_rows():
    marks = env_step_marks(7, {"a": 4, "b": 6})  # quotas 2.8, 4.2 -> 3, 4; rows k*n//q
    assert [int(m.sum()) for m in marks.values()] == [3, 4]
    assert marks["a"].tolist() == [1, 1, 1, 0] and marks["b"].tolist() == [1, 1, 0, 1, 1, 0]
    for count, rows in [(0, {"a": 3}), (10, {"a": 3, "b": 7}), (5, {"a": 1, "b": 1, "c": 3}),
                        (3, {"a": 1, "b": 1, "c": 1, "d": 0})]:
        marks = env_step_marks(count, rows)
        assert sum(int(m.sum()) for m in marks.values()) == count
        assert all(len(marks[p]) == n and marks[p].dtype == np.uint8 for p, n in rows.items())


@pytest.mark.parametrize("rows_per_record", [1, 64])
def test_multi_agent_round_trip_is_exact(tmp_path, rows_per_record):
    batches = written_batches()
    batches[0].policy_batches["a"].compress(columns=["obs", "new_obs"])  # as workers do
    writer = TFRecordWriter(str(tmp_path), max_file_size=4000, rows_per_record=rows_per_record)
    for b in batches:
        writer.write(b)
    writer.close()
    # One shard family per policy, rolled by size; the schema record names the policy.
    policies = {f: read_header_and_policy(f)[2] for f in writer.files}
    assert set(policies.values()) == {"a", "b"}
    assert all(f"_policy-{p}_" in os.path.basename(f) for f, p in policies.items())
    assert sum(p == "a" for p in policies.values()) >= 2
    assert sorted(glob.glob(str(tmp_path / "*.tfrecord"))) == sorted(writer.files)
    reader = TFRecordReader(str(tmp_path))
    assert reader.multi_agent and sorted(reader.shards) == ["a", "b"]
    back = reader.read_all()
    want = MultiAgentBatch.concat_samples(written_batches())
    assert back.count == 70 + 5 + 61 and back.agent_steps() == 70 + 30 + 5 + 50 + 50
    assert_same_multi_agent(want, back)


def test_multi_agent_next_gives_each_policy_a_batch_and_counts_marked_env_steps(tmp_path):
    writer = TFRecordWriter(str(tmp_path))
    for b in written_batches():
        writer.write(b)
    writer.close()
    # Blocks of 80 rows: one pass of "b"'s two records (30 and 50 rows) per block.
    reader = TFRecordReader(str(tmp_path), IOContext(config={
        "train_batch_size": 16, "seed": 3, "shuffle_buffer_size": 80}))
    written = {pid: {int(t): i for i, t in enumerate(b["t"])} for pid, b in
               MultiAgentBatch.concat_samples(written_batches()).policy_batches.items()}
    want = MultiAgentBatch.concat_samples(written_batches())
    seen = {"a": set(), "b": set()}
    for _ in range(12):  # more than one pass of "b"'s 80 rows: the stream repeats
        got = reader.next()
        assert isinstance(got, MultiAgentBatch)
        assert ENV_STEP_COLUMN not in got.policy_batches["a"]
        assert [len(got.policy_batches[p]) for p in ("a", "b")] == [16, 16]
        assert 0 < got.env_steps() <= got.agent_steps() == 32
        for pid, b in got.policy_batches.items():
            rows = [written[pid][int(t)] for t in b["t"]]  # every row is a written row
            seen[pid].update(rows)
            for k in b.keys():
                np.testing.assert_array_equal(b[k], want.policy_batches[pid][k][rows])
    assert seen["b"] == set(range(80))
    # The tf.data pipeline itself: per policy a dict of tensors of batch_size rows.
    element = next(iter(reader.dataset(8)))
    assert sorted(element) == ["a", "b"]
    assert element["b"]["obs"].shape == (8, 2, 3) and element["b"]["obs"].dtype == tf.uint8
    assert element["a"][ENV_STEP_COLUMN].dtype == tf.uint8


class PolicyMapWorker:
    """What the reader reads of its worker: the policy map."""

    def __init__(self, **policies):
        self.policy_map = policies


def test_shards_that_do_not_fit_the_policies_fail_naming_file_and_record(tmp_path):
    writer = TFRecordWriter(str(tmp_path / "ok"))
    writer.write(written_batches()[0])
    writer.close()
    a = PGTFPolicy(*SPACES["a"], {"seed": 0, "model": {"fcnet_hiddens": [8]}})
    b = PGTFPolicy(*SPACES["b"], {"seed": 0, "model": {"fcnet_hiddens": [8]}})
    ok = TFRecordReader(str(tmp_path / "ok"), IOContext(worker=PolicyMapWorker(a=a, b=b)))
    assert ok.next().policy_batches["b"]["obs"].shape[1:] == (2, 3)
    # A policy id the worker does not have.
    shard_b = [f for f in writer.files if "_policy-b_" in f][0]
    reader = TFRecordReader(str(tmp_path / "ok"), IOContext(worker=PolicyMapWorker(a=a)))
    with pytest.raises(ValueError, match=rf"{shard_b} \(record 0, the schema\) holds rows of "
                                         r"policy 'b', which the worker does not have \(\['a'\]"):
        reader.next()
    # A shard missing a column one policy's loss reads.
    no_actions = MultiAgentBatch({"a": policy_rows("a", 6, 0), "b": SampleBatch(
        {k: v for k, v in policy_rows("b", 4, 1).items() if k != "actions"})}, 6)
    writer = TFRecordWriter(str(tmp_path / "no_actions"))
    writer.write(no_actions)
    writer.close()
    reader = TFRecordReader(str(tmp_path / "no_actions"),
                            IOContext(worker=PolicyMapWorker(a=a, b=b)))
    with pytest.raises(ValueError, match=r"rows of policy 'b' in .*no_actions.*_policy-b_0"
                                         r"\.tfrecord \(record 0, the schema\) lack the column"
                                         r"\(s\) \['actions'\] that PGTFPolicy needs"):
        reader.next()
    # Observations of another shape than the policy's.
    swapped = TFRecordReader(str(tmp_path / "ok"), IOContext(worker=PolicyMapWorker(a=b, b=a)))
    with pytest.raises(ValueError, match=r"observations of policy 'a' in .*have shape \(4,\) "
                                         r"per row; the policy expects \(2, 3\)"):
        swapped.next()
    # Single-agent shards for a multi-agent worker.
    single = TFRecordWriter(str(tmp_path / "single"))
    single.write(policy_rows("a", 4, 0))
    single.close()
    with pytest.raises(ValueError, match=r"holds single-agent rows but the worker has 2 "
                                         r"policies \['a', 'b'\]"):
        TFRecordReader(str(tmp_path / "single"),
                       IOContext(worker=PolicyMapWorker(a=a, b=b))).next()
    # Single- and multi-agent shards together.
    with pytest.raises(ValueError, match=r"single\S*\.tfrecord holds single-agent rows and "
                                         r".*rows of policy 'a' \(multi-agent\)"):
        TFRecordReader([str(tmp_path / "single"), str(tmp_path / "ok")])


def test_int_policy_ids_come_back_as_the_workers_ids(tmp_path):
    a = PGTFPolicy(*SPACES["a"], {"seed": 0, "model": {"fcnet_hiddens": [8]}})
    b = PGTFPolicy(*SPACES["b"], {"seed": 0, "model": {"fcnet_hiddens": [8]}})
    writer = TFRecordWriter(str(tmp_path))
    writer.write(MultiAgentBatch({0: policy_rows("a", 8, 0), 1: policy_rows("b", 8, 1)}, 8))
    writer.close()
    worker = PolicyMapWorker()
    worker.policy_map = {0: a, 1: b}
    reader = TFRecordReader(str(tmp_path), IOContext(config={"train_batch_size": 4},
                                                      worker=worker))
    assert sorted(reader.next().policy_batches) == [0, 1]
    back = reader.read_all()
    assert back.count == 8 and back.policy_batches[1]["obs"].shape == (8, 2, 3)
    assert sorted(TFRecordReader(str(tmp_path)).read_all().policy_batches) == ["0", "1"]


def test_writer_refuses_mixed_kinds_and_env_steps_without_rows(tmp_path):
    writer = TFRecordWriter(str(tmp_path / "ma"))
    writer.write(written_batches()[0])
    with pytest.raises(ValueError, match="wrote MultiAgentBatches; received a SampleBatch"):
        writer.write(policy_rows("a", 3, 0))
    with pytest.raises(ValueError, match=r"columns of policy 'b' .* differ from the ones "
                                         r"written before"):
        writer.write(MultiAgentBatch({"b": policy_rows("a", 3, 0)}, 3))
    single = TFRecordWriter(str(tmp_path / "sa"))
    single.write(policy_rows("a", 3, 0))
    with pytest.raises(ValueError, match="wrote SampleBatches; received a MultiAgentBatch"):
        single.write(written_batches()[1])
    subset = MultiAgentBatch({"a": policy_rows("a", 3, 0)}, 5, policies_subset=True)
    with pytest.raises(ValueError, match=r"has 5 env steps but only 3 rows"):
        TFRecordWriter(str(tmp_path / "subset")).write(subset)
    with pytest.raises(TypeError, match="received dict"):
        TFRecordWriter(str(tmp_path / "dict")).write({"obs": np.zeros(2)})


def test_json_multi_agent_round_trip_with_different_spaces_through_a_worker_policy_map(
        tmp_path):
    """RLlib's layout ("MultiAgentBatch", count, policy_batches); compressed obs keep
    dtype and shape; plain JSON obs get each policy's space dtype back."""
    a = PGTFPolicy(*SPACES["a"], {"seed": 0, "model": {"fcnet_hiddens": [8]}})
    b = PGTFPolicy(*SPACES["b"], {"seed": 0, "model": {"fcnet_hiddens": [8]}})
    for compress in [(), ("obs", "new_obs", "wide")]:
        out = str(tmp_path / str(len(compress)))
        writer = JsonWriter(out, compress_columns=compress)
        for batch in written_batches():
            writer.write(batch)
        writer.close()
        record = json.loads(open(writer.files[0]).readline())
        assert record["type"] == "MultiAgentBatch" and record["count"] == 70
        assert sorted(record["policy_batches"]) == ["a", "b"]
        assert isinstance(record["policy_batches"]["b"]["obs"], str) == bool(compress)
        reader = JsonReader(out, IOContext(worker=PolicyMapWorker(a=a, b=b)))
        back = list(reader.read_all_files())
        for want, got in zip(written_batches(), back):
            assert got.count == want.count
            for pid, rows in want.policy_batches.items():
                got_rows = got.policy_batches[pid]
                for k in rows.keys():
                    # Plain JSON lists carry no dtype: float64 comes back float32, int32
                    # actions int64 (json_format's rules); the rest is exact.
                    dtype = rows[k].dtype
                    if not compress and k == "wide":
                        dtype = np.float32
                    if k == "actions" and pid == "b":
                        dtype = np.int64
                    assert got_rows[k].dtype == dtype and got_rows[k].shape == rows[k].shape
                    np.testing.assert_allclose(got_rows[k], rows[k], rtol=1e-6, err_msg=k)


# ------------------------------------------------------------------ property-based
DTYPES = ["float32", "float64", "int64", "int32", "uint8", "bool", "int8", "float16"]


@st.composite
def multi_agent_batches(draw):
    """1-3 MultiAgentBatches over 1-3 policies, each policy its own columns (dtype and row
    shape), 0-70 rows per policy per batch and 0..rows env steps."""
    pids = draw(st.lists(st.sampled_from(["p0", "p1", "long policy/id"]), min_size=1,
                         max_size=3, unique=True))
    columns = {pid: draw(st.dictionaries(
        st.sampled_from(["obs", "actions", "rewards", "x"]),
        st.tuples(st.sampled_from(DTYPES), st.lists(st.integers(1, 3), max_size=2)),
        min_size=1, max_size=4)) for pid in pids}
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(draw(st.integers(1, 3))):
        policy_batches = {}
        for pid in pids:
            n = draw(st.integers(0, 70))
            policy_batches[pid] = SampleBatch({
                k: (rng.standard_normal((n, *shape)) * 50).astype(dtype)
                if dtype != "bool" else rng.random((n, *shape)) < 0.5
                for k, (dtype, shape) in columns[pid].items()})
        total = sum(len(b) for b in policy_batches.values())
        batches.append(MultiAgentBatch(policy_batches, draw(st.integers(0, total))))
    return batches


@pytest.mark.slow
@settings(max_examples=10, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(batches=multi_agent_batches(), rows_per_record=st.sampled_from([1, 7, 64]))
def test_property_tfrecord_round_trip_of_any_multi_agent_batches(batches, rows_per_record):
    with tempfile.TemporaryDirectory() as out:
        writer = TFRecordWriter(out, rows_per_record=rows_per_record, max_file_size=3000)
        for b in batches:
            writer.write(b)
        writer.close()
        want = MultiAgentBatch.concat_samples(batches)
        if not writer.files:  # no rows at all: nothing written, nothing to read
            assert want.agent_steps() == 0
            return
        back = TFRecordReader(out).read_all()
        # Policies that never had a row write no shard.
        want = MultiAgentBatch({p: b for p, b in want.policy_batches.items() if len(b)},
                               want.count)
        assert_same_multi_agent(want, back)


@settings(max_examples=20, deadline=None, derandomize=True)
@given(batches=multi_agent_batches())
def test_property_json_round_trip_of_compressed_multi_agent_batches(batches):
    with tempfile.TemporaryDirectory() as out:
        writer = JsonWriter(out, compress_columns=["obs", "actions", "rewards", "x"])
        for b in batches:
            writer.write(b)
        writer.close()
        back = list(JsonReader(out).read_all_files())
        assert len(back) == len(batches)
        for want, got in zip(batches, back):
            assert_same_multi_agent(want, got)


# ------------------------------------------------------------------ end to end
class TwoSigns(MultiAgentEnv):
    """Two agents, 10 steps per episode, observations uniform in [-1, 1]: agent "a" sees
    4 numbers and is paid 1 for the sign of the first, "b" sees 2x3 and is paid 1 for
    the sign of the last (a random policy earns 5 per episode, a perfect one 10)."""

    def __init__(self, config=None):
        super().__init__()
        self._agent_ids = {"a", "b"}
        self.observation_space = gym.spaces.Dict({
            "a": gym.spaces.Box(-1.0, 1.0, (4,), np.float32),
            "b": gym.spaces.Box(-1.0, 1.0, (2, 3), np.float32)})
        self.action_space = gym.spaces.Dict({"a": gym.spaces.Discrete(2),
                                             "b": gym.spaces.Discrete(2)})
        self.rng = np.random.default_rng(0)
        self.t = 0

    def _obs(self):
        self.last = {"a": self.rng.uniform(-1, 1, 4).astype(np.float32),
                     "b": self.rng.uniform(-1, 1, (2, 3)).astype(np.float32)}
        return dict(self.last)

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action_dict):
        right = {"a": int(self.last["a"][0] > 0), "b": int(self.last["b"][1, 2] > 0)}
        rewards = {aid: float(action_dict[aid] == right[aid]) for aid in action_dict}
        self.t += 1
        return self._obs(), rewards, {"__all__": self.t >= 10}, {"__all__": False}, {}


MULTIAGENT = {"policies": {"a": PolicySpec(), "b": PolicySpec()},
              "policy_mapping_fn": lambda aid, episode, worker=None, **kw: aid}
SMALL_NET = {"fcnet_hiddens": [32]}


def accuracies(algo, seed=1):
    """Greedy actions' agreement with the rewarded sign, per policy, on 500 fresh obs."""
    rng = np.random.default_rng(seed)
    obs_a = rng.uniform(-1, 1, (500, 4)).astype(np.float32)
    obs_b = rng.uniform(-1, 1, (500, 2, 3)).astype(np.float32)
    act_a = algo.get_policy("a").compute_actions(obs_a, explore=False)[0]
    act_b = algo.get_policy("b").compute_actions(obs_b, explore=False)[0]
    return (float(np.mean(act_a == (obs_a[:, 0] > 0))),
            float(np.mean(act_b == (obs_b[:, 1, 2] > 0))))


@pytest.fixture(scope="module")
def ppo_shards(tmp_path_factory):
    """A multi-agent PPO run (8 iterations of 1000 env steps) writing every sampled
    batch as TFRecord shards through the `output` config key."""
    register_env("two_signs", lambda ctx: TwoSigns(ctx))
    out = str(tmp_path_factory.mktemp("ppo_two_signs"))
    algo = PPO(config={
        "env": "two_signs", "num_workers": 0, "num_envs_per_worker": 1, "seed": 0,
        "rollout_fragment_length": 200, "train_batch_size": 1000,
        "sgd_minibatch_size": 250, "num_sgd_iter": 8, "lr": 3e-3, "gamma": 0.0,
        "model": SMALL_NET, "multiagent": MULTIAGENT,
        "output": out, "output_format": "tfrecord"})
    try:
        for _ in range(8):
            result = algo.train()
    finally:
        algo.workers.local_worker().output_writer.close()
        algo.stop()
    return out, result


@pytest.mark.learning
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_multi_agent_bc_learns_from_tfrecord_shards_a_multi_agent_ppo_run_wrote(
        ppo_shards, seed):
    out, ppo_result = ppo_shards
    # Measured (2026-11-27): PPO's last iteration pays 9.5 per agent and episode.
    assert min(ppo_result["policy_reward_mean"].values()) >= 8.5, ppo_result
    data = TFRecordReader(out).read_all()
    assert sorted(data.policy_batches) == ["a", "b"]
    assert data.count == 8000 and data.agent_steps() == 16000  # both agents act every step
    assert data.policy_batches["b"]["obs"].shape == (8000, 2, 3)
    reader = input_creator_from_config(out)(IOContext(config={"seed": 0}))
    assert isinstance(reader, TFRecordReader) and reader.multi_agent
    bc = BC(config={"env": "two_signs", "num_workers": 0, "seed": seed, "input": out,
                    "train_batch_size": 1000, "sgd_minibatch_size": 250, "num_sgd_iter": 4,
                    "lr": 3e-3, "model": SMALL_NET, "multiagent": MULTIAGENT})
    try:
        assert isinstance(bc.get_policy("b"), BCTFPolicy)
        before = accuracies(bc)
        for _ in range(5):
            result = bc.train()
        after = accuracies(bc)
    finally:
        bc.stop()
    assert sorted(result["info"]["learner"]) == ["a", "b"]
    # Measured (seed 0): 0.98 / 0.98 after 5 iterations (random: 0.5).
    assert max(before) < 0.8 and min(after) >= 0.9, (before, after)
