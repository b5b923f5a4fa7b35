"""MultiAgentBatch: steps, wrapping, concat, lockstep timeslices, copy/compress."""

import numpy as np
import pytest

from tfrl.policy.multi_agent_batch import MultiAgentBatch
from tfrl.policy.sample_batch import DEFAULT_POLICY_ID, SampleBatch


def _rows(eps_ids, ts, agent_index, tag):
    n = len(ts)
    return SampleBatch({
        "eps_id": np.array(eps_ids),
        "t": np.array(ts),
        "agent_index": np.full(n, agent_index),
        "obs": np.array([f"{tag}t{t}" for t in ts]),
    })


def test_counts():
    b = MultiAgentBatch({"p1": SampleBatch({"a": [1, 2, 3]}), "p2": SampleBatch({"a": [1]})}, 3)
    assert b.env_steps() == 3 == b.count == len(b)
    assert b.agent_steps() == 4
    assert b.as_multi_agent() is b


def test_constructor_errors():
    with pytest.raises(TypeError, match="policy 'p' must be a SampleBatch; received dict"):
        MultiAgentBatch({"p": {"a": [1]}}, 1)
    with pytest.raises(TypeError, match="dict of policy id"):
        MultiAgentBatch([SampleBatch()], 1)
    with pytest.raises(ValueError, match="env_steps"):
        MultiAgentBatch({}, -1)


def test_wrap_as_needed():
    b = SampleBatch({"a": [1, 2]})
    assert MultiAgentBatch.wrap_as_needed({DEFAULT_POLICY_ID: b}, 2) is b
    ma = MultiAgentBatch.wrap_as_needed({"other": b}, 2)
    assert isinstance(ma, MultiAgentBatch) and ma.policy_batches == {"other": b}
    empty = MultiAgentBatch.wrap_as_needed({}, 0)
    assert isinstance(empty, MultiAgentBatch) and empty.policy_batches == {} and empty.count == 0


def test_concat_samples_per_policy_and_env_steps_summed():
    b1 = MultiAgentBatch({"p1": SampleBatch({"a": [1, 2]})}, 2)
    b2 = MultiAgentBatch({"p1": SampleBatch({"a": [3]}), "p2": SampleBatch({"a": [9]})}, 1)
    c = MultiAgentBatch.concat_samples([b1, SampleBatch(), b2])
    assert c.env_steps() == 3
    assert c.policy_batches["p1"]["a"].tolist() == [1, 2, 3]
    assert c.policy_batches["p2"]["a"].tolist() == [9]


def test_concat_samples_rejects_non_empty_sample_batch():
    with pytest.raises(ValueError, match="can only concat MultiAgentBatch types, not SampleBatch"):
        MultiAgentBatch.concat_samples([MultiAgentBatch({}, 0), SampleBatch({"a": [1]})])


def _three_agents():
    # agent1 at t1,t2,t3; agent2 at t1,t3; agent3 at t3 (the reference page's example).
    return MultiAgentBatch({
        "pa": _rows([0, 0, 0], [1, 2, 3], 0, "a1"),
        "pb": SampleBatch.concat_samples([_rows([0, 0], [1, 3], 1, "a2"), _rows([0], [3], 2, "a3")]),
    }, env_steps=3)


def _content(ma):
    return sorted(v for b in ma.policy_batches.values() for v in b["obs"].tolist())


def test_timeslices_lockstep_k1():
    slices = _three_agents().timeslices(1)
    assert [_content(s) for s in slices] == [
        ["a1t1", "a2t1"], ["a1t2"], ["a1t3", "a2t3", "a3t3"]]
    assert [s.env_steps() for s in slices] == [1, 1, 1]
    assert "pb" not in slices[1].policy_batches


def test_timeslices_lockstep_k2():
    slices = _three_agents().timeslices(2)
    assert [_content(s) for s in slices] == [["a1t1", "a1t2", "a2t1"], ["a1t3", "a2t3", "a3t3"]]
    assert [s.env_steps() for s in slices] == [2, 1]
    # Rows keep (eps_id, t, agent_index) order within each policy batch.
    assert slices[1].policy_batches["pb"]["obs"].tolist() == ["a2t3", "a3t3"]


def test_timeslices_errors():
    with pytest.raises(ValueError, match=r"lacks \['agent_index'\]"):
        MultiAgentBatch({"p": SampleBatch({"eps_id": [0], "t": [0]})}, 1).timeslices(1)
    with pytest.raises(ValueError, match="without rows"):
        MultiAgentBatch({}, 0).timeslices(1)
    with pytest.raises(ValueError, match="k >= 1"):
        _three_agents().timeslices(0)


def test_copy_is_deep_and_size_bytes_sums():
    b = MultiAgentBatch({"p": SampleBatch({"a": np.zeros(4, np.float32)})}, 4)
    c = b.copy()
    c.policy_batches["p"]["a"][0] = 1.0
    assert b.policy_batches["p"]["a"][0] == 0.0 and c.count == 4
    assert b.size_bytes() == 16


def test_compress_and_decompress_every_policy_batch():
    obs = np.arange(24, dtype=np.float32).reshape(4, 6)
    b = MultiAgentBatch({"p": SampleBatch({"obs": obs.copy()}), "q": SampleBatch({"obs": obs + 1})}, 4)
    b.compress(bulk=True)
    assert isinstance(b.policy_batches["q"]["obs"], bytes)
    assert b.decompress_if_needed() is b
    np.testing.assert_array_equal(b.policy_batches["q"]["obs"], obs + 1)


def test_env_steps_may_exceed_the_agent_steps_as_in_rllib():
    # RLlib's behaviour (issue 28): env steps in which no agent acted are legal.
    rows = SampleBatch({"obs": np.arange(3)})
    assert MultiAgentBatch({"p0": rows}, env_steps=100).env_steps() == 100
    assert MultiAgentBatch({}, env_steps=1).env_steps() == 1
    # Several agents per env step: fewer env steps than rows, up to one per agent step.
    assert MultiAgentBatch({"p0": rows, "p1": rows}, env_steps=2).env_steps() == 2
    assert MultiAgentBatch({"p0": rows, "p1": rows}, env_steps=6).agent_steps() == 6
    assert MultiAgentBatch({}, env_steps=0).env_steps() == 0
    # A batch keeping only some policies' rows (SelectExperiences) keeps its env steps.
    subset = MultiAgentBatch({"p0": rows}, env_steps=6, policies_subset=True)
    assert subset.copy().env_steps() == 6 and subset.copy().policies_subset
    joined = MultiAgentBatch.concat_samples([subset, MultiAgentBatch({"p0": rows}, 3)])
    assert (joined.env_steps(), joined.agent_steps(), joined.policies_subset) == (9, 6, True)


def test_every_timeslice_carries_an_unroll_id_in_every_policy_batch():
    ma = MultiAgentBatch({"p0": _rows([1, 1, 1], [0, 1, 2], 0, "a"),
                          "p1": _rows([1, 1], [0, 2], 1, "b")}, env_steps=3)
    slices = ma.timeslices(2)
    assert [s.env_steps() for s in slices] == [2, 1]
    ids = []
    for s in slices:
        for pid, batch in s.policy_batches.items():
            column = batch["unroll_id"]
            assert column.shape == (len(batch),) and len(set(column.tolist())) == 1, pid
            ids.append(int(column[0]))
    assert len(ids) == 4 and len(set(ids)) == 4  # one new id per policy batch and slice
    # Rows that have unroll ids keep them.
    with_ids = _rows([1, 1], [0, 1], 0, "a")
    with_ids["unroll_id"] = np.array([7, 7])
    (piece,) = MultiAgentBatch({"p0": with_ids}, 2).timeslices(2)
    assert piece.policy_batches["p0"]["unroll_id"].tolist() == [7, 7]
