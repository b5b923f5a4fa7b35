"""RolloutWorker sampling PettingZoo envs through the adapters: per-agent rows, counts,
flags, and a masking model that only ever plays legal moves."""

import keras
import numpy as np
import pytest
import tensorflow as tf

pettingzoo = pytest.importorskip("pettingzoo")
mpe2 = pytest.importorskip("mpe2")

from mpe2 import simple_spread_v3  # noqa: E402
from pettingzoo.utils import parallel_to_aec  # noqa: E402

from pettingzoo_helpers import Relay  # noqa: E402
from rollout_worker_helpers import CountingPolicy  # noqa: E402
from tfrl.algorithms.pg.pg_tf_policy import PGTFPolicy  # noqa: E402
from tfrl.algorithms.ppo.ppo_tf_policy import PPOTFPolicy  # noqa: E402
from tfrl.evaluation.rollout_worker import RolloutWorker  # noqa: E402
from tfrl.models.catalog import ModelCatalog  # noqa: E402
from tfrl.policy.multi_agent_batch import MultiAgentBatch  # noqa: E402
from tfrl.policy.policy import PolicySpec  # noqa: E402
from tfrl.env.wrappers.pettingzoo_env import ParallelPettingZooEnv, PettingZooEnv  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def own_policy(agent_id, episode, worker=None, **kwargs):
    return agent_id


def test_agents_joining_and_leaving_get_their_own_rows():
    # Relay: scout_0 acts in steps 1-6, scout_1 in 1-3 (terminates), runner_0 joins after
    # step 2 and acts in 3-6; the time limit truncates scout_0 and runner_0 at step 6.
    w = RolloutWorker(env_creator=lambda ctx: ParallelPettingZooEnv(Relay(max_cycles=6)),
                      policy_spec={a: (CountingPolicy, None, None, {})
                                   for a in ("scout_0", "scout_1", "runner_0")},
                      policy_mapping_fn=own_policy, rollout_fragment_length=6,
                      batch_mode="complete_episodes")
    batch = w.sample()
    assert isinstance(batch, MultiAgentBatch)
    assert batch.env_steps() == 6 and batch.agent_steps() == 13
    rows = batch.policy_batches
    assert {p: b.count for p, b in rows.items()} == {"scout_0": 6, "scout_1": 3, "runner_0": 4}
    # Observation [t, agent index]; every action (1) pays 1.
    assert rows["runner_0"]["obs"].tolist() == [[2, 2], [3, 2], [4, 2], [5, 2]]
    assert rows["scout_1"]["new_obs"][:, 0].tolist() == [1, 2, 3]
    for pid, b in rows.items():
        assert b["rewards"].tolist() == [1.0] * b.count, pid
    assert rows["scout_1"]["terminateds"].tolist() == [False, False, True]
    assert not rows["scout_1"]["truncateds"].any()
    for pid in ("scout_0", "runner_0"):
        assert rows[pid]["truncateds"].tolist() == [False] * (rows[pid].count - 1) + [True]
        assert not rows[pid]["terminateds"].any()
    (metrics,) = w.get_metrics()
    assert metrics.episode_length == 6 and metrics.episode_reward == 13.0
    w.stop()


def test_aec_turns_become_rows_of_the_agent_that_acted():
    # Under parallel_to_aec the agents take turns: scout_0 acts 4 times, scout_1 3 times
    # (then terminates), runner_0 twice; each adapter step is one turn.
    w = RolloutWorker(
        env_creator=lambda ctx: PettingZooEnv(parallel_to_aec(Relay(max_cycles=4))),
        policy_spec={a: (CountingPolicy, None, None, {}) for a in ("scout_0", "scout_1", "runner_0")},
        policy_mapping_fn=own_policy, rollout_fragment_length=9, batch_mode="complete_episodes")
    batch = w.sample()
    assert batch.env_steps() == 9 and batch.agent_steps() == 9
    counts = {p: b.count for p, b in batch.policy_batches.items()}
    assert counts == {"scout_0": 4, "scout_1": 3, "runner_0": 2}
    assert batch.policy_batches["scout_1"]["terminateds"].tolist() == [False, False, True]
    assert batch.policy_batches["runner_0"]["truncateds"].tolist() == [False, True]
    w.stop()


def test_simple_spread_two_policies_sample_and_learn():
    w = RolloutWorker(
        env_creator=lambda ctx: ParallelPettingZooEnv(simple_spread_v3.parallel_env(
            N=2, max_cycles=25)),
        policy_spec={"p0": PolicySpec(PPOTFPolicy), "p1": PolicySpec(PPOTFPolicy)},
        policy_mapping_fn=lambda agent_id, episode, worker=None, **kw: "p" + agent_id[-1],
        policy_config={"model": {"fcnet_hiddens": [16]}, "sgd_minibatch_size": 25,
                       "num_sgd_iter": 1},
        rollout_fragment_length=50, seed=0)
    batch = w.sample()
    assert isinstance(batch, MultiAgentBatch) and batch.env_steps() == 50
    for pid in ("p0", "p1"):
        b = batch.policy_batches[pid]
        assert b.count == 50 and b["obs"].shape == (50, 12)
        assert b["truncateds"].sum() == 2 and not b["terminateds"].any()  # 2 episodes of 25
        assert set(np.unique(b["actions"])) <= set(range(5))
        # Cooperative: both agents get the same (shared + local) reward shape.
        assert b["rewards"].dtype == np.float32 and (b["rewards"] <= 0).all()
    metrics = w.get_metrics()
    assert len(metrics) == 2 and all(m.episode_length == 25 for m in metrics)
    before = [np.copy(x) for x in w.get_weights()["p0"]]
    info = w.learn_on_batch(batch)
    assert set(info) == {"p0", "p1"}
    assert any(not np.array_equal(a, b) for a, b in zip(before, w.get_weights()["p0"]))
    w.stop()


class MaskedLogits(keras.Model):
    """Logits of a Dense layer with illegal actions pushed to -1e9.

    PettingZoo's dict observation {"action_mask", "observation"} reaches the model
    flattened in key order, so the first `n` (actions) entries of each row are the mask.
    """

    def __init__(self, obs_space, action_space, num_outputs, model_config, name):
        super().__init__(name=name)
        self.n = action_space.n
        self.logits = keras.layers.Dense(num_outputs)
        self.value = keras.layers.Dense(1)

    def call(self, obs, training=False):
        mask = obs[:, :self.n]  # [B, n]
        logits = self.logits(obs) + (1.0 - mask) * -1e9
        return logits, tf.squeeze(self.value(obs), axis=-1)


def test_masking_model_plays_only_legal_moves_in_tictactoe():
    ModelCatalog.register_custom_model("masked_logits", MaskedLogits)
    w = RolloutWorker(
        env_creator=lambda ctx: PettingZooEnv(pettingzoo.make("aec", "classic/tictactoe-v3")),
        policy_spec={"p1": PolicySpec(PGTFPolicy), "p2": PolicySpec(PGTFPolicy)},
        policy_mapping_fn=lambda agent_id, episode, worker=None, **kw: "p" + agent_id[-1],
        policy_config={"model": {"custom_model": "masked_logits"}},
        rollout_fragment_length=100, batch_mode="complete_episodes", seed=1)
    batch = w.sample()
    p1, p2 = batch.policy_batches["p1"], batch.policy_batches["p2"]
    episodes = int(p1["terminateds"].sum())
    assert episodes == int(p2["terminateds"].sum()) >= 10
    # One row per move; player_1 opens, so it has as many moves as player_2 or one more.
    assert batch.agent_steps() == batch.env_steps() == p1.count + p2.count >= 100
    assert 0 <= p1.count - p2.count <= episodes
    for b in (p1, p2):
        assert b["obs"].shape[1] == 9 + 18  # mask, then the 3x3x2 board
        legal = b["obs"][np.arange(b.count), b["actions"]]
        assert (legal == 1).all()
    # A win pays +1/-1 and a draw 0, so the two players' rewards cancel; an illegal move
    # (-1 for the mover only, TerminateIllegalWrapper) would not.
    assert p1["rewards"].sum() + p2["rewards"].sum() == 0
    w.stop()
