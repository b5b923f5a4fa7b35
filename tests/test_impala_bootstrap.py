"""IMPALA/APPO bootstrap values from `new_obs` at the columns' ends only: the same loss,
stats and update as a forward over the whole `new_obs` column (the old path), on a batch
with mid-column terminations, a truncation, a gap in `t` and several columns, on one and
two replicas; and the model runs on the bootstrap rows only."""

import gymnasium as gym
import keras
import numpy as np
import pytest
import tensorflow as tf

from tfrl.algorithms.appo import APPOTFPolicy
from tfrl.algorithms.impala import ImpalaTFPolicy
from tfrl.policy.sample_batch import SampleBatch
from tests.policy_helpers import strategy_named

OBS_SPACE = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
ACT_SPACE = gym.spaces.Discrete(2)
CONFIG = {"seed": 0, "lr": 0.05, "model": {"fcnet_hiddens": [8]}, "vf_loss_coeff": 0.5,
          "entropy_coeff": 0.01, "gamma": 0.9}

# 18 rows, in time order (the columns V-trace lays out):
#   rows 0-3   episode 1, terminated at row 3 (bootstraps from 0)
#   rows 4-7   episode 2, truncated at row 7 (a time limit: bootstraps from new_obs[7])
#   rows 8-9   episode 3, t 0-1, then rows 10-12 t 5-7: a gap in t, two columns (the
#              first bootstraps from new_obs[9]); rows 8-12 straddle the replicas' cut (9|9)
#   rows 13-14 episode 4, terminated at row 14
#   rows 15-17 episode 5, cut by the fragment (bootstraps from new_obs[17])
EPS_ID = [1] * 4 + [2] * 4 + [3] * 5 + [4] * 2 + [5] * 3
T = [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 5, 6, 7, 0, 1, 0, 1, 2]
TERMINATED_ROWS = (3, 12, 14)  # 12: the second piece of episode 3 ends terminated
TRUNCATED_ROWS = (7,)
BOOTSTRAP_ROWS = [7, 9, 17]  # the column ends that do not terminate


def _batch(policy, seed=0):
    rows = len(EPS_ID)
    rng = np.random.default_rng(seed)
    obs = rng.uniform(-1, 1, (rows, 4)).astype(np.float32)
    new_obs = np.roll(obs, -1, axis=0)
    # The observations after the column ends are not the next rows' (reset, gap).
    new_obs[BOOTSTRAP_ROWS + list(TERMINATED_ROWS)] = rng.uniform(-1, 1, (6, 4))
    actions, _, extras = policy.compute_actions(obs, explore=True)
    terminateds = np.isin(np.arange(rows), TERMINATED_ROWS)
    truncateds = np.isin(np.arange(rows), TRUNCATED_ROWS)
    # A behaviour policy other than the learner's, so the ratios are not all 1.
    extras["action_logp"] = (extras["action_logp"]
                             + rng.normal(0, 0.3, rows)).astype(np.float32)
    return SampleBatch(obs=obs, new_obs=new_obs, actions=actions,
                       rewards=rng.normal(size=rows).astype(np.float32),
                       terminateds=terminateds, truncateds=truncateds,
                       eps_id=np.asarray(EPS_ID, np.int64), t=np.asarray(T, np.int64),
                       **extras)


def _old_path(cls):
    class OldPath(cls):
        """The model over the whole `new_obs` column, as before."""

        def next_values(self, train_batch, rows=None):
            return super().next_values(train_batch)
    return OldPath


def _make(cls, strategy, **config):
    keras.utils.set_random_seed(0)
    return cls(OBS_SPACE, ACT_SPACE, {**CONFIG, **config}, strategy=strategy_named(strategy))


@pytest.mark.parametrize("cls", [ImpalaTFPolicy, APPOTFPolicy])
@pytest.mark.parametrize("strategy", [
    "one_device", pytest.param("mirrored", marks=pytest.mark.slow)])  # ~30 s: 2 replicas
def test_bootstrap_from_column_ends_equals_the_full_new_obs_forward(cls, strategy):
    new, old = _make(cls, strategy), _make(_old_path(cls), strategy)
    for a, b in zip(new.get_weights(), old.get_weights()):
        np.testing.assert_array_equal(a, b)
    batch = _batch(new)
    new_stats = new.learn_on_batch(batch.copy())["learner_stats"]
    old_stats = old.learn_on_batch(batch.copy())["learner_stats"]
    for key in ("total_loss", "policy_loss", "vf_loss", "entropy", "grad_gnorm"):
        if key in old_stats:
            np.testing.assert_allclose(new_stats[key], old_stats[key], rtol=1e-5, atol=1e-7,
                                       err_msg=key)
    moved = False
    for a, b, before in zip(new.get_weights(), old.get_weights(),
                            _make(cls, strategy).get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
        moved = moved or not np.allclose(a, before)
    assert moved  # the update did something, so equal updates mean equal gradients


def test_bootstrap_changes_the_loss_so_the_comparison_can_fail():
    """The bootstrap rows matter: other new_obs there give another loss."""
    policy = _make(ImpalaTFPolicy, "one_device")
    batch = _batch(policy)
    columns = {k: tf.constant(v) for k, v in batch.items()}
    loss, _ = policy.loss_and_stats(policy.model, policy.dist_class, columns)
    changed = dict(columns)
    new_obs = batch["new_obs"].copy()
    new_obs[9] = -new_obs[9]
    changed["new_obs"] = tf.constant(new_obs)
    other, _ = policy.loss_and_stats(policy.model, policy.dist_class, changed)
    assert abs(float(loss) - float(other)) > 1e-6
    # ... while new_obs of rows that are not bootstrap rows is not read.
    new_obs = batch["new_obs"].copy()
    new_obs[[0, 3, 5, 12, 14]] = 100.0
    changed["new_obs"] = tf.constant(new_obs)
    same, _ = policy.loss_and_stats(policy.model, policy.dist_class, changed)
    assert float(same) == float(loss)


def test_the_model_runs_on_the_bootstrap_rows_only(monkeypatch):
    policy = _make(ImpalaTFPolicy, "one_device")
    batch = _batch(policy)
    columns = {k: tf.constant(v) for k, v in batch.items()}
    sizes = []
    call_model = policy.call_model

    def counting(obs, *args, **kwargs):
        sizes.append(int(tf.shape(obs)[0]))
        return call_model(obs, *args, **kwargs)

    monkeypatch.setattr(policy, "call_model", counting)
    policy.loss_and_stats(policy.model, policy.dist_class, columns)
    assert sizes == [len(EPS_ID), len(BOOTSTRAP_ROWS)]  # T rows + one per column to bootstrap
    rows = tf.constant(np.isin(np.arange(len(EPS_ID)), BOOTSTRAP_ROWS))
    got = policy.next_values(columns, rows).numpy()
    want = policy.next_values(columns).numpy()
    np.testing.assert_allclose(got[BOOTSTRAP_ROWS], want[BOOTSTRAP_ROWS], rtol=1e-6)
    assert not np.any(np.delete(got, BOOTSTRAP_ROWS))


@pytest.mark.parametrize("config", [{"vtrace_drop_last_ts": True}, {"vtrace": False}])
def test_without_the_bootstrap_new_obs_is_not_read(config):
    policy = _make(ImpalaTFPolicy, "one_device", **config)
    assert not policy.loss_reads_next_obs()
    batch = _batch(policy)
    if not config.get("vtrace", True):
        batch = policy.postprocess_trajectory(batch.slice(0, 4))
    del batch["new_obs"]
    assert np.isfinite(policy.learn_on_batch(batch)["learner_stats"]["total_loss"])


def test_a_batch_whose_columns_all_terminate_runs_the_model_on_no_new_obs():
    new, old = _make(ImpalaTFPolicy, "one_device"), _make(_old_path(ImpalaTFPolicy), "one_device")
    batch = _batch(new).slice(0, 4)  # episode 1 alone, terminated at its last row
    columns = {k: tf.constant(v) for k, v in batch.items()}
    rows = tf.zeros([4], tf.bool)
    np.testing.assert_array_equal(new.next_values(columns, rows).numpy(), np.zeros(4))
    loss, _ = new.loss_and_stats(new.model, new.dist_class, columns)
    want, _ = old.loss_and_stats(old.model, old.dist_class, columns)
    np.testing.assert_allclose(float(loss), float(want), rtol=1e-6)
