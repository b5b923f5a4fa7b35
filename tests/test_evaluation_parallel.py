"""`evaluation_parallel_to_training=True` (issue 31): the evaluation workers sample while
the learner trains, and the iteration's result holds both.

The overlap is shown without timing: a callback holds the learner inside
`on_learn_on_batch` until the evaluation worker has finished its episodes, and holds the
evaluation worker's episodes until the learner is there (each wait with a timeout), and
counts the evaluation episodes that ended while the learner was in its learning step. In
parallel every evaluation episode does; in sequence none does. The same with remote
evaluation workers (threads), and with one on a Ray actor (the signal then goes through a
file).
"""

import os
import sys
import threading
import time

import pytest

from tfrl.algorithms.callbacks import DefaultCallbacks
from tfrl.algorithms.ppo import PPO

EVAL_EPISODES = 3
SMALL = {"env": "CartPole-v1", "num_workers": 0, "num_envs_per_worker": 2,
         "rollout_fragment_length": 16, "train_batch_size": 64, "sgd_minibatch_size": 32,
         "num_sgd_iter": 1, "model": {"fcnet_hiddens": [8]}, "seed": 0,
         "evaluation_interval": 1, "evaluation_duration": EVAL_EPISODES,
         "evaluation_duration_unit": "episodes"}


class OverlapProbe(DefaultCallbacks):
    """Holds the learner in `on_learn_on_batch` until `EVAL_EPISODES` evaluation
    episodes ended (at most `wait_s`) and the evaluation episodes until the learner got
    there, counting the evaluation episodes that ended while the learner was held."""

    lock = threading.Lock()
    state = {}

    @classmethod
    def reset(cls, wait_s):
        cls.state = {"learning": False, "ended": 0, "ended_while_learning": 0,
                     "learn_calls": 0, "wait_s": wait_s, "done": threading.Event(),
                     "learner_in": threading.Event(), "threads": set()}

    def on_episode_start(self, *, worker, episode, **kwargs):
        if worker.policy_config.get("in_evaluation"):
            self.state["learner_in"].wait(self.state["wait_s"])

    def on_episode_end(self, *, worker, episode, **kwargs):
        if not worker.policy_config.get("in_evaluation"):
            return
        state = self.state
        with self.lock:
            state["ended"] += 1
            state["ended_while_learning"] += state["learning"]
            state["threads"].add(threading.current_thread().name)
            if state["ended"] >= EVAL_EPISODES:
                state["done"].set()

    def on_evaluate_end(self, *, algorithm, evaluation_metrics, **kwargs):
        self.state["evaluated_weights"] = [w.copy() for w in algorithm.evaluation_workers
                                           .local_worker().get_weights()["default_policy"]]

    def on_learn_on_batch(self, *, policy, train_batch, result, **kwargs):
        state = self.state
        with self.lock:
            state["learning"] = True
            state["learn_calls"] += 1
        state["learner_in"].set()
        state["done"].wait(state["wait_s"])
        with self.lock:
            state["learning"] = False


@pytest.mark.parametrize("parallel", [True, False])
def test_evaluation_episodes_finish_while_the_learner_trains(parallel):
    OverlapProbe.reset(wait_s=60.0 if parallel else 0.2)
    algo = PPO(config={**SMALL, "evaluation_parallel_to_training": parallel,
                       "callbacks": OverlapProbe})
    try:
        before = [w.copy() for w in algo.get_weights()["default_policy"]]
        result = algo.train()
        after = algo.get_weights()["default_policy"]
    finally:
        algo.stop()
    state = OverlapProbe.state
    # In parallel, evaluation runs on the weights of the iteration's start; in sequence,
    # on the trained ones.
    expected = before if parallel else after
    assert all((a == b).all() for a, b in zip(state["evaluated_weights"], expected,
                                              strict=True))
    assert any((a != b).any() for a, b in zip(before, after, strict=True))
    evaluation = result["evaluation"]
    assert evaluation["episodes_this_iter"] == EVAL_EPISODES
    assert state["learn_calls"] == 1 and state["ended"] >= EVAL_EPISODES
    if parallel:  # every evaluation episode ended inside the learning step, off-thread
        assert state["ended_while_learning"] == state["ended"]
        assert all(name.startswith("PPO-evaluation") for name in state["threads"])
    else:  # evaluation runs after the iteration trained
        assert state["ended_while_learning"] == 0
        assert state["threads"] == {threading.main_thread().name}
    assert result["training_iteration"] == 1 and "episode_reward_mean" in evaluation


def test_parallel_evaluation_needs_an_interval():
    with pytest.raises(ValueError, match="evaluation_parallel_to_training=True evaluates "
                                         "every evaluation_interval-th iteration"):
        PPO(config={**SMALL, "evaluation_interval": None,
                    "evaluation_parallel_to_training": True})


@pytest.mark.parametrize("parallel", [True, False])
def test_auto_duration_evaluates_while_training_lasts_or_one_episode_per_worker(parallel):
    # In parallel, "auto" samples until the iteration's training ends: the learner is
    # held until EVAL_EPISODES evaluation episodes ended, so at least that many are in the
    # result, all ended while it learned. In sequence, max(1, evaluation_num_workers)
    # episodes: one (no evaluation workers).
    OverlapProbe.reset(wait_s=60.0 if parallel else 0.2)
    algo = PPO(config={**SMALL, "evaluation_duration": "auto",
                       "evaluation_parallel_to_training": parallel,
                       "callbacks": OverlapProbe})
    try:
        evaluation = algo.train()["evaluation"]
        state = OverlapProbe.state
        if parallel:
            assert evaluation["episodes_this_iter"] >= EVAL_EPISODES
            assert evaluation["episodes_this_iter"] <= state["ended"]
            assert state["ended_while_learning"] >= EVAL_EPISODES
        else:
            assert evaluation["episodes_this_iter"] == 1
            assert state["ended_while_learning"] == 0
        # evaluate() outside train(): the sequential rule.
        assert algo.evaluate()["evaluation"]["episodes_this_iter"] == 1
    finally:
        algo.stop()


@pytest.mark.parametrize("parallel", [True, False])
def test_remote_evaluation_workers_sample_while_the_learner_trains_or_after(parallel):
    # Two evaluation workers besides the local one (thread backend: the callbacks' class
    # state is shared); the local evaluation worker has no env, so only the remote ones
    # may sample.
    OverlapProbe.reset(wait_s=60.0 if parallel else 0.2)
    algo = PPO(config={**SMALL, "evaluation_parallel_to_training": parallel,
                       "evaluation_num_workers": 2, "remote_backend": "thread",
                       "callbacks": OverlapProbe})
    try:
        assert len(algo.evaluation_workers.remote_workers()) == 2
        assert algo.evaluation_workers.local_worker().env is None
        result = algo.train()
        again = algo.evaluate()["evaluation"]  # outside train(): in sequence
    finally:
        algo.stop()
    state = OverlapProbe.state
    assert result["evaluation"]["episodes_this_iter"] == EVAL_EPISODES
    assert state["learn_calls"] == 1 and state["ended"] >= EVAL_EPISODES
    assert threading.main_thread().name not in state["threads"]  # the remote workers'
    if parallel:
        assert state["ended_while_learning"] >= EVAL_EPISODES
    else:
        assert state["ended_while_learning"] == 0
    assert again["episodes_this_iter"] == EVAL_EPISODES


@pytest.mark.parametrize("duration", ["autoo", 0, 2.5])
def test_evaluation_duration_is_an_int_or_auto(duration):
    with pytest.raises(ValueError, match="evaluation_duration"):
        PPO(config={**SMALL, "evaluation_duration": duration})


class FileOverlapProbe(DefaultCallbacks):
    """Across processes (an evaluation worker on a Ray actor): each evaluation episode's
    end appends a line to `signal`, and the learner stays in `on_learn_on_batch` until
    `EVAL_EPISODES` lines are there (at most 60 s), counting what it saw."""

    signal = ""  # set by the test; shipped to the actor with the class (by value)
    seen_while_learning = -1

    def on_episode_end(self, *, worker, episode, **kwargs):
        if worker.policy_config.get("in_evaluation"):
            with open(self.signal, "a") as f:
                f.write(f"{os.getpid()}\n")

    def on_learn_on_batch(self, *, policy, train_batch, result, **kwargs):
        deadline = time.monotonic() + 60.0
        while len(_lines(self.signal)) < EVAL_EPISODES and time.monotonic() < deadline:
            time.sleep(0.05)
        type(self).seen_while_learning = len(_lines(self.signal))


def _lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return f.read().split()


@pytest.mark.ray
@pytest.mark.slow
def test_ray_evaluation_worker_samples_while_the_learner_trains(ray_runtime, tmp_path):
    ray = ray_runtime
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    FileOverlapProbe.signal = str(tmp_path / "evaluation_episodes")
    algo = None
    try:
        algo = PPO(config={**SMALL, "evaluation_parallel_to_training": True,
                           "evaluation_num_workers": 1, "num_cpus_per_worker": 0.5,
                           "callbacks": FileOverlapProbe})
        (handle,) = algo.evaluation_workers.remote_workers()
        assert handle.apply(lambda w: os.getpid()).result(timeout=60) != os.getpid()
        result = algo.train()
    finally:
        if algo is not None:
            algo.stop()
    # the learner saw every evaluation episode end (in the actor's process) while it was
    # in its learning step
    assert FileOverlapProbe.seen_while_learning >= EVAL_EPISODES
    assert len(set(_lines(FileOverlapProbe.signal))) == 1  # one actor process
    assert int(_lines(FileOverlapProbe.signal)[0]) != os.getpid()
    assert result["evaluation"]["episodes_this_iter"] == EVAL_EPISODES
