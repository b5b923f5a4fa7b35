"""RLlib's own MultiAgentBatch tests, ported to tfrl.

Ported from `rllib/policy/tests/test_multi_agent_batch.py` at ray-project/ray commit
8884c7feba336634cfc919399a401e11e7514664. Covers: test_timeslices_non_overlapping_experiences,
test_timeslices_partially_overlapping_experiences, test_timeslices_fully_overlapping_experiences.

`check_same_batch` below reproduces `ray.rllib.utils.test_utils.check_same_batch`: same batch
type; for MultiAgentBatches the same env-step count and policy ids; for SampleBatches the same
columns (`unroll_id` compared only if both batches have one), each compared with `check`.
Besides RLlib's element-wise comparison (through `zip`, as RLlib's test does), the number of
slices is asserted as well.
"""

from compat_helpers import check
from tfrl.policy.sample_batch import MultiAgentBatch, SampleBatch

RLLIB_PATH = "rllib/policy/tests/test_multi_agent_batch.py"
RLLIB_COMMIT = "8884c7feba336634cfc919399a401e11e7514664"


def check_same_batch(batch1, batch2) -> None:
    """Asserts that two (multi-agent) batches hold the same data, as RLlib's helper does."""
    assert type(batch1) is type(batch2), (
        f"Input batches are of different types {type(batch1)} and {type(batch2)}")

    def check_sample_batches(b1, b2, policy_id=None):
        unroll_id_1 = b1.get("unroll_id", None)
        unroll_id_2 = b2.get("unroll_id", None)
        if unroll_id_1 is not None and unroll_id_2 is not None:
            assert unroll_id_1 == unroll_id_2
        keys_1 = set()
        for key, value in b1.items():
            if key == "unroll_id":
                continue
            check(value, b2[key])
            keys_1.add(key)
        keys_2 = set(b2.keys()) - {"unroll_id"}
        difference = keys_1.symmetric_difference(keys_2)
        assert not difference, f"SampleBatches (policy {policy_id}) differ in {difference}"

    if type(batch1) is SampleBatch:
        check_sample_batches(batch1, batch2)
    elif type(batch1) is MultiAgentBatch:
        assert batch1.count == batch2.count
        for policy_id, policy_batch in batch1.policy_batches.items():
            check_sample_batches(policy_batch, batch2.policy_batches[policy_id], policy_id)
        difference = set(batch1.policy_batches).symmetric_difference(batch2.policy_batches)
        assert not difference, f"MultiAgentBatches differ in policies {difference}"
    else:
        raise ValueError(f"Unsupported batch type {type(batch1)}")


def _row(t, eps_id, agent_index):
    return SampleBatch({
        SampleBatch.T: [t],
        SampleBatch.EPS_ID: [eps_id],
        SampleBatch.AGENT_INDEX: [agent_index],
        SampleBatch.SEQ_LENS: [1],
    })


def _check_slices(sliced, expected):
    assert len(sliced) == len(expected)
    for i, j in zip(sliced, expected):
        check_same_batch(i, j)


def test_timeslices_non_overlapping_experiences():
    """Two policies' batches from different episodes: one slice per (episode, t)."""

    def _generate_data(agent_idx):
        return SampleBatch({
            SampleBatch.T: [0, 1],
            SampleBatch.EPS_ID: 2 * [agent_idx],
            SampleBatch.AGENT_INDEX: 2 * [agent_idx],
            SampleBatch.SEQ_LENS: [2],
        })

    policy_batches = {str(idx): _generate_data(idx) for idx in range(2)}
    ma_batch = MultiAgentBatch(policy_batches, 4)
    sliced_ma_batches = ma_batch.timeslices(1)

    _check_slices(sliced_ma_batches, [
        MultiAgentBatch({"0": _row(0, 0, 0)}, 1),
        MultiAgentBatch({"0": _row(1, 0, 0)}, 1),
        MultiAgentBatch({"1": _row(0, 1, 1)}, 1),
        MultiAgentBatch({"1": _row(1, 1, 1)}, 1),
    ])


def test_timeslices_partially_overlapping_experiences():
    """Two agents of one episode, shifted by one step: the middle slice holds both."""

    def _generate_data(agent_idx, t_start):
        return SampleBatch({
            SampleBatch.T: [t_start, t_start + 1],
            SampleBatch.EPS_ID: [0, 0],
            SampleBatch.AGENT_INDEX: 2 * [agent_idx],
            SampleBatch.SEQ_LENS: [2],
        })

    policy_batches = {str(idx): _generate_data(idx, idx) for idx in range(2)}
    ma_batch = MultiAgentBatch(policy_batches, 4)
    sliced_ma_batches = ma_batch.timeslices(1)

    _check_slices(sliced_ma_batches, [
        MultiAgentBatch({"0": _row(0, 0, 0)}, 1),
        MultiAgentBatch({"0": _row(1, 0, 0), "1": _row(1, 0, 1)}, 1),
        MultiAgentBatch({"1": _row(2, 0, 1)}, 1),
    ])


def test_timeslices_fully_overlapping_experiences():
    """Two agents acting at the same steps of one episode: both in every slice."""

    def _generate_data(agent_idx):
        return SampleBatch({
            SampleBatch.T: [0, 1],
            SampleBatch.EPS_ID: [0, 0],
            SampleBatch.AGENT_INDEX: 2 * [agent_idx],
            SampleBatch.SEQ_LENS: [2],
        })

    policy_batches = {str(idx): _generate_data(idx) for idx in range(2)}
    ma_batch = MultiAgentBatch(policy_batches, 4)
    sliced_ma_batches = ma_batch.timeslices(1)

    _check_slices(sliced_ma_batches, [
        MultiAgentBatch({"0": _row(0, 0, 0), "1": _row(0, 0, 1)}, 1),
        MultiAgentBatch({"0": _row(1, 0, 0), "1": _row(1, 0, 1)}, 1),
    ])
