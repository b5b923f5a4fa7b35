"""The replay-based plan (DQN, SAC, TD3, CQL) is RLlib's DQN plan from the execution
operators: these tests pin its composition and its per-round schedule in real training,
and that `training_step()` runs the same steps in the same order."""

import numpy as np

import tfrl.algorithms.off_policy_plan as plan
from tfrl.algorithms.dqn import DQN
from tfrl.execution.common import (LAST_TARGET_UPDATE_TS, NUM_TARGET_UPDATES,
                                   STEPS_SAMPLED_COUNTER, STEPS_TRAINED_COUNTER)
from tfrl.execution.iter import SharedMetrics, metrics_context


def _spy(monkeypatch, name, log):
    """Wraps `plan.<name>` (a class or function) so that its uses are logged."""
    original = getattr(plan, name)

    def make(*args, **kwargs):
        op = original(*args, **kwargs)
        log.append((name, "built", kwargs))
        if name in ("Replay", "Concurrently"):  # iterators
            return op

        def call(item):
            batch = item[0] if isinstance(item, tuple) else item  # (batch, info) after learning
            log.append((name, "call", batch.count))
            return op(item)
        return call

    monkeypatch.setattr(plan, name, make)


def test_plan_is_store_and_replay_ops_merged_round_robin_one_item_per_round(monkeypatch):
    log = []
    for name in ("StoreToReplayBuffer", "Replay", "TrainOneStep", "UpdateReplayPriorities",
                 "UpdateTargetNetwork", "Concurrently"):
        _spy(monkeypatch, name, log)
    # 4 steps per round; training_intensity 4 asks for 16 replayed rows per round, i.e. one
    # step of 32 rows every 2nd round; learning from 16 stored steps on; the target is
    # checked every round (every 8 sampled steps, learning or not).
    algo = DQN(config={"model": {"fcnet_hiddens": [16]}, "hiddens": [8], "seed": 0,
                       "env": "CartPole-v1", "rollout_fragment_length": 4,
                       "train_batch_size": 32, "training_intensity": 4,
                       "timesteps_per_iteration": 40,
                       "num_steps_sampled_before_learning_starts": 16,
                       "target_network_update_freq": 8})
    # DQN trains with `training_step()`; its `execution_plan` (RLlib's public API) is
    # built and driven here as RLlib 1.x's Trainer did.
    plan_it = algo.execution_plan(algo.workers, algo.config)
    built = {entry[0]: entry[2] for entry in log if entry[1] == "built"}
    assert built["Concurrently"] == {"mode": "round_robin", "output_indexes": [1]}
    assert built["Replay"]["empty_when_not_ready"] is True
    assert isinstance(built["Replay"]["local_buffer"], plan.LearningRounds)
    assert built["Replay"]["local_buffer"].buffer is algo.local_replay_buffer
    assert built["StoreToReplayBuffer"] == {"local_buffer": algo.local_replay_buffer}
    assert built["TrainOneStep"] == {"num_sgd_iter": 1, "sgd_minibatch_size": 32}
    del log[:]
    result = next(plan_it)
    counters = plan_it.shared_metrics.counters
    algo.stop()
    calls = [(name, count) for name, kind, count in log if kind == "call"]
    # Per round: store the sampled rows; replay (empty before 16 stored steps and on odd
    # rounds); learn; priorities; target check, in that order, for 10 rounds.
    replayed = [0, 0, 0, 32, 0, 32, 0, 32, 0, 32]
    expected = []
    for rows in replayed:
        expected += [("StoreToReplayBuffer", 4), ("TrainOneStep", rows),
                     ("UpdateReplayPriorities", rows), ("UpdateTargetNetwork", rows)]
    assert calls == expected
    assert result["timesteps_total"] == counters[STEPS_SAMPLED_COUNTER] == 40
    assert counters[STEPS_TRAINED_COUNTER] == 4 * 32
    assert counters[plan.NUM_SAMPLE_ROUNDS] == 10
    assert algo.get_policy().num_grad_updates.numpy() == 4
    # Target copied at 8, 16, 24, 32 and 40 sampled steps (rounds 2, 4, 6, 8, 10).
    assert (counters[NUM_TARGET_UPDATES], counters[LAST_TARGET_UPDATE_TS]) == (5, 40)
    policy = algo.get_policy()
    for online, target in zip(policy.model.get_weights(), policy.target_model.get_weights()):
        np.testing.assert_array_equal(online, target)  # copied after the last phase


def test_learning_rounds_replays_every_nth_round_once_the_buffer_is_ready():
    class Buffer:
        def __init__(self):
            self.calls = 0

        def replay(self):
            self.calls += 1
            return None if self.calls == 1 else f"batch{self.calls}"

    buffer = Buffer()
    rounds = plan.LearningRounds(buffer, rounds_per_phase=3)
    metrics = SharedMetrics()
    with metrics_context(metrics):
        out = [rounds.replay() for _ in range(9)]
    assert out == [None, None, None, None, None, "batch2", None, None, "batch3"]
    assert metrics.counters[plan.NUM_SAMPLE_ROUNDS] == 9


def _prioritized_buffer_with_replay(n=8):
    from tfrl.data.sample_batch import SampleBatch
    from tfrl.execution.replay_buffer import LocalReplayBuffer

    buffer = LocalReplayBuffer(capacity=n, replay_batch_size=n, seed=0, prioritized_replay=True,
                               prioritized_replay_alpha=1.0, prioritized_replay_eps=0.0)
    buffer.add_batch(SampleBatch(obs=np.arange(n, dtype=np.float32)[:, None],
                                 actions=np.zeros(n, np.int64),
                                 rewards=np.ones(n, np.float32),
                                 new_obs=np.zeros((n, 1), np.float32),
                                 terminateds=np.zeros(n, bool)))
    return buffer, buffer.replay()


class _Workers:
    def __init__(self, td_errors):
        policy = type("P", (), {"td_errors": lambda self, rows: td_errors(rows)})()
        self._worker = type("W", (), {"get_policy": lambda self, pid: policy})()

    def local_worker(self):
        return self._worker


def _priorities(buffer):
    return buffer.get_state()["buffers"]["default_policy"]["priorities"]


def test_priorities_move_only_with_an_applied_update_and_keep_nonfinite_rows():
    # Issue 29, item 3: a learning call that applied no update (every step non-finite,
    # nonfinite_updates="skip") leaves the priorities; a row whose TD error is NaN keeps
    # its priority (before: update_priorities raised on it, on every later replay too).
    buffer, replayed = _prioritized_buffer_with_replay()
    before = _priorities(buffer).copy()
    metrics = SharedMetrics()
    nothing = {"default_policy": {"learner_stats": {"num_nonfinite_updates_skipped": 1,
                                                    "num_grad_updates": 0}}}
    td = np.arange(1.0, 9.0)
    td_of = (lambda rows: td[rows[plan.BATCH_INDEXES]])
    with metrics_context(metrics):
        plan.UpdateReplayPriorities(_Workers(td_of), buffer)((replayed, nothing))
    np.testing.assert_array_equal(_priorities(buffer), before)
    td[3] = np.nan
    learned = {"default_policy": {"learner_stats": {"num_nonfinite_updates_skipped": 0,
                                                    "total_loss": 1.0}}}
    with metrics_context(metrics):
        plan.UpdateReplayPriorities(_Workers(td_of), buffer)((replayed, learned))
    indexes = replayed[plan.BATCH_INDEXES]
    assert 3 in indexes and len(set(indexes.tolist()) - {3}) >= 3
    moved = np.isin(np.arange(8), indexes) & (np.arange(8) != 3)
    expected = np.where(moved, np.arange(1.0, 9.0), before)
    np.testing.assert_allclose(_priorities(buffer), expected)
    assert metrics.counters[plan.NUM_NONFINITE_TD_ERRORS] == int(np.sum(indexes == 3))


def test_training_step_runs_the_plans_steps_in_the_same_order(monkeypatch):
    """The schedule above, through `train()`: one `training_step()` per sampling round."""
    import tfrl.algorithms.off_policy_algorithm as algorithm_module

    log = []
    # name -> position of the batch among the positional arguments (None: no batch)
    for name, at in (("train_one_step", 1), ("update_replay_priorities", 2),
                     ("update_target_network", None)):
        original = getattr(algorithm_module, name)

        def spy(*args, _name=name, _original=original, _at=at, **kwargs):
            log.append((_name, None if _at is None else args[_at].count))
            return _original(*args, **kwargs)
        monkeypatch.setattr(algorithm_module, name, spy)
    algo = DQN(config={"model": {"fcnet_hiddens": [16]}, "hiddens": [8], "seed": 0,
                       "env": "CartPole-v1", "rollout_fragment_length": 4,
                       "train_batch_size": 32, "training_intensity": 4,
                       "timesteps_per_iteration": 40,
                       "num_steps_sampled_before_learning_starts": 16,
                       "target_network_update_freq": 8})
    result = algo.train()
    counters = algo.shared_metrics.counters
    algo.stop()
    expected = []
    for rows in [0, 0, 0, 32, 0, 32, 0, 32, 0, 32]:
        if rows:
            expected += [("train_one_step", rows), ("update_replay_priorities", rows)]
        expected.append(("update_target_network", None))
    assert log == expected
    assert result["timesteps_total"] == counters[STEPS_SAMPLED_COUNTER] == 40
    assert counters[STEPS_TRAINED_COUNTER] == 4 * 32
    assert counters[plan.NUM_SAMPLE_ROUNDS] == 10
    assert (counters[NUM_TARGET_UPDATES], counters[LAST_TARGET_UPDATE_TS]) == (5, 40)
