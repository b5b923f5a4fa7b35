"""Algorithm.fit() RL hooks with a thread-backend remote worker (in-process sampling)."""

import pytest

from test_fit import TINY_PPO
from tfrl.algorithms.fit_callbacks import Callback


class EpisodeRecorder(Callback):
    def __init__(self):
        super().__init__()
        self.episodes, self.samples = [], []

    def on_episode_end(self, episode, logs=None):
        self.episodes.append(logs)

    def on_sample_end(self, samples, logs=None):
        self.samples.append(logs)


@pytest.mark.slow
def test_rl_hooks_arrive_from_thread_backend_remote_workers():
    from tfrl.algorithms.callbacks import DefaultCallbacks
    from tfrl.algorithms.ppo import PPO

    algo = PPO(config={**TINY_PPO, "num_workers": 1, "remote_backend": "thread"})
    recorder = EpisodeRecorder()
    history = algo.fit(iterations=2, callbacks=[recorder], verbose=0)
    assert len(recorder.episodes) == history.history["episodes_total"][-1]
    assert sum(s["env_steps"] for s in recorder.samples) == history.history[
        "timesteps_total"][-1] == 128
    remote = algo.workers.remote_workers()[0]
    assert remote.apply(lambda w: type(w.callbacks)).result(timeout=30) is DefaultCallbacks
    algo.stop()
