"""tf.data minibatches from SampleBatches and episodes."""

import numpy as np
import pytest
import tensorflow as tf

from tfrl.policy.dataset import to_dataset
from tfrl.policy.multi_agent_batch import MultiAgentBatch
from tfrl.policy.sample_batch import SampleBatch


def _batch(n=12):
    return SampleBatch({
        "obs": np.arange(n * 2, dtype=np.float32).reshape(n, 2),
        "actions": np.arange(n),
        "nested": {"x": np.arange(n) * 10, "y": (np.arange(n) * 100, np.ones((n, 3), np.float32))},
        "infos": [{"i": i} for i in range(n)],
        "names": np.array([f"r{i}" for i in range(n)]),
    })


def _ids(ds):
    return [mb["actions"].numpy().tolist() for mb in ds]


def test_fixed_shapes_nested_columns_and_non_numeric_columns_excluded():
    ds = to_dataset(_batch(), batch_size=4, seed=0)
    spec = ds.element_spec
    assert set(spec) == {"obs", "actions", "nested"}
    assert spec["obs"].shape == (4, 2) and spec["nested"]["y"][1].shape == (4, 3)
    for mb in ds:
        a = mb["actions"].numpy()
        np.testing.assert_array_equal(mb["obs"].numpy(), np.stack([a * 2, a * 2 + 1], axis=1))
        np.testing.assert_array_equal(mb["nested"]["y"][0].numpy(), a * 100)


def test_every_epoch_visits_every_row_once_in_a_new_order():
    batches = _ids(to_dataset(_batch(), batch_size=4, num_epochs=3, seed=1))
    assert len(batches) == 9
    epochs = [sum(batches[i:i + 3], []) for i in range(0, 9, 3)]
    for epoch in epochs:
        assert sorted(epoch) == list(range(12))
    assert epochs[0] != epochs[1] != epochs[2]


def test_seeded_shuffle_is_deterministic():
    assert _ids(to_dataset(_batch(), 4, seed=7)) == _ids(to_dataset(_batch(), 4, seed=7))
    assert _ids(to_dataset(_batch(), 4, seed=7)) != _ids(to_dataset(_batch(), 4, seed=8))
    np.random.seed(3)
    first = _ids(to_dataset(_batch(), 4))
    np.random.seed(3)
    assert _ids(to_dataset(_batch(), 4)) == first


def test_no_shuffle_keeps_order_and_remainder_handling():
    assert _ids(to_dataset(_batch(10), 4, shuffle=False)) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert _ids(to_dataset(_batch(10), 4, shuffle=False, drop_remainder=False)) == [
        [0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    both = _ids(to_dataset(_batch(10), 4, shuffle=False, drop_remainder=False, num_epochs=2))
    assert both == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]] * 2


def test_explicit_columns():
    ds = to_dataset(_batch(), 6, columns=["actions"], shuffle=False)
    assert list(ds.element_spec) == ["actions"]
    with pytest.raises(ValueError, match=r"columns \['infos'\] are not numeric"):
        to_dataset(_batch(), 6, columns=["actions", "infos"])
    with pytest.raises(KeyError, match=r"names \['nope'\]"):
        to_dataset(_batch(), 6, columns=["nope"])


def test_bad_arguments():
    with pytest.raises(ValueError, match="fewer than one minibatch of batch_size=20"):
        to_dataset(_batch(), 20)
    with pytest.raises(ValueError, match="`batch_size` must be a positive int"):
        to_dataset(_batch(), 0)
    with pytest.raises(ValueError, match="`num_epochs` must be a positive int"):
        to_dataset(_batch(), 4, num_epochs=1.5)
    with pytest.raises(TypeError, match="policy_batches\\[policy_id\\]"):
        to_dataset(MultiAgentBatch({"p": _batch()}, 12), 4)
    with pytest.raises(TypeError, match="item 1 is a int"):
        to_dataset([_batch(), 3], 4)


def test_list_of_batches_is_concatenated():
    ds = to_dataset([_batch(4), _batch(4)], 8, shuffle=False)
    assert _ids(ds) == [[0, 1, 2, 3, 0, 1, 2, 3]]


def test_sequence_batch_is_minibatched_by_padded_sequence():
    batch = SampleBatch({
        "obs": np.arange(6, dtype=np.float32),
        "state_in_0": np.array([[1.0], [2.0], [3.0]], np.float32),
        "seq_lens": [1, 2, 3],
    })
    out = [{k: v.numpy().tolist() for k, v in mb.items()}
           for mb in to_dataset(batch, 2, shuffle=False, drop_remainder=False)]
    assert out == [
        {"obs": [[0, 0, 0], [1, 2, 0]], "state_in_0": [[1.0], [2.0]], "seq_lens": [1, 2]},
        {"obs": [[3, 4, 5]], "state_in_0": [[3.0]], "seq_lens": [3]},
    ]
    assert "seq_lens" in batch and batch["obs"].tolist() == [0, 1, 2, 3, 4, 5]  # input untouched


def test_distributes_over_two_logical_devices():
    devices = tf.config.list_logical_devices("CPU")
    assert len(devices) >= 2, "conftest configures 2 logical CPU devices"
    strategy = tf.distribute.MirroredStrategy([d.name for d in devices[:2]])
    ds = to_dataset(_batch(), 4, shuffle=False)
    per_replica = [strategy.experimental_local_results(mb["actions"])
                   for mb in strategy.experimental_distribute_dataset(ds)]
    assert [[r.numpy().tolist() for r in mb] for mb in per_replica] == [
        [[0, 1], [2, 3]], [[4, 5], [6, 7]], [[8, 9], [10, 11]]]


def test_list_of_episodes_becomes_rows_in_order():
    from tfrl.env.single_agent_episode import SingleAgentEpisode

    episodes = []
    for e in range(2):
        ep = SingleAgentEpisode()
        ep.add_env_reset(np.array([e, 0.0], np.float32))
        for t in range(1, 4):
            ep.add_env_step(np.array([e, t], np.float32), t, float(10 * e + t),
                            extra_model_outputs={"action_logp": np.float32(-t)})
        episodes.append(ep)
    ds = to_dataset(episodes, 6, shuffle=False)
    assert set(ds.element_spec) == {"obs", "new_obs", "actions", "rewards", "terminateds",
                                    "truncateds", "dones", "t", "action_logp"}
    (mb,) = list(ds)
    assert mb["obs"].numpy().tolist() == [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]
    assert mb["new_obs"].numpy()[:, 1].tolist() == [1, 2, 3, 1, 2, 3]
    assert mb["rewards"].numpy().tolist() == [1, 2, 3, 11, 12, 13]
    assert mb["t"].numpy().tolist() == [0, 1, 2, 0, 1, 2]
