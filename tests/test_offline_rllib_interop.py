"""RLlib interop: RLlib's JsonReader reads what tfrl's JsonWriter writes, and tfrl's
JsonReader reads what RLlib's JsonWriter writes; compressed columns (base64 of the LZ4
frame of the pickled array, as RLlib writes them) both ways, single- and multi-agent.

Skips without lz4 or without an importable `ray.rllib` (its `ray[rllib]` extra pins a
gymnasium older than tfrl's, so it lives in a venv of its own: tfrl's dependencies
installed next to `ray[rllib]` with gymnasium held at RLlib's pin, tfrl on PYTHONPATH):

    PYTHONPATH=$PWD /path/to/venv-rllib/bin/python -m pytest tests/test_offline_rllib_interop.py

What RLlib reads back from plain (uncompressed) JSON lists has numpy's default dtypes
(float64 for floats, RLlib does not restore them), so those columns are compared by value
and shape; compressed columns keep dtype and shape exactly either way.
"""

import json
import os

import numpy as np
import pytest

from test_offline_json import assert_same, sampler_like_batch
from tfrl.data.sample_batch import MultiAgentBatch, SampleBatch
from tfrl.offline.json_format import lz4_available, pack_column, unpack_column
from tfrl.offline.json_reader import JsonReader
from tfrl.offline.json_writer import JsonWriter

if not lz4_available():
    pytest.skip("RLlib's compressed columns need lz4 (pip install lz4)", allow_module_level=True)
try:
    import ray.rllib.offline as rllib_offline
    from ray.rllib.policy.sample_batch import MultiAgentBatch as RMultiAgentBatch
    from ray.rllib.policy.sample_batch import SampleBatch as RSampleBatch
    from ray.rllib.utils import compression as rllib_compression
except ImportError as e:  # not installed, or installed without its dependencies
    pytest.skip(f"ray.rllib does not import: {e}", allow_module_level=True)

pytestmark = pytest.mark.ray

COMPRESSIONS = [(), ("obs", "new_obs"),
                ("obs", "new_obs", "actions", "rewards", "terminateds", "eps_id",
                 "action_dist_inputs")]


def _column_arrays():
    rng = np.random.default_rng(0)
    return {
        "frames": rng.integers(0, 256, (5, 3, 3, 2)).astype(np.uint8),
        "wide": rng.standard_normal((5, 2)),  # float64
        "obs": rng.standard_normal((5, 4)).astype(np.float32),
        "flags": rng.random(5) < 0.5,
        "small": rng.integers(-9, 9, 5).astype(np.int32),
        "ids": np.arange(5, dtype=np.int64),
        "scalar_rows": np.float32(2.5) * np.ones(5, np.float32),
    }


def _assert_exact(x, y, name):
    assert isinstance(y, np.ndarray), (name, type(y))
    assert x.dtype == y.dtype and x.shape == y.shape, (name, x.dtype, y.dtype, x.shape, y.shape)
    np.testing.assert_array_equal(x, y, err_msg=name)


@pytest.mark.parametrize("name", sorted(_column_arrays()))
def test_compressed_column_encodings_are_interchangeable(name):
    x = _column_arrays()[name]
    # RLlib's pack -> tfrl's unpack_column, and tfrl's pack_column -> RLlib's unpack.
    _assert_exact(x, unpack_column(rllib_compression.pack(x)), name)
    _assert_exact(x, rllib_compression.unpack(pack_column(x)), name)
    # A nested column (a dict of arrays) as one compressed string, both ways.
    nested = {"a": x, "b": np.zeros(3, np.int16)}
    for back in (unpack_column(rllib_compression.pack(nested)),
                 rllib_compression.unpack(pack_column(nested))):
        _assert_exact(x, back["a"], name)
        _assert_exact(nested["b"], back["b"], name)


def _compare_rllib_read(ours, theirs, compress):
    """`theirs`: RLlib's SampleBatch read from a file tfrl wrote from `ours`."""
    assert sorted(theirs.keys()) == sorted(ours.keys())
    for k in ours.keys():
        if k == "infos":
            assert list(theirs[k]) == list(ours[k])
        elif k in compress:
            _assert_exact(ours[k], theirs[k], k)
        else:
            got = np.asarray(theirs[k])
            assert got.shape == ours[k].shape, (k, got.shape)
            np.testing.assert_array_equal(got, ours[k], err_msg=k)


@pytest.mark.parametrize("compress", COMPRESSIONS)
def test_rllib_json_reader_reads_tfrl_files(tmp_path, compress):
    batches = [sampler_like_batch(n=6 + i, seed=i, eps=(2 * i, 2 * i + 1)) for i in range(4)]
    writer = JsonWriter(str(tmp_path), compress_columns=compress, max_file_size=3000)
    for b in batches:
        writer.write(b)
    writer.close()
    assert len(writer.files) >= 2  # RLlib finds the rolled files by its *.json glob
    record = json.loads(open(writer.files[0]).readline())
    assert all(isinstance(record[c], str) for c in compress)
    theirs = list(rllib_offline.JsonReader(str(tmp_path)).read_all_files())
    assert len(theirs) == len(batches)  # RLlib skips lines it cannot parse: none skipped
    assert all(type(b) is RSampleBatch for b in theirs)
    by_eps = {int(b["eps_id"][0]): b for b in theirs}
    for ours in batches:
        _compare_rllib_read(ours, by_eps[int(ours["eps_id"][0])], compress)
    # RLlib's next(): train_batch_size rows concatenated across lines and files.
    reader = rllib_offline.JsonReader(
        str(tmp_path), rllib_offline.IOContext(config={"train_batch_size": 20}))
    assert reader.next().count >= 20


@pytest.mark.parametrize("compress", COMPRESSIONS)
def test_tfrl_json_reader_reads_rllib_files(tmp_path, compress):
    batches = [sampler_like_batch(n=6 + i, seed=i, eps=(2 * i, 2 * i + 1)) for i in range(3)]
    writer = rllib_offline.JsonWriter(str(tmp_path), compress_columns=compress)
    for b in batches:
        writer.write(RSampleBatch(dict(b)))
    writer.cur_file.close()
    files = [os.path.join(tmp_path, f) for f in os.listdir(tmp_path)]
    record = json.loads(open(files[0]).readline())
    assert all(isinstance(record[c], str) for c in compress)
    ours = list(JsonReader(str(tmp_path)).read_all_files())
    assert len(ours) == len(batches)
    for want, got in zip(batches, ours):
        # Every column, dtype and shape: compressed ones exactly as pickled, JSON lists
        # typed by tfrl's column rules (the sampler's dtypes).
        assert type(got) is SampleBatch
        assert_same(want, got)


def _multi_agent():
    return {"p0": sampler_like_batch(4, seed=3, eps=(0, 1)),
            "p1": sampler_like_batch(3, seed=4, eps=(0, 1))}


@pytest.mark.parametrize("compress", COMPRESSIONS[:2])
def test_multi_agent_batches_both_ways(tmp_path, compress):
    policies = _multi_agent()
    JsonWriter(str(tmp_path / "tfrl"), compress_columns=compress).write(
        MultiAgentBatch(policies, 5))
    (theirs,) = list(rllib_offline.JsonReader(str(tmp_path / "tfrl")).read_all_files())
    assert isinstance(theirs, RMultiAgentBatch) and theirs.count == 5
    assert sorted(theirs.policy_batches) == ["p0", "p1"]
    for pid, b in policies.items():
        _compare_rllib_read(b, theirs.policy_batches[pid], compress)

    rllib_offline.JsonWriter(str(tmp_path / "rllib"), compress_columns=compress).write(
        RMultiAgentBatch({pid: RSampleBatch(dict(b)) for pid, b in policies.items()}, 5))
    (ours,) = list(JsonReader(str(tmp_path / "rllib")).read_all_files())
    assert isinstance(ours, MultiAgentBatch) and ours.count == 5
    assert sorted(ours.policy_batches) == ["p0", "p1"]
    for pid, b in policies.items():
        assert_same(b, ours.policy_batches[pid])


def test_rllib_legacy_dones_column_reads_as_terminateds(tmp_path):
    b = sampler_like_batch(4)
    columns = {k: v for k, v in b.items() if k != "terminateds"}
    columns["dones"] = b["terminateds"]
    rllib_offline.JsonWriter(str(tmp_path), compress_columns=["obs"]).write(
        RSampleBatch(columns))
    got = JsonReader(str(tmp_path)).next()
    assert "dones" not in got
    _assert_exact(b["terminateds"], got["terminateds"], "terminateds")
