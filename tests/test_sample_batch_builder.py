"""SampleBatchBuilder and MultiAgentSampleBatchBuilder."""

import numpy as np
import pytest

from tfrl.evaluation.sample_batch_builder import MultiAgentSampleBatchBuilder, SampleBatchBuilder
from tfrl.policy.multi_agent_batch import MultiAgentBatch
from tfrl.policy.sample_batch import SampleBatch


def test_add_values_builds_float32_columns_and_unique_unroll_ids():
    builder = SampleBatchBuilder()
    builder.add_values(obs=np.array([1.0, 2.0]), rewards=1.0, actions=1)
    builder.add_values(obs=np.array([3.0, 4.0]), rewards=0.5, actions=0)
    batch = builder.build_and_reset()
    assert batch["obs"].dtype == np.float32 and batch["obs"].shape == (2, 2)
    assert batch["rewards"].tolist() == [1.0, 0.5] and batch["rewards"].dtype == np.float32
    assert batch["actions"].dtype.kind == "i"
    assert builder.count == 0 and len(builder.buffers) == 0
    builder.add_values(obs=np.zeros(2), rewards=0.0, actions=0)
    second = builder.build_and_reset()
    assert len(set(batch["unroll_id"])) == 1
    assert second["unroll_id"][0] == batch["unroll_id"][0] + 1 or \
        second["unroll_id"][0] > batch["unroll_id"][0]


def test_add_batch_keeps_existing_unroll_id_and_nested_columns():
    builder = SampleBatchBuilder()
    b = SampleBatch({"a": [1, 2], "n": {"x": np.array([[1, 1], [2, 2]])}, "unroll_id": [7, 7]})
    builder.add_batch(b)
    builder.add_values(a=3, n={"x": np.array([3, 3])}, unroll_id=8)
    out = builder.build_and_reset()
    assert out["a"].tolist() == [1, 2, 3]
    assert out["n"]["x"].tolist() == [[1, 1], [2, 2], [3, 3]]
    assert out["unroll_id"].tolist() == [7, 7, 8]


def test_ragged_rows_are_reported():
    builder = SampleBatchBuilder()
    builder.add_values(a=1, b=2)
    builder.add_values(a=1)
    with pytest.raises(ValueError, match=r"2 rows but columns \{'b': 1\}"):
        builder.build_and_reset()


class _Policy:
    def __init__(self, bonus):
        self.bonus = bonus
        self.calls = []

    def postprocess_trajectory(self, batch, other_agent_batches=None, episode=None):
        self.calls.append(sorted(other_agent_batches))
        batch["advantages"] = batch["rewards"] + self.bonus
        return batch


class _Callbacks:
    def __init__(self):
        self.seen = []

    def on_postprocess_trajectory(self, *, worker, episode, agent_id, policy_id, policies,
                                  postprocessed_batch, original_batches):
        self.seen.append((agent_id, policy_id, len(postprocessed_batch), sorted(original_batches)))


def _row(t, reward, eps=0, done=False):
    return dict(obs=np.array([t, t]), rewards=reward, eps_id=eps, t=t, dones=done)


def test_multi_agent_builder_routes_postprocesses_and_clips():
    policies = {"p1": _Policy(10.0), "p2": _Policy(100.0)}
    callbacks = _Callbacks()
    builder = MultiAgentSampleBatchBuilder(policies, clip_rewards=True, callbacks=callbacks)
    builder.add_values("b", "p2", **_row(0, -3.0))
    builder.add_values("a", "p1", **_row(0, 0.4))
    builder.add_values("a", "p1", **_row(1, -0.2))
    builder.count += 2
    assert builder.total() == 3 and builder.has_pending_agent_data()
    out = builder.build_and_reset()
    assert isinstance(out, MultiAgentBatch) and out.env_steps() == 2 and builder.count == 0
    p1 = out.policy_batches["p1"]
    assert p1["rewards"].tolist() == [1.0, -1.0]  # np.sign for clip_rewards=True (RLlib's choice)
    assert p1["advantages"].tolist() == [11.0, 9.0]
    assert p1["agent_id"].tolist() == ["a", "a"]
    assert out.policy_batches["p2"]["advantages"].tolist() == [99.0]
    assert policies["p1"].calls == [["b"]]
    # Callbacks run in sorted agent order after all postprocessing.
    assert callbacks.seen == [("a", "p1", 2, ["a", "b"]), ("b", "p2", 1, ["a", "b"])]
    assert not builder.has_pending_agent_data()


def test_clip_rewards_by_value_and_default_agent_gets_no_agent_id_column():
    builder = MultiAgentSampleBatchBuilder({"default_policy": _Policy(0.0)}, clip_rewards=2.0)
    builder.add_values("agent0", "default_policy", **_row(0, 5.0))
    builder.add_values("agent0", "default_policy", **_row(1, -0.5))
    builder.count = 2
    out = builder.build_and_reset()
    assert isinstance(out, SampleBatch)  # wrapped: only the default policy
    assert out["rewards"].tolist() == [2.0, -0.5]
    assert "agent_id" not in out


def test_multi_trajectory_agent_rows_are_refused():
    builder = MultiAgentSampleBatchBuilder({"p": _Policy(0.0)}, clip_rewards=False)
    builder.add_values("a", "p", **_row(0, 1.0, eps=0, done=True))
    builder.add_values("a", "p", **_row(0, 1.0, eps=1))
    with pytest.raises(ValueError, match="single trajectory"):
        builder.postprocess_batch_so_far()


def test_unknown_or_changed_policy_is_refused():
    builder = MultiAgentSampleBatchBuilder({"p": _Policy(0.0), "q": _Policy(0.0)}, clip_rewards=False)
    with pytest.raises(ValueError, match="Unknown policy_id 'z'"):
        builder.add_values("a", "z", **_row(0, 1.0))
    builder.add_values("a", "p", **_row(0, 1.0))
    with pytest.raises(ValueError, match="mapped to policy 'p'"):
        builder.add_values("a", "q", **_row(1, 1.0))
